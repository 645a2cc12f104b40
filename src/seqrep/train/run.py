"""``train``: one function over config objects that trains, selects and tests a labeler.

Run folder (``output``)::

    run.json      the resolved configuration (labeler + training)
    best/         the best model by validation micro-F1 (``SequenceLabeler.from_pretrained``)
    checkpoint/   the latest resumable state (see :mod:`seqrep.train.checkpoint`)
    log.jsonl     one line per evaluation
    metrics.json  the final report: best validation scores, test scores, times
"""

from __future__ import annotations

import contextlib
import gc
import os
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from seqrep.config import TRAIN_SAVED_BEFORE, LabelerConfig, TrainConfig
from seqrep.contexts import context_of
from seqrep.data.splits import load_data
from seqrep.errors import SeqrepError, first_line
from seqrep.evaluate import check_labels, check_test_labels
from seqrep.fileio import read_json, write_json
from seqrep.model.device import Placement, ran_on_line
from seqrep.model.labeler import SequenceLabeler
from seqrep.model.tuning import MODES
from seqrep.tasks import DECODINGS, TASKS, resolve_task, task_of
from seqrep.train.loop import Trainer
from seqrep.train.probes import check_exit_layer
from seqrep.train.state import is_number, short_repr

# a run.json is a few kB; anything far larger is not one (and is not read whole)
MAX_RUN_JSON = 1 << 20
# a line of log.jsonl is one evaluation's scores and counts: well under a kilobyte
MAX_LOG_LINE = 1 << 20


def check_output(output: Path, overwrite: bool, resume: bool) -> None:
    """Refuse to clobber anything before a single file is touched.

    A non-empty folder is replaced only with ``overwrite`` and only when it is a seqrep run
    folder (its ``run.json`` fits the schema :func:`read_run_json` checks); the replacing
    itself waits until the data and the model have loaded (:func:`replace_output`), so a typo
    never deletes a finished run.
    """
    if output.exists() and not output.is_dir():
        raise SeqrepError(f"--output {output} is a file; give a folder for the run")
    if resume:
        if not (output / "run.json").exists():
            raise SeqrepError(f"{output}: nothing to resume (no run.json)")
        return
    if output.exists() and any(output.iterdir()):
        if not overwrite:
            raise SeqrepError(f"{output} exists and is not empty; pass --overwrite to replace "
                              f"it or --resume to continue the run in it")
        if not (output / "run.json").is_file():
            raise SeqrepError(f"{output} is not a seqrep run folder (no run.json), so "
                              f"--overwrite will not delete it; choose another --output")
        try:
            read_run_json(output)
        except SeqrepError as err:
            raise SeqrepError(f"{err}; so --overwrite will not delete {output}; choose "
                              f"another --output") from None


def read_run_json(output: Path) -> dict[str, Any]:
    """A run folder's ``run.json`` checked against its schema (``labeler`` and ``train``
    objects that build valid configs), or one line saying why it is not a seqrep run."""
    path = output / "run.json"
    saved = read_json(path, "a seqrep run configuration", SeqrepError, MAX_RUN_JSON)
    try:
        if not isinstance(saved, dict) or not all(isinstance(saved.get(k), dict)
                                                  for k in ("labeler", "train")):
            raise ValueError("expected an object with 'labeler' and 'train' objects")
        LabelerConfig.from_dict(saved["labeler"])
        TrainConfig.from_dict(saved["train"])
        if not isinstance(saved.get("reader_options") or {}, dict):
            raise ValueError("'reader_options' is not an object")
    except (ValueError, TypeError, SeqrepError) as err:
        raise SeqrepError(f"{path}: not a seqrep run configuration ({first_line(err)})"
                          ) from None
    return saved


def resumed_config(output: Path, labeler_config: LabelerConfig, train_config: TrainConfig,
                   expect_model: str | None = None, saved: dict[str, Any] | None = None,
                   source: str = "run.json"
                   ) -> tuple[LabelerConfig, TrainConfig, dict[str, Any]]:
    """The configuration a run resumes with: the folder's ``run.json``, except that
    ``trust_remote_code`` is the caller's (a shared folder never enables remote code) and
    ``max_steps`` is the caller's. The model the folder names is announced on stderr before
    anything loads it; with ``expect_model`` a folder naming another model is refused.
    ``saved``: the checked contents of another file of the folder that holds ``labeler``,
    ``train`` and ``reader_options`` (``source``, its name: a distillation's request)."""
    saved = read_run_json(output) if saved is None else saved
    lab = LabelerConfig.from_dict(saved["labeler"]).replace(
        trust_remote_code=labeler_config.trust_remote_code)
    if expect_model is not None and lab.model != expect_model:
        raise SeqrepError(f"{output / source} names model {lab.model!r}, not "
                          f"{expect_model!r} as this run should; refusing to resume it")
    print(f"resuming {output}: model {lab.model!r} as its {source} names it"
          f"{' (remote code allowed by the caller)' if lab.trust_remote_code else ''}",
          file=sys.stderr, flush=True)
    cfg = TrainConfig.from_dict({**TRAIN_SAVED_BEFORE, **saved["train"]}).replace(
        max_steps=train_config.max_steps)
    return lab, cfg, dict(saved.get("reader_options") or {})


def replace_output(output: Path, resume: bool) -> None:
    """Make ``output`` ready: an old run (checked by :func:`check_output`) is removed, and
    what a killed writer left goes: temporary folders (``.best.tmp-*``, ``.checkpoint.tmp-*``)
    are removed, and a folder moved aside (``.checkpoint.old-*``) whose replacement never
    arrived is put back."""
    if not resume and output.exists():
        shutil.rmtree(output)
    output.mkdir(parents=True, exist_ok=True)
    for stale in output.glob(".*.tmp-*"):
        shutil.rmtree(stale, ignore_errors=True)
    for old in output.glob(".*.old-*"):
        target = output / old.name[1:].rsplit(".old-", 1)[0]
        if not target.exists():
            os.replace(old, target)  # killed between atomic_dir's two renames
        else:
            shutil.rmtree(old, ignore_errors=True)


def trim_log(path: Path, keep: int) -> None:
    """Keep the first ``keep`` lines of ``log.jsonl``: evaluations logged after the checkpoint
    a run resumes from are replayed, and must not appear twice. Only those lines are read,
    each bounded (a link to ``/dev/zero`` is refused, not read)."""
    if not (path.exists() or path.is_symlink()):
        return
    if not path.is_file():
        raise SeqrepError(f"{path}: not a regular file; a run's log is one, so remove it "
                          f"or start the run over (--overwrite instead of --resume)")
    lines: list[bytes] = []
    with open(path, "rb") as f:
        while len(lines) < keep and (line := f.readline(MAX_LOG_LINE + 1)):
            if len(line) > MAX_LOG_LINE:
                raise SeqrepError(f"{path}: line {len(lines) + 1} is longer than "
                                  f"{MAX_LOG_LINE} bytes; not a seqrep training log")
            lines.append(line)
        more = f.read(1)
    if more or (lines and not lines[-1].endswith(b"\n")):
        from seqrep.fileio import write_text

        write_text(path, "".join(x.decode("utf-8", "replace").rstrip("\n") + "\n"
                                 for x in lines))


def finished_metrics(output: Path) -> dict[str, Any]:
    """The ``metrics.json`` of a finished run, what ``--resume`` of it answers with: read
    bounded, and the entries its callers print checked, so a damaged or planted file is one
    line naming the entry, never a traceback while the summary is printed."""
    path = output / "metrics.json"
    metrics = read_json(path, "a finished run's metrics", SeqrepError)

    def wrong() -> str | None:
        if not isinstance(metrics, dict):
            return f"{short_repr(metrics)}; expected an object"
        if metrics.get("status") != "finished":
            return f"'status' is {short_repr(metrics.get('status'))}; expected 'finished'"
        for key, ok, expected in (  # absent from the records of older versions
                ("task", lambda v: v in TASKS, f"one of {', '.join(TASKS)}"),
                ("decoding", lambda v: v in DECODINGS, f"one of {', '.join(DECODINGS)}"),
                ("train_seconds", lambda v: is_number(v) and v >= 0, "seconds, 0 or more")):
            if key in metrics and not ok(metrics[key]):
                return f"'{key}' is {short_repr(metrics.get(key))}; expected {expected}"
        for key in ("validation", "test"):
            value = metrics.get(key)
            if value is None and key == "test":  # a run without a test split
                continue
            if not isinstance(value, dict):
                return f"'{key}' is {short_repr(value)}; expected an object of scores"
            if not (is_number(value.get("f1")) and 0 <= value["f1"] <= 1):
                return f"'{key}.f1' is {short_repr(value.get('f1'))}; expected a score from 0 to 1"
        return None

    problem = wrong()
    if problem:
        raise SeqrepError(f"{path}: not a finished run's metrics ({problem}); the file is "
                          f"damaged, so start the run over (--overwrite instead of --resume)")
    return metrics


@contextlib.contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Seed torch's default generator for the block and give the caller's state back after,
    so a run is reproducible without changing the random state of the program around it."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def train(labeler_config: LabelerConfig, train_config: TrainConfig, output: str | Path,
          overwrite: bool = False, resume: bool = False, quiet: bool = False,
          reader_options: dict[str, Any] | None = None, expect_model: str | None = None,
          distill: Any = None) -> dict[str, Any]:
    """Train a labeler, keep the best model by validation F1, evaluate it on the test split.

    Args:
        labeler_config: the model to build (``labels`` empty: taken from the data).
        train_config: data and optimisation settings.
        output: the run folder.
        overwrite: replace an existing run folder.
        resume: continue the run in ``output`` from its checkpoint (its saved configuration
            wins over the given one, except ``trust_remote_code``: see
            :func:`resumed_config`).
        quiet: no progress bar or evaluation lines.
        reader_options: options for the dataset reader (``tag_column`` ...).
        expect_model: with ``resume``, refuse a folder whose ``run.json`` names another
            model (a grid knows which model each of its folders holds).
        distill: a :class:`seqrep.train.distill.Distillation` (``seqrep distill``): it has
            checked and prepared ``output`` (whose teacher labels stay), adds its unlabeled
            sentences to the training split, gives the soft-target loss and names the
            teacher in ``run.json``.

    Returns:
        The metrics written to ``metrics.json`` (``status`` is ``interrupted`` when
        ``max_steps`` stopped the run early).
    """
    output = Path(output).resolve()  # a symlinked folder is worked on where it points
    done = output / "metrics.json"
    if resume and (done.exists() or done.is_symlink()):
        return finished_metrics(output)  # the run is finished already
    if distill is None:  # a distillation checked the folder before labeling into it
        check_output(output, overwrite, resume)
    if resume:
        labeler_config, train_config, reader_options = resumed_config(
            output, labeler_config, train_config, expect_model)
    train_config = train_config.resolved(labeler_config.finetune)
    # fail before reading data
    Placement.resolve(train_config.device, train_config.precision, training=True)
    MODES[labeler_config.finetune].check()
    check_exit_layer(labeler_config)
    labeler_config, data = checked_data(labeler_config, train_config, reader_options)
    sweep = None
    if labeler_config.exit_layer == "auto":
        labeler_config, sweep = auto_exit_layer(labeler_config, train_config, data, quiet)
    if not quiet:
        print(f"training {labeler_config.model} (r={labeler_config.repetitions}, "
              f"unmask={labeler_config.unmask}, exit_layer={labeler_config.exit_layer}, "
              f"finetune={labeler_config.finetune}, task={labeler_config.task}) on "
              f"{len(data.train)} sentences of {train_config.dataset}; validation: "
              f"{data.validation_source} -> {output}", flush=True)
    soft = None
    if distill is not None:  # after the exit-layer probe, which fits on gold tags only
        data.train, soft = distill.extend(data.train, labeler_config.labels)
    with seeded(train_config.seed):
        trainer = Trainer(labeler_config, train_config, output, data, quiet, soft)  # the model
        if not quiet and trainer.main:
            print(ran_on_line(trainer.labeler), file=sys.stderr, flush=True)
        if trainer.main:
            replace_output(output, resume or distill is not None)
            if not resume:
                write_json(output / "run.json", {
                    **run_record(trainer, reader_options),
                    **(distill.record if distill else {}),
                    **({"exit_search": sweep} if sweep else {})})
        trainer.accelerator.wait_for_everyone()
        state_file = output / "checkpoint" / "state.json"
        if resume and (state_file.exists() or state_file.is_symlink()):
            trainer.restore()
        if resume and trainer.main:
            trim_log(output / "log.jsonl", trainer.state.evals)
        state = trainer.run()
        if state.epoch < train_config.epochs and not state.done:
            return {"status": "interrupted", "step": state.step}
        return finish(trainer)


def checked_data(labeler_config: LabelerConfig, train_config: TrainConfig,
                 reader_options: dict[str, Any] | None) -> tuple[LabelerConfig, Any]:
    """The run's data with every tag checked, and the labeler configuration with its task and
    labels resolved from it (the inventory comes from the training and validation splits,
    never from test). With document context, the notice about sentences without a document
    is printed once per launch."""
    data = load_data(train_config, reader_options)
    kind = resolve_task(labeler_config.task, data.train)
    task = kind.name
    if not labeler_config.labels:
        labeler_config = labeler_config.replace(
            labels=kind.inventory(data.train + data.eval))  # never from test
    labeler_config = labeler_config.replace(task=task)
    data.train = check_labels(data.train, labeler_config.labels, "the training split",
                              task=task)
    data.eval = check_labels(data.eval, labeler_config.labels, "the validation split", task=task)
    data.test = check_test_labels(data.test, labeler_config.labels, task=task)
    notice = context_of(labeler_config.context).notice({
        "the training split": data.train, data.validation_source: data.eval,
        "the test split": data.test})
    if notice and os.environ.get("RANK", "0") == "0":  # once per launch, as say_notes
        print(notice, file=sys.stderr, flush=True)
    return labeler_config, data


def auto_exit_layer(labeler_config: LabelerConfig, train_config: TrainConfig, data: Any,
                    quiet: bool) -> tuple[LabelerConfig, dict[str, Any]]:
    """``--exit-layer auto``: the layer whose frozen probe scores best on validation, and the
    sweep (with ``chosen``) that ``run.json`` records."""
    from seqrep.train.probes import choose_exit_layer

    with seeded(train_config.seed):
        layer, sweep = choose_exit_layer(labeler_config, data,
                                         train_config.exit_search_sentences,
                                         seed=train_config.subset_seed,
                                         unit=train_config.subset_unit,
                                         batch_size=train_config.eval_batch_size)
    sweep["chosen"] = layer
    if not quiet:
        print(f"exit layer {layer}: the best frozen probe on validation (F1 "
              f"{max(sweep['f1']) * 100:.2f}%)", flush=True)
    return labeler_config.replace(exit_layer=layer), sweep


def run_record(trainer: Trainer, reader_options: dict[str, Any] | None) -> dict[str, Any]:
    """What ``run.json`` says of every run: the resolved configurations, the reader options
    and the data and processes it trained on."""
    data = trainer.data
    return {"labeler": trainer.lcfg.to_dict(), "train": trainer.cfg.to_dict(),
            "reader_options": reader_options or {}, "train_sentences": len(data.train),
            "eval_sentences": len(data.eval), "validation_source": data.validation_source,
            "processes": trainer.world}


def finish(trainer: Trainer) -> dict[str, Any]:
    """Evaluate the best model on the test split and write ``metrics.json`` (main process)."""
    from seqrep.evaluate import chunked_logits, evaluate_logits, progress_bar

    output, s = trainer.output, trainer.state
    if s.best is None:
        trainer.evaluate_and_select()
    trainable = sum(q.numel() for q in trainer.labeler.parameters() if q.requires_grad)
    trainer.labeler_placement = trainer.labeler.placement
    trainer.labeler = trainer.model = trainer.optimizer = None  # free before reloading
    gc.collect()
    placement = trainer.labeler_placement
    best = SequenceLabeler.from_pretrained(output / "best", trainer.lcfg.trust_remote_code,
                                           device=placement.device,
                                           precision=placement.precision)
    metrics: dict[str, Any] = {
        "status": "finished", "task": best.config.task, "exit_layer": best.config.exit_layer,
        "validation": s.best,
        "validation_source": trainer.data.validation_source, "decoding": best.config.decoding,
        "train_seconds": round(s.train_seconds, 2), "steps": s.step,
        "train_tokens": s.tokens, "train_sentences": len(trainer.data.train),
        "train_sentences_per_second": round(s.sentences / max(s.train_seconds, 1e-9), 2),
        "trainable_parameters": trainable}
    if trainer.data.test:
        start = time.perf_counter()
        test = trainer.data.test
        bar = None if trainer.quiet else progress_bar(len(test), "test", leave=False)
        logits = chunked_logits(best, test, trainer.cfg.eval_batch_size, trainer.accelerator,
                                bar)
        metrics["test"] = evaluate_logits(best, test, logits)
        metrics["test"]["seconds"] = round(time.perf_counter() - start, 3)
        if not trainer.quiet:
            print(f"test {task_of(best.config.task).metric} "
                  f"{metrics['test']['f1'] * 100:.2f}% ({best.config.decoding} decoding, "
                  f"{metrics['test']['sentences']} sentences; "
                  f"{ran_on_line(best).removeprefix('running on ')})", flush=True)
    if trainer.main:
        write_json(output / "metrics.json", metrics)
        shutil.rmtree(output / "checkpoint", ignore_errors=True)  # the run is complete
    trainer.accelerator.wait_for_everyone()
    return metrics
