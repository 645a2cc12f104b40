"""What a model row holds: one small object per context, in one table.

- ``sentence``: each sentence alone (the default; every run stored before the setting
  existed read this);
- ``document``: a stretch of consecutive sentences of one document, in windows of
  ``context_tokens`` subtokens (:mod:`seqrep.encode.document`), the window in every copy;
- ``document-focus``: the same windows, the last copy holding only the words a row reads.

A context builds its rows (:meth:`Context.build_rows`): it names its row builder, which stays
in :mod:`seqrep.encode` beside the layouts it lays out, so the encoder asks the context and
has no branch per layout. The labeler config validates its ``context`` against
:data:`CONTEXTS`; encoding, evaluation, prediction, streaming, serving, export checks, the
exit-layer probe, the benchmark and the lab look the object up (:func:`context_of`,
:func:`labeler_context`) and ask it whether it reads documents, instead of comparing context
names. Adding a layout is one entry (``CONTEXTS.register(Context(...))``) and one row
builder; how the lab's reports show a context is the lab's (:mod:`seqrep.lab.cells`).

Imports only seqrep.core.table (no torch, no encode: the builders are named by reference), so the
configs and every package can ask it without an import circle.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from seqrep.core.table import Table, resolve

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
        rows: the row builder, ``(encoder, sentences, tags, docs) -> items``
            (:mod:`seqrep.encode.rows`), or its ``"module:function"`` reference, imported
            on first use.
    """

    name: str
    help: str
    documents: bool = False
    rows: str | Callable[..., Any] = "seqrep.encode.rows:sentence_rows"

    def build_rows(self, encoder: Any, sentences: Sequence[Sequence[str]],
                   tags: Sequence[Sequence[str]] | None = None,
                   docs: Sequence[Hashable | None] | None = None) -> list[Any]:
        """The model rows (:class:`~seqrep.encode.rows.Item`) of ``sentences`` laid out as
        this context lays them, by ``encoder`` (:class:`~seqrep.encode.pipeline.Encoder`);
        ``docs`` (one document id per sentence, or None: every sentence alone) is read by
        contexts whose rows hold documents."""
        return resolve(self.rows)(encoder, sentences, tags, docs)

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

    def __repr__(self) -> str:
        return f"<context {self.name}>"


SENTENCE = Context("sentence", "each sentence alone")
DOCUMENT = Context("document", "consecutive sentences of one document, in windows of "
                               "--context-tokens, each word read where it has the most "
                               "context; a sentence without a document id stays alone",
                   documents=True,
                   rows="seqrep.encode.document:document_rows")
FOCUS = Context("document-focus", "as document, with only the words a window reads in "
                                  "its last copy", documents=True,
                rows="seqrep.encode.document:focus_rows")
# None, as in records stored before the setting existed, is sentence
CONTEXTS: Table[Context] = Table("context", (SENTENCE, DOCUMENT, FOCUS), default=SENTENCE.name)
context_of = CONTEXTS.of  # the context a config or a stored record names


def labeler_context(labeler: Any) -> Context:
    """The context a labeler (torch, ONNX or a stand-in) reads: its config's, sentence where
    it states none."""
    return CONTEXTS.of(getattr(getattr(labeler, "config", None), "context", None))
