"""Linear probes on frozen word states of many layers, from one forward pass, and the exit
layer they pick (``--exit-layer auto``).

The backbone runs once per sentence, cut at the deepest probed layer; the states of every
probed layer feed independent linear heads trained together as one batched einsum, each kept
at its best epoch by validation F1. :func:`choose_exit_layer` takes the layer whose probe
scores best, and the fine-tuning run is then cut there. :func:`check_exit_layer` resolves a
fraction of the depth and refuses a numbered exit layer the model does not have, from its
config alone, before anything loads.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import torch

from seqrep.config import LabelerConfig
from seqrep.core.contexts import context_of
from seqrep.data.splits import TrainData, pick
from seqrep.data.types import Sentence
from seqrep.errors import ModelError
from seqrep.evaluate import layer_scores
from seqrep.model.exit_layer import resolve_exit_layer
from seqrep.model.labeler import SequenceLabeler
from seqrep.model.tuning import FROZEN


def features(labeler: SequenceLabeler, sentences: list[Sentence], layers: list[int],
             batch_size: int) -> torch.Tensor:
    """``(words, len(layers), H)`` fp16 states of all words of ``sentences``, in order."""
    docs = context_of(labeler.config.context).doc_ids(sentences)
    states = labeler.layer_states([s.words for s in sentences], layers, batch_size, docs=docs)
    return torch.cat(states).half()


def head_logits(w: torch.Tensor, b: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``(N, layers, C)`` logits of every layer's head on ``(N, layers, H)`` states, from
    ``(layers, H, C)`` weights and ``(layers, C)`` biases."""
    return torch.einsum("nlh,lhc->nlc", x.float(), w) + b


def per_sentence(logits: torch.Tensor, sentences: list[Sentence]) -> list[torch.Tensor]:
    """Logits over the words of ``sentences`` in order, cut into one tensor per sentence."""
    return list(torch.split(logits, [len(s) for s in sentences]))


def fit_heads(x: torch.Tensor, y: torch.Tensor, x_val: torch.Tensor, val: list[Sentence],
              labels: list[str], epochs: int, lr: float, seed: int, task: str = "spans"
              ) -> tuple[torch.Tensor, ...]:
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
            logits = head_logits(w, b, x[idx])  # (n, layers, C)
            loss = torch.nn.functional.cross_entropy(
                logits.reshape(-1, len(labels)), y[idx].repeat_interleave(n_layers))
            opt.zero_grad()
            loss.backward()
            opt.step()
        if epoch % 5 == 4 or epoch == epochs - 1:
            with torch.no_grad():
                scores = layer_scores(head_logits(w, b, x_val), val, labels, task)
            for layer in range(n_layers):
                f1 = scores[layer]["f1"]
                if f1 > best_f1[layer]:
                    best_f1[layer] = f1
                    best_w[layer], best_b[layer] = w.detach()[layer], b.detach()[layer]
    return best_w, best_b


def choose_exit_layer(config: LabelerConfig, data: TrainData, sentences: int = 1000,
                      epochs: int = 20, lr: float = 1e-3, seed: int = 0,
                      batch_size: int = 64, unit: str = "sentence"
                      ) -> tuple[int, dict[str, Any]]:
    """The exit layer whose frozen probe scores best on validation, and the sweep.

    One forward pass (at the configured r and unmasking) over a fixed random subset of at
    most ``sentences`` training sentences and the validation split gives every layer's
    states; a linear head per layer is fitted on them (greedy decoding, as the probes of the
    lab). Ties go to the shallower layer (cheaper). The subset takes whole documents
    (:func:`~seqrep.data.splits.pick`) with ``unit="document"`` or document context, so
    the probe reads the neighbours training will read.

    Returns:
        ``(layer, sweep)`` with ``sweep = {"layers": [...], "f1": [...], "sentences": n,
        ...}``; ``unmasked_layers`` are the 0-based layers the probe ran bidirectional (the
        same a model cut at any of the layers runs, see
        :func:`~seqrep.model.masks.unmasked_layers`).
    """
    train = data.train
    if len(train) > sentences:
        whole = context_of(config.context).subset_unit(unit)
        train = [train[i] for i in pick(train, sentences, whole, random.Random(seed))]
    probe = SequenceLabeler.from_model(**config.replace(exit_layer=None,
                                                        finetune=FROZEN).to_dict()).eval()
    layers = list(range(1, probe.backbone_info.num_layers + 1))
    x = features(probe, train, layers, batch_size)
    x_val = features(probe, data.eval, layers, batch_size)
    l2i = {t: i for i, t in enumerate(config.labels)}
    y = torch.tensor([l2i[t] for s in train for t in s.tags])
    w, b = fit_heads(x, y, x_val, data.eval, list(config.labels), epochs, lr, seed,
                     config.task)
    with torch.no_grad():
        f1 = [r["f1"] for r in layer_scores(head_logits(w, b, x_val), data.eval,
                                            list(config.labels), config.task)]
    best = max(range(len(layers)), key=lambda k: (f1[k], -k))
    return layers[best], {"layers": layers, "f1": f1, "sentences": len(train),
                          "repetitions": config.repetitions, "unmask": config.unmask,
                          "unmasked_layers": probe.layers_unmasked}


def check_exit_layer(config: LabelerConfig) -> LabelerConfig:
    """The configuration with its exit layer resolved against the model's depth, read from
    its ``config.json`` alone before the data or the weights load (minutes for a large model
    or corpus): a fraction or ``default`` becomes the layer (see
    :func:`~seqrep.model.exit_layer.resolve_exit_layer`), and a numbered layer past the
    model's last is refused. Where the depth cannot be read so cheaply (a packaged GGUF not
    converted yet), the setting stays for the labeler to resolve when it loads.

    Raises:
        ModelError: ``exit_layer=N but MODEL has L layers``, as the loader would say later.
    """
    if config.exit_layer is None or config.exit_layer == "auto":
        return config
    depth = model_depth(config.model, config.trust_remote_code)
    if depth is None:
        return config
    layers, encoder = depth
    exit_layer = resolve_exit_layer(config.exit_layer, layers, encoder)
    if isinstance(exit_layer, int) and exit_layer > layers:
        raise ModelError(f"exit_layer={exit_layer} but {config.model} has {layers} "
                         f"layers (choose 1..{layers})")
    return config.replace(exit_layer=exit_layer)


def model_depth(name: str, trust_remote_code: bool = False) -> tuple[int, bool] | None:
    """The layer count a model's config gives, and whether it is an encoder, read without
    its weights: a local folder's (checked as the loader checks it first) or a packaged
    model's once installed. None where reading it would cost what loading does (a packaged
    GGUF not converted yet), where the model is a Hub id (only seqrep's one download reads
    the Hub, through its checks, when the model loads; transformers' own fetch of the
    config bypassed both and waited out its retries on a Hub out of reach), or where it
    fails: the loader then says why."""
    from seqrep.model.backbone import quiet_transformers
    from seqrep.model.checks import check_files
    from seqrep.model.packaged import PACKAGED, cached_path, package_dir

    if name in PACKAGED:
        model = PACKAGED[name]
        pkg = None if model.gguf or model.parts else package_dir(model)
        source = cached_path(model) if model.gguf or model.parts else \
            None if pkg is None else pkg / (model.folder or "")
        if source is None or not (source / "config.json").is_file():
            return None
        name = str(source)
    elif not (Path(name).exists() or Path(name).is_symlink()):
        return None  # a Hub id (or nothing at all): the loader downloads or refuses it
    check_files(Path(name), within=Path("/"))  # no link to /dev/zero for a config.json
    try:
        from transformers import AutoConfig
        from transformers.models.auto.modeling_auto import MODEL_FOR_MASKED_LM_MAPPING_NAMES

        with quiet_transformers():
            config = AutoConfig.from_pretrained(name, trust_remote_code=trust_remote_code)
        layers = config.num_hidden_layers
        encoder = config.model_type in MODEL_FOR_MASKED_LM_MAPPING_NAMES  # as the loader says
    except Exception:  # noqa: BLE001 - the loader reports an unreadable config in its words
        return None
    ok = isinstance(layers, int) and not isinstance(layers, bool) and layers > 0
    return (layers, encoder) if ok else None
