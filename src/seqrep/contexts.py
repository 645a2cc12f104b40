"""What a model row holds: one small object per context, in one table.

- ``sentence``: each sentence alone (the default; every run stored before the setting
  existed read this);
- ``document``: a stretch of consecutive sentences of one document, in windows of
  ``context_tokens`` subtokens (:mod:`seqrep.encode.document`), the window in every copy;
- ``document-focus``: the same windows, the last copy holding only the words a row reads.

The labeler config validates its ``context`` against :data:`CONTEXTS`; encoding, evaluation,
prediction, streaming, serving, export checks, the exit-layer probe, the benchmark and the
lab's reports look the object up (:func:`context_of`, :func:`labeler_context`) and ask it
instead of comparing context names. Adding a context is an entry here (and its rows in the
encoder).

Imports only seqrep.errors (no torch, no encode), so the configs and every package can ask it
without an import circle.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Context:
    """One context a labeler reads its sentences in.

    Attributes:
        name: the ``context`` setting's value.
        help: what the option's help says it does.
        documents: rows hold several sentences of one document, so callers pass the
            sentences' document ids, keep a document's sentences together (in chunks,
            shards, subsets, resumed files) and say when a corpus has none.
        run_suffix: what a lab run's name adds (sentence runs keep the names they had).
        focus: with documents, a row's last copy holds only the words it reads (the earlier
            copies hold the whole window), so rows are shorter where a document spans
            several windows; at r = 0 (one copy) the layout is the window itself.
    """

    name: str
    help: str
    documents: bool = False
    run_suffix: str = ""
    focus: bool = False

    def docs(self, ids: Sequence[T] | None) -> Sequence[T] | None:
        """The document ids encoding reads: ``ids`` when rows hold documents, else None
        (every sentence alone)."""
        return ids if self.documents else None

    def doc_ids(self, sentences: Sequence[Any]) -> list[Hashable | None] | None:
        """Each sentence's ``doc_id`` when rows hold documents, else None."""
        return [s.doc_id for s in sentences] if self.documents else None

    def subset_unit(self, unit: str) -> str:
        """What a subset of training sentences takes: whole documents when rows hold them
        (the neighbours training reads), else ``unit``."""
        return DOCUMENT.name if self.documents else unit

    def notice(self, splits: Mapping[str, Sequence[Any]]) -> str | None:
        """The one notice a command prints when rows hold documents but some of ``splits``
        (name -> sentences with ``doc_id``) have none, so each of their sentences is a
        document of its own there; None when nothing needs saying."""
        bare = [name for name, sents in splits.items()
                if sents and all(getattr(s, "doc_id", None) is None for s in sents)]
        if not self.documents or not bare:
            return None
        return (f"notice: context={self.name}, but {' and '.join(bare)} "
                f"{'has' if len(bare) == 1 else 'have'} no document ids (no -DOCSTART- or "
                f"doc_id): each sentence there is a document of its own, labeled as at "
                f"sentence level")

    def cell(self, tokens: Any = None, separator: Any = None, rows: bool = False) -> str:
        """How a report's tables show it: ``sentence``, or ``document 256`` (the window budget
        in subtokens) with the separator where it is not the default newline, and ``row
        batches`` where training batches counted model rows (``batch_rows``)."""
        if not self.documents:
            return self.name
        return f"{self.name} {tokens}" + ("" if separator in (None, "\n")
                                          else f", separator {separator!r}") \
            + (", row batches" if rows else "")

    def __repr__(self) -> str:
        return f"<context {self.name}>"


SENTENCE = Context("sentence", "each sentence alone")
DOCUMENT = Context("document", "consecutive sentences of one document, in windows of "
                               "--context-tokens; each word is read from the window where it "
                               "has the most context; sentences without a document id stay "
                               "alone", documents=True, run_suffix="-doc")
FOCUS = Context("document-focus", "as document, but the last copy holds only the words a "
                                  "window reads, so rows are shorter where a document spans "
                                  "several windows", documents=True, run_suffix="-docf",
                focus=True)
CONTEXTS: dict[str, Context] = {c.name: c for c in (SENTENCE, DOCUMENT, FOCUS)}


def contexts_help() -> str:
    """``--context``'s help: each context and what a row holds with it."""
    items = [f"{c.name} ({c.help})" for c in CONTEXTS.values()]
    return "what a model row holds: " + ", ".join(items[:-1]) + " or " + items[-1]


def context_of(name: str | Context | None) -> Context:
    """The context a config or a stored record names (an object is returned as it is);
    None, as in records stored before the setting existed, is sentence.

    Raises:
        ConfigError: no such context.
    """
    if isinstance(name, Context):
        return name
    if name is None:
        return SENTENCE
    if name not in CONTEXTS:
        from seqrep.errors import ConfigError

        raise ConfigError(f"context={name!r}; expected one of {', '.join(CONTEXTS)}")
    return CONTEXTS[name]


def labeler_context(labeler: Any) -> Context:
    """The context a labeler (torch, ONNX or a stand-in) reads: its config's, sentence where
    it states none."""
    return context_of(getattr(getattr(labeler, "config", None), "context", None))
