"""Reading an ONNX export folder that may come from anyone, before ONNX Runtime runs it.

The default runtime loads any folder holding a ``seqrep-onnx.json``, so an export is shared
like a run folder and checked like one (:mod:`seqrep.model.checks`): its metadata is read
through the bounded reader and every field the runtime uses has the right type and a sane
value; the graph is a plain file inside the folder (never ``../``, an absolute path or a
device); the tokenizer folder holds files only, runs no code and encodes text; and the graph
itself confirms the label count, the width and that every id the tokenizer can produce has an
embedding (the table's size is in the graph, so the largest id is fed to it). Each failure is
one :class:`ModelError` line naming the file and the field; nothing is run on a folder that
fails.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from seqrep.errors import ConfigError, ModelError, first_line
from seqrep.export.files import INPUTS, META_FILE, MODEL_FILE
from seqrep.files.atomic import read_json
from seqrep.model.backbone import BackboneInfo, quiet_transformers
from seqrep.model.checks import SIZE_LIMITS, check_files, largest_token_id
from seqrep.model.labeler_config import LabelerConfig

# a seqrep-onnx.json is a few kB (a config with 2,048 labels: about 60 kB)
MAX_META_BYTES = 1 << 22
MAX_LAYERS = SIZE_LIMITS["num_hidden_layers"]
MAX_HIDDEN = SIZE_LIMITS["hidden_size"]
MAX_FIRST = 1 << 16  # as for a labeler folder (seqrep.model.io)
SHA256 = re.compile(r"[0-9a-f]{64}")
TOKENIZER = "tokenizer"


def read_meta(path: str | Path) -> dict[str, Any]:
    """The ``seqrep-onnx.json`` of an export folder, through the bounded reader (a device, a
    FIFO, binary, deep nesting or a giant is one line, not a hang or a traceback)."""
    meta = Path(path) / META_FILE
    if not (meta.exists() or meta.is_symlink()):
        raise ModelError(f"{path} is not a seqrep ONNX export (no {META_FILE}); make one with "
                         f"`seqrep export RUN --onnx OUT`")
    data = read_json(meta, "a seqrep ONNX export", ModelError, MAX_META_BYTES)
    if not isinstance(data, dict) or data.get("format") != "seqrep-onnx":
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise ModelError(f"{meta}: not a seqrep ONNX export (format {_short(found)}; "
                         f"expected 'seqrep-onnx')")
    return data


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "..."


def _where(path: Path, field: str) -> str:
    return f"{path / META_FILE}: {field}"


def plain_name(path: Path, field: str, name: Any) -> str:
    """``name`` when it is a plain file name (no folder, no ``..``), else one line: a graph
    named ``../x.onnx`` or ``/abs/x.onnx`` would be read from outside the folder."""
    if not isinstance(name, str) or not name or name in (".", "..") \
            or Path(name).name != name or "/" in name or "\\" in name:
        raise ModelError(f"{_where(path, field)}={_short(name)}; expected the name of a "
                         f"file inside the export folder")
    return name


def graph_file(path: Path, meta: dict[str, Any], model_file: str | None,
               variant: str | None) -> tuple[Path, str | None]:
    """The graph to load (a regular file in ``path``) and the sha256 it must have (None:
    another graph the caller named, not checked)."""
    recorded_name = plain_name(path, "model_file", meta.get("model_file", MODEL_FILE))
    expected: Any = meta.get("sha256")
    field = "sha256"
    if variant is not None:
        variants = meta.get("variants", {})
        if not isinstance(variants, dict):
            raise ModelError(f"{_where(path, 'variants')}={_short(variants)}; expected an "
                             f"object")
        recorded = variants.get(variant)
        if recorded is None:
            raise ModelError(f"{path} has no {variant} graph; write one with `seqrep export "
                             f"RUN --onnx OUT --{variant}`")
        if not isinstance(recorded, dict):
            raise ModelError(f"{_where(path, f'variants.{variant}')}={_short(recorded)}; "
                             f"expected an object")
        name = plain_name(path, f"variants.{variant}.model_file", recorded.get("model_file"))
        expected, field = recorded.get("sha256"), f"variants.{variant}.sha256"
    elif model_file is not None and model_file != recorded_name:
        # another graph of the caller's choosing: no recorded sha256 to check it against
        return _regular(path / plain_name(path, "model_file", model_file)), None
    else:
        name = recorded_name
    graph = _regular(path / name)
    if not (isinstance(expected, str) and SHA256.fullmatch(expected)):
        raise ModelError(f"{_where(path, field)}={_short(expected)}; expected the graph's "
                         f"hex sha256")
    return graph, expected


def _regular(graph: Path) -> Path:
    if not graph.is_file():
        raise ModelError(f"{graph}: no such ONNX graph (a regular file named by "
                         f"{META_FILE})")
    return graph


def _int(path: Path, facts: dict[str, Any], name: str, low: int, high: int,
         default: int | None = None) -> int:
    value = facts.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ModelError(f"{_where(path, 'backbone.' + name)}={_short(value)}; expected an "
                         f"integer from {low} to {high}")
    return value


def backbone_info(path: Path, meta: dict[str, Any]) -> BackboneInfo:
    """The backbone facts saved at export, each of its type and within bounds (the pad id's
    upper bound is the graph's embedding table: :func:`check_graph` feeds it)."""
    facts = meta.get("backbone")
    if not isinstance(facts, dict):
        raise ModelError(f"{_where(path, 'backbone')}={_short(facts)}; expected an object "
                         f"of the backbone's facts")
    total = _int(path, facts, "total_layers", 1, MAX_LAYERS)
    layers = _int(path, facts, "num_layers", 1, total)
    hidden = _int(path, facts, "hidden_size", 1, MAX_HIDDEN)
    pad = _int(path, facts, "pad_id", 0, 1 << 31, 0)
    first = _int(path, facts, "first_position", 0, MAX_FIRST, 0)
    source, encoder = facts.get("source", ""), facts.get("is_encoder", False)
    if not isinstance(source, str) or not isinstance(encoder, bool):
        raise ModelError(f"{_where(path, 'backbone')}: source {_short(source)}, is_encoder "
                         f"{_short(encoder)}; expected a string and true or false")
    unmasked = meta.get("unmasked_layers", [])
    if not isinstance(unmasked, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) and 0 <= i <= layers
            for i in unmasked):
        raise ModelError(f"{_where(path, 'unmasked_layers')}={_short(unmasked)}; expected a "
                         f"list of layer numbers from 0 to {layers}")
    return BackboneInfo(source, encoder, total, layers, hidden, pad, first)


def labeler_config(path: Path, meta: dict[str, Any]) -> LabelerConfig:
    """The labeler config saved in the metadata, checked as a labeler folder's is; the
    folder's ``config.json`` (what the server reads before loading) must say the same."""
    data = meta.get("labeler")
    if not isinstance(data, dict):
        raise ModelError(f"{_where(path, 'labeler')}={_short(data)}; expected an object (the "
                         f"labeler config)")
    try:
        config = LabelerConfig.from_saved(data)
    except (ConfigError, ValueError, TypeError, RecursionError) as err:
        raise ModelError(f"{_where(path, 'labeler')}: {first_line(err)}") from None
    if (path / "config.json").exists() or (path / "config.json").is_symlink():
        from seqrep.model.io import read_config

        if read_config(path).to_dict() != config.to_dict():
            raise ModelError(f"{path / 'config.json'}: its labeler config differs from "
                             f"{META_FILE}'s; the folder was changed after the export")
    return config


def load_tokenizer(path: Path) -> Any:
    """The export's tokenizer, loaded without remote code from a folder of plain files,
    once it has shown it encodes text."""
    folder = path / TOKENIZER
    if not folder.is_dir():
        raise ModelError(f"{folder}: no tokenizer folder; the export is incomplete")
    check_files(folder)
    settings = folder / "tokenizer_config.json"
    if settings.exists():
        data = read_json(settings, "a tokenizer config", ModelError)
        if isinstance(data, dict) and "auto_map" in data:
            raise ModelError(f"{settings}: auto_map asks for code from the folder; an ONNX "
                             f"export runs no code from its folder (its tokenizer needs none)")
    try:
        with quiet_transformers():
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(str(folder), trust_remote_code=False,
                                                      local_files_only=True)
    except Exception as err:  # noqa: BLE001 - loaders of untrusted files raise many types
        if "trust_remote_code" in str(err):
            raise ModelError(f"{folder}: the tokenizer needs code from the folder, which an "
                             f"ONNX export never runs") from None
        raise ModelError(f"{folder}: not a loadable tokenizer ({first_line(err)})") from None
    return tokenizer


def check_graph(path: Path, graph_path: Path, session: Any, config: LabelerConfig,
                info: BackboneInfo, tokenizer: Any) -> None:
    """What the graph says against the metadata and the tokenizer: only the inputs seqrep
    feeds, one logit per label, states of the recorded width, and an embedding for the
    largest id the tokenizer can produce and for the pad id (a one-row run: the table's size
    is inside the graph, and ONNX Runtime refuses an id past it)."""
    import numpy as np

    inputs = [i.name for i in session.get_inputs()]
    outputs = {o.name: o.shape for o in session.get_outputs()}
    graph = graph_path.name
    unknown = sorted(set(inputs) - set(INPUTS))
    if unknown or "input_ids" not in inputs or "logits" not in outputs:
        raise ModelError(f"{path / graph}: inputs {inputs}, outputs {sorted(outputs)}; "
                         f"expected inputs among {', '.join(INPUTS)} and a 'logits' output")
    for name, want, field in (("logits", len(config.labels), "labeler.labels"),
                              ("states", info.hidden_size, "backbone.hidden_size")):
        width = (outputs.get(name) or [None, None])[-1]
        if isinstance(width, int) and width != want:
            raise ModelError(f"{_where(path, field)}: {want} but the graph {graph} outputs "
                             f"{width} {name} per word; the metadata does not match the graph")
    largest = largest_token_id(tokenizer, str(path / TOKENIZER))
    ids = np.array([[largest, info.pad_id]], dtype=np.int64)
    feed = {"input_ids": ids, "attention_mask": np.ones_like(ids),
            "position_ids": np.array([[0, 1]], dtype=np.int64),
            "read_batch": np.zeros(1, dtype=np.int64), "read_pos": np.zeros(1, dtype=np.int64),
            "read_word": np.zeros(1, dtype=np.int64),
            "read_weight": np.ones(1, dtype=np.float32), "words": np.zeros(1, dtype=np.float32)}
    import onnxruntime as ort

    quiet = ort.RunOptions()
    quiet.log_severity_level = 4  # the refusal below says it; ONNX Runtime's log line would not
    try:
        session.run(["logits"], {k: feed[k] for k in inputs}, quiet)
    except Exception as err:  # noqa: BLE001 - ONNX Runtime raises its own error types
        if info.pad_id > largest:
            raise ModelError(f"{_where(path, 'backbone.pad_id')}={info.pad_id}, which the "
                             f"graph {graph} has no embedding for ({first_line(err)})") from None
        raise ModelError(f"{path / TOKENIZER}: the tokenizer produces token id {largest}, "
                         f"which the graph {graph} has no embedding for; the tokenizer does "
                         f"not belong to this graph ({first_line(err)})") from None
