"""Publishing a labeler to the Hugging Face Hub: ``seqrep push`` and
:meth:`SequenceLabeler.push_to_hub <seqrep.model.labeler.SequenceLabeler.push_to_hub>`.

One commit holds what a run's ``best/`` holds (the config, the head, the adapter or the
backbone, the tokenizer: exactly the files :data:`seqrep.model.hub.ALLOW_PATTERNS` downloads
again) and the generated card (:mod:`seqrep.model.card`); never the checkpoint, the log or the
run's records. Everything is checked before the first network call, so a refusal leaves the
Hub and the folder untouched: the name, the token, a run that others could not load (an
adapter or frozen run on a local base model, which exists only on this machine), a file of
another kind in the folder.
"""

from __future__ import annotations

import fnmatch
import json
import tempfile
from pathlib import Path
from typing import Any

import seqrep
from seqrep.errors import ConfigError, ModelError, first_line
from seqrep.model.hub import ALLOW_PATTERNS, hub_name, repo_name
from seqrep.model.packaged import PACKAGED
from seqrep.model.tuning import MODES

CARD = "README.md"
PEFT_CARD = "adapter/README.md"
# the records that name the base model: rewritten as uploaded, so no local path leaves
CONFIG, ADAPTER_CONFIG = "config.json", "adapter/adapter_config.json"


def upload_files(folder: Path) -> dict[str, Path]:
    """The labeler folder's files by their path in the repository, each a regular file of a
    kind a labeler holds (a link, a device or a stray file is one line, not an upload); the
    card peft writes beside an adapter is left out (it names the base by its local path), and
    so is the list of the files seqrep wrote (:data:`seqrep.files.owner.MANIFEST`: the
    folder's own bookkeeping, not the labeler's)."""
    from seqrep.files.owner import MANIFEST

    files: dict[str, Path] = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if (path.is_dir() and not path.is_symlink()) or rel in (PEFT_CARD, MANIFEST):
            continue
        if path.is_symlink() or not path.is_file():
            raise ModelError(f"{path}: not a regular file; push uploads a labeler's files only")
        if rel == CARD or not any(fnmatch.fnmatchcase(rel, p) for p in ALLOW_PATTERNS):
            raise ModelError(f"{path}: not a file of a seqrep labeler (expected only "
                             f"{', '.join(ALLOW_PATTERNS[1:])}); move it out of the folder")
        files[rel] = path
    return files


def check_base(run: Path, folder: Path) -> None:
    """Refuse a run that keeps no backbone of its own and was trained on a local base model:
    who loads it from the Hub has no such folder (a Hub base, recorded by id and commit,
    is what they load)."""
    from seqrep.model.card import hub_base, path_is
    from seqrep.model.io import read_config, read_json

    config = read_config(folder)
    if MODES[config.finetune].saves_backbone or hub_base(folder) is not None:
        return
    record = read_json(folder / "config.json", "a seqrep labeler config")
    if (isinstance(record, dict) and record.get("base") is not None) \
            or path_is(Path(config.model), Path.exists):
        raise ModelError(f"{run}: this {config.finetune} run keeps no backbone of its own and "
                         f"was trained on the local base model {config.model!r}, which no one "
                         f"loading it from the Hub has; push the base model first and train "
                         f"on its Hub id, or train on a Hub model (or with --finetune full)")


def public_bytes(folder: Path, files: dict[str, Path]) -> dict[str, bytes]:
    """The records that name the base model, as uploaded: ``config.json``'s model and the
    adapter config's ``base_model_name_or_path`` by the base's Hub id (a Hub base at its
    recorded commit), a packaged alias or Hub id as it is, and a local folder by its last
    part only (a full fine-tune needs none of it to load; where it lay on the machine that
    trained it is of no use to anyone else, and may say who they are)."""
    from seqrep.model.card import hub_base, path_is
    from seqrep.model.io import read_config, read_json

    config = read_config(folder)
    recorded = hub_base(folder)
    name = recorded["hub"] if recorded else config.model if config.model in PACKAGED or (
        hub_name(config.model) and not path_is(Path(config.model), Path.exists)) \
        else Path(config.model).name
    out = {}
    record = read_json(files[CONFIG], "a seqrep labeler config")
    if isinstance(record, dict) and isinstance(record.get("labeler"), dict):
        record["labeler"]["model"] = name
        out[CONFIG] = _json(record)
    if ADAPTER_CONFIG in files:
        adapter = read_json(files[ADAPTER_CONFIG], "a peft adapter config")
        if isinstance(adapter, dict):
            adapter["base_model_name_or_path"] = name
            if recorded:
                adapter["revision"] = recorded["revision"]
            out[ADAPTER_CONFIG] = _json(adapter)
    return out


def _json(data: object) -> bytes:
    return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def token_or_refuse(token: str | None) -> str:
    """The token to push with: the one given, else huggingface_hub's (``HF_TOKEN``, then the
    file ``hf auth login`` writes)."""
    from huggingface_hub import get_token

    found = token or get_token()
    if not found:
        raise ConfigError("no Hugging Face token: set HF_TOKEN or log in with `hf auth login` "
                          "(a token with write access to the repository)")
    return found


def push(run: str | Path, repo_id: str, *, private: bool = False, revision: str | None = None,
         commit_message: str | None = None, token: str | None = None,
         card: str | None = None) -> Any:
    """Push the labeler of the run (or labeler) folder ``run`` to ``repo_id`` as one commit;
    returns huggingface_hub's :class:`~huggingface_hub.CommitInfo` (``commit_url``, ``oid``).

    Args:
        run: a local run folder (its ``best/``) or labeler folder.
        repo_id: ``ORG/NAME``; made (private with ``private``) when it does not exist.
        revision: the branch to commit to, made from main when new (default main).
        commit_message: the commit's title (default: what was pushed).
        token: a Hub token (default: ``HF_TOKEN`` or the login's).
        card: the README.md to push (default: :func:`seqrep.model.card.model_card`).
    """
    from seqrep.model.card import check_folder, model_card
    from seqrep.model.io import model_dir

    repo_name(repo_id)
    run = Path(run)
    check_folder(run, "expected a local run folder or a saved labeler (push publishes a "
                      "folder)")
    folder = model_dir(run)
    check_base(run, folder)
    files: dict[str, Path | bytes] = {**upload_files(folder)}
    files.update(public_bytes(folder, files))
    card = model_card(run, repo_id) if card is None else card
    token = token_or_refuse(token)
    return _commit(repo_id, files, card, private, revision, token,
                   commit_message or f"Upload a seqrep {seqrep.__version__} labeler")


def _commit(repo_id: str, files: dict[str, Path | bytes], card: str, private: bool,
            revision: str | None, token: str, message: str) -> Any:
    """The network part: the repository, the branch and one commit of ``files`` and the card;
    a refusal of the Hub (a token without write access, a name taken) is one line."""
    from huggingface_hub import CommitOperationAdd, HfApi
    from huggingface_hub.errors import HfHubHTTPError

    api = HfApi(token=token)
    operations = [CommitOperationAdd(path_in_repo=rel, path_or_fileobj=data if
                                     isinstance(data, bytes) else str(data))
                  for rel, data in files.items()]
    operations.append(CommitOperationAdd(path_in_repo=CARD,
                                         path_or_fileobj=card.encode("utf-8")))
    try:
        api.create_repo(repo_id, private=True if private else None, exist_ok=True,
                        repo_type="model")
        if revision:
            api.create_branch(repo_id, branch=revision, exist_ok=True, repo_type="model")
        return api.create_commit(repo_id, operations, commit_message=message,
                                 revision=revision, repo_type="model")
    except (HfHubHTTPError, OSError, ValueError) as err:
        raise ModelError(f"{repo_id}: the Hugging Face Hub refused the push "
                         f"({first_line(err)})") from None


def push_labeler(labeler: Any, repo_id: str, **options: Any) -> Any:
    """Push an in-memory labeler: saved to a temporary folder, pushed from there (see
    :func:`push`), the folder removed."""
    repo_name(repo_id)
    with tempfile.TemporaryDirectory(prefix="seqrep-push-") as tmp:
        return push(labeler.save_pretrained(Path(tmp) / "labeler"), repo_id, **options)
