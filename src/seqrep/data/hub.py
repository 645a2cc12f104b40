"""Named datasets from the Hugging Face Hub, when no local copy is configured.

Only datasets with a Hub copy in the ``tokens`` + class-label ``tags`` shape are listed. This
needs the optional ``datasets`` library and a network connection; without them the error tells
the user to set ``SEQREP_DATA`` instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from seqrep.data.iob2 import to_iob2
from seqrep.data.types import Corpus, Sentence
from seqrep.errors import ConfigError, SeqrepError


@dataclass(frozen=True)
class HubDataset:
    """Where a named dataset lives on the Hub: repository id and column names."""

    repo: str
    tokens: str = "tokens"
    tags: str = "ner_tags"
    # datasets>=4 no longer runs loading scripts; the Hub's parquet export of a script dataset
    # lives on this branch.
    parquet_revision: str = "refs/convert/parquet"


HUB_DATASETS = {"conll2003": HubDataset("eriktks/conll2003")}
_OPTIONS = ("scheme", "strict")


def hub_unreachable(timeout: float = 3.0) -> str | None:
    """Why the Hugging Face Hub cannot be asked now, or None: ``HF_HUB_OFFLINE`` is honoured
    (None: the libraries read their cache), else the endpoint (``HF_ENDPOINT``) must accept a
    connection within ``timeout`` seconds. A closed port or a network without a route is
    said at once, not after ``datasets``' retries (10 lines and about 30 s)."""
    import os
    import socket
    from urllib.parse import urlsplit

    if os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in ("1", "ON", "YES", "TRUE"):
        return None
    endpoint = os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
    url = urlsplit(endpoint)
    try:
        port = url.port or (443 if url.scheme == "https" else 80)
    except ValueError:
        return f"HF_ENDPOINT {endpoint!r} is no URL"
    if not url.hostname:
        return f"HF_ENDPOINT {endpoint!r} is no URL"
    try:
        socket.create_connection((url.hostname, port), timeout=timeout).close()
    except OSError as err:
        why = err.strerror or type(err).__name__
        return f"the Hugging Face Hub at {endpoint} cannot be reached ({why})"
    return None


def load_from_hub(name: str, split: str, **options: Any) -> Corpus:
    """Load one split of a named dataset with ``datasets.load_dataset``.

    Class-label ids are mapped to their names and the tags are converted to IOB2 like a file's.

    Args:
        name: a key of :data:`HUB_DATASETS`.
        split: ``train``, ``validation`` or ``test``.
        **options: ``scheme`` and ``strict``, as for :func:`seqrep.data.conll.read_conll`.

    Returns:
        the corpus, named ``hf://<repo>/<split>``.

    Raises:
        SeqrepError: the dataset has no Hub copy, ``datasets`` is not installed, or loading
            failed (offline, unknown repository); the message says to set ``SEQREP_DATA``.
    """
    hint = f"set SEQREP_DATA to a directory holding {name}/"
    spec = HUB_DATASETS.get(name)
    if spec is None:
        raise SeqrepError(f"dataset {name!r} has no local copy and no Hugging Face Hub source; "
                          f"{hint}")
    unknown = [k for k in options if k not in _OPTIONS]
    if unknown:
        raise ConfigError(f"option {unknown[0]!r} does not apply to {spec.repo}; expected one "
                          f"of {', '.join(_OPTIONS)}")
    try:
        import datasets
    except ImportError:
        raise SeqrepError(f"dataset {name!r} has no local copy and the `datasets` library is not "
                          f"installed; {hint}, or `pip install datasets` to fetch {spec.repo} "
                          "from the Hugging Face Hub") from None
    unreachable = hub_unreachable()
    if unreachable is not None:
        raise SeqrepError(f"dataset {name!r} has no local copy and {unreachable}; {hint}")
    try:
        try:
            table = datasets.load_dataset(spec.repo, split=split)
        except RuntimeError as err:
            if "scripts are no longer supported" not in str(err):
                raise
            table = datasets.load_dataset(spec.repo, split=split, revision=spec.parquet_revision)
    except Exception as err:  # offline, missing repository, bad split: all end the same way
        raise SeqrepError(f"could not load {spec.repo} ({split}) from the Hugging Face Hub: "
                          f"{type(err).__name__}: {err}; {hint}") from None
    names = table.features[spec.tags].feature.names
    words = table[spec.tokens]
    sequences = [[names[i] for i in row] for row in table[spec.tags]]
    source = f"hf://{spec.repo}/{split}"
    tags, repaired, _ = to_iob2(sequences, options.get("scheme"), options.get("strict", False),
                                source, lambda i, _: i + 1)
    sentences = [Sentence(w, t, meta={"row": i}) for i, (w, t) in enumerate(zip(words, tags,
                                                                              strict=True))]
    return Corpus(sentences, name=source, repaired=repaired)
