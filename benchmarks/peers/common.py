"""What every part of the peers harness shares, in the standard library only: each peer runs
in a virtual environment of its own (their transformers pins clash with seqrep's), so the
code they share cannot import seqrep, torch or each other's libraries.

The data travel between the environments as one neutral file per split, JSON lines of
``{"words": [...], "tags": [...], "doc_id": ...}`` (IOB2 tags, made by ``convert.py`` with
seqrep's own reader), and come back as conlleval's columns, which ``seqrep score`` scores.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

SPLITS = ("train", "validation", "test")
MARK = ".seqrep-peer"  # written by setup.sh last: a venv without it did not install
# the neutral files are a few MB (CoNLL-2003's training split: about 4 MB)
MAX_LINE_CHARS = 1 << 20
CPU_FLAGS = ("avx512_bf16", "amx_bf16", "amx_tile", "amx_int8", "avx512_vnni", "avx512f",
             "avx2")


class HarnessError(Exception):
    """Bad input or a missing piece of the harness: one line naming what and where."""


def fail(err: HarnessError) -> None:
    """Print a harness error as one line and exit 2, as seqrep's CLI does."""
    print(f"peers: {err}", file=sys.stderr)
    raise SystemExit(2)


def main_guard(main: Callable[[], Any]) -> Any:
    """Run a script's main so that a HarnessError is one line and exit 2, never a
    traceback."""
    try:
        return main()
    except HarnessError as err:
        fail(err)


# ---- the neutral format -------------------------------------------------------------------

def _check_record(obj: Any, where: str) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise HarnessError(f"{where}: expected an object with words, tags and doc_id")
    words, tags, doc_id = obj.get("words"), obj.get("tags"), obj.get("doc_id")
    for name, value in (("words", words), ("tags", tags)):
        if not isinstance(value, list) or not value or not all(
                isinstance(v, str) and v and not any(c.isspace() for c in v) for v in value):
            raise HarnessError(f"{where}: {name!r} must be a non-empty list of strings "
                               "without whitespace")
    if len(words) != len(tags):
        raise HarnessError(f"{where}: {len(words)} words but {len(tags)} tags")
    if doc_id is not None and not isinstance(doc_id, str):
        raise HarnessError(f"{where}: 'doc_id' must be a string or null")
    return {"words": words, "tags": tags, "doc_id": doc_id}


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """The sentences of a neutral file, each checked (one-line errors naming file and line).

    Raises:
        HarnessError: a missing or empty file, a line that is not JSON or not a sentence.
    """
    path = Path(path)
    if not path.is_file():
        raise HarnessError(f"{path}: no such file (run benchmarks/peers/run.py, which converts "
                           "the data first)")
    sentences = []
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            if len(line) > MAX_LINE_CHARS:
                raise HarnessError(f"{path}:{lineno}: a line of over {MAX_LINE_CHARS} "
                                   "characters; expected one sentence per line")
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as err:
                raise HarnessError(f"{path}:{lineno}: not JSON ({err.msg})") from None
            sentences.append(_check_record(obj, f"{path}:{lineno}"))
    if not sentences:
        raise HarnessError(f"{path}: no sentences")
    return sentences


def jsonl_text(sentences: Sequence[dict[str, Any]]) -> str:
    """The neutral file's text for some sentences (each checked as read_jsonl checks it)."""
    return "".join(json.dumps(_check_record(s, f"sentence {i + 1}"), ensure_ascii=False) + "\n"
                   for i, s in enumerate(sentences))


def write_text(path: str | Path, text: str) -> None:
    """Write a file so that it appears complete or not at all (temporary file + rename): an
    interrupted run never leaves half a prediction file that would score."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def documents(sentences: Sequence[dict[str, Any]]) -> list[list[int]]:
    """Sentence indices grouped into documents: runs of consecutive sentences with the same
    ``doc_id``; a sentence without one is a document of its own (as seqrep groups them)."""
    groups: list[list[int]] = []
    previous: object = object()
    for i, s in enumerate(sentences):
        doc_id = s.get("doc_id")
        if doc_id is None or doc_id != previous:
            groups.append([i])
        else:
            groups[-1].append(i)
        previous = doc_id
    return groups


# ---- tags ---------------------------------------------------------------------------------

def spans_to_iob2(length: int, spans: Sequence[tuple[int, int, str]]) -> list[str]:
    """IOB2 tags for ``length`` words from ``(start, end, label)`` spans (end exclusive), as
    flair and spaCy give their predictions.

    Raises:
        HarnessError: a span outside the words or overlapping another.
    """
    tags = ["O"] * length
    for start, end, label in sorted(spans):
        if not 0 <= start < end <= length:
            raise HarnessError(f"span {start}..{end} {label} lies outside {length} words")
        if any(t != "O" for t in tags[start:end]):
            raise HarnessError(f"span {start}..{end} {label} overlaps another span")
        tags[start:end] = [f"B-{label}"] + [f"I-{label}"] * (end - start - 1)
    return tags


def split_document_tags(tags: Sequence[str], lengths: Sequence[int]) -> list[list[str]]:
    """A document's IOB2 tags cut into its sentences (of ``lengths`` words). A span that a
    peer predicted across a sentence boundary is cut there: the part in the next sentence
    starts with B-, so every sentence holds clean IOB2 (strict scoring would drop an I- that
    starts a sentence)."""
    if sum(lengths) != len(tags):
        raise HarnessError(f"{len(tags)} tags for sentences of {sum(lengths)} words")
    out, at = [], 0
    for n in lengths:
        part = list(tags[at:at + n])
        if part and part[0].startswith("I-"):
            part[0] = "B-" + part[0][2:]
        out.append(part)
        at += n
    return out


def conll_columns(sentences: Sequence[dict[str, Any]], predicted: Sequence[Sequence[str]]) -> str:
    """conlleval's columns, ``word gold predicted`` with a blank line after each sentence,
    the input of ``seqrep score``.

    Raises:
        HarnessError: a different number of sentences, or of tags in a sentence, than gold.
    """
    if len(sentences) != len(predicted):
        raise HarnessError(f"{len(predicted)} predicted sentences for {len(sentences)} gold "
                           "sentences")
    lines = []
    for i, (s, pred) in enumerate(zip(sentences, predicted, strict=True)):
        if len(pred) != len(s["words"]):
            raise HarnessError(f"sentence {i + 1}: {len(pred)} predicted tags for "
                               f"{len(s['words'])} words")
        for word, gold, tag in zip(s["words"], s["tags"], pred, strict=True):
            if not tag or any(c.isspace() for c in tag):
                raise HarnessError(f"sentence {i + 1}: predicted tag {tag!r} is empty or "
                                   "holds whitespace")
            lines.append(f"{word} {gold} {tag}\n")
        lines.append("\n")
    return "".join(lines)


def flair_columns(sentences: Sequence[dict[str, Any]]) -> str:
    """flair's column corpus: ``word tag`` lines, a blank line after each sentence, and a
    ``-DOCSTART- O`` line before each document, which flair's ColumnCorpus reads as a
    document boundary (``document_separator_token``) so that FLERT's context stays inside
    each document."""
    out = []
    for group in documents(sentences):
        out.append("-DOCSTART- O\n\n")
        for i in group:
            s = sentences[i]
            out.extend(f"{w} {t}\n" for w, t in zip(s["words"], s["tags"], strict=True))
            out.append("\n")
    return "".join(out)


# ---- environment --------------------------------------------------------------------------

def venvs_root() -> Path:
    """Where setup.sh put the peers' venvs: ``PEERS_VENVS`` or ``~/.cache/seqrep-peers``."""
    return Path(os.environ.get("PEERS_VENVS") or Path.home() / ".cache" / "seqrep-peers"
                ).expanduser()


def peer_python(peer: str, root: Path | None = None) -> Path:
    """The interpreter of a peer's venv.

    Raises:
        HarnessError: the venv is missing or did not finish installing (no mark file).
    """
    venv = (root or venvs_root()) / peer
    python = venv / "bin" / "python"
    if not python.exists() or not (venv / MARK).is_file():
        raise HarnessError(f"the {peer} venv {venv} did not install (no {MARK} in it); run "
                           f"PEERS_VENVS={venv.parent} benchmarks/peers/setup.sh {peer}")
    return python


def peer_versions(peer: str, root: Path | None = None) -> dict[str, str]:
    """The versions setup.sh froze in a peer's mark file (``name==version`` lines)."""
    mark = (root or venvs_root()) / peer / MARK
    out = {}
    for line in mark.read_text(encoding="utf-8").splitlines()[:2000]:
        name, sep, version = line.partition("==")
        if sep:
            out[name.strip().lower()] = version.strip()
    return out


def encoder_folder(root: Path | None = None) -> Path:
    """The unpacked all-mpnet-base-v2 folder setup.sh made.

    Raises:
        HarnessError: it is missing.
    """
    folder = (root or venvs_root()) / "models" / "all-mpnet-base-v2"
    if not (folder / "config.json").is_file():
        raise HarnessError(f"the encoder {folder} is missing; run PEERS_VENVS={folder.parents[1]}"
                           " benchmarks/peers/setup.sh model")
    return folder


def set_threads(threads: int) -> None:
    """The thread count, set before any numeric library loads (spaCy's numpy, torch): every
    system of a comparison runs on the same number of cores."""
    if threads < 1:
        raise HarnessError(f"--threads {threads}: expected at least 1")
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                 "BLIS_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
        os.environ[name] = str(threads)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")


def cpu_flags(cpuinfo: str | None = None) -> dict[str, Any]:
    """The CPU's model name, family, model number and stepping (the name alone, "AMD EPYC"
    under a hypervisor, hides the generation), core count and the flags that decide bf16
    and int8 speed; from the first processor's lines."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            cpuinfo = ""
    first: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        first.setdefault(key.strip(), value.strip())

    def number(key: str) -> int | None:
        return int(first[key]) if first.get(key, "").isdigit() else None

    flags = set(first.get("flags", "").split())
    return {"model": first.get("model name", ""), "family": number("cpu family"),
            "model_number": number("model"), "stepping": number("stepping"),
            "cores": os.cpu_count(), "flags": {f: f in flags for f in CPU_FLAGS}}


class Budget:
    """A training time budget: the wall-clock seconds a peer may train, from the moment it
    is made; each peer's loop asks :meth:`spent` between steps and stops there."""

    def __init__(self, seconds: float) -> None:
        if seconds <= 0:
            raise HarnessError(f"--budget {seconds}: expected a positive number of seconds")
        self.seconds = float(seconds)
        self.start = time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def spent(self) -> bool:
        return self.elapsed() >= self.seconds


def clock_lr_factor(elapsed: float, budget: float, warmup: float = 0.1) -> float:
    """The share of its peak learning rate a schedule fitted to the budget by the clock gives
    ``elapsed`` seconds into a ``budget`` of seconds: a linear warm-up over the first
    ``warmup`` of the budget, then a linear decay to zero where the budget ends (and zero
    after). For a trainer whose epoch far outlasts the budget on this machine, whatever its
    speed that day, where a schedule over an epoch would stop near its peak."""
    f = min(max(elapsed / budget, 0.0), 1.0)
    return f / warmup if f < warmup else (1.0 - f) / (1.0 - warmup)


def read_json(path: str | Path, what: str, expect: type = object) -> Any:
    """A JSON file through seqrep.files.atomic.read_json (size and depth caps), of type ``expect``;
    anything else one HarnessError line naming the file. Imports seqrep only when called:
    the peers' own environments lack it."""
    from seqrep.errors import ConfigError
    from seqrep.files.atomic import read_json as bounded

    try:  # (read_json builds its error from one message: DataError takes a source too)
        got = bounded(Path(path), what, ConfigError)
    except ConfigError as err:
        raise HarnessError(str(err)) from None
    if not isinstance(got, expect):
        raise HarnessError(f"{path}: {what} is not a JSON {expect.__name__}")
    return got


def write_json(path: str | Path, record: dict[str, Any]) -> None:
    """A JSON record, written atomically."""
    write_text(path, json.dumps(record, indent=2, ensure_ascii=False) + "\n")


def predict_parser(sub: Any, batch_size: int) -> Any:
    """The ``predict`` sub-command every peer script has: a trained model labels a JSONL
    split into conlleval's columns (``--timing`` records the labeling seconds)."""
    r = sub.add_parser("predict")
    for name in ("--model", "--input", "--output"):
        r.add_argument(name, type=Path, required=True)
    r.add_argument("--timing", type=Path, default=None)
    r.add_argument("--threads", type=int, default=2)
    r.add_argument("--batch-size", type=int, default=batch_size)
    return r
