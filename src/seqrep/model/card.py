"""The model card (a Hub repository's ``README.md``) of a seqrep labeler, written from the run's
own records, so what it claims is what the run measured and how it was set up.

The YAML metadata is huggingface_hub's :class:`~huggingface_hub.ModelCardData` (the Hub reads
``library_name``, ``pipeline_tag``, ``base_model``, ``datasets``, ``language``, ``license`` and
``tags`` from it, and its ``model-index`` from the evaluation results), so the card parses as
the Hub parses it. Only what is known is written: a base model's license for the packaged
models (whose licenses are fixed), a language for the named datasets (all English), a dataset
id for the named datasets that live on the Hub; a local file or folder is named by nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from seqrep import fileio
from seqrep.errors import ModelError
from seqrep.model.hub import hub_name
from seqrep.model.labeler_config import LabelerConfig
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


def hub_base(folder: Path) -> dict[str, str] | None:
    """The Hub base model a labeler folder records, ``{"hub": org/name, "revision": commit}``
    (a run that keeps no backbone of its own, on a Hub model), else None."""
    record = fileio.read_json(folder / "config.json", "a seqrep labeler config", ModelError,
                              MAX_RECORD_BYTES)
    base = record.get("base") if isinstance(record, dict) else None
    return base if isinstance(base, dict) and isinstance(base.get("hub"), str) else None


def base_model(config: LabelerConfig, folder: Path | None = None) -> str | None:
    """The Hub id of the model the labeler was trained on: the Hub base the labeler
    ``folder`` records, a packaged alias's Hub twin, a Hub id as given; None for a local
    folder (no one else can name it)."""
    recorded = None if folder is None else hub_base(folder)
    if recorded is not None:
        return recorded["hub"]
    if config.model in PACKAGED:
        return PACKAGED[config.model].hub_id
    parsed = None if Path(config.model).exists() else hub_name(config.model)
    return parsed[0] if parsed else None


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
    return saved, metrics if metrics.get("status") == "finished" else {}


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

    from seqrep.model.io import model_dir, read_config

    run = Path(run)
    if not run.is_dir():
        raise ModelError(f"{run} does not exist; expected a run folder or a saved labeler")
    folder = model_dir(run)
    config = read_config(folder)
    saved, metrics = run_records(run)
    train = saved.get("train", {})
    shown, dataset_id = _dataset(train)
    repo = repo_id or PLACEHOLDER
    base = base_model(config, folder)
    results = [EvalResult(task_type="token-classification", task_name="Token classification",
                          dataset_type=dataset_id or shown or "custom",
                          dataset_name=shown or "custom", dataset_split=split,
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
    body = _body(repo, config, saved, metrics, base, shown)
    return str(ModelCard(f"---\n{data.to_yaml()}\n---\n\n{body}"))


def _shown(value: Any) -> Any:
    """A setting as the card shows it: a local path by its last part (where a file lay on
    the machine that trained it is of no use to a reader, and may say who they are)."""
    if isinstance(value, str) and ("/" in value or "\\" in value) and not hub_name(value):
        return Path(value).name
    return value


def _body(repo: str, config: LabelerConfig, saved: dict[str, Any], metrics: dict[str, Any],
          base: str | None, dataset: str | None) -> str:
    """The card's text: what it is, its scores, labels, settings, training, usage."""
    on = f"[{base}](https://huggingface.co/{base})" if base \
        else f"`{_shown(config.model)}` (a local model)"
    lines = [f"# {repo}", "",
             f"A [seqrep](https://pypi.org/project/seqrep/) sequence labeler ({config.task}) on "
             f"{on}, which reads each sentence repeated {config.repetitions + 1} times so a "
             f"decoder's states see the whole sentence."
             + (f" Trained on {dataset}." if dataset else ""), ""]
    scored = [s for s in ("test", "validation") if isinstance(metrics.get(s), dict)]
    if scored:
        lines += ["## Results", "", "| split | " + " | ".join(SCORES[:3]) + " |",
                  "|---|" + "---|" * 3]
        for split in scored:
            cells = [f"{100 * metrics[split][k]:.2f}" if _score(metrics[split].get(k))
                     else "-" for k in SCORES[:3]]
            lines.append(f"| {split} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += ["## Labels", "", ", ".join(f"`{x}`" for x in config.labels) or "(none)", "",
              "## Settings", "", "| setting | value |", "|---|---|"]
    values = config.to_dict()
    lines += [f"| {k} | `{values[k]!r}` |" for k in SETTINGS if k in values]
    lines.append("")
    if saved:
        lines += ["## Training", "", "| setting | value |", "|---|---|"]
        lines += [f"| {k} | `{_shown(v)!r}` |" for k, v in saved["train"].items()
                  if v is not None]
        for key in ("train_seconds", "steps", "train_sentences", "train_tokens",
                    "validation_source"):
            if isinstance(metrics.get(key), (int, float, str)):
                lines.append(f"| {key} | {_shown(metrics[key])} |")
        lines.append("")
    lines += ["## Usage", "", "Command line (`pip install seqrep`):", "", "```bash",
              f'seqrep predict {repo} "Angela Merkel visited Paris."',
              f"seqrep serve {repo}  # POST /v1/label", "```", "", "Python:", "", "```python",
              "from seqrep.model.labeler import SequenceLabeler",
              "from seqrep.predict import predict_text", "",
              f'labeler = SequenceLabeler.from_pretrained("{repo}")',
              'print(predict_text(labeler, ["Angela Merkel visited Paris."]))', "```", "",
              "spaCy (`pip install 'seqrep[spacy]'`):", "", "```python", "import spacy",
              "import seqrep.serve.spacy_component", "", 'nlp = spacy.blank("en")',
              f'nlp.add_pipe("seqrep", config={{"model": "{repo}"}})',
              'print(nlp("Angela Merkel visited Paris.").ents)', "```", "",
              f"A revision loads as `{repo}@REVISION`; set `HF_HUB_OFFLINE=1` to read only "
              f"the local cache.", ""]
    return "\n".join(lines)
