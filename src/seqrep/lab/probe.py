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
from seqrep.data.splits import load_data
from seqrep.data.tasks import AUTO, SPANS
from seqrep.evaluate import (
    check_labels,
    check_test_labels,
    choose_decoding,
    score_logits,
    scores_by_decoding,
)
from seqrep.files.atomic import write_json
from seqrep.model.exit_layer import EXIT_DEFAULT
from seqrep.model.labeler import SequenceLabeler
from seqrep.model.tuning import FROZEN
from seqrep.train.plan import seeded
from seqrep.train.probes import features, fit_heads, head_logits, per_sentence


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
    labels = SPANS.inventory(data.train + data.eval)  # never from test
    data.eval = check_labels(data.eval, labels, "the validation split")
    data.test = check_test_labels(data.test, labels)
    cfg = labeler_config.replace(labels=labels, finetune=FROZEN)
    if layers:
        cfg = cfg.replace(exit_layer=max(layers))
    elif cfg.exit_layer == EXIT_DEFAULT:  # no layers named: every layer of the model
        cfg = cfg.replace(exit_layer=None)
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
        val_logits = head_logits(w, b, x_val)
        test_logits = head_logits(w, b, x_test) if x_test is not None else None
    for k, layer in enumerate(layers):
        record: dict[str, Any] = {"status": "finished", "layer": layer,
                                  "forward_seconds": round(forward_seconds, 2),
                                  "train_seconds": round(fit_seconds, 2),
                                  "train_sentences": len(data.train),
                                  "unmasked_layers": labeler.layers_unmasked}
        scores = scores_by_decoding(per_sentence(val_logits[:, k], data.eval), data.eval,
                                    labels)
        method = choose_decoding(scores, AUTO)
        record["decoding"], record["validation"] = method, scores[method]
        if test_logits is not None:
            record["test"] = score_logits(per_sentence(test_logits[:, k], data.test),
                                          data.test, labels, method)
            record["test"]["sentences"] = len(data.test)
        out.append(record)
    if output is not None:
        write_json(Path(output) / "probe.json", out)
    return out
