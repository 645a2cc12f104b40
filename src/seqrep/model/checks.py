"""Checks on a model folder that may come from anyone, made before a loader reads it.

A run folder is shared like a document, so what its files claim is bounded before anything is
allocated or parsed: no file is a device, a pipe or a giant, a config asks for no absurd sizes,
a run's own backbone describes no more weights than its files hold, and its tokenizer never
produces an id past the embedding table. Each failure is one :class:`ModelError` line.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from seqrep.errors import ModelError, first_line

# small JSON settings files; tokenizer.json and vocabularies may be large, never unbounded
SETTINGS_FILES = ("config.json", "tokenizer_config.json", "special_tokens_map.json",
                  "generation_config.json", "adapter_config.json", "added_tokens.json",
                  "model.safetensors.index.json")
MAX_SETTINGS_BYTES = 1 << 22
MAX_TEXT_BYTES = 1 << 28
TEXT_SUFFIXES = (".json", ".txt", ".model", ".jinja", ".merges", ".py")

# What a backbone config may ask for: the largest released models stay well inside
# (126 layers, width 16,384, 262,144 tokens, FFN width 53,248).
SIZE_LIMITS = {"num_hidden_layers": 1024, "hidden_size": 1 << 16, "vocab_size": 1 << 22,
               "intermediate_size": 1 << 18, "num_attention_heads": 1024,
               "num_key_value_heads": 1024, "head_dim": 1 << 13,
               "max_position_embeddings": 1 << 24}


def _limit(rel: str) -> int | None:
    name = rel.rsplit("/", 1)[-1]
    return (MAX_SETTINGS_BYTES if name in SETTINGS_FILES
            else MAX_TEXT_BYTES if Path(name).suffix in TEXT_SUFFIXES else None)


def check_files(folder: Path, within: Path | None = None) -> None:
    """Every entry under ``folder`` is a regular file or a folder (a link to ``/dev/zero`` or
    a pipe would be read forever), settings and text files have sane sizes, and no link
    leaves ``within`` (default: ``folder`` itself, as for a run folder, a labeler folder or
    an export shared by anyone; a snapshot in huggingface_hub's cache passes its repository
    folder, whose ``blobs/`` its links point into; a base model named on the command line
    passes ``/``). Checked through the one reader, :func:`seqrep.files.reader.check_folder`."""
    from seqrep.files.reader import check_folder

    if not (folder.is_dir() or folder.is_symlink()):
        return
    check_folder(folder, ModelError, within=within or folder, limit=_limit)


def check_sizes(config: Any, source: str) -> None:
    """The sizes a backbone config asks for are positive integers within
    :data:`SIZE_LIMITS` (``num_hidden_layers: "x"`` or ``hidden_size: 10**6`` is one line)."""
    for name, limit in SIZE_LIMITS.items():
        value = getattr(config, name, None)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= limit:
            raise ModelError(f"{source}: config.json {name}={_short(value)}; expected an "
                             f"integer from 1 to {limit}")
    if getattr(config, "quantization_config", None) is not None:
        raise ModelError(f"{source}: config.json has a quantization_config; seqrep loads "
                         f"full-precision weights (it quantizes itself for --finetune qlora)")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "..."


def stored_elements(folder: Path) -> int:
    """The number of weight elements the folder's safetensors files hold (headers only)."""
    from safetensors import safe_open

    index = folder / "model.safetensors.index.json"
    if index.is_file():
        try:
            weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
            files = sorted({str(v) for v in weight_map.values()})
        except (OSError, ValueError, KeyError, TypeError, AttributeError,
                RecursionError) as err:
            raise ModelError(f"{index}: not a safetensors index ({err})") from None
    else:
        files = ["model.safetensors"]
    total = 0
    for name in files:
        path = folder / name
        if Path(name).name != name or not path.is_file():
            raise ModelError(f"{index}: names {name!r}, not a file beside it")
        try:
            with safe_open(str(path), framework="pt") as f:
                for key in f.keys():  # noqa: SIM118 - safe_open is not a mapping
                    total += math.prod(f.get_slice(key).get_shape())
        except Exception as err:  # noqa: BLE001 - safetensors raises its own error types
            raise ModelError(f"{path}: not a readable safetensors file ({first_line(err)})"
                             ) from None
    return total


def check_described_weights(config: Any, folder: Path, **kw: Any) -> None:
    """A saved backbone's config describes no more weights than its files hold, so a config
    asking for a giant model is refused before anything is allocated (the model is built on
    the meta device, which allocates nothing)."""
    import torch
    from transformers import AutoModel

    try:
        with torch.device("meta"):
            model = AutoModel.from_config(config, **kw)
        described = sum(p.numel() for p in model.parameters())
    except Exception as err:  # noqa: BLE001 - model constructors validate with many types
        raise ModelError(f"{folder}: config.json does not describe a buildable model "
                         f"({first_line(err)})") from None
    held = stored_elements(folder)
    if described > held:
        raise ModelError(f"{folder}: config.json describes {described:,} weights but the "
                         f"weight files hold {held:,}; the folder is damaged or its "
                         f"config.json does not match its weights")


SPECIAL_TOKENS = ("unk", "bos", "eos", "cls", "sep", "mask")
PROBE_TEXT = "Obama visited Paris, 東京 and Москва 🙂 naïve café 1,000."


def check_tokenizer(tokenizer: Any, num_embeddings: int, source: str) -> None:
    """The tokenizer encodes text, and every id it can produce has an embedding (a tokenizer
    swapped for another would index past the table in the middle of a prediction)."""
    largest = largest_token_id(tokenizer, source)
    if largest >= num_embeddings:
        raise ModelError(f"{source}: the tokenizer produces token id {largest} but the model "
                         f"has {num_embeddings} embeddings; the tokenizer does not belong to "
                         f"this model")


def largest_token_id(tokenizer: Any, source: str) -> int:
    """The largest id ``tokenizer`` can produce (its vocabulary, the special tokens the
    encoder reads, the ids of a probe text), once it has shown it encodes text: what must
    have an embedding. Where the table's size is not known (an ONNX graph's), the caller
    feeds this id to the model instead of comparing it with a size."""
    limit = getattr(tokenizer, "model_max_length", None)
    if isinstance(limit, bool) or not isinstance(limit, (int, float)) or limit != limit:
        raise ModelError(f"{source}: tokenizer model_max_length={_short(limit)}; expected a "
                         f"number")
    try:
        ids = tokenizer(PROBE_TEXT, add_special_tokens=True)["input_ids"]
        # a pad token some tokenizer classes add past the table is tolerated: seqrep pads
        # with another id then (seqrep.model.backbone.pad_token_id)
        pad = tokenizer.pad_token_id
        vocab = [i for i in tokenizer.get_vocab().values() if i != pad]
        # the special tokens the encoder reads (a bad one recurses inside transformers)
        special = [getattr(tokenizer, f"{name}_token_id") for name in SPECIAL_TOKENS]
        largest = max([*vocab, *ids, *(i for i in special if i is not None and i != pad), 0])
    except Exception as err:  # noqa: BLE001 - tokenizers raise many types on bad files
        raise ModelError(f"{source}: the tokenizer cannot encode text "
                         f"({first_line(err)})") from None
    if isinstance(largest, bool) or not isinstance(largest, int):
        raise ModelError(f"{source}: the tokenizer produces token id {_short(largest)}; "
                         f"expected integer ids")
    return largest
