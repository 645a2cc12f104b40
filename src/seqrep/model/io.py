"""Saving and loading a labeler folder (safetensors only; no pickles are ever loaded).

A labeler folder may come from anyone, so loading trusts nothing it says about code: remote
code runs only when the caller passes ``trust_remote_code=True`` (the folder's own setting is
ignored); each weight file is the exact safetensors file its loader reads (a backbone or
adapter without it is refused before any library that could unpickle is called, and the
adapter is read by seqrep, never by peft's loaders, which fall back to pickles); a run's own
backbone must fill the model exactly; and what its files ask for is bounded first
(:mod:`seqrep.model.checks`). Every refusal is one :class:`ModelError` line.

Layout::

    DIR/config.json          LabelerConfig (labels included) + seqrep version + the first
                             position id the backbone was fed (none recorded: 0, as seqrep
                             fed every model before it numbered RoBERTa-type ones from 2)
                             + for a run that keeps no backbone, ``base``: a local
                             base's absolute path and fingerprint, checked on load, or
                             a Hub base's id and commit (``hub``, ``revision``)
    DIR/head.safetensors     the linear head, fp32
    DIR/adapter/             LoRA adapter (finetune=lora or qlora), peft format
    DIR/backbone/            the cut backbone's weights (finetune=full)
    DIR/tokenizer/           the tokenizer files

Which of ``adapter/`` and ``backbone/`` a folder holds is its fine-tuning mode's
(:data:`seqrep.model.tuning.MODES`: ``saves_adapter``, ``saves_backbone``); a run that keeps
no backbone (``frozen``, ``lora``, ``qlora``) references the base model and reloads it (a local
base by its recorded absolute path, refused in one line when another model, or none, is there;
a Hub base at its recorded commit, whatever its branch names now; a packaged alias by name); a
quantized (QLoRA) run goes on the 4-bit base where
bitsandbytes can quantize, else (with a notice) on the full-precision base, as its mode's
``fallback``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from safetensors.torch import load_file, save_file

import seqrep
from seqrep.errors import ConfigError, ModelError, first_line
from seqrep.files import atomic as fileio
from seqrep.files.atomic import atomic_dir, write_json
from seqrep.model.backbone import (
    SAFETENSORS_NAMES,
    Backbone,
    BackboneInfo,
    fingerprint,
    load_backbone,
    quiet_transformers,
    require_weights,
)
from seqrep.model.device import qlora_device
from seqrep.model.labeler_config import LabelerConfig
from seqrep.model.packaged import PACKAGED
from seqrep.model.tuning import MODES, REBUILT, qlora_problem

if TYPE_CHECKING:
    import torch


class SavedLabeler(Protocol):
    """A labeler as this module saves and rebuilds it: the
    :class:`~seqrep.model.labeler.SequenceLabeler`, named structurally (it calls this
    module)."""

    config: LabelerConfig
    backbone_info: BackboneInfo
    backbone: Any  # the (possibly adapted) transformers model
    tokenizer: Any
    head: torch.nn.Module

    def __init__(self, config: LabelerConfig, backbone: Backbone) -> None: ...

    @staticmethod
    def _load_backbone(config: LabelerConfig, source: str | None = None, cut: bool = True,
                       tokenizer: str | None = None) -> Backbone: ...

    def eval(self) -> Any: ...


# the labeler class load_labeler rebuilds (SequenceLabeler, which calls it: no import back)
L = TypeVar("L", bound=SavedLabeler)
ADAPTER_WEIGHTS = "adapter_model.safetensors"
# the JSON files of a labeler folder are a few kB (a config with 2,048 labels: about 60 kB)
MAX_JSON_BYTES = 1 << 22
# a first position id past this is no model's (RoBERTa-type models start at padding_idx + 1)
MAX_FIRST = 1 << 16


def save_labeler(labeler: SavedLabeler, path: Path) -> Path:
    """Write ``labeler`` to ``path`` atomically; returns the path."""
    with atomic_dir(path, "labeler") as tmp, quiet_transformers():
        record = {"seqrep_version": seqrep.__version__,
                  "total_layers": labeler.backbone_info.total_layers,
                  "first_position": labeler.backbone_info.first_position,
                  "labeler": labeler.config.to_dict()}
        base = _base_record(labeler)
        if base is not None:
            record["base"] = base
        write_json(tmp / "config.json", record)
        head = {k: v.detach().float().contiguous().cpu()
                for k, v in labeler.head.state_dict().items()}
        save_file(head, str(tmp / "head.safetensors"))
        mode = MODES[labeler.config.finetune]
        if mode.saves_adapter:
            labeler.backbone.save_pretrained(str(tmp / "adapter"))
        elif mode.saves_backbone:
            labeler.backbone.save_pretrained(str(tmp / "backbone"), safe_serialization=True)
        labeler.tokenizer.save_pretrained(str(tmp / "tokenizer"))
    return path


def _base_record(labeler: SavedLabeler) -> dict[str, Any] | None:
    """Where a run that keeps no backbone finds its base again: a Hub model's id and the
    commit it was loaded at, a local folder's absolute path and
    :func:`~seqrep.model.backbone.fingerprint`, or None (a run that keeps its backbone; a
    packaged alias, which keeps its own name). ``--model`` as typed stays the config's
    ``model``, but a relative path means another folder, or a hub repository, from another
    directory, a Hub id names whatever its main branch holds later, and a different model at
    the same path would take the adapter and head without an error."""
    info = labeler.backbone_info
    if MODES[labeler.config.finetune].saves_backbone or labeler.config.model in PACKAGED:
        return None
    if info.revision is not None:
        return {"hub": info.source, "revision": info.revision}
    source = Path(info.source)
    if not source.is_dir():
        return None
    return {"path": str(source.resolve()), "files": fingerprint(source)}


def _recorded_base(path: Path, config: LabelerConfig) -> str | None:
    """The base folder a run that keeps no backbone recorded, checked to be the model it was
    trained on; None for a folder that recorded none (written before seqrep recorded bases,
    or on a packaged alias or a hub id): its ``model`` is loaded by name, as before.

    Where the recorded path is gone, the name as typed is tried as a folder (a project moved
    whole, run and base, loads from the directory it was trained in), under the same check."""
    cfg = path / "config.json"
    base = read_json(cfg, "a seqrep labeler config").get("base")
    if base is None:
        return None
    if isinstance(base, dict) and "hub" in base:
        return _hub_base(cfg, base)
    if not (isinstance(base, dict) and isinstance(base.get("path"), str)
            and isinstance(base.get("files"), dict)):
        raise ModelError(f"{cfg}: base={_short(base)}; expected an object with the base "
                         f"model's 'path' and its 'files' fingerprint, or its Hub id "
                         f"('hub') and commit ('revision')")
    folder = Path(base["path"])
    what = f"this {config.finetune} run was trained on"
    if not folder.is_dir():
        if not Path(config.model).is_dir():
            raise ModelError(f"{path}: {what} the base model at {folder}, which does not "
                             f"exist (the run names it {config.model!r}); put that model "
                             f"back there")
        folder = Path(config.model).resolve()
    found = fingerprint(folder)
    if found != base["files"]:
        differs = sorted(set(found) ^ set(base["files"])) or sorted(
            name for name in found if found[name] != base["files"][name])
        kept = "adapter and head" if MODES[config.finetune].saves_adapter else "head"
        raise ModelError(f"{path}: {folder} is not the base model {what} ({differs[0]} "
                         f"differs from the one it was trained on); its {kept} would run on "
                         f"another model")
    return str(folder)


def checked_hub_base(cfg: Path, base: Any) -> tuple[str, str]:
    """``(repo_id, commit)`` of a recorded Hub base (``{"hub": org/name, "revision": 40-hex
    commit}`` and nothing else), or one line naming ``cfg`` and what is wrong: what loading
    and the model card both read."""
    from seqrep.model.hub import COMMIT, hub_name

    repo, commit = (base.get("hub"), base.get("revision")) if isinstance(base, dict) \
        else (None, None)
    parsed = hub_name(repo) if isinstance(repo, str) else None
    if parsed is None or parsed[1] is not None or not (
            isinstance(commit, str) and COMMIT.fullmatch(commit)) or len(base) != 2:
        raise ModelError(f"{cfg}: base={_short(base)}; expected an object with the Hub id "
                         f"('hub': org/name) and the 40-hex commit ('revision') of the base")
    return parsed[0], commit


def _hub_base(cfg: Path, base: dict[str, Any]) -> str:
    """The snapshot folder of a Hub base at its recorded commit (downloaded into
    huggingface_hub's cache, or read from it offline), or one line naming what is wrong."""
    from seqrep.model.hub import download

    repo, commit = checked_hub_base(cfg, base)
    return str(download(repo, commit, base=True))


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:60] + "..."


def model_dir(path: Path) -> Path:
    """A run folder's ``best/`` model, or ``path`` itself when it is a labeler folder; a
    Hugging Face Hub name (``org/name[@rev]``) is its checked snapshot folder in the cache
    (:func:`seqrep.model.hub.resolve`), so every loader of a folder takes one."""
    from seqrep.model.hub import resolve

    path = resolve(path)
    return path / "best" if (path / "best" / "config.json").exists() else path


def _check_tree(path: Path) -> None:
    """A labeler folder holds regular files only, and no link leaves it (a snapshot in
    huggingface_hub's cache: none leaves its repository's folder), before anything reads it."""
    from seqrep.model.checks import check_files
    from seqrep.model.hub import snapshot_of

    check_files(path, within=path.parent.parent if snapshot_of(path) else path)


def read_json(path: Path, what: str) -> object:
    """A small JSON file of a labeler folder, through :func:`seqrep.files.atomic.read_json` (a link
    to ``/dev/zero``, a folder, binary, deep nesting or a huge number is one line, not a hang,
    a MemoryError or a traceback)."""
    return fileio.read_json(path, what, ModelError, MAX_JSON_BYTES)


def read_config(path: Path) -> LabelerConfig:
    """The LabelerConfig saved in a labeler (or run) folder."""
    path = model_dir(path)
    cfg = path / "config.json"
    if not path.exists():  # a mistyped path: "no config.json" would send one looking inside
        raise ModelError(f"{path} does not exist; expected a run folder or a saved labeler")
    if not cfg.exists():
        raise ModelError(f"{path} is not a saved labeler (no config.json)")
    data = read_json(cfg, "a seqrep labeler config")
    if not isinstance(data, dict) or not isinstance(data.get("labeler"), dict):
        raise ModelError(f"{cfg}: not a seqrep labeler config (expected an object with a "
                         f"'labeler' object)")
    try:
        config = LabelerConfig.from_saved(data["labeler"])
    except (ValueError, TypeError, RecursionError) as err:
        raise ModelError(f"{cfg}: not a seqrep labeler config ({first_line(err)})") from None
    except ConfigError as err:
        raise ModelError(f"{cfg}: {err}") from None
    if isinstance(config.exit_layer, str):  # a saved backbone is cut already: never again
        raise ModelError(f"{cfg}: exit_layer={config.exit_layer!r}; a saved labeler records "
                         f"the layer it was cut at (a number) or null (every layer)")
    return config


def _first_position(path: Path) -> int:
    """The first position id a folder's labeler was trained with: its record, else 0 (a
    folder written before seqrep numbered RoBERTa-type positions from 2 fed 0-based ones)."""
    cfg = path / "config.json"
    value = read_json(cfg, "a seqrep labeler config").get("first_position", 0)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_FIRST:
        raise ModelError(f"{cfg}: first_position={value!r}; expected an integer in "
                         f"0..{MAX_FIRST}")
    return value


def load_adapter(backbone: torch.nn.Module, folder: Path) -> torch.nn.Module:
    """``backbone`` with the LoRA adapter saved in ``folder``, read from
    ``adapter_model.safetensors`` by seqrep itself: peft's own loaders fall back to
    unpickling ``adapter_model.bin``, so they are never called. Every adapter weight must come
    from the file (one line naming what does not fit otherwise)."""
    require_weights(folder, (ADAPTER_WEIGHTS,), "LoRA adapter")
    with _quiet_peft():
        from peft import LoraConfig, PeftModel, set_peft_model_state_dict
    cfg_file = folder / "adapter_config.json"
    data = read_json(cfg_file, "a peft adapter config")
    if not isinstance(data, dict) or data.get("peft_type") != "LORA":
        raise ModelError(f"{cfg_file}: not a LoRA adapter config (peft_type "
                         f"{data.get('peft_type') if isinstance(data, dict) else None!r})")
    if data.get("task_type") is not None:
        raise ModelError(f"{cfg_file}: task_type {data['task_type']!r}; a seqrep adapter has "
                         f"none (the head is seqrep's own)")
    try:
        with quiet_transformers(), _quiet_peft():
            config = LoraConfig.from_pretrained(str(folder))
            config.inference_mode = True
            model = PeftModel(backbone, config)
    except Exception as err:  # noqa: BLE001 - peft validates with several error types
        raise ModelError(f"{cfg_file}: not a usable LoRA adapter config ({first_line(err)})"
                         ) from None
    weights = _safetensors(folder / ADAPTER_WEIGHTS)
    try:
        result = set_peft_model_state_dict(model, weights)
    except Exception as err:  # noqa: BLE001 - shape and key errors from torch and peft
        raise ModelError(f"{folder / ADAPTER_WEIGHTS}: does not fit the model "
                         f"({first_line(err)})") from None
    missing = sorted(k for k in result.missing_keys if "lora_" in k)
    unexpected = sorted(result.unexpected_keys)
    if missing or unexpected:
        raise ModelError(f"{folder / ADAPTER_WEIGHTS}: {len(missing)} adapter weights "
                         f"missing, {len(unexpected)} unknown (e.g. "
                         f"{(missing or unexpected)[0]}); the adapter does not fit the model")
    model.requires_grad_(False)
    return model.eval()


@contextlib.contextmanager
def _quiet_peft() -> Iterator[None]:
    """Silence what importing peft and wrapping a model print beside the answer or the error
    line: bitsandbytes' note on CPU kernels it did not find, transformers' deprecation
    warnings and peft's notes on config keys (a seqrep adapter's config is seqrep's own)."""
    logger = logging.getLogger("bitsandbytes")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            warnings.simplefilter("ignore", UserWarning)
            yield
    finally:
        logger.setLevel(level)


def _safetensors(path: Path) -> dict[str, torch.Tensor]:
    """A safetensors file's tensors, or one line naming it (truncated, not safetensors ...)."""
    try:
        return load_file(str(path))
    except Exception as err:  # noqa: BLE001 - safetensors raises its own error types
        raise ModelError(f"{path}: not a readable safetensors file ({first_line(err)})") from None


class FullPrecisionBase(UserWarning):
    """A QLoRA run was loaded on its full-precision base (bitsandbytes cannot quantize here)."""


_told: set[str] = set()  # QLoRA runs already announced as loaded on the full-precision base


def _qlora_base(config: LabelerConfig, path: Path, full_precision: bool) -> LabelerConfig:
    """The config to load a QLoRA run's base with: 4-bit where bitsandbytes can quantize,
    else (saying so once per run folder) full precision, as LoRA."""
    problem = None if full_precision else qlora_problem(qlora_device())
    if not full_precision and problem is None:
        return config
    if problem and str(path) not in _told:
        _told.add(str(path))
        warnings.warn(f"{path} was trained with QLoRA on a 4-bit base, but {problem}: its "
                      f"adapter goes on the full-precision base {config.model} (predictions "
                      f"can differ slightly from training's; bitsandbytes==0.50.2 loads the "
                      f"4-bit base on a CPU)", FullPrecisionBase, stacklevel=3)
    return config.replace(finetune=MODES[config.finetune].fallback)


def load_labeler(cls: type[L], path: Path, trust_remote_code: bool = False,
                 full_precision: bool = False) -> L:
    """Rebuild a labeler from its folder (or a run folder's best model).

    Args:
        cls: the labeler class.
        path: a labeler folder or a run folder.
        trust_remote_code: allow code shipped with the backbone (the caller's decision; the
            folder's saved setting is never used).
        full_precision: put a QLoRA run's adapter on the full-precision base even where
            bitsandbytes could load the 4-bit one (an ONNX export merges it there).
    """
    path = model_dir(path)
    _check_tree(path)
    saved = read_config(path)
    config = saved.replace(trust_remote_code=trust_remote_code)
    tokenizer = str(path / "tokenizer")
    mode = MODES[config.finetune]
    if mode.saves_backbone:
        # the saved backbone is already cut, and carries its own weights: all of them
        require_weights(path / "backbone", SAFETENSORS_NAMES, "backbone")
        backbone = load_backbone(str(path / "backbone"), None, config.final_norm,
                                 config.attn_implementation, config.dtype,
                                 config.trust_remote_code, tokenizer, complete=True)
    else:
        if mode.saves_adapter:
            require_weights(path / "adapter", (ADAPTER_WEIGHTS,), "LoRA adapter")
        source = _recorded_base(path, config)
        base = _qlora_base(config, path, full_precision) if mode.quantized else config
        try:
            backbone = cls._load_backbone(base, source=source, tokenizer=tokenizer)
        except ModelError as err:
            raise ModelError(f"{path}: this {config.finetune} run needs its base model "
                             f"{source or config.model!r}, which cannot be loaded: {err}"
                             ) from None
    # the position numbering it was trained with, even where it is not the model's own
    backbone.info = dataclasses.replace(backbone.info, first_position=_first_position(path))
    labeler = cls(config.replace(finetune=REBUILT), backbone)
    labeler.config = config
    if mode.saves_adapter:
        labeler.backbone = load_adapter(labeler.backbone, path / "adapter")
    head = path / "head.safetensors"
    try:
        labeler.head.load_state_dict(_safetensors(head))
    except ModelError:
        raise
    except Exception as err:  # noqa: BLE001 - torch raises several types
        raise ModelError(f"{head}: not a head for this labeler ({first_line(err)})") from None
    labeler.eval()
    return labeler
