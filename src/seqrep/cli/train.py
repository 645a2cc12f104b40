"""``seqrep train``: fine-tune a labeler on a dataset and keep the best model."""

from __future__ import annotations

from pathlib import Path

import typer

from seqrep.cli.options import option
from seqrep.config import LabelerConfig as L
from seqrep.config import TrainConfig as T


def train(
    model: str = option(L, "model", "--model"),
    dataset: str = option(T, "dataset", "--dataset"),
    output: Path = typer.Option(..., "--output", "-o", help="run folder to create"),
    format: str | None = option(T, "format", "--format"),
    repetitions: int = option(L, "repetitions", "--repetitions", "-r"),
    unmask: str = option(L, "unmask", "--unmask"),
    exit_layer: int | None = option(L, "exit_layer", "--exit-layer"),
    finetune: str = option(L, "finetune", "--finetune"),
    train_embeddings: bool = option(L, "train_embeddings", "--train-embeddings"),
    lora_rank: int = option(L, "lora_rank", "--lora-rank"),
    lora_alpha: int = option(L, "lora_alpha", "--lora-alpha"),
    lora_dropout: float = option(L, "lora_dropout", "--lora-dropout"),
    subtoken: str = option(L, "subtoken", "--subtoken"),
    read: str = option(L, "read", "--read"),
    max_subtokens: int = option(L, "max_subtokens", "--max-subtokens"),
    epochs: int = option(T, "epochs", "--epochs"),
    lr: float = option(T, "lr", "--lr"),
    head_lr: float = option(T, "head_lr", "--head-lr"),
    weight_decay: float = option(T, "weight_decay", "--weight-decay"),
    warmup: float = option(T, "warmup", "--warmup"),
    batch_size: int = option(T, "batch_size", "--batch-size"),
    grad_accum: int = option(T, "grad_accum", "--grad-accum"),
    max_grad_norm: float = option(T, "max_grad_norm", "--max-grad-norm"),
    seed: int = option(T, "seed", "--seed"),
    max_train_sentences: int | None = option(T, "max_train_sentences",
                                             "--max-train-sentences"),
    max_eval_sentences: int | None = option(T, "max_eval_sentences",
                                            "--max-eval-sentences"),
    max_test_sentences: int | None = option(T, "max_test_sentences",
                                            "--max-test-sentences"),
    eval_split: str = option(T, "eval_split", "--eval-split"),
    test_split: str | None = option(T, "test_split", "--test-split"),
    eval_every: int = option(T, "eval_every", "--eval-every"),
    checkpoint_every: int = option(T, "checkpoint_every", "--checkpoint-every"),
    early_stopping: int = option(T, "early_stopping", "--early-stopping"),
    decoding: str = option(T, "decoding", "--decoding"),
    max_steps: int | None = option(T, "max_steps", "--max-steps"),
    threads: int | None = option(T, "threads", "--threads"),
    attn_implementation: str = option(L, "attn_implementation", "--attn-implementation"),
    trust_remote_code: bool = option(L, "trust_remote_code", "--trust-remote-code"),
    resume: bool = typer.Option(False, "--resume", help="continue the run in --output"),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace an existing --output"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress output"),
) -> None:
    """Train a sequence labeler; the best model by validation F1 lands in OUTPUT/best."""
    import json

    from seqrep.train import train as run

    labeler = L(model=model, repetitions=repetitions, unmask=unmask, exit_layer=exit_layer,
                finetune=finetune, train_embeddings=train_embeddings, lora_rank=lora_rank,
                lora_alpha=lora_alpha, lora_dropout=lora_dropout, subtoken=subtoken, read=read,
                max_subtokens=max_subtokens, attn_implementation=attn_implementation,
                trust_remote_code=trust_remote_code)
    cfg = T(dataset=dataset, format=format, epochs=epochs, lr=lr, head_lr=head_lr,
            weight_decay=weight_decay, warmup=warmup, batch_size=batch_size,
            grad_accum=grad_accum, max_grad_norm=max_grad_norm, seed=seed,
            max_train_sentences=max_train_sentences, max_eval_sentences=max_eval_sentences,
            max_test_sentences=max_test_sentences,
            eval_split=eval_split, test_split=test_split or None, eval_every=eval_every,
            checkpoint_every=checkpoint_every, early_stopping=early_stopping,
            decoding=decoding, max_steps=max_steps, threads=threads)
    metrics = run(labeler, cfg, output, overwrite=overwrite, resume=resume, quiet=quiet)
    summary = {k: metrics.get(k) for k in ("status", "decoding", "train_seconds")}
    if metrics.get("validation"):
        summary["validation_f1"] = metrics["validation"]["f1"]
    if metrics.get("test"):
        summary["test_f1"] = metrics["test"]["f1"]
    typer.echo(json.dumps(summary))
