"""The systems the peers benchmark trains: which venv, which script, which options.

The epoch counts set each trainer's own schedule (its linear learning-rate decay runs over
them); the time budget may stop sooner, and the record's ``stopped_by`` says which stopped
it. They are guesses from the smoke runs (90 s each, on 2 cores shared with other jobs, a
load of about 6): flair trained about 2.3 sentences/s at sentence level and 0.6 with FLERT's
context, Hugging Face's Trainer 0.7 on one thread; on 2 idle cores perhaps three times that,
so in 60 minutes about 2 epochs of CoNLL-2003's 14,041 sentences for flair at sentence
level and half of one with FLERT. Trainer was measured on the full data: 2.2 s per step of 16
sentences on 2 idle cores, 878 steps (32 minutes) an epoch, so 1.7 epochs (about 55 minutes)
fill the budget. ``run.py --epochs NAME=E`` overrides one without editing this table.

Fitting the schedules to one hour (the second round of training, after the first gave spaCy's
transformer pipeline 72.88 and flair at sentence level 35.86 test F1, both stopped by the
budget). The tools' defaults are made for long runs on a GPU, and a user with one hour of
CPU would change them, as we did seqrep's:

- spaCy's accuracy config accumulates 3 batches of 2,000 padded words a step and warms up
  over 250 steps; on 2 cores a step took 10.5 s, so the budget held 339 steps, most of them
  still warming up (model-last's dev F1 was 65.1). Here: a step per batch (three times the
  updates for the same words), warm-up over 90 and linear decay to zero at 900 steps, about
  what the budget holds, with a dev evaluation every 300.
- flair's FLERT recipe (AdamW at 5e-6, mini-batches of 4) is for 20 epochs of a large
  encoder; in one hour it gets 1 epoch at sentence level and about half of one with
  context, and a fresh CRF and linear layer at 5e-6 barely move. Here: 5e-5, the rate
  Hugging Face's Trainer uses for the same encoder (hf-trainer's 90.33), over one epoch,
  so the schedule ends within the hour at sentence level.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class System:
    """One trained pipeline: its name in results/peers-NAME.json, the venv it runs in
    (setup.sh's name), the script (beside this file, or a path) and its training options."""

    name: str
    peer: str
    script: str
    train_args: tuple[str, ...]
    description: str
    predict_args: tuple[str, ...] = ()
    # what its predict's ``--precision`` offers beyond fp32: bf16 (autocast), int8, onnx
    offers: tuple[str, ...] = ()

    def precisions(self, flags: dict[str, bool]) -> list[str]:
        """The precisions this system labels at on a CPU with these flags: fp32 always, and
        each one it offers, bf16 autocast (and torch.compile, which runs under it) only where
        the CPU has native bf16 (avx512_bf16 or amx_bf16; emulated bf16 is several times
        slower than fp32, so nobody would pick it)."""
        native = bool(flags.get("avx512_bf16") or flags.get("amx_bf16"))
        return ["fp32"] + [p for p in self.offers if p not in ("bf16", "compile") or native]

    def precision_args(self, precision: str) -> list[str]:
        """The predict options that select ``precision`` (none for a system with one)."""
        return ["--precision", precision] if self.offers else []


SYSTEMS: dict[str, System] = {s.name: s for s in (
    System("spacy-cnn", "spacy", "spacy_peer.py", ("--variant", "cnn"),
           "spaCy 3.8 ner, init config --optimize efficiency (CNN tok2vec)"),
    System("spacy-trf", "spacy", "spacy_peer.py", (
        # spaCy splits a batch into accumulate_gradient sub-batches: a step of 667 padded
        # words is the default's sub-batch (3.5 s here), so 850 steps and 2 dev evals fit
        "--variant", "trf", "--set", "training.accumulate_gradient=1",
        "--set", "training.batcher.size=667",
        "--set", "training.optimizer.learn_rate.warmup_steps=85",
        "--set", "training.optimizer.learn_rate.total_steps=850",
        "--set", "training.max_steps=850", "--set", "training.eval_frequency=425"),
           "spaCy 3.8 ner, init config --optimize accuracy (spacy-transformers, "
           "all-mpnet-base-v2)"),
    System("flair-sentence", "flair", "flair_peer.py", ("--epochs", "1", "--lr", "5e-5"),
           "flair 0.15 SequenceTagger + CRF, fine-tuned all-mpnet-base-v2, sentence level"),
    # FLERT reads 64 words either side of each sentence: an epoch far outlasts the hour on 2
    # cores, so its schedule is fitted by the clock (flair_peer --clock-schedule)
    System("flair-flert", "flair", "flair_peer.py",
           ("--context", "--epochs", "1", "--lr", "5e-5", "--clock-schedule"),
           "flair 0.15 SequenceTagger + CRF, fine-tuned all-mpnet-base-v2, FLERT context"),
    System("hf-trainer", "hf", "hf_peer.py", ("--epochs", "1.7"),
           "transformers 5.23 AutoModelForTokenClassification + Trainer, all-mpnet-base-v2",
           offers=("bf16", "int8", "onnx", "openvino", "compile")),
)}


def with_epochs(system: System, epochs: str) -> System:
    """The system with its ``--epochs`` set to ``epochs`` (spaCy's configs have none).

    Raises:
        HarnessError: a system without an epoch count, or a count that is no number > 0.
    """
    from dataclasses import replace

    from peers.common import HarnessError

    args = list(system.train_args)
    if "--epochs" not in args:
        raise HarnessError(f"--epochs {system.name}: this system has no epoch count (spaCy "
                           "stops by its config's max_steps and patience)")
    try:
        ok = float(epochs) > 0
    except ValueError:
        ok = False
    if not ok:
        raise HarnessError(f"--epochs {system.name}={epochs}: expected a number above 0")
    args[args.index("--epochs") + 1] = epochs
    return replace(system, train_args=tuple(args))


def pick(names: str | None) -> list[System]:
    """The systems a comma-separated list names (all of them for None).

    Raises:
        HarnessError: an unknown name.
    """
    from peers.common import HarnessError

    if not names:
        return list(SYSTEMS.values())
    chosen = []
    for name in (n.strip() for n in names.split(",") if n.strip()):
        if name not in SYSTEMS:
            raise HarnessError(f"--systems: unknown system {name!r}; expected some of "
                               f"{', '.join(SYSTEMS)}")
        chosen.append(SYSTEMS[name])
    return chosen
