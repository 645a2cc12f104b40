"""Frozen probes: linear heads on the word states of many layers, from one forward pass.

For one (model, r, unmask) the backbone runs once per sentence (cut at the deepest probed
layer); the states of every probed layer feed independent linear heads trained together as
one batched einsum. This makes sweeps over layers x repetitions cheap enough for a CPU.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import torch

from seqrep.config import LabelerConfig, TrainConfig
from seqrep.data.splits import load_data, tag_inventory
from seqrep.data.types import Sentence
from seqrep.decode import decode
from seqrep.evaluate import check_labels, score
from seqrep.fileio import write_json
from seqrep.model.labeler import SequenceLabeler
from seqrep.train.run import seeded


def features(labeler: SequenceLabeler, sentences: list[Sentence], layers: list[int],
             batch_size: int) -> torch.Tensor:
    """``(words, len(layers), H)`` fp16 states of all words of ``sentences``, in order."""
    states = labeler.layer_states([s.words for s in sentences], layers, batch_size)
    return torch.cat(states).half()


def _logits(w: torch.Tensor, b: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    # x (N, layers, H), w (layers, H, C) -> (N, layers, C)
    return torch.einsum("nlh,lhc->nlc", x.float(), w) + b


def _per_sentence(logits: torch.Tensor, sentences: list[Sentence]) -> list[torch.Tensor]:
    return list(torch.split(logits, [len(s) for s in sentences]))


def fit_heads(x: torch.Tensor, y: torch.Tensor, x_val: torch.Tensor, val: list[Sentence],
              labels: list[str], epochs: int, lr: float, seed: int) -> tuple[torch.Tensor, ...]:
    """Train one linear head per layer; keep each layer's best epoch by validation F1 (greedy).

    Returns:
        ``(w, b)``: ``(layers, H, C)`` weights and ``(layers, C)`` biases.
    """
    gen = torch.Generator().manual_seed(seed)
    n_layers, hidden = x.shape[1], x.shape[2]
    w = torch.zeros(n_layers, hidden, len(labels), requires_grad=True)
    b = torch.zeros(n_layers, len(labels), requires_grad=True)
    opt = torch.optim.AdamW([w, b], lr=lr, weight_decay=0.01)
    best_f1 = [-1.0] * n_layers
    best_w, best_b = w.detach().clone(), b.detach().clone()
    for epoch in range(epochs):
        for idx in torch.randperm(len(y), generator=gen).split(512):
            logits = _logits(w, b, x[idx])  # (n, layers, C)
            loss = torch.nn.functional.cross_entropy(
                logits.reshape(-1, len(labels)), y[idx].repeat_interleave(n_layers))
            opt.zero_grad()
            loss.backward()
            opt.step()
        if epoch % 5 == 4 or epoch == epochs - 1:
            with torch.no_grad():
                pred = _logits(w, b, x_val).argmax(-1)  # (N, layers)
            for layer in range(n_layers):
                tags = [[labels[i] for i in p.tolist()]
                        for p in _per_sentence(pred[:, layer], val)]
                f1 = score([s.tags for s in val], tags)["f1"]
                if f1 > best_f1[layer]:
                    best_f1[layer] = f1
                    best_w[layer], best_b[layer] = w.detach()[layer], b.detach()[layer]
    return best_w, best_b


def run_probe(labeler_config: LabelerConfig, train_config: TrainConfig, layers: list[int],
              output: str | Path | None = None, epochs: int = 30, lr: float = 1e-3,
              reader_options: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Probe ``layers`` (1-based; empty: all) and score each on validation and test.

    Returns:
        One metrics dict per layer (``layer``, ``validation``, ``test``, ``decoding``, times).
    """
    with seeded(train_config.seed):
        return _probe(labeler_config, train_config, layers, output, epochs, lr,
                      reader_options)


def _probe(labeler_config: LabelerConfig, train_config: TrainConfig, layers: list[int],
           output: str | Path | None, epochs: int, lr: float,
           reader_options: dict[str, Any] | None) -> list[dict[str, Any]]:
    data = load_data(train_config, reader_options)
    labels = tag_inventory(data.train + data.eval + data.test)
    data.eval = check_labels(data.eval, labels, "the validation split")
    data.test = check_labels(data.test, labels, "the test split")
    cfg = labeler_config.replace(labels=labels, finetune="frozen")
    if layers:
        cfg = cfg.replace(exit_layer=max(layers))
    labeler = SequenceLabeler.from_model(**cfg.to_dict())
    layers = list(layers) or list(range(1, labeler.backbone_info.num_layers + 1))
    start = time.perf_counter()
    bs = train_config.eval_batch_size
    x_train = features(labeler, data.train, layers, bs)
    x_val = features(labeler, data.eval, layers, bs)
    x_test = features(labeler, data.test, layers, bs) if data.test else None
    forward_seconds = time.perf_counter() - start
    l2i = {t: i for i, t in enumerate(labels)}
    y = torch.tensor([l2i[t] for s in data.train for t in s.tags])
    start = time.perf_counter()
    w, b = fit_heads(x_train, y, x_val, data.eval, labels, epochs, lr, train_config.seed)
    fit_seconds = time.perf_counter() - start
    out = []
    with torch.no_grad():
        val_logits = _logits(w, b, x_val)
        test_logits = _logits(w, b, x_test) if x_test is not None else None
    for k, layer in enumerate(layers):
        record: dict[str, Any] = {"status": "finished", "layer": layer,
                                  "forward_seconds": round(forward_seconds, 2),
                                  "train_seconds": round(fit_seconds, 2),
                                  "train_sentences": len(data.train)}
        scores = {m: score([s.tags for s in data.eval],
                           [decode(x, labels, m)[0]
                            for x in _per_sentence(val_logits[:, k], data.eval)])
                  for m in ("greedy", "constrained")}
        method = "greedy" if scores["greedy"]["f1"] > scores["constrained"]["f1"] else "constrained"
        record["decoding"], record["validation"] = method, scores[method]
        if test_logits is not None:
            record["test"] = score([s.tags for s in data.test],
                                   [decode(x, labels, method)[0]
                                    for x in _per_sentence(test_logits[:, k], data.test)])
            record["test"]["sentences"] = len(data.test)
        out.append(record)
    if output is not None:
        write_json(Path(output) / "probe.json", out)
    return out
