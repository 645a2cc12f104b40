"""A labeler on the Hugging Face Hub, named ``org/name`` (or ``org/name@revision``) wherever a
run folder is accepted.

:func:`resolve` turns such a name into the local folder of its snapshot in huggingface_hub's
cache (``models--org--name/snapshots/<commit>/``; downloaded first unless ``HF_HUB_OFFLINE``
is set), and leaves a local path as it is, so the loaders behind it see a folder either way
and make the same checks as for any folder (:mod:`seqrep.model.io`, :mod:`seqrep.model.checks`).

A repository is written by anyone, and a cache can be edited by anything that runs as the
user, so the cache's folder of the repository is checked before huggingface_hub reads it, and
the snapshot it returns after (:mod:`seqrep.model.hub_cache`: refs, links, FIFOs, devices);
before a loader reads it the snapshot itself is checked: only the files a labeler
holds (:data:`ALLOW_PATTERNS`, which is also all that is downloaded), each entry a file or a
link into the repository's own real ``blobs/`` (no link leaving the cache), every
``.safetensors`` file a safetensors file (not a pickle under its name), no settings file
asking for code (``auto_map``), and the files every labeler has. Each refusal is one
:class:`~seqrep.errors.ModelError` line naming the entry.
"""

from __future__ import annotations

import fnmatch
import os
import re
import struct
from pathlib import Path

from seqrep.errors import ConfigError, ModelError, first_line
from seqrep.files import atomic as fileio
from seqrep.model.checks import MAX_SETTINGS_BYTES, SETTINGS_FILES
from seqrep.model.hub_cache import (
    COMMIT,
    cached_commit,
    check_entries,
    check_repo,
    check_returned,
)

# What a labeler folder holds (seqrep.model.io's layout) and the card: all that is downloaded,
# and all a snapshot may hold. No code (.py), no pickles (.bin, .pt, .pkl), no ONNX graphs.
ALLOW_PATTERNS = [
    "README.md", "config.json", "head.safetensors",
    "adapter/*.json", "adapter/*.safetensors",
    "backbone/*.json", "backbone/*.safetensors",
    "tokenizer/*.json", "tokenizer/*.txt", "tokenizer/*.model", "tokenizer/*.jinja",
]
REQUIRED = ("config.json", "head.safetensors", "tokenizer")
# What is downloaded of a base model (the Hub model a LoRA, QLoRA or frozen run goes on, or
# --model org/name): its own top-level configs, safetensors weights and tokenizer files; no
# pickles, no code, no subfolders (ONNX or GGUF copies), no second copy of the weights in
# another layout (Mistral's consolidated.safetensors).
BASE_PATTERNS = ["*.json", "*.safetensors", "*.txt", "*.model", "*.jinja", "*.tiktoken"]
BASE_IGNORE = ["*/*", "consolidated*"]
MAX_ENTRIES = 256  # a labeler has about ten files; sharded backbones a few dozen
MAX_HEADER = 100_000_000  # a safetensors header is JSON of the tensor names: far smaller

# a Hub model id: one namespace and one name (letters, digits, '-', '_', '.'), as
# huggingface_hub.utils.validate_repo_id accepts them; a revision after '@' is a branch, tag,
# commit hash or refs/pr/N
_PART = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,95}"
_REVISION = re.compile(r"[A-Za-z0-9_.-][A-Za-z0-9_./-]{0,199}")
_NAME = re.compile(rf"({_PART}/{_PART})(?:@([A-Za-z0-9_./-]{{1,200}}))?")


def hub_name(text: str) -> tuple[str, str | None] | None:
    """``(repo_id, revision)`` when ``text`` reads as a Hub model (``org/name``,
    ``org/name@rev``), else None: a path (absolute, ``./``, one part or more than two)."""
    match = _NAME.fullmatch(text)
    if match is None or ".." in match.group(1) or match.group(1).endswith("."):
        return None
    revision = match.group(2)
    # a revision is looked up as a file under the cache's refs/: never a path out of it
    if revision is not None and (".." in revision or revision.startswith("/")
                                 or revision.endswith("/") or "//" in revision):
        return None
    return match.group(1), revision


def resolve(name_or_path: str | Path, revision: str | None = None) -> Path:
    """The local folder of a run folder, a labeler folder or a labeler on the Hub.

    Args:
        name_or_path: a path (returned as it is when it exists, or when it cannot be a Hub
            name, for the loader to report), or ``org/name`` / ``org/name@revision``.
        revision: a branch, tag or commit of the Hub repository (as ``@revision``).

    Returns:
        The path, or the checked snapshot folder in huggingface_hub's cache.
    """
    path = Path(name_or_path)
    parsed = None if path.exists() or path.is_symlink() else hub_name(str(name_or_path))
    if parsed is None:
        if revision is not None:
            raise ConfigError(f"--revision {revision}: {name_or_path} is a local path; a "
                              f"revision names a commit of a Hugging Face Hub model "
                              f"(org/name)")
        return path
    repo_id, named = parsed
    if named is not None and revision is not None and named != revision:
        raise ConfigError(f"{name_or_path}: names revision {named!r} and --revision "
                          f"{revision!r}; give one")
    snapshot = download(repo_id, named or revision, str(name_or_path))
    check_snapshot(snapshot, str(name_or_path))
    return snapshot


def offline() -> bool:
    """Whether ``HF_HUB_OFFLINE`` is set now (huggingface_hub reads it once, at import)."""
    from huggingface_hub import constants

    value = os.environ.get("HF_HUB_OFFLINE", "").strip().lower()
    return value in ("1", "on", "yes", "true") or bool(constants.HF_HUB_OFFLINE)


def download(repo_id: str, revision: str | None, typed: str | None = None,
             base: bool = False) -> Path:
    """The snapshot folder of ``repo_id`` at ``revision`` (default: main), downloaded into
    huggingface_hub's cache (only :data:`ALLOW_PATTERNS`, or a ``base`` model's
    :data:`BASE_PATTERNS`), or read from it offline; one line naming the repository and
    revision where there is none."""
    from huggingface_hub import constants, snapshot_download
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        IncompleteSnapshotError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    rev = revision or "main"
    name = f"{repo_id}@{rev}"
    if not _REVISION.fullmatch(rev) or ".." in rev or "//" in rev or rev.endswith("/"):
        raise ConfigError(f"{name}: revision {rev!r} is no branch, tag or commit name")
    # by real path, as huggingface_hub takes it (the cache root may be a link elsewhere)
    cache = Path(constants.HF_HUB_CACHE).expanduser().resolve()
    local_only = offline()
    kind = "base model" if base else "model"
    expected = "a local folder or org/name" if base else "a run folder or org/name"
    why = "HF_HUB_OFFLINE is set" if local_only else "the Hugging Face Hub could not be reached"
    missing = (f"{typed or name} does not exist as a folder here, and {why}, and the "
               f"huggingface_hub cache {cache} has no snapshot of the Hub model "
               f"{repo_id} at revision {rev!r}; expected a {'local' if base else 'run'} "
               f"folder, or a {kind} downloaded before")
    # the cache is checked before huggingface_hub reads a ref or a listing of it, and offline
    # the ref is read here (bounded, no link): huggingface_hub is given the commit
    check_repo(cache, repo_id, name)
    commit = cached_commit(cache, repo_id, rev, name) if local_only else None
    if local_only and commit is None:
        raise ModelError(missing)
    try:
        folder = snapshot_download(repo_id, revision=commit or revision, cache_dir=str(cache),
                                   allow_patterns=BASE_PATTERNS if base else ALLOW_PATTERNS,
                                   ignore_patterns=BASE_IGNORE if base else None,
                                   local_files_only=local_only)
    except RevisionNotFoundError:
        raise ModelError(f"{name}: the Hugging Face Hub repository {repo_id} has no revision "
                         f"{rev!r}; expected a branch, tag or commit of it") from None
    except (RepositoryNotFoundError, GatedRepoError):
        raise ModelError(f"{name}: no model repository {repo_id} on the Hugging Face Hub that "
                         f"this token may read (a typo, or private or gated: set HF_TOKEN or "
                         f"log in with a token that may); expected {expected}") from None
    except IncompleteSnapshotError:
        raise ModelError(f"{name}: the cached snapshot in {cache} is incomplete; download it "
                         f"again with the Hub in reach (HF_HUB_OFFLINE unset)") from None
    except LocalEntryNotFoundError:
        raise ModelError(missing) from None
    except (HfHubHTTPError, OSError, ValueError) as err:
        raise ModelError(f"{name}: could not download it from the Hugging Face Hub "
                         f"({first_line(err)})") from None
    snapshot = check_returned(folder, cache, repo_id, commit, name)
    if base:
        check_entries(snapshot, name)
    return snapshot


def base_snapshot(name: str, revision: str | None = None) -> tuple[Path, str, str] | None:
    """Where a base model named ``name`` is loaded from, its Hub id and the commit that pins
    it, ``(folder, repo_id, commit)``: a
    Hub id (``org/name``, not a folder here) is its snapshot at ``revision`` (default: what
    main names now), downloaded as :func:`download` does; a folder that is a snapshot in
    huggingface_hub's cache is that snapshot (see :func:`snapshot_of`). None for any other
    name (a local folder, a packaged alias, a one-part id): loaded as it is."""
    path = Path(name)
    if path.exists() or path.is_symlink():
        found = snapshot_of(path)
        if found is None:
            return None
        check_entries(path, name)
        return (path, *found)
    parsed = hub_name(name)
    if parsed is None or parsed[1] is not None:
        return None
    folder = download(parsed[0], revision, base=True)
    return folder, parsed[0], folder.name


def snapshot_of(path: Path) -> tuple[str, str] | None:
    """``(repo_id, commit)`` when ``path`` is a model snapshot in huggingface_hub's cache
    layout (``models--org--name/snapshots/<commit>``, beside ``blobs/`` and ``refs/``), else
    None. Repository names hold no ``--``, so the folder's name gives the id back."""
    path = path.resolve()
    repo = path.parent.parent
    if not (path.parent.name == "snapshots" and COMMIT.fullmatch(path.name)
            and repo.name.startswith("models--") and (repo / "refs").is_dir()):
        return None
    parsed = hub_name(repo.name[len("models--"):].replace("--", "/"))
    return None if parsed is None else (parsed[0], path.name)


def check_snapshot(snapshot: Path, name: str) -> None:
    """Refuse, in one line, a snapshot holding anything but a labeler's files (see the module
    docstring): checked before any loader opens a file of it."""
    files = check_entries(snapshot, name, max_entries=MAX_ENTRIES, max_depth=1)
    for rel in files:
        if not any(fnmatch.fnmatchcase(rel, p) for p in ALLOW_PATTERNS):
            raise ModelError(f"{name}: {rel} is not a file a seqrep labeler holds (expected "
                             f"only {', '.join(ALLOW_PATTERNS)}); refused")
    found = set(files) | {rel.split("/")[0] for rel in files}
    for required in REQUIRED:
        if required not in found:
            raise ModelError(f"{name}: the snapshot {snapshot} has no {required}; every seqrep "
                             f"labeler holds it (an incomplete download or an edited cache: "
                             f"download it again)")
    for rel in files:
        path = snapshot / rel
        if rel.endswith(".safetensors"):
            _check_safetensors(path, name, rel)
        elif Path(rel).name in SETTINGS_FILES:
            data = fileio.read_json(path, "a model settings file", ModelError,
                                    MAX_SETTINGS_BYTES)
            if isinstance(data, dict) and "auto_map" in data:
                raise ModelError(f"{name}: {rel} has an auto_map (code to run from the "
                                 f"repository); seqrep loads no code from the Hub")


def _check_safetensors(path: Path, name: str, rel: str) -> None:
    """The file starts as a safetensors file does: an 8-byte header length within the file,
    then a JSON object (a pickle, a zip or text is refused before anything parses it)."""
    size = path.stat().st_size
    with path.open("rb") as f:
        head = f.read(9)
    length = struct.unpack("<Q", head[:8])[0] if len(head) == 9 else None
    if length is None or not 2 <= length <= min(MAX_HEADER, size - 8) or head[8:9] != b"{":
        raise ModelError(f"{name}: {rel} is not a safetensors file (its header is not one; a "
                         f"pickle under a safetensors name?); seqrep loads safetensors only")


def repo_name(repo_id: str) -> str:
    """``repo_id`` when it is a Hub model name ``ORG/NAME``, else one line saying so."""
    parsed = hub_name(repo_id)
    if parsed is None or parsed[1] is not None:
        raise ConfigError(f"{repo_id!r}: not a Hugging Face Hub model name; expected ORG/NAME "
                          f"(letters, digits, '-', '_' and '.'; a branch goes in --revision)")
    return repo_id
