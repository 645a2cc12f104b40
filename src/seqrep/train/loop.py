"""The training loop: batches from the labeler's encoder, AdamW steps, evaluation and selection.

:class:`Trainer` owns one run's model, optimizer and :class:`~seqrep.train.state.TrainState`;
:func:`seqrep.train.train` sets it up and finishes the run.

One code path for 1 and N processes (``torchrun`` / ``accelerate launch``), CPU and GPU, through
``accelerate.Accelerator``: every process builds the same seeded batch plan, and an optimizer
step takes the next ``grad_accum x processes`` batches of it, process ``r`` running every
``r``-th. The loss is the sum over labeled words divided by the words of the whole step (all
micro-batches, all processes), so N processes with batch B give the step one process gives
with the same batches accumulated. The loss of a batch is the run's objective's sum over words
(:mod:`seqrep.train.objective`: cross-entropy on the gold labels, or distillation's soft
targets), divided the same way. Evaluation shards sentences over the processes and gathers
the logits back in order; only the main process writes the run folder.

The trainer owns its run's lifecycle: :meth:`Trainer.start` readies the folder (and restores
a resumed run), :meth:`Trainer.run` fits, :meth:`Trainer.test` scores the best model on the
test split after :meth:`Trainer.release` has let go of the training model.
"""

from __future__ import annotations

import contextlib
import gc
import math
import shutil
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from seqrep.config import LabelerConfig, TrainConfig
from seqrep.data.splits import TrainData
from seqrep.data.tasks import task_of
from seqrep.data.types import Sentence
from seqrep.evaluate import (
    choose_decoding,
    chunked_logits,
    progress_bar,
    scores_by_decoding,
)
from seqrep.files.atomic import append_jsonl, write_json
from seqrep.model.device import Placement, ran_on_line
from seqrep.model.labeler import SequenceLabeler
from seqrep.train.checkpoint import load_checkpoint, rng_states, save_checkpoint
from seqrep.train.folder import replace_output, trim_log
from seqrep.train.objective import BatchLoss, GoldLabels
from seqrep.train.state import TrainState, build_optimizer, lr_factor, set_lr

if TYPE_CHECKING:
    from seqrep.train.plan import RunPlan


class Trainer:
    """Runs one training job; see :func:`seqrep.train.train`."""

    def __init__(self, lcfg: LabelerConfig, tcfg: TrainConfig, output: Path, data: TrainData,
                 quiet: bool = False, loss: BatchLoss | None = None,
                 placement: Placement | None = None) -> None:
        """``loss``: the objective's (default cross-entropy on the gold labels);
        ``placement``: as the plan resolved it (default: resolved here from ``tcfg``)."""
        from accelerate import Accelerator

        self.lcfg, self.cfg, self.output, self.data = lcfg, tcfg, output, data
        self.batch_loss = loss or GoldLabels()
        placement = placement or Placement.resolve(tcfg.device, tcfg.precision, training=True)
        self.accelerator = Accelerator(cpu=placement.device.type == "cpu")
        self.rank = self.accelerator.process_index
        self.world = self.accelerator.num_processes
        self.main = self.accelerator.is_main_process
        self.quiet = quiet or not self.main
        self.labeler = SequenceLabeler.from_model(**lcfg.to_dict()).place(*_fields(placement))
        if tcfg.gradient_checkpointing:
            self.labeler.backbone.gradient_checkpointing_enable(
                gradient_checkpointing_kwargs={"use_reentrant": False})
        if tcfg.compile:  # in place: parameter names, state dicts and checkpoints unchanged
            self.labeler.backbone.compile(dynamic=True)
        self.labeler.train()
        # DDP when there are several processes; the labeler itself otherwise
        self.model = self.accelerator.prepare_model(self.labeler, device_placement=False)
        self.encoder = self.labeler.encoder
        self.items = self.encoder.items([s.words for s in data.train],
                                        [s.tags for s in data.train],
                                        [s.doc_id for s in data.train])
        # each epoch's own shuffled plan: with --batch-tokens its batch count varies by epoch
        self.epoch_sizes = [len(self.epoch_batches(e)) for e in range(tcfg.epochs)]
        per_step = tcfg.grad_accum * self.world
        self.total_steps = sum(math.ceil(n / per_step) for n in self.epoch_sizes)
        self.optimizer = build_optimizer(self.labeler, tcfg)
        self.state = TrainState()

    # ------------------------------------------------------------------ loop
    def _epoch_size(self, epoch: int) -> int:
        return self.epoch_sizes[min(epoch, len(self.epoch_sizes) - 1)]

    def epoch_batches(self, epoch: int) -> list[list[int]]:
        """This epoch's batches (item indices), shuffled from the seed and the epoch."""
        return self.encoder.plan(self.items, self.cfg.batch_size, self.cfg.batch_tokens,
                                 shuffle=True, seed=self.cfg.seed * 1000 + epoch,
                                 sentences=self.encoder.context.documents
                                 and not self.cfg.batch_rows)

    def run(self) -> TrainState:
        cfg, s = self.cfg, self.state
        bar = self._bar()
        stop = self.paused  # a run resumed at its --max-steps takes no further step
        per_step = cfg.grad_accum * self.world
        while s.epoch < cfg.epochs and not s.done and not stop:
            batches = self.epoch_batches(s.epoch)
            while s.batch < len(batches) and not stop:
                t0 = time.perf_counter()
                group = batches[s.batch : s.batch + per_step]  # this step, all processes
                self._train_step(group)
                s.batch += len(group)
                s.train_seconds += time.perf_counter() - t0
                bar.update(len(group))
                loss = s.loss_sum / max(1, s.loss_n)  # an evaluation resets the running loss
                stop = self._after_step(last_of_epoch=s.batch == len(batches))
                # after the step's evaluation, so the bar ends on the run's best, not the last
                # but one (issue 27)
                bar.set_postfix(self._postfix(loss))
            if s.batch >= len(batches):
                s.epoch, s.batch = s.epoch + 1, 0
        bar.close()
        return s

    def _train_step(self, group: list[list[int]]) -> None:
        """Forward and backward over this process's share of ``group``, then one step.

        A process left without a batch in the last, short step runs one with weight 0, so
        every process takes part in each gradient reduction.
        """
        s, items = self.state, self.items
        words = sum(len(items[i].segment.words) for b in group for i in b)
        micro = math.ceil(len(group) / self.world)
        loss_sum = torch.zeros((), dtype=torch.float64)
        for a in range(micro):
            j = a * self.world + self.rank
            members = [items[i] for i in group[min(j, len(group) - 1)]]
            batch = self.encoder.collate(members).to(self.labeler.device)
            weight = 1.0 if j < len(group) else 0.0
            sync = a == micro - 1
            with contextlib.nullcontext() if sync else self.accelerator.no_sync(self.model):
                logits = self.model(batch)
                loss = self.batch_loss.loss(logits, batch.labels, members)
                # DDP averages gradients over processes: scale back to a sum over the step
                (loss * (weight * self.world / words)).backward()
            loss_sum += loss.detach().double().cpu() * weight
        if self.world > 1:
            loss_sum = self.accelerator.reduce(loss_sum.to(self.labeler.device), "sum").cpu()
        self._step()
        s.loss_sum += float(loss_sum) / words
        s.loss_n += 1
        s.tokens += sum(len(items[i].segment) for b in group for i in b)
        s.sentences += sum(items[i].starts for b in group for i in b)

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
    def finished(self) -> bool:
        """Every epoch ran, or early stopping ended the run: what is left is its test."""
        return self.state.epoch >= self.cfg.epochs or self.state.done

    @property
    def paused(self) -> bool:
        """``max_steps`` stopped the run before its end (it resumes later)."""
        return self.cfg.max_steps is not None and self.state.step >= self.cfg.max_steps

    # ------------------------------------------------------------------ evaluation
    def eval_logits(self, sentences: list[Sentence], what: str = "validation"
                    ) -> list[torch.Tensor]:
        """Logits of ``sentences`` (CPU), computed in shards over the processes, chunk by
        chunk with sentences/s and an ETA on stderr (a validation can take minutes)."""
        bar = None if self.quiet else progress_bar(len(sentences), what, leave=False)
        return chunked_logits(self.labeler, sentences, self.cfg.eval_batch_size,
                              self.accelerator, bar)

    def evaluate_and_select(self) -> dict[str, Any]:
        """Score the validation split, log it, and save the model if it is the best so far.

        With ``decoding=auto`` the decoding that scores higher (constrained on a tie) is the
        one the evaluation reports, selects on and saves, so the logged F1 is always that of
        the decoding the saved model uses.
        """
        s, task = self.state, task_of(self.lcfg.task)
        t0 = time.perf_counter()
        logits = self.eval_logits(self.data.eval)
        result = scores_by_decoding(logits, self.data.eval, self.lcfg.labels, task.name)
        chosen = choose_decoding(result, self.cfg.decoding, task.name)
        best = result[chosen]
        f1 = best["f1"]
        record = {"epoch": s.epoch + s.batch / max(1, self._epoch_size(s.epoch)),
                  "step": s.step, "train_loss": s.loss_sum / max(1, s.loss_n),
                  "f1": f1, "precision": best["precision"], "recall": best["recall"],
                  "decoding": chosen,  # the task's decodings only: token tagging has one
                  **{f"f1_{d.name}": result[d.name]["f1"] for d in task.decodings},
                  "eval_seconds": round(time.perf_counter() - t0, 2),
                  "train_seconds": round(s.train_seconds, 2)}
        record.update(task.counts(best))
        if self.main:
            append_jsonl(self.output / "log.jsonl", record)
        s.evals += 1
        s.loss_sum, s.loss_n = 0.0, 0
        if f1 > s.best_f1:
            s.best_f1, s.best, s.bad_evals = f1, record, 0
            self.labeler.config = self.labeler.config.replace(decoding=chosen)
            if self.main:
                self.labeler.save_pretrained(self.output / "best")
            self.accelerator.wait_for_everyone()
        else:
            s.bad_evals += 1
        if record.get("predicted_spans") == 0 and self.main:
            print(f"warning: step {s.step}: the model predicts no span on the validation "
                  f"split ({best['gold_spans']} gold spans), so its F1 is 0; train longer "
                  f"or with a higher learning rate", file=sys.stderr, flush=True)
        if not self.quiet:  # the chosen decoding, then the task's others with their scores
            shown = "; ".join([chosen] + [f"{d.name} {result[d.name]['f1'] * 100:.2f}%"
                                          for d in task.decodings if d.name != chosen])
            print(f"eval step {s.step}: val {task.metric} {f1 * 100:.2f}% ({shown}), best "
                  f"{s.best_f1 * 100:.2f}%", flush=True)
        return record

    # ------------------------------------------------------------------ state
    def save(self) -> None:
        """Checkpoint (main process): the weights and moments (the same on every process)
        and each process's RNG states (CPU, and its GPU's when it trains on one)."""
        rng = [rng_states(self.labeler.placement.device)]
        if self.world > 1:
            from accelerate.utils import gather_object

            rng = [x for _, x in sorted(gather_object([(self.rank, rng[0])]))]
        if self.main:
            save_checkpoint(self.output / "checkpoint", self.labeler, self.optimizer,
                            self.state, rng)
        self.accelerator.wait_for_everyone()

    def restore(self) -> None:
        self.state = load_checkpoint(self.output / "checkpoint", self.labeler, self.optimizer,
                                     self.rank, self.epoch_sizes)

    # ------------------------------------------------------------------ lifecycle
    def start(self, plan: RunPlan) -> None:
        """Ready the run folder once the model has loaded (an old run is removed only now,
        so a typo never deletes one; a kept folder only loses what a killed writer left),
        write ``run.json`` for a new run, and pick a resumed run up at its checkpoint with
        its log cut back to that point."""
        if not self.quiet:
            print(ran_on_line(self.labeler), file=sys.stderr, flush=True)
        # the layer the model was cut at, where the plan could not read the depth (a packaged
        # GGUF converted as it loaded): run.json records the layer, never the fraction
        plan.labeler = plan.labeler.replace(exit_layer=self.labeler.config.exit_layer)
        if self.main:
            replace_output(self.output, plan.keeps_folder)
            if not plan.resume:
                write_json(self.output / "run.json", plan.run_record(self.world))
        self.accelerator.wait_for_everyone()
        state_file = self.output / "checkpoint" / "state.json"
        if plan.resume and (state_file.exists() or state_file.is_symlink()):
            self.restore()
        if plan.resume and self.main:
            trim_log(self.output / "log.jsonl", self.state.evals)

    def release(self) -> Placement:
        """Let go of the training model, its optimizer and their memory (before the best
        model loads for the test, so both never sit in memory together); returns where the
        model ran, for the best model to run there too."""
        placement = self.labeler.placement
        self.labeler = self.model = self.optimizer = None  # type: ignore[assignment]
        gc.collect()
        return placement

    def test(self) -> dict[str, Any]:
        """Score the best model on the test split and write ``metrics.json`` (main
        process); the checkpoint goes, since the run is complete."""
        from seqrep.evaluate import evaluate_logits

        output, s = self.output, self.state
        if s.best is None:
            self.evaluate_and_select()
        trainable = sum(q.numel() for q in self.labeler.parameters() if q.requires_grad)
        placement = self.release()
        best = SequenceLabeler.from_pretrained(output / "best", self.lcfg.trust_remote_code,
                                               device=placement.device,
                                               precision=placement.precision)
        metrics: dict[str, Any] = {
            "status": "finished", "task": best.config.task,
            "exit_layer": best.config.exit_layer, "validation": s.best,
            "validation_source": self.data.validation_source,
            "decoding": best.config.decoding, "train_seconds": round(s.train_seconds, 2),
            "steps": s.step, "train_tokens": s.tokens, "train_sentences": len(self.data.train),
            "train_sentences_per_second": round(s.sentences / max(s.train_seconds, 1e-9), 2),
            "trainable_parameters": trainable}
        if self.data.test:
            start, test = time.perf_counter(), self.data.test
            bar = None if self.quiet else progress_bar(len(test), "test", leave=False)
            logits = chunked_logits(best, test, self.cfg.eval_batch_size, self.accelerator,
                                    bar)
            metrics["test"] = evaluate_logits(best, test, logits)
            metrics["test"]["seconds"] = round(time.perf_counter() - start, 3)
            if not self.quiet:
                print(f"test {task_of(best.config.task).metric} "
                      f"{metrics['test']['f1'] * 100:.2f}% ({best.config.decoding} decoding, "
                      f"{metrics['test']['sentences']} sentences; "
                      f"{ran_on_line(best).removeprefix('running on ')})", flush=True)
        if self.main:
            write_json(output / "metrics.json", metrics)
            shutil.rmtree(output / "checkpoint", ignore_errors=True)  # the run is complete
        self.accelerator.wait_for_everyone()
        return metrics

    def _postfix(self, loss: float) -> dict[str, str]:
        s = self.state
        out = {"loss": f"{loss:.4f}"}
        if s.best is not None:  # nothing to show before the first evaluation
            metric = task_of(self.lcfg.task).metric.lower()  # f1, accuracy
            out[f"best_val_{metric}"] = f"{s.best_f1 * 100:.2f}%"
        return out

    def _bar(self):  # noqa: ANN202
        from tqdm.auto import tqdm

        done = sum(self.epoch_sizes[: self.state.epoch]) + self.state.batch
        return tqdm(total=sum(self.epoch_sizes), initial=done, unit="batch",
                    disable=self.quiet, dynamic_ncols=True, mininterval=2.0)


def _fields(placement: Placement) -> tuple:
    return placement.device, placement.precision
