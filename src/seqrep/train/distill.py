"""``distill``: a finished run (the teacher) labels text once; a student trains on its labels.

The teacher labels the training sentences and any unlabeled text (:func:`read_unlabeled`) into
a cache of per-word label distributions in the output folder
(:func:`seqrep.train.teacher_cache.label_cache`); the student then trains as ``seqrep train``
trains (:func:`seqrep.train.train`, every option), on the teacher's distributions at a
temperature, mixed with the gold labels where gold exists (:class:`SoftTargets`). The output is
an ordinary run folder whose ``run.json`` names the teacher under ``distill``, with the
teacher's labeling speed; ``metrics.json`` holds it too, with the whole distillation's time.

Document context. A teacher with ``context="document"`` labels each training sentence inside
its document (the sentences' document ids, as ``seqrep train`` reads them), so its
distributions are those it gives when it reads the whole document; the unlabeled text's
documents are its lines (a raw-text line, or a ``.jsonl`` record, is one document, split into
sentences by seqrep's rules; consecutive records with one ``"doc_id"`` are one), as
``seqrep predict`` reads them. The student, of
either context, trains on these per-word distributions; one with document context reads the
same documents. A sentence-context teacher labels each distinct sentence once.

Output folder, beside what ``train`` writes::

    distill.json       the request (teacher, unlabeled file, temperature, gold weight,
                       configs), so ``--resume`` continues an interrupted labeling too
    teacher-labels/    the teacher's log-probabilities (:mod:`seqrep.train.teacher_cache`)
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import torch

from seqrep.config import LabelerConfig, TrainConfig
from seqrep.errors import ConfigError, DataError, SeqrepError, first_line
from seqrep.files.atomic import write_json
from seqrep.train import distill_folder, teacher_cache
from seqrep.train.distill_folder import REQUEST, check_apart, check_fresh, read_request
from seqrep.train.folder import logged_eval_seconds
from seqrep.train.objective import soft_cross_entropy
from seqrep.train.teacher_cache import CACHE, CHUNK, label_cache, teacher_key

__all__ = ["CACHE", "CHUNK", "Distillation", "SoftTargets", "distill", "label_cache",
           "read_unlabeled", "teacher_config"]


@dataclass
class SoftTargets:
    """The distillation loss of the training sentences (see :class:`~seqrep.train.objective.
    BatchLoss`): per word, the soft cross-entropy against the teacher at ``temperature``;
    on words with gold labels, ``(1 - gold_weight)`` of it plus ``gold_weight`` of the
    cross-entropy on the gold label."""

    logp: list[torch.Tensor]  # per training sentence: (words, labels) teacher log-probs
    gold: list[bool]  # per training sentence: its tags are gold
    temperature: float = 1.0
    gold_weight: float = 0.0

    def loss(self, logits: torch.Tensor, labels: torch.Tensor | None,
             items: list[Any]) -> torch.Tensor:
        places = [sw for it in items for sw in it.targets()]  # (sentence, word), read order
        target = torch.stack([self.logp[s][w] for s, w in places]).to(logits.device)
        soft = soft_cross_entropy(logits, target, self.temperature)
        if not self.gold_weight or labels is None:
            return soft.sum()
        w = torch.tensor([self.gold_weight * self.gold[s] for s, _ in places],
                         device=logits.device)
        hard = torch.nn.functional.cross_entropy(logits.float(), labels, reduction="none")
        return ((1 - w) * soft + w * hard).sum()


@dataclass
class Distillation:
    """Distillation as a training objective (:class:`~seqrep.train.objective.Objective`):
    the teacher's distributions, one per training sentence and then one per unlabeled
    sentence, the unlabeled sentences to add (words and document id), the loss's settings
    and the ``run.json`` entry. :func:`distill` has checked the output folder and moved any
    old run aside before the teacher labeled into it, so the run keeps the folder's files
    (``keeps_folder``)."""

    targets: list[torch.Tensor]
    words: list[tuple[str, ...]]  # the sentences ``targets`` belong to, in their order
    unlabeled: list[tuple[tuple[str, ...], str]]
    temperature: float
    gold_weight: float
    record: dict[str, Any] = field(default_factory=dict)
    keeps_folder: ClassVar[bool] = True

    def bind(self, train: list[Any], labels: Sequence[str]) -> tuple[list[Any], SoftTargets]:
        """The training split with the unlabeled sentences added (their tags a placeholder
        that no loss reads), and the loss over it."""
        from seqrep.data.types import Sentence

        extra = [Sentence(w, (labels[0],) * len(w), doc_id=d) for w, d in self.unlabeled]
        sentences = list(train) + extra
        if [tuple(s.words) for s in sentences] != self.words:
            raise SeqrepError("the training split differs from the sentences the teacher "
                              "labeled; rerun without --resume")
        return sentences, SoftTargets(self.targets,
                                      [True] * len(train) + [False] * len(extra),
                                      self.temperature, self.gold_weight)


def teacher_config(run: Path, hub: str | None = None) -> tuple[LabelerConfig, dict[str, Any]]:
    """The labeler config and the ``run.json`` of a finished run folder (``run.json`` and
    ``best/``), or one line saying why ``run`` is not one; a Hub teacher's snapshot
    (``hub``: its name) holds no run records."""
    from seqrep.model.io import read_config
    from seqrep.train.folder import read_run_json

    if hub is not None:
        return read_config(run), {}
    if not run.is_dir():
        raise ConfigError(f"teacher {run}: not a folder; expected a finished seqrep run")
    saved = read_run_json(run)
    if not (run / "best" / "config.json").is_file():
        raise ConfigError(f"teacher {run}: a run without a best/ model; expected a finished "
                          f"seqrep run")
    return read_config(run / "best"), saved


def check_student(config: LabelerConfig) -> Any:
    """The student's model configuration loads (a typo in ``--student`` is one line before the
    teacher labels anything, not after); returns it."""
    from seqrep.errors import ModelError
    from seqrep.model.backbone import quiet_transformers, resolve_source
    from seqrep.model.checks import check_files
    from seqrep.model.hub import base_snapshot
    from seqrep.model.packaged import PACKAGED

    source = resolve_source(config.model)
    # a Hub id is read from its snapshot, downloaded (or refused) through seqrep's one
    # download, as the loader reads it: never by transformers' own fetch of the config
    hub = None if config.model in PACKAGED else base_snapshot(source)
    if hub is not None:
        source = str(hub[0])
    check_files(Path(source), within=Path("/"))  # a base model, as load_backbone's
    try:
        from transformers import AutoConfig

        with quiet_transformers():
            return AutoConfig.from_pretrained(source,
                                              trust_remote_code=config.trust_remote_code)
    except Exception as err:  # noqa: BLE001 - config loaders raise many types
        raise ModelError(f"--student {config.model!r}: cannot load its configuration "
                         f"({first_line(err)})") from None


# a student whose tokenizer gives only its unknown token (or nothing) for more than this share
# of the teacher's distinct words cannot learn from them (a folder without tokenizer files
# gets a tokenizer with an empty vocabulary: every word is unknown)
MAX_UNSPLIT = 0.5
SPLIT_CHECK_WORDS = 20_000  # distinct words checked (the first ones), to keep start-up short


def check_student_tokenizer(config: LabelerConfig, model_config: Any,
                            words: list[tuple[str, ...]]) -> None:
    """The student's tokenizer loads, belongs to its model and splits the teacher's words
    (see :data:`MAX_UNSPLIT`), or one line naming ``--student``."""
    from seqrep.encode.align import WordTokenizer
    from seqrep.errors import ModelError
    from seqrep.model.backbone import quiet_transformers, resolve_source
    from seqrep.model.checks import check_tokenizer

    source = resolve_source(config.model)
    try:
        from transformers import AutoTokenizer

        with quiet_transformers():
            tokenizer = AutoTokenizer.from_pretrained(
                source, trust_remote_code=config.trust_remote_code)
        text_config = model_config.get_text_config()
        if getattr(text_config, "vocab_size", None):
            check_tokenizer(tokenizer, int(text_config.vocab_size), source)
        distinct = list(dict.fromkeys(w for s in words for w in s))[:SPLIT_CHECK_WORDS]
        pieces = WordTokenizer(tokenizer, cache_size=0)(distinct)
    except Exception as err:  # noqa: BLE001 - tokenizer loaders raise many types
        raise ModelError(f"--student {config.model!r}: its tokenizer cannot split the "
                         f"teacher's words ({first_line(err)})") from None
    # a word the tokenizer drops is read at its unknown token (WordTokenizer' fallback); a
    # tokenizer without one is byte-level here, and splits every word
    unsplit = [w for w, ids in zip(distinct, pieces) if set(ids) <= {tokenizer.unk_token_id}]
    if distinct and len(unsplit) > MAX_UNSPLIT * len(distinct):
        raise ModelError(f"--student {config.model!r}: its tokenizer splits "
                         f"{len(unsplit)} of the teacher's {len(distinct)} distinct words "
                         f"into nothing but its unknown token (e.g. {unsplit[0]!r}); expected "
                         f"a tokenizer with a vocabulary for this text")


def read_unlabeled(path: Path) -> list[tuple[tuple[str, ...], str]]:
    """The sentences of an unlabeled file, each with its document id: raw text one per line,
    split into sentences and words by seqrep's rules, or ``.jsonl`` records with ``"text"``
    or ``"words"`` (as ``seqrep predict --input`` reads them). A line (record) is one
    document, its sentences sharing the id ``unlabeled:LINE``, except that consecutive
    records with one ``"doc_id"`` are one document (``unlabeled-doc:DOC_ID``), as predict
    reads them."""
    from seqrep.predict.inputs import read_records
    from seqrep.predict.tagger import split_text

    path = Path(path)
    if not path.is_file():
        raise DataError(path, "--unlabeled: not a file; expected UTF-8 text, one text per line")
    with open(path, "rb") as f:
        head = f.read(1 << 16)
    if b"\0" in head:
        raise DataError(path, "--unlabeled: a binary file; expected UTF-8 text, one text per "
                              "line")
    out = []
    for n, text, pre, doc in read_records(path):
        key = f"unlabeled:{n}" if doc is None else f"unlabeled-doc:{doc}"
        out += [(tuple(text[s:e] for s, e in words), key) for _, words in split_text(text, pre)]
    if not out:
        raise DataError(path, "--unlabeled: empty (no words); expected UTF-8 text, one text "
                              "per line")
    return out


def distill(teacher: str | Path, labeler_config: LabelerConfig, train_config: TrainConfig,
            output: str | Path, temperature: float = 1.0, gold_weight: float = 0.0,
            unlabeled: str | Path | None = None, overwrite: bool = False, resume: bool = False,
            quiet: bool = False, reader_options: dict[str, Any] | None = None,
            chunk: int = CHUNK, teacher_labels: str | Path | None = None) -> dict[str, Any]:
    """Distil the run ``teacher`` into a student (``labeler_config``) trained as
    :func:`seqrep.train.train` trains, on the teacher's label distributions.

    Args:
        teacher: a finished run folder, or a labeler on the Hugging Face Hub
            (``org/name[@revision]``, :func:`seqrep.model.hub.resolve`; recorded pinned).
        labeler_config: the student (``labels`` empty or the teacher's; ``task`` auto or the
            teacher's).
        train_config: data and optimisation settings, as for ``train``.
        output: the student's run folder.
        temperature: T of the soft targets (both distributions are softened by it).
        gold_weight: share of the gold labels' cross-entropy in the loss of words that have
            gold labels (0: the teacher's alone).
        unlabeled: a file of more text for the teacher to label (see :func:`read_unlabeled`).
        overwrite, resume, quiet, reader_options: as for ``train``; ``resume`` continues an
            interrupted labeling or training with the settings in ``distill.json``.
        chunk: sentences per cache file.
        teacher_labels: the folder of the teacher's labels (default ``OUTPUT/teacher-labels``):
            new, empty or a label cache seqrep made; students of one teacher may share one
            (its chunks are keyed by the teacher's content, the precision it labeled at and
            the sentences), one distillation at a time. On ``resume`` the teacher,
            ``teacher_labels`` and ``unlabeled`` are the recorded ones (others given are
            refused; see :mod:`seqrep.train.distill_folder`).

    Returns:
        ``train``'s metrics.
    """
    from seqrep.data.splits import load_data
    from seqrep.evaluate import check_labels
    from seqrep.train.folder import check_output, resumed_config
    from seqrep.train.probes import check_exit_layer
    from seqrep.train.run import fit, plan_run, train

    began = time.perf_counter()
    output = Path(output).resolve()
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:  # every process would label and write
        raise ConfigError("seqrep distill runs in one process for now; start it without "
                          "torchrun / accelerate launch")
    names = ("--output", "teacher", "--teacher-labels")
    teacher, hub = distill_folder.locate_teacher(teacher)
    if resume:
        if (output / "metrics.json").exists():
            return train(labeler_config, train_config, output, resume=True)
        req = read_request(output)
        teacher, teacher_labels, unlabeled = distill_folder.resumed_paths(
            output, req, teacher, teacher_labels, unlabeled)
        names = ("--output", f"{output / REQUEST}: teacher", f"{output / REQUEST}: cache")
        temperature, gold_weight = req["temperature"], req["gold_weight"]
    teacher = Path(teacher).resolve()
    cache = Path(teacher_labels).resolve() if teacher_labels else output / CACHE
    check_apart(output, teacher, cache, names, hub)
    if resume or cache != output / CACHE:  # a new or replaced folder's own cache is new
        teacher_cache.check_cache_folder(cache, names[2])
    if resume:  # announced once the paths are checked, before the student's model loads
        labeler_config, train_config, reader_options = resumed_config(
            output, labeler_config, train_config, saved=req, source=REQUEST)
    tcfg, teacher_run, student = _check_teacher(teacher, labeler_config, temperature,
                                                gold_weight, hub)
    extra = _unlabeled(unlabeled, output if resume else None)
    student_model = check_student(student)
    check_exit_layer(student)  # before the teacher labels anything
    if not resume:
        check_fresh(output, overwrite, check_output)
    data = load_data(train_config, reader_options)
    check_labels(data.train, tcfg.labels, "the training split", task=tcfg.task)
    _notice_held_out(extra, data)
    words = [tuple(s.words) for s in data.train] + [w for w, _ in extra]
    check_student_tokenizer(student, student_model, words)
    aside = None
    if not resume:  # an old run stays (aside) until the student has loaded
        aside = distill_folder.start(output, _request(
            output, hub or teacher, unlabeled, temperature, gold_weight, student, train_config,
            reader_options, cache))
    try:
        key = teacher_key(teacher)
        logp, speed = teacher_cache.teacher_logp(teacher, tcfg, train_config, words, data,
                                                 extra, cache, chunk, quiet, key)
        record = {"teacher": hub or str(teacher), "teacher_key": key,
                  "teacher_key_kind": "content",
                  "teacher_model": tcfg.model,
                  "teacher_context": tcfg.context,
                  "teacher_dataset": teacher_run.get("train", {}).get("dataset"),
                  "temperature": temperature, "gold_weight": gold_weight,
                  "unlabeled": str(unlabeled) if unlabeled else None,
                  "unlabeled_sentences": len(extra),
                  "cache": CACHE if cache == output / CACHE else str(cache), **speed}
        objective = Distillation(logp, words, extra, temperature, gold_weight,
                                 {"distill": record})
        metrics = fit(plan_run(student, train_config, output,
                               resume=(output / "run.json").exists(), quiet=quiet,
                               reader_options=reader_options, objective=objective))
    except BaseException:
        distill_folder.restore(output, aside)  # the student never loaded: the old run is put back
        raise
    if metrics.get("status") == "finished":
        _finish(output, metrics, record, began, resume)
    return metrics


def _unlabeled(unlabeled: str | Path | None, resumed: Path | None
               ) -> list[tuple[tuple[str, ...], str]]:
    """The unlabeled sentences; on a resume (``resumed``: the student's folder) a problem
    with the recorded file names ``distill.json`` too."""
    if not unlabeled:
        return []
    try:
        return read_unlabeled(Path(unlabeled))
    except SeqrepError as err:
        if resumed is None:
            raise
        raise ConfigError(f"{resumed / REQUEST}: unlabeled: {err}") from None


def _check_teacher(teacher: Path, labeler_config: LabelerConfig, temperature: float,
                   gold_weight: float, hub: str | None
                   ) -> tuple[LabelerConfig, dict[str, Any], LabelerConfig]:
    """The teacher's config and ``run.json``, and the student (the teacher's labels and task),
    or one line saying which setting does not fit."""
    if not temperature > 0:
        raise ConfigError(f"--temperature {temperature}; expected a positive number")
    if not 0 <= gold_weight <= 1:
        raise ConfigError(f"--gold-weight {gold_weight}; expected a share in [0, 1]")
    tcfg, teacher_run = teacher_config(teacher, hub)
    if labeler_config.labels and list(labeler_config.labels) != list(tcfg.labels):
        raise ConfigError(f"--labels {','.join(labeler_config.labels)} differ from the labels "
                          f"of teacher {teacher} ({','.join(tcfg.labels)}); leave --labels "
                          f"unset: a student learns its teacher's labels")
    if labeler_config.task not in ("auto", tcfg.task):
        raise ConfigError(f"--task {labeler_config.task} differs from the task of teacher "
                          f"{teacher} ({tcfg.task})")
    student = labeler_config.replace(labels=list(tcfg.labels), task=tcfg.task)
    return tcfg, teacher_run, student


def _request(output: Path, teacher: Path | str, unlabeled: str | Path | None,
             temperature: float, gold_weight: float, student: LabelerConfig,
             train_config: TrainConfig, reader_options: dict[str, Any] | None,
             cache: Path) -> dict[str, Any]:
    """The settings of the distillation (``distill.json``), so ``--resume`` can carry on; the
    student's own cache is recorded relative to its folder, which may move."""
    return {"teacher": str(teacher), "unlabeled": str(Path(unlabeled).resolve())
            if unlabeled else None, "temperature": temperature, "gold_weight": gold_weight,
            "labeler": student.to_dict(), "train": train_config.to_dict(),
            "reader_options": reader_options or {},
            "cache": CACHE if cache == output / CACHE else str(cache)}


def _finish(output: Path, metrics: dict[str, Any], record: dict[str, Any], began: float,
            resume: bool) -> None:
    """A finished student's ``metrics.json`` with the distillation's figures added."""
    metrics["distill"] = {k: record[k] for k in (
        "teacher", "teacher_sentences", "teacher_seconds", "teacher_sentences_per_second")}
    metrics["distill"].update(seconds=round(time.perf_counter() - began, 2),
                              resumed=resume, work_seconds=_work_seconds(output, metrics,
                                                                         record))
    write_json(output / "metrics.json", metrics)


def _notice_held_out(extra: list[tuple[tuple[str, ...], str]], data: Any) -> None:
    """One notice when unlabeled sentences are validation or test sentences (that the
    training split does not hold too): labeled by the teacher, they would carry held-out text
    into training (issue 25: never the validation or test text)."""
    train = {tuple(s.words) for s in data.train}
    held = {tuple(s.words) for s in list(data.eval) + list(data.test)} - train
    n = sum(w in held for w, _ in extra)
    if n:
        print(f"notice: {n} of the {len(extra)} --unlabeled sentences are in the validation or "
              f"test split (and not in the training split): the teacher's labels on them "
              f"carry held-out text into training", file=sys.stderr, flush=True)


def _work_seconds(output: Path, metrics: dict[str, Any], record: dict[str, Any]) -> float:
    """The distillation's work, whichever sessions did it: the teacher's labeling (its
    chunks' seconds), the training steps, each validation (``log.jsonl``) and the test
    (model loading and data reading not counted)."""
    evals = logged_eval_seconds(output / "log.jsonl")
    return round((record["teacher_seconds"] or 0) + metrics.get("train_seconds", 0) + evals
                 + (metrics.get("test") or {}).get("seconds", 0), 2)

