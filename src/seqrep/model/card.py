"""The model card (a Hub repository's ``README.md``) of a seqrep labeler, written from the run's
own records, so what it claims is what the run measured and how it was set up.

The YAML metadata is huggingface_hub's :class:`~huggingface_hub.ModelCardData` (the Hub reads
``library_name``, ``pipeline_tag``, ``base_model``, ``datasets``, ``language``, ``license`` and
``tags`` from it, and its ``model-index`` from the evaluation results), so the card parses as
the Hub parses it. Only what is known is written: a base model's license for the packaged
models (whose licenses are fixed), a language for the named datasets (all English), a dataset
id for the named datasets that live on the Hub; a local file or folder is named by nothing.

Every value the card takes from a run's records is rendered inert (:func:`shown_code`,
:func:`shown_text`): on one line, as a code span where it holds nothing that a code span or a
table cell would read, else as text with HTML's and Markdown's special characters escaped, so
no name, label or setting makes HTML, a link, a heading or another table cell. Numbers the run
measured must be numbers; in the YAML metadata a dataset name is kept only when it reads as a
plain name.
"""

from __future__ import annotations

import html
import math
import re
import unicodedata
from pathlib import Path
from typing import Any

from seqrep.errors import ModelError
from seqrep.files import atomic as fileio
from seqrep.model.hub import hub_name
from seqrep.model.labeler_config import LabelerConfig, parse_unmask
from seqrep.model.packaged import PACKAGED

# the licenses of the packaged models' Hub repositories (their model cards say so)
LICENSES = {"HuggingFaceTB/SmolLM2-135M-Instruct": "apache-2.0", "google/gemma-3-270m": "gemma",
            "sentence-transformers/all-MiniLM-L6-v2": "apache-2.0",
            "sentence-transformers/all-mpnet-base-v2": "apache-2.0"}
# the languages of seqrep's named datasets (CoNLL-2003 English, SemEval-2014 restaurants, NLU++)
LANGUAGES = {"conll2003": "en", "rest14": "en", "nlupp": "en"}
SCORES = ("f1", "precision", "recall", "accuracy")
SETTINGS = ("task", "repetitions", "exit_layer", "unmask", "final_norm", "subtoken", "read",
            "separator", "bos", "max_subtokens", "context", "context_tokens", "decoding",
            "finetune", "lora_rank", "lora_alpha", "dtype")
PLACEHOLDER = "ORG/NAME"
MAX_RECORD_BYTES = 1 << 20  # run.json and metrics.json are a few kB
MAX_SHOWN = 300  # characters of one value shown (a label has at most 200)
# what metrics.json measured: numbers, and where the validation sentences came from (a text)
MEASURED = ("train_seconds", "steps", "train_sentences", "train_tokens")
# what ends a code span (a backtick), a table cell (a pipe), or could read as HTML
NOT_IN_CODE = frozenset("`|<>&\\")
# Markdown's inline specials: code, emphasis, links and images, table cells, strikethrough,
# the Hub's math; backslash-escaped after HTML's (& < > " ') became entities
MARKDOWN = re.compile(r"([\\`*_\[\]()|~$])")
# a dataset name the YAML metadata keeps (a file name as people name them)
PLAIN_NAME = re.compile(r"[\w .,:/+@()=-]{1,200}")


def check_folder(run: Path, expected: str = "expected a run folder or a saved labeler") -> None:
    """One line unless ``run`` is a folder: a file (``/etc/passwd``) is said to be no run
    folder, a missing path not to exist."""
    if path_is(run, Path.is_dir):
        return
    if path_is(run, Path.exists) or path_is(run, Path.is_symlink):
        kind = "it is a file, not a folder" if path_is(run, Path.is_file) else "it is not a folder"
        raise ModelError(f"{run} is not a seqrep run folder ({kind}); {expected}")
    raise ModelError(f"{run} does not exist; {expected}")


def hub_base(folder: Path) -> dict[str, str] | None:
    """The Hub base model a labeler folder records, ``{"hub": org/name, "revision": commit}``
    (a run that keeps no backbone of its own, on a Hub model), else None; a ``hub`` that is
    no Hub name, or a ``revision`` that is no commit, is one line (as loading says)."""
    cfg = folder / "config.json"
    record = fileio.read_json(cfg, "a seqrep labeler config", ModelError, MAX_RECORD_BYTES)
    base = record.get("base") if isinstance(record, dict) else None
    if not (isinstance(base, dict) and "hub" in base):
        return None
    from seqrep.model.io import checked_hub_base

    repo, commit = checked_hub_base(cfg, base)
    return {"hub": repo, "revision": commit}


def path_is(path: Path, test: Any) -> bool:
    """``test(path)``, False where the name cannot be a file's (too long, a NUL byte)."""
    try:
        return bool(test(path))
    except (OSError, ValueError):
        return False


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:60] + "..."


def one_line(value: object) -> str:
    """``value`` as text on one line: control, format (bidi) and separator characters become
    spaces, runs of spaces one, at most :data:`MAX_SHOWN` characters."""
    text = "".join(" " if unicodedata.category(c)[0] in "CZ" else c for c in str(value))
    text = " ".join(text.split())
    return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN] + "..."


def shown_text(value: object) -> str:
    """``value`` as inert Markdown text: one line, HTML's specials as entities, Markdown's
    backslash-escaped (read back, it shows the value itself)."""
    return MARKDOWN.sub(r"\\\1", html.escape(one_line(value), quote=True))


def shown_code(value: object) -> str:
    """``value`` as a code span when nothing in it ends one, a table cell, reads as HTML or
    looks like a link; else as :func:`shown_text`."""
    text = one_line(value)
    if not text:
        return "(empty)"
    inert = not NOT_IN_CODE & set(text) and "](" not in text  # no link's look either
    return f"`{text}`" if inert else shown_text(text)


def base_model(config: LabelerConfig, folder: Path | None = None) -> str | None:
    """The Hub id of the model the labeler was trained on: the Hub base the labeler
    ``folder`` records, a packaged alias's Hub twin, a Hub id as given; None for a local
    folder (no one else can name it)."""
    recorded = None if folder is None else hub_base(folder)
    if recorded is not None:
        return recorded["hub"]
    if config.model in PACKAGED:
        return PACKAGED[config.model].hub_id
    parsed = None if path_is(Path(config.model), Path.exists) else hub_name(config.model)
    return parsed[0] if parsed else None


def model_kind(config: LabelerConfig, folder: Path) -> str | None:
    """``"encoder"`` or ``"decoder"``, as the backbone's loader would tell (its config's
    ``model_type`` a masked LM's), from what is at hand without loading it: the saved
    backbone's config, a packaged model's kind, the base's config in a local folder or in
    huggingface_hub's cache; None when none of them is here. Only decoders take ``unmask``."""
    from huggingface_hub import try_to_load_from_cache
    from transformers.models.auto.modeling_auto import MODEL_FOR_MASKED_LM_MAPPING_NAMES

    if config.unmask != "none":
        return "decoder"
    if config.model in PACKAGED:
        return PACKAGED[config.model].kind
    record = fileio.read_json(folder / "config.json", "a seqrep labeler config", ModelError,
                              MAX_RECORD_BYTES)
    base = record.get("base") if isinstance(record, dict) else None
    places: list[Any] = [folder / "backbone" / "config.json",
                         Path(config.model) / "config.json"]
    if isinstance(base, dict) and isinstance(base.get("path"), str):
        places.append(Path(base["path"]) / "config.json")
    recorded = hub_base(folder)
    hub = (recorded["hub"], recorded["revision"]) if recorded else hub_name(config.model)
    if hub is not None:
        try:
            places.append(try_to_load_from_cache(hub[0], "config.json", revision=hub[1]))
        except (ValueError, OSError):  # a name or revision huggingface_hub does not take
            pass
    for place in places:
        if not isinstance(place, (str, Path)) or not path_is(Path(place), Path.is_file):
            continue
        try:
            data = fileio.read_json(Path(place), "a model config", ModelError, MAX_RECORD_BYTES)
        except ModelError:
            continue
        if isinstance(data, dict) and isinstance(data.get("model_type"), str):
            return "encoder" if data["model_type"] in MODEL_FOR_MASKED_LM_MAPPING_NAMES \
                else "decoder"
    return None


def reads(config: LabelerConfig, kind: str | None) -> str:
    """How the labeler reads a sentence, said for its strategy: once or fed k = r + 1 times,
    by an encoder, a causal decoder or one with unmasked layers."""
    r = config.repetitions
    fed = "reads each sentence once" if r == 0 else \
        f"feeds each sentence k = r + 1 = {r + 1} times"
    later = "causal decoder's states in the later copies see the whole sentence"
    if kind == "encoder":
        return f"{fed}: an encoder, whose states see the whole sentence" \
            + ("." if r == 0 else " in every copy.")
    if config.unmask != "none":
        layers = {"full": "in every layer", "middle": "in the middle layers"}.get(
            config.unmask) or "in layers " + ", ".join(
            map(str, parse_unmask(config.unmask))) + " (counted from 0)"
        tail = ", so a word's state sees the whole sentence." if config.unmask == "full" \
            else " and causal in the others."
        return f"{fed}, with the decoder's attention unmasked (both ways) {layers}{tail}"
    if kind == "decoder":
        return fed + (", left to right: a causal decoder, so a word's state sees only the "
                      "words up to it." if r == 0 else f", so that a {later}.")
    return fed + ("." if r == 0 else f" (so that a {later}).")


def run_records(run: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """A run folder's ``run.json`` and a finished run's ``metrics.json``, read bounded (empty
    where the folder is a labeler folder, or the run has not finished). Read here, not with
    :mod:`seqrep.train.folder`, which sits above the model layer; each value the card uses
    is checked where it is used."""
    saved = _record(run / "run.json", "a seqrep run configuration")
    if saved and not all(isinstance(saved.get(k), dict) for k in ("labeler", "train")):
        raise ModelError(f"{run / 'run.json'}: not a seqrep run configuration (expected an "
                         f"object with 'labeler' and 'train' objects)")
    metrics = _record(run / "metrics.json", "a finished run's metrics") if saved else {}
    if metrics.get("status") != "finished":
        return saved, {}
    for key in MEASURED:
        value = metrics.get(key)
        if value is not None and not (isinstance(value, (int, float)) and not isinstance(
                value, bool) and math.isfinite(value)):
            raise ModelError(f"{run / 'metrics.json'}: {key}={_short(value)}; expected a "
                             f"number")
    source = metrics.get("validation_source")
    if source is not None and not isinstance(source, str):
        raise ModelError(f"{run / 'metrics.json'}: validation_source={_short(source)}; "
                         f"expected a text")
    return saved, metrics


def _record(path: Path, what: str) -> dict[str, Any]:
    if not (path.exists() or path.is_symlink()):
        return {}
    data = fileio.read_json(path, what, ModelError, MAX_RECORD_BYTES)
    if not isinstance(data, dict):
        raise ModelError(f"{path}: not {what} (expected an object)")
    return data


def _score(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1


def _dataset(train: dict[str, Any]) -> tuple[str | None, str | None]:
    """(name shown, Hub dataset id) of the training data; a local path shows as its name."""
    from seqrep.data.hub import HUB_DATASETS

    name = train.get("dataset")
    if not isinstance(name, str) or not name:
        return None, None
    if name in HUB_DATASETS:
        return name, HUB_DATASETS[name].repo
    if name.startswith("hf:"):
        repo = name[3:].split(":")[0]
        return repo, repo if hub_name(repo) else None
    return (name if name in LANGUAGES else Path(name).name), None


def model_card(run: str | Path, repo_id: str | None = None) -> str:
    """The card of the run (or labeler) folder ``run``, as pushed to ``repo_id`` (the usage
    examples load that name; default ``ORG/NAME``)."""
    from huggingface_hub import EvalResult, ModelCard, ModelCardData

    from seqrep.model.hub import repo_name
    from seqrep.model.io import model_dir, read_config

    run = Path(run)
    check_folder(run)
    if repo_id is not None:
        repo_name(repo_id)
    folder = model_dir(run)
    config = read_config(folder)
    saved, metrics = run_records(run)
    train = saved.get("train", {})
    shown, dataset_id = _dataset(train)
    named = one_line(shown) if shown and PLAIN_NAME.fullmatch(one_line(shown)) else None
    repo = repo_id or PLACEHOLDER
    base = base_model(config, folder)
    results = [EvalResult(task_type="token-classification", task_name="Token classification",
                          dataset_type=dataset_id or named or "custom",
                          dataset_name=named or "custom", dataset_split=split,
                          metric_type=score, metric_value=float(metrics[split][score]),
                          metric_name=f"{score} ({split})")
               for split in ("test", "validation") if isinstance(metrics.get(split), dict)
               for score in SCORES if _score(metrics[split].get(score))]
    data = ModelCardData(
        library_name="seqrep", pipeline_tag="token-classification", base_model=base,
        datasets=[dataset_id] if dataset_id else None,
        language=LANGUAGES.get(str(train.get("dataset"))),
        license=LICENSES.get(base or ""),
        tags=["seqrep", "token-classification", "sequence-labeling", config.task,
              f"finetune-{config.finetune}"],
        model_name=repo, eval_results=results or None)
    body = _body(repo, config, saved, metrics, base, shown, model_kind(config, folder))
    return str(ModelCard(f"---\n{data.to_yaml()}\n---\n\n{body}"))


def _shown(value: Any) -> Any:
    """A setting as the card shows it: a local path by its last part (where a file lay on
    the machine that trained it is of no use to a reader, and may say who they are)."""
    if isinstance(value, str) and ("/" in value or "\\" in value) and not hub_name(value):
        return Path(value).name
    return value


def _body(repo: str, config: LabelerConfig, saved: dict[str, Any], metrics: dict[str, Any],
          base: str | None, dataset: str | None, kind: str | None) -> str:
    """The card's text: what it is, its scores, labels, settings, training, usage (``repo``
    and ``base`` are Hub names, checked; every value from the records is shown inert)."""
    on = f"[{base}](https://huggingface.co/{base})" if base \
        else f"{shown_code(_shown(config.model))} (a local model)"
    lines = [f"# {repo}", "",
             f"A [seqrep](https://pypi.org/project/seqrep/) sequence labeler ({config.task}) on "
             f"{on}, which {reads(config, kind)}"
             + (f" Trained on {shown_code(dataset)}." if dataset else ""), ""]
    scored = [s for s in ("test", "validation") if isinstance(metrics.get(s), dict)]
    if scored:
        lines += ["## Results", "", "| split | " + " | ".join(SCORES[:3]) + " |",
                  "|---|" + "---|" * 3]
        for split in scored:
            cells = [f"{100 * metrics[split][k]:.2f}" if _score(metrics[split].get(k))
                     else "-" for k in SCORES[:3]]
            lines.append(f"| {split} | " + " | ".join(cells) + " |")
        lines.append("")
    # the line starts with words of the card's own, so no label starts a heading or a list
    lines += ["## Labels", "", f"{len(config.labels)} labels: "
              + (", ".join(shown_code(x) for x in config.labels) or "(none)"), "",
              "## Settings", "", "| setting | value |", "|---|---|"]
    values = config.to_dict()
    lines += [f"| {k} | {shown_code(repr(values[k]))} |" for k in SETTINGS if k in values]
    lines.append("")
    if saved:
        lines += ["## Training", "", "| setting | value |", "|---|---|"]
        lines += [f"| {shown_code(k)} | {shown_code(repr(_shown(v)))} |"
                  for k, v in saved["train"].items() if v is not None]
        lines += [f"| {key} | {metrics[key]} |" for key in MEASURED
                  if metrics.get(key) is not None]
        if metrics.get("validation_source") is not None:
            lines.append(f"| validation_source | {shown_code(metrics['validation_source'])} |")
        lines.append("")
    lines += ["## Usage", "", "Command line (`pip install seqrep-labeler`):", "", "```bash",
              f'seqrep predict {repo} "Angela Merkel visited Paris."',
              f"seqrep serve {repo}  # POST /v1/label", "```", "", "Python:", "", "```python",
              "from seqrep.model.labeler import SequenceLabeler",
              "from seqrep.predict.tagger import predict_text", "",
              f'labeler = SequenceLabeler.from_pretrained("{repo}")',
              'print(predict_text(labeler, ["Angela Merkel visited Paris."]))', "```", "",
              "spaCy (`pip install 'seqrep-labeler[spacy]'`):", "", "```python", "import spacy",
              "import seqrep.serve.spacy_component", "", 'nlp = spacy.blank("en")',
              f'nlp.add_pipe("seqrep", config={{"model": "{repo}"}})',
              'print(nlp("Angela Merkel visited Paris.").ents)', "```", "",
              f"A revision loads as `{repo}@REVISION`; set `HF_HUB_OFFLINE=1` to read only "
              f"the local cache.", ""]
    return "\n".join(lines)
