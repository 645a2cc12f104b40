"""The training loop: batches from the labeler's encoder, AdamW steps, evaluation and selection.

:class:`Trainer` owns one run's model, optimizer and :class:`~seqrep.train.state.TrainState`;
:func:`seqrep.train.train` sets it up and finishes the run.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from typing import Any

import torch
from torch import nn

from seqrep.config import LabelerConfig, TrainConfig
from seqrep.data.splits import TrainData
from seqrep.data.types import Sentence
from seqrep.decode import decode
from seqrep.evaluate import score
from seqrep.fileio import append_jsonl
from seqrep.model.labeler import SequenceLabeler
from seqrep.train.checkpoint import load_checkpoint, save_checkpoint
from seqrep.train.state import TrainState, build_optimizer, lr_factor, set_lr


class Trainer:
    """Runs one training job; see :func:`seqrep.train.train`."""

    def __init__(self, lcfg: LabelerConfig, tcfg: TrainConfig, output: Path, data: TrainData,
                 quiet: bool = False) -> None:
        self.lcfg, self.cfg, self.output, self.data, self.quiet = lcfg, tcfg, output, data, quiet
        self.labeler = SequenceLabeler.from_model(**lcfg.to_dict())
        self.labeler.train()
        self.encoder = self.labeler.encoder
        self.items = self.encoder.items([s.words for s in data.train],
                                        [s.tags for s in data.train])
        self.batches_per_epoch = len(self.encoder.plan(self.items, tcfg.batch_size,
                                                       tcfg.batch_tokens))
        self.steps_per_epoch = math.ceil(self.batches_per_epoch / tcfg.grad_accum)
        self.total_steps = self.steps_per_epoch * tcfg.epochs
        self.optimizer = build_optimizer(self.labeler, tcfg)
        self.state = TrainState()

    # ------------------------------------------------------------------ loop
    def epoch_batches(self, epoch: int) -> list[list[int]]:
        """This epoch's batches (item indices), shuffled from the seed and the epoch."""
        return self.encoder.plan(self.items, self.cfg.batch_size, self.cfg.batch_tokens,
                                 shuffle=True, seed=self.cfg.seed * 1000 + epoch)

    def run(self) -> TrainState:
        cfg, s = self.cfg, self.state
        loss_fn = nn.CrossEntropyLoss()
        bar = self._bar()
        stop = False
        while s.epoch < cfg.epochs and not s.done and not stop:
            batches = self.epoch_batches(s.epoch)
            while s.batch < len(batches) and not stop:
                t0 = time.perf_counter()
                batch = self.encoder.collate([self.items[i] for i in batches[s.batch]])
                loss = loss_fn(self.labeler(batch), batch.labels)
                (loss / cfg.grad_accum).backward()
                s.tokens += batch.tokens
                s.sentences += sum(0 in self.items[i].segment.words for i in batches[s.batch])
                s.loss_sum += loss.item()
                s.loss_n += 1
                s.batch += 1
                boundary = s.batch % cfg.grad_accum == 0 or s.batch == len(batches)
                if boundary:
                    self._step()
                s.train_seconds += time.perf_counter() - t0
                bar.update(1)
                bar.set_postfix(self._postfix())
                stop = boundary and self._after_step(last_of_epoch=s.batch == len(batches))
            if s.batch >= len(batches):
                s.epoch, s.batch = s.epoch + 1, 0
        bar.close()
        return s

    def _step(self) -> None:
        if self.cfg.max_grad_norm:
            nn.utils.clip_grad_norm_([q for q in self.labeler.parameters() if q.requires_grad],
                                     self.cfg.max_grad_norm)
        set_lr(self.optimizer, lr_factor(self.state.step, self.total_steps, self.cfg.warmup))
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.state.step += 1

    def _after_step(self, last_of_epoch: bool) -> bool:
        """Evaluate / checkpoint as configured; True to stop the epoch loop."""
        cfg, s = self.cfg, self.state
        step = s.step
        final = last_of_epoch and s.epoch == cfg.epochs - 1  # the end of training
        evaluate_now = final or ((step % cfg.eval_every == 0) if cfg.eval_every
                                 else last_of_epoch)
        if evaluate_now:
            self.evaluate_and_select()
            if cfg.early_stopping and s.bad_evals >= cfg.early_stopping:
                s.done = True
        stop = s.done or self.paused
        ckpt_now = (step % cfg.checkpoint_every == 0) if cfg.checkpoint_every else evaluate_now
        if ckpt_now or stop:
            self.save()
        return stop

    @property
    def paused(self) -> bool:
        """``max_steps`` stopped the run before its end (it resumes later)."""
        return self.cfg.max_steps is not None and self.state.step >= self.cfg.max_steps

    # ------------------------------------------------------------------ evaluation
    def eval_logits(self, sentences: list[Sentence]) -> list[torch.Tensor]:
        return self.labeler.word_logits([s.words for s in sentences], self.cfg.eval_batch_size)

    def evaluate_and_select(self) -> dict[str, Any]:
        """Score the validation split, log it, and save the model if it is the best so far.

        With ``decoding=auto`` the decoding that scores higher (constrained on a tie) is the
        one the evaluation reports, selects on and saves, so the logged F1 is always that of
        the decoding the saved model uses.
        """
        s, task = self.state, self.lcfg.task
        t0 = time.perf_counter()
        logits = self.eval_logits(self.data.eval)
        result = scores_by_decoding(logits, self.data.eval, self.lcfg.labels, task)
        chosen = self._decoding(result)
        best = result[chosen]
        f1 = best["f1"]
        record = {"epoch": s.epoch + s.batch / max(1, self.batches_per_epoch),
                  "step": s.step, "train_loss": s.loss_sum / max(1, s.loss_n),
                  "f1": f1, "precision": best["precision"], "recall": best["recall"],
                  "decoding": chosen, "f1_greedy": result["greedy"]["f1"],
                  "f1_constrained": result["constrained"]["f1"],
                  "eval_seconds": round(time.perf_counter() - t0, 2),
                  "train_seconds": round(s.train_seconds, 2)}
        if task == "spans":
            record["predicted_spans"] = best["predicted_spans"]
            record["gold_spans"] = best["gold_spans"]
        append_jsonl(self.output / "log.jsonl", record)
        s.evals += 1
        s.loss_sum, s.loss_n = 0.0, 0
        if f1 > s.best_f1:
            s.best_f1, s.best, s.bad_evals = f1, record, 0
            self.labeler.config = self.lcfg.replace(decoding=chosen)
            self.labeler.save_pretrained(self.output / "best")
        else:
            s.bad_evals += 1
        if task == "spans" and best["predicted_spans"] == 0:
            print(f"warning: step {s.step}: the model predicts no span on the validation "
                  f"split ({best['gold_spans']} gold spans), so its F1 is 0; train longer "
                  f"or with a higher learning rate", file=sys.stderr, flush=True)
        if not self.quiet:
            print(f"eval step {s.step}: val F1 {f1 * 100:.2f}% ({chosen}; greedy "
                  f"{record['f1_greedy'] * 100:.2f}%), best {s.best_f1 * 100:.2f}%", flush=True)
        return record

    def _decoding(self, result: dict[str, dict[str, Any]]) -> str:
        if self.lcfg.task == "tokens":
            return "greedy"
        if self.cfg.decoding != "auto":
            return self.cfg.decoding
        # constrained by default, unless greedy is strictly better on validation
        better = result["greedy"]["f1"] > result["constrained"]["f1"]
        return "greedy" if better else "constrained"

    # ------------------------------------------------------------------ state
    def save(self) -> None:
        save_checkpoint(self.output / "checkpoint", self.labeler, self.optimizer, self.state)

    def restore(self) -> None:
        self.state = load_checkpoint(self.output / "checkpoint", self.labeler, self.optimizer)

    def _postfix(self) -> dict[str, str]:
        s = self.state
        out = {"loss": f"{s.loss_sum / max(1, s.loss_n):.4f}"}
        if s.best is not None:  # nothing to show before the first evaluation
            out["best_val_f1"] = f"{s.best_f1 * 100:.2f}%"
        return out

    def _bar(self):  # noqa: ANN202
        from tqdm.auto import tqdm

        done = self.state.epoch * self.batches_per_epoch + self.state.batch
        return tqdm(total=self.batches_per_epoch * self.cfg.epochs, initial=done, unit="batch",
                    disable=self.quiet, dynamic_ncols=True, mininterval=2.0)


def scores_by_decoding(logits: list[torch.Tensor], gold: list[Sentence], labels: list[str],
                       task: str = "spans") -> dict[str, dict[str, Any]]:
    """Scores of both decodings from one set of logits (token tagging has only greedy: both
    keys hold its score)."""
    out = {}
    for method in ("greedy", "constrained"):
        if task == "tokens" and method == "constrained":
            out[method] = out["greedy"]
            continue
        pred = [decode(x, labels, method)[0] for x in logits]
        out[method] = score([s.tags for s in gold], pred, task)
    return out
