"""Training: one function over config objects, with evaluation, best-model selection and resume.

Run folder (``output``)::

    run.json      the resolved configuration (labeler + training)
    best/         the best model by validation micro-F1 (``SequenceLabeler.from_pretrained``)
    checkpoint/   the latest resumable state (see :mod:`seqrep.checkpoint`)
    log.jsonl     one line per evaluation
    metrics.json  the final report: best validation scores, test scores, times
"""

from __future__ import annotations

import gc
import json
import math
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from seqrep.checkpoint import load_checkpoint, save_checkpoint
from seqrep.config import LabelerConfig, TrainConfig
from seqrep.data.types import Corpus, Sentence
from seqrep.decode import decode
from seqrep.encode.align import label_ids
from seqrep.encode.batch import collate, length_batches
from seqrep.errors import SeqrepError
from seqrep.evaluate import check_labels, score
from seqrep.fileio import append_jsonl, write_json
from seqrep.model.labeler import SequenceLabeler


@dataclass
class TrainData:
    """The sentences a run uses."""

    train: list[Sentence]
    eval: list[Sentence]
    test: list[Sentence] = field(default_factory=list)


def load_data(cfg: TrainConfig, reader_options: dict[str, Any] | None = None) -> TrainData:
    """Read the configured splits, subsampled with ``subset_seed`` if asked.

    A split setting may also be a path to a file of its own. When ``dataset`` is a single
    file (one split), a random 10 % of it becomes the validation split, and there is no test
    split unless ``test_split`` names a file.
    """
    from seqrep.data import load_corpus

    single_file = Path(cfg.dataset).is_file()
    opts = reader_options or {}

    def read(split: str) -> list[Sentence]:
        if Path(split).is_file():
            corpus: Corpus = load_corpus(split, "train", cfg.format, **opts)
        else:
            corpus = load_corpus(cfg.dataset, split, None if not single_file else cfg.format,
                                 **opts)
        return [s for s in corpus.sentences if len(s)]

    def subset(sents: list[Sentence], limit: int | None) -> list[Sentence]:
        if limit is None or limit >= len(sents):
            return sents
        keep = sorted(random.Random(cfg.subset_seed).sample(range(len(sents)), limit))
        return [sents[i] for i in keep]

    train = read(cfg.train_split)
    if single_file and not Path(cfg.eval_split).is_file():
        rng = random.Random(cfg.subset_seed)
        held = set(rng.sample(range(len(train)), max(1, len(train) // 10)))
        evals = [s for i, s in enumerate(train) if i in held]
        train = [s for i, s in enumerate(train) if i not in held]
    else:
        evals = read(cfg.eval_split)
    test: list[Sentence] = []
    if cfg.test_split and (not single_file or Path(cfg.test_split).is_file()):
        test = read(cfg.test_split)[: cfg.max_test_sentences]
    return TrainData(subset(train, cfg.max_train_sentences),
                     subset(evals, cfg.max_eval_sentences), test)


def tag_inventory(sentences: list[Sentence]) -> list[str]:
    """``O`` then ``B-X``, ``I-X`` for every span label X seen in training, sorted."""
    types = sorted({t[2:] for s in sentences for t in s.tags if t != "O"})
    return ["O"] + [f"{p}-{x}" for x in types for p in ("B", "I")]


def prepare_output(output: Path, overwrite: bool, resume: bool) -> None:
    """Refuse to clobber another run unless asked."""
    if resume:
        if not (output / "run.json").exists():
            raise SeqrepError(f"{output}: nothing to resume (no run.json)")
        return
    if output.exists() and any(output.iterdir()):
        if not overwrite:
            raise SeqrepError(f"{output} exists and is not empty; pass --overwrite to replace "
                              f"it or --resume to continue the run in it")
        import shutil

        shutil.rmtree(output)
    output.mkdir(parents=True, exist_ok=True)


def build_optimizer(labeler: SequenceLabeler, cfg: TrainConfig, total_steps: int):  # noqa: ANN201
    """AdamW with the head at ``head_lr``, no decay on biases/norms; linear warm-up and decay."""
    groups: dict[tuple[float, float], list[nn.Parameter]] = {}
    for name, p in labeler.named_parameters():
        if not p.requires_grad:
            continue
        lr = cfg.head_lr if name.startswith("head.") else cfg.lr
        wd = cfg.weight_decay if p.ndim >= 2 else 0.0
        groups.setdefault((lr, wd), []).append(p)
    optimizer = torch.optim.AdamW([{"params": ps, "lr": lr, "weight_decay": wd}
                                   for (lr, wd), ps in groups.items()])
    warm = int(cfg.warmup * total_steps)

    def factor(step: int) -> float:
        if step < warm:
            return (step + 1) / warm
        return max(0.0, (total_steps - step) / max(1, total_steps - warm))

    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


class Trainer:
    """Runs one training job; see :func:`train`."""

    def __init__(self, lcfg: LabelerConfig, tcfg: TrainConfig, output: Path, data: TrainData,
                 quiet: bool = False) -> None:
        self.lcfg, self.cfg, self.output, self.data, self.quiet = lcfg, tcfg, output, data, quiet
        torch.manual_seed(tcfg.seed)
        random.seed(tcfg.seed)
        self.labeler = SequenceLabeler.from_model(**lcfg.to_dict())
        self.labeler.train()
        l2i = self.labeler.label2id
        self.items = []  # (segment, label ids of the words it owns)
        for s in data.train:
            ids = label_ids(s.tags, l2i)
            self.items += [(seg, [ids[w] for w in seg.words])
                           for seg in self.labeler.encode(s.words)]
        self.batches_per_epoch = len(length_batches([len(x[0]) for x in self.items],
                                                    tcfg.batch_size))
        self.steps_per_epoch = math.ceil(self.batches_per_epoch / tcfg.grad_accum)
        self.total_steps = self.steps_per_epoch * tcfg.epochs
        self.optimizer, self.scheduler = build_optimizer(self.labeler, tcfg, self.total_steps)
        self.progress: dict[str, Any] = {"epoch": 0, "batch": 0, "step": 0, "best_f1": -1.0,
                                         "best": None, "bad_evals": 0, "train_seconds": 0.0,
                                         "loss_sum": 0.0, "loss_n": 0, "tokens": 0,
                                         "done": False}

    # ------------------------------------------------------------------ loop
    def epoch_batches(self, epoch: int) -> list[list[int]]:
        lengths = [len(seg) for seg, _ in self.items]
        return length_batches(lengths, self.cfg.batch_size, shuffle=True,
                              seed=self.cfg.seed * 1000 + epoch)

    def run(self) -> dict[str, Any]:
        cfg, p = self.cfg, self.progress
        loss_fn = nn.CrossEntropyLoss()
        bar = self._bar()
        while p["epoch"] < cfg.epochs and not p["done"]:
            batches = self.epoch_batches(p["epoch"])
            while p["batch"] < len(batches):
                t0 = time.perf_counter()
                members = [self.items[i] for i in batches[p["batch"]]]
                batch = collate([m[0] for m in members], self.labeler.info.pad_id,
                                self.lcfg.padding_side, [m[1] for m in members])
                loss = loss_fn(self.labeler(batch), batch.labels)
                (loss / cfg.grad_accum).backward()
                p["tokens"] = p.get("tokens", 0) + batch.tokens
                p["loss_sum"] += loss.item()
                p["loss_n"] += 1
                p["batch"] += 1
                boundary = p["batch"] % cfg.grad_accum == 0 or p["batch"] == len(batches)
                if boundary:
                    self._step()
                p["train_seconds"] += time.perf_counter() - t0
                bar.update(1)
                bar.set_postfix(loss=f"{p['loss_sum'] / p['loss_n']:.4f}",
                                val_f1=f"{max(p['best_f1'], 0) * 100:.2f}")
                if boundary and self._after_step(last_of_epoch=p["batch"] == len(batches)):
                    break
            if p["batch"] >= len(batches):
                p["epoch"], p["batch"] = p["epoch"] + 1, 0
        bar.close()
        return p

    def _step(self) -> None:
        if self.cfg.max_grad_norm:
            nn.utils.clip_grad_norm_([q for q in self.labeler.parameters() if q.requires_grad],
                                     self.cfg.max_grad_norm)
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.progress["step"] += 1

    def _after_step(self, last_of_epoch: bool) -> bool:
        """Evaluate / checkpoint as configured; True to stop the epoch loop."""
        cfg, p = self.cfg, self.progress
        step = p["step"]
        evaluate_now = (step % cfg.eval_every == 0) if cfg.eval_every else last_of_epoch
        if evaluate_now:
            self.evaluate_and_select()
            if cfg.early_stopping and p["bad_evals"] >= cfg.early_stopping:
                p["done"] = True
        stop = p["done"] or (cfg.max_steps is not None and step >= cfg.max_steps)
        if cfg.max_steps is not None and step >= cfg.max_steps:
            p["interrupted"] = True
        ckpt_now = (step % cfg.checkpoint_every == 0) if cfg.checkpoint_every else evaluate_now
        if ckpt_now or stop:
            self.save()
        return stop

    # ------------------------------------------------------------------ evaluation
    def eval_logits(self, sentences: list[Sentence]) -> list[torch.Tensor]:
        return self.labeler.word_logits([s.words for s in sentences], self.cfg.eval_batch_size)

    def evaluate_and_select(self) -> dict[str, Any]:
        p = self.progress
        t0 = time.perf_counter()
        logits = self.eval_logits(self.data.eval)
        result = scores_by_decoding(logits, self.data.eval, self.lcfg.labels)
        chosen = "constrained" if self.cfg.decoding in ("auto", "constrained") else "greedy"
        f1 = result[chosen]["f1"]
        record = {"epoch": p["epoch"] + p["batch"] / max(1, self.batches_per_epoch),
                  "step": p["step"], "train_loss": p["loss_sum"] / max(1, p["loss_n"]),
                  "f1": f1, "precision": result[chosen]["precision"],
                  "recall": result[chosen]["recall"], "f1_greedy": result["greedy"]["f1"],
                  "f1_constrained": result["constrained"]["f1"],
                  "eval_seconds": round(time.perf_counter() - t0, 2),
                  "train_seconds": round(p["train_seconds"], 2)}
        append_jsonl(self.output / "log.jsonl", record)
        p["loss_sum"], p["loss_n"] = 0.0, 0
        if f1 > p["best_f1"]:
            p["best_f1"], p["best"], p["bad_evals"] = f1, record, 0
            self.labeler.config = self.lcfg.replace(decoding=self._decoding(record))
            self.labeler.save_pretrained(self.output / "best")
        else:
            p["bad_evals"] += 1
        if not self.quiet:
            print(f"eval step {p['step']}: val F1 {f1 * 100:.2f} (greedy "
                  f"{record['f1_greedy'] * 100:.2f}), best {p['best_f1'] * 100:.2f}", flush=True)
        return record

    def _decoding(self, record: dict[str, Any]) -> str:
        if self.cfg.decoding != "auto":
            return self.cfg.decoding
        # constrained by default, unless greedy is strictly better on validation
        return "greedy" if record["f1_greedy"] > record["f1_constrained"] else "constrained"

    # ------------------------------------------------------------------ state
    def save(self) -> None:
        save_checkpoint(self.output / "checkpoint", self.labeler, self.optimizer, self.scheduler,
                        self.progress)

    def restore(self) -> None:
        self.progress = load_checkpoint(self.output / "checkpoint", self.labeler,
                                        self.optimizer, self.scheduler)
        self.progress.pop("interrupted", None)

    def _bar(self):  # noqa: ANN202
        from tqdm.auto import tqdm

        done = self.progress["epoch"] * self.batches_per_epoch + self.progress["batch"]
        return tqdm(total=self.batches_per_epoch * self.cfg.epochs, initial=done, unit="batch",
                    disable=self.quiet, dynamic_ncols=True, mininterval=2.0)


def scores_by_decoding(logits: list[torch.Tensor], gold: list[Sentence],
                       labels: list[str]) -> dict[str, dict[str, Any]]:
    """Scores of both decodings from one set of logits."""
    out = {}
    for method in ("greedy", "constrained"):
        pred = [decode(x, labels, method)[0] for x in logits]
        out[method] = score([s.tags for s in gold], pred)
    return out


def train(labeler_config: LabelerConfig, train_config: TrainConfig, output: str | Path,
          overwrite: bool = False, resume: bool = False, quiet: bool = False,
          reader_options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Train a labeler, keep the best model by validation F1, evaluate it on the test split.

    Args:
        labeler_config: the model to build (``labels`` empty: taken from the data).
        train_config: data and optimisation settings.
        output: the run folder.
        overwrite: replace an existing run folder.
        resume: continue the run in ``output`` from its checkpoint (its saved configuration
            wins over the given one).
        quiet: no progress bar or evaluation lines.
        reader_options: options for the dataset reader (``tag_column`` ...).

    Returns:
        The metrics written to ``metrics.json`` (``status`` is ``interrupted`` when
        ``max_steps`` stopped the run early).
    """
    output = Path(output)
    if resume and (output / "metrics.json").exists():
        return json.loads((output / "metrics.json").read_text(encoding="utf-8"))  # done already
    prepare_output(output, overwrite, resume)
    if resume:
        saved = json.loads((output / "run.json").read_text(encoding="utf-8"))
        labeler_config = LabelerConfig.from_dict(saved["labeler"])
        train_config = TrainConfig.from_dict(saved["train"]).replace(
            max_steps=train_config.max_steps)
        reader_options = saved.get("reader_options") or {}
    torch.set_num_threads(train_config.threads or os.cpu_count() or 1)
    data = load_data(train_config, reader_options)
    if not data.train:
        raise SeqrepError(f"{train_config.dataset}: no training sentences")
    if not labeler_config.labels:
        labeler_config = labeler_config.replace(
            labels=tag_inventory(data.train + data.eval + data.test))
    data.eval = check_labels(data.eval, labeler_config.labels, "the validation split")
    data.test = check_labels(data.test, labeler_config.labels, "the test split")
    if not quiet:
        print(f"training {labeler_config.model} (r={labeler_config.repetitions}, "
              f"unmask={labeler_config.unmask}, exit_layer={labeler_config.exit_layer}, "
              f"finetune={labeler_config.finetune}) on {len(data.train)} sentences of "
              f"{train_config.dataset} -> {output}", flush=True)
    trainer = Trainer(labeler_config, train_config, output, data, quiet)
    if not resume:
        write_json(output / "run.json", {"labeler": labeler_config.to_dict(),
                                         "train": train_config.to_dict(),
                                         "reader_options": reader_options or {},
                                         "train_sentences": len(data.train),
                                         "eval_sentences": len(data.eval)})
    if resume and (output / "checkpoint" / "state.json").exists():
        trainer.restore()
    progress = trainer.run()
    if progress.get("interrupted"):
        return {"status": "interrupted", "step": progress["step"]}
    return finish(trainer)


def finish(trainer: Trainer) -> dict[str, Any]:
    """Evaluate the best model on the test split and write ``metrics.json``."""
    import shutil

    from seqrep.evaluate import evaluate

    output, p = trainer.output, trainer.progress
    if p["best"] is None:
        trainer.evaluate_and_select()
    trainable = sum(q.numel() for q in trainer.labeler.parameters() if q.requires_grad)
    trainer.labeler = trainer.optimizer = trainer.scheduler = None  # free before reloading
    gc.collect()
    best = SequenceLabeler.from_pretrained(output / "best")
    metrics: dict[str, Any] = {
        "status": "finished", "validation": p["best"], "decoding": best.config.decoding,
        "train_seconds": round(p["train_seconds"], 2), "steps": p["step"],
        "train_tokens": p.get("tokens", 0), "train_sentences": len(trainer.data.train),
        "trainable_parameters": trainable}
    if trainer.data.test:
        metrics["test"] = evaluate(best, trainer.data.test, batch_size=trainer.cfg.eval_batch_size)
        if not trainer.quiet:
            print(f"test F1 {metrics['test']['f1'] * 100:.2f} ({best.config.decoding} decoding, "
                  f"{metrics['test']['sentences']} sentences)", flush=True)
    write_json(output / "metrics.json", metrics)
    shutil.rmtree(output / "checkpoint", ignore_errors=True)  # the run is complete
    return metrics
