"""flair 0.15 (run in the flair venv): a SequenceTagger with a CRF on TransformerWordEmbeddings
of all-mpnet-base-v2, fine-tuned, reading sentences alone or with FLERT document context.

    python flair_peer.py train --data DIR --out MODEL [--context] [--budget S] [--threads N]
    python flair_peer.py predict --model MODEL --input test.jsonl --output FILE [--timing J]

The recipe is flair's FLERT one for CoNLL-03 (last layer, first sub-token, no RNN, no
reprojection, AdamW at 5e-6 through ``ModelTrainer.fine_tune``, mini-batches of 4) with
``use_crf=True`` (the system table passes ``--lr 5e-5``, fitted to a one-hour budget: see
systems.py); ``--context`` is ``use_context=True`` (64 words either side, within the
document: the column files mark each document with flair's ``-DOCSTART-`` separator). flair
has no time limit of its own: a trainer plugin raises flair's TrainingInterrupt when the
budget is spent, after which flair saves final-model.pt, the model predict loads.
``--clock-schedule`` replaces flair's linear schedule over max_epochs by one fitted to the
budget by the clock (warm-up over its first tenth, zero at its end): FLERT's epoch far
outlasts an hour on 2 cores, and a schedule over it would stop near its peak.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from peers import common  # noqa: E402

MODEL_FILE = "final-model.pt"


def column_corpus(folder: Path, files: dict[str, str]) -> Any:
    """A ColumnCorpus of exactly the given files: no split found by name or sampled."""
    from flair.datasets import ColumnCorpus

    return ColumnCorpus(folder, {0: "text", 1: "ner"}, train_file=files.get("train"),
                        dev_file=files.get("dev"), test_file=files.get("test"),
                        document_separator_token="-DOCSTART-", autofind_splits=False,
                        sample_missing_splits=False, in_memory=True)


def _write_columns(data: Path, split: str, out: Path) -> str:
    name = f"{split}.txt"
    common.write_text(out / name, common.flair_columns(common.read_jsonl(data / f"{split}.jsonl")))
    return name


def train(args: argparse.Namespace) -> None:
    common.set_threads(args.threads)
    import flair
    import torch
    from flair.embeddings import TransformerWordEmbeddings
    from flair.models import SequenceTagger
    from flair.trainers import ModelTrainer
    from flair.trainers.plugins import TrainerPlugin
    from flair.trainers.plugins.base import TrainingInterrupt

    torch.set_num_threads(args.threads)
    flair.device = torch.device("cpu")
    flair.set_seed(args.seed)
    columns = args.out / "columns"
    files = {"train": _write_columns(args.data, "train", columns),
             "dev": _write_columns(args.data, "validation", columns)}
    corpus = column_corpus(columns, files)
    labels = corpus.make_label_dictionary("ner", add_unk=False)
    embeddings = TransformerWordEmbeddings(str(args.encoder), layers="-1",
                                           subtoken_pooling="first", fine_tune=True,
                                           use_context=args.context)
    tagger = SequenceTagger(hidden_size=256, embeddings=embeddings, tag_dictionary=labels,
                            tag_type="ner", use_crf=True, use_rnn=False,
                            reproject_embeddings=False)
    state = {"steps": 0, "epoch": 0, "stopped_by": "its max_epochs"}
    budget = common.Budget(args.budget)

    class TimeBudget(TrainerPlugin):
        @TrainerPlugin.hook
        def before_training_epoch(self, epoch: int, **kw: Any) -> None:
            state["epoch"] = epoch

        @TrainerPlugin.hook
        def after_training_batch(self, **kw: Any) -> None:
            state["steps"] += 1
            if budget.spent():
                state["stopped_by"] = "time budget"
                raise TrainingInterrupt(f"time budget spent after {state['steps']} steps")

    class ClockSchedule(TrainerPlugin):
        """Every step's learning rate from the clock (common.clock_lr_factor), in place of
        flair's linear schedule over max_epochs."""

        @TrainerPlugin.hook
        def after_setup(self, **kw: Any) -> None:
            self.peaks = [g["lr"] for g in self.trainer.optimizer.param_groups]
            self.set_rates()

        @TrainerPlugin.hook
        def after_training_batch(self, **kw: Any) -> None:
            self.set_rates()

        def set_rates(self) -> None:
            factor = common.clock_lr_factor(budget.elapsed(), budget.seconds)
            for group, peak in zip(self.trainer.optimizer.param_groups, self.peaks):
                group["lr"] = peak * factor

    plugins: list[Any] = [TimeBudget()] + ([ClockSchedule()] if args.clock_schedule else [])
    ModelTrainer(tagger, corpus).fine_tune(
        args.out, learning_rate=args.lr, mini_batch_size=4, max_epochs=args.epochs,
        plugins=plugins, attach_default_scheduler=not args.clock_schedule,
        save_final_model=True, create_file_logs=False, create_loss_file=False)
    common.write_json(args.out / "train-info.json", {
        "seconds": round(budget.elapsed(), 1), "budget_s": args.budget, "steps": state["steps"],
        "epochs": state["epoch"], "max_epochs": args.epochs, "stopped_by": state["stopped_by"],
        "threads": args.threads, "model": MODEL_FILE, "use_context": args.context,
        "learning_rate": args.lr, "mini_batch_size": 4,
        "schedule": "clock" if args.clock_schedule else "linear over max_epochs"})


def predict(args: argparse.Namespace) -> None:
    common.set_threads(args.threads)
    import flair
    import torch
    from flair.models import SequenceTagger

    torch.set_num_threads(args.threads)
    flair.device = torch.device("cpu")
    sentences = common.read_jsonl(args.input)
    work = args.output.parent / f".{args.output.name}.columns"
    try:
        corpus = column_corpus(work, {"test": _write_columns_from(sentences, work)})
    finally:
        shutil.rmtree(work, ignore_errors=True)  # read into memory (in_memory=True)
    flair_sents = [s for s in corpus.test if not s.is_document_boundary]
    if [[t.text for t in s] for s in flair_sents] != [s["words"] for s in sentences]:
        raise common.HarnessError(f"{args.input}: flair read other words than the file holds")
    tagger = SequenceTagger.load(args.model / MODEL_FILE)
    start = time.perf_counter()
    tagger.predict(flair_sents, mini_batch_size=args.batch_size, label_name="predicted")
    seconds = time.perf_counter() - start
    predicted = []
    for s in flair_sents:
        spans = [(span.tokens[0].idx - 1, span.tokens[-1].idx, span.get_label("predicted").value)
                 for span in s.get_spans("predicted")]
        predicted.append(common.spans_to_iob2(len(s), spans))
    common.write_text(args.output, common.conll_columns(sentences, predicted))
    if args.timing:
        common.write_json(args.timing, {"seconds": seconds, "sentences": len(sentences),
                                        "words": sum(len(s["words"]) for s in sentences)})


def _write_columns_from(sentences: list[dict[str, Any]], folder: Path) -> str:
    common.write_text(folder / "test.txt", common.flair_columns(sentences))
    return "test.txt"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="flair peer")
    sub = p.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train")
    t.add_argument("--data", type=Path, required=True)
    t.add_argument("--out", type=Path, required=True)
    t.add_argument("--context", action="store_true", help="FLERT: use_context=True")
    t.add_argument("--encoder", type=Path, default=None)
    t.add_argument("--budget", type=float, default=3600.0)
    t.add_argument("--threads", type=int, default=2)
    t.add_argument("--epochs", type=int, default=2,
                   help="max_epochs (the linear schedule's length); the budget may stop sooner")
    t.add_argument("--lr", type=float, default=5e-6)
    t.add_argument("--clock-schedule", action="store_true",
                   help="warm up over the first tenth of the budget and decay to zero at its "
                        "end, by the clock (else flair's linear schedule over max_epochs)")
    t.add_argument("--seed", type=int, default=0)
    common.predict_parser(sub, batch_size=32)
    args = p.parse_args(argv)
    if args.command == "train":
        args.encoder = args.encoder or common.encoder_folder()
        train(args)
    else:
        predict(args)


if __name__ == "__main__":
    common.main_guard(main)
