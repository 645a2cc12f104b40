"""A spaCy pipeline component that sets ``doc.ents`` from a trained seqrep labeler.

>>> import spacy
>>> import seqrep.serve.spacy_component  # registers the "seqrep" factory (or via entry point)
>>> nlp = spacy.blank("en")
>>> nlp.add_pipe("seqrep", config={"model": "runs/demo"})  # doctest: +SKIP
>>> doc = nlp("Angela Merkel met Emmanuel Macron in Berlin.")  # doctest: +SKIP
>>> [(e.text, e.label_, e._.seqrep_score) for e in doc.ents]  # doctest: +SKIP

The labeler cuts the text into its own words (:func:`seqrep.predict.tagger.predict_text`, the same
records as ``seqrep predict``); each predicted span is mapped onto spaCy's tokens by its
character offsets with ``doc.char_span(..., alignment_mode="strict")``. A span whose edges
fall inside a spaCy token cannot be an entity of that doc: it is listed in
``doc._.seqrep_unaligned`` (the span records) and logged as a warning, never dropped silently.
``nlp.pipe`` labels each batch of docs with one prediction call. A labeler with document
context labels each Doc as one document (all its sentences together), as ``seqrep predict``
labels a text.

Requires the ``spacy`` extra (``pip install 'seqrep-labeler[spacy]'``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from typing import Any

from spacy.language import Language
from spacy.tokens import Doc, Span
from spacy.util import minibatch

from seqrep.encode import BATCH_SENTENCES
from seqrep.predict.labeler import Labeler
from seqrep.predict.tagger import predict_text

log = logging.getLogger("seqrep.spacy")

if not Doc.has_extension("seqrep_unaligned"):
    Doc.set_extension("seqrep_unaligned", default=None)
if not Span.has_extension("seqrep_score"):
    Span.set_extension("seqrep_score", default=None)


class SeqrepComponent:
    """Sets ``doc.ents`` (replacing any earlier ones) from seqrep's predicted spans.

    Args:
        nlp: the pipeline (unused; spaCy passes it).
        name: the component's name.
        model: a run folder or saved labeler folder.
        decoding: ``greedy`` or ``constrained`` (default: the model's own).
        batch_size: docs per prediction call in ``nlp.pipe``.
        labeler: an already loaded labeler instead of ``model`` (Python use only).
        runtime, precision: what runs the labeler, as ``--runtime`` and ``--precision``
            (``openvino`` for the fastest CPU labeling: see the CPU guide).
        context_overlap: a document-context labeler's window overlap, as
            ``--context-overlap`` (default: the labeler's own).
    """

    def __init__(self, nlp: Language, name: str, model: str | None,
                 decoding: str | None = None, batch_size: int = BATCH_SENTENCES,
                 labeler: Labeler | None = None, runtime: str = "auto",
                 precision: str = "auto", context_overlap: float | None = None) -> None:
        if labeler is None:
            if not model:
                raise ValueError('the seqrep component needs config={"model": RUN_DIR}')
            from seqrep.export import load_labeler

            labeler = load_labeler(model, runtime=runtime, precision=precision,
                                   context_overlap=context_overlap).eval()
        self.name, self.labeler = name, labeler
        self.decoding, self.batch_size = decoding, batch_size

    def __call__(self, doc: Doc) -> Doc:
        self._set(doc, predict_text(self.labeler, [doc.text], self.decoding)[0])
        return doc

    def pipe(self, stream: Iterable[Doc], batch_size: int | None = None) -> Iterator[Doc]:
        for docs in minibatch(stream, size=batch_size or self.batch_size):
            for doc, record in zip(docs, predict_text(self.labeler, [d.text for d in docs],
                                                      self.decoding)):
                self._set(doc, record)
                yield doc

    def _set(self, doc: Doc, record: dict[str, Any]) -> None:
        ents, unaligned = [], []
        for s in record["spans"]:
            span = doc.char_span(s["start"], s["end"], label=s["label"],
                                 alignment_mode="strict")
            if span is None:
                unaligned.append(s)
                continue
            span._.seqrep_score = s["score"]
            ents.append(span)
        if unaligned:
            log.warning("seqrep: %d span(s) not on spaCy token boundaries, kept in "
                        "doc._.seqrep_unaligned: %s", len(unaligned),
                        ", ".join(f"{u['text']!r} [{u['start']}:{u['end']}] {u['label']}"
                                  for u in unaligned))
        doc.ents = ents
        doc._.seqrep_unaligned = unaligned


@Language.factory("seqrep", default_config={"model": None, "decoding": None, "batch_size": 32,
                                           "runtime": "auto", "precision": "auto",
                                           "context_overlap": None})
def make_component(nlp: Language, name: str, model: str | None, decoding: str | None,
                   batch_size: int, runtime: str, precision: str,
                   context_overlap: float | None) -> SeqrepComponent:
    """The ``seqrep`` factory: ``nlp.add_pipe("seqrep", config={"model": RUN_DIR})``
    (``"runtime": "openvino"``, ``"precision"`` and ``"context_overlap"`` as on the command
    line)."""
    return SeqrepComponent(nlp, name, model, decoding, batch_size, runtime=runtime,
                           precision=precision, context_overlap=context_overlap)
