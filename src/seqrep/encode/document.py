"""Document context: model rows that hold a stretch of consecutive sentences of one document.

Layout. A document's words are laid end to end (a ``separator``, by default a newline, glued
before the first word of every sentence but the document's first, so sentence boundaries stay
visible), cut into windows of whole words of at most ``limit`` subtokens, and each window is
laid out exactly as one long sentence is (:func:`~seqrep.encode.repeat.build_segment`)::

    [prefix] window_1 [sep] window_2 [sep] ... window_k [suffix]     (k = r + 1 copies)

and words are read from the last copy (or every copy with ``read="mean"``). It is the layout
the labeler already has, so r, the read and subtoken options, the exit layer, unmasking and
``--exit-layer auto`` compose with it unchanged (a row is just a longer "sentence"); at r >= 1
every read word of the last copy has seen the whole window before it, both sides of it,
which is what document context is for; and at r = 0 a causal model gets left context, the
honest baseline.

The focus layout (``context="document-focus"``, :func:`focus_rows`) is the other answer:
the window in the first r copies, and in the last only the words the row reads::

    [prefix] window_1 [sep] ... window_r [sep] read_words [suffix]

The read words still see the whole window (both sides) in the copies before them, in fewer
tokens: a window that reads half its words costs about 1.5 instead of 2 windows at r = 1.
Where a window reads all its words (a document that fits one window) and at r = 0 the two
layouts are the same row. docs/results.md says which is more accurate, measured.

Ownership. A document longer than ``limit`` is cut into windows overlapping by a share of the
budget, ``context_overlap`` (:func:`~seqrep.encode.repeat.windows`, the rule long sentences
follow): every word is read exactly once, from the window where its distance to the nearest
cut edge is largest (the document's own ends are no cut edges), so at the default half
overlap each word sees at least about a quarter of the budget on each side where the
document has it. Less overlap labels a document in fewer tokens, each word having less
context near a window's edge. A window may start or end inside a sentence;
such edge words are read from a neighbouring window. A sentence longer than the budget is
therefore windowed like any long sentence.

Rows never mix documents, and a row's tensors do not depend on its batch-mates
(:mod:`seqrep.encode.batch`), so a sentence's labels depend on its own document only.
A document of one sentence (every sentence without a document id is one) has no context to
add: the encoder gives it exactly its sentence-level rows (windowed by ``max_subtokens``), so a
corpus without documents trains and labels as at sentence level.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

from seqrep.encode.align import label_ids
from seqrep.encode.repeat import RepeatSpec, Segment, build_segment, focus_segment, windows
from seqrep.encode.rows import Item, RowEncoder, sentence_items
from seqrep.errors import ConfigError

# what lays out one window: build_segment, focus_segment or a layout's own
SegmentBuilder = Callable[..., Segment]

# share of the budget that consecutive windows of a document share, by default
OVERLAP = 0.5
# the most a labeler may ask for: at 0.75 each window already reads only a quarter of itself
MAX_OVERLAP = 0.75


def check_overlap(value: float, said: str) -> float:
    """``value`` if it is a window overlap a labeler may use (0 to :data:`MAX_OVERLAP`), else a
    ConfigError that starts with ``said`` (``context_overlap=``, ``--context-overlap ``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not 0.0 <= value <= MAX_OVERLAP:
        raise ConfigError(f"{said}{value}; expected 0 to {MAX_OVERLAP} (the share of a "
                          f"window the next one repeats)")
    return float(value)


def documents(doc_ids: Sequence[Hashable | None]) -> list[list[int]]:
    """Sentence indices grouped into documents: runs of consecutive sentences with the same
    ``doc_id``; a sentence with no ``doc_id`` (None) is a document of its own."""
    groups: list[list[int]] = []
    for i, doc in enumerate(doc_ids):
        if groups and doc is not None and doc_ids[groups[-1][-1]] == doc:
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


def chunk_spans(n: int, size: int, docs: Sequence[Hashable | None] | None
                ) -> list[tuple[int, int]]:
    """``(start, end)`` runs of ``n`` sentences, ``size`` each; with ``docs`` a run ends only
    where a document does (it closes once it holds ``size`` or more, a longer document is one
    run), so document context sees whole documents whatever the chunking. ``docs`` has no
    default: None (each sentence alone) is said, never assumed."""
    groups = documents(docs) if docs is not None else [[i] for i in range(n)]
    out: list[tuple[int, int]] = []
    start = 0
    for group in groups:
        end = group[-1] + 1
        if end - start >= size:
            out.append((start, end))
            start = end
    if start < n:
        out.append((start, n))
    return out


def encode_document(word_ids: Sequence[Sequence[Sequence[int]]], spec: RepeatSpec, limit: int,
                    separator: Sequence[int] = (),
                    leads: Sequence[Sequence[int]] | None = None,
                    segment: SegmentBuilder = build_segment, overlap: float = OVERLAP
                    ) -> list[tuple[Segment, tuple[tuple[int, int], ...]]]:
    """The rows of one document (see the module docstring).

    Args:
        word_ids: per sentence, the subtoken ids of each word.
        spec: repetition layout and reads (``limit`` is the window; ``max_subtokens``
            only bounds one word with the separator glued before it).
        limit: subtokens per copy of a window.
        separator: ids put before the first word of each sentence after the first.
        leads: per sentence, per word, leading space-only tokens not to read.
        segment: lays out one window (``word_ids, spec, words, owned, leads``):
            :func:`~seqrep.encode.repeat.build_segment`, or
            :func:`~seqrep.encode.repeat.focus_segment` for the focus layout.
        overlap: share of ``limit`` that consecutive windows repeat (0 to
            :data:`MAX_OVERLAP`).

    Returns:
        ``(segment, places)`` per row: ``places`` gives, for each word the row reads (in
        ``segment.words`` order), its ``(sentence, word)`` index within the document.
        Together the rows read every word of every sentence exactly once.
    """
    flat: list[list[int]] = []
    flat_leads: list[int] = []
    places: list[tuple[int, int]] = []
    for s, sentence in enumerate(word_ids):
        for w, ids in enumerate(sentence):
            lead = leads[s][w] if leads else 0
            if w == 0 and flat and separator:
                # a word already cut to a copy stays within it with its separator: the
                # word's last subtokens go (k copies must fit the model's positions)
                room = max(spec.max_subtokens, len(separator) + 1)
                ids = (list(separator) + list(ids))[:room]
                lead = min(lead + len(separator), len(ids) - 1)
            flat.append(list(ids))
            flat_leads.append(lead)
            places.append((s, w))
    if not flat:
        return []
    lengths = [len(x) for x in flat]
    if sum(lengths) <= limit:
        spans = [(0, len(flat), list(range(len(flat))))]
    else:
        spans = windows(lengths, limit, int(limit * overlap))
    rows = []
    for s, e, owned in spans:
        if owned:
            seg = segment(flat[s:e], spec, range(s, e), owned, flat_leads[s:e])
            rows.append((seg, tuple(places[i] for i in seg.words)))
    return rows


def document_rows(encoder: RowEncoder, sentences: Sequence[Sequence[str]],
                  tags: Sequence[Sequence[str]] | None = None,
                  docs: Sequence[Hashable | None] | None = None) -> list[Item]:
    """The document context's rows: runs of consecutive sentences of one document share
    windows (the module docstring); without ``docs`` every sentence is its own document."""
    return _rows(encoder, sentences, tags, docs, build_segment)


def focus_rows(encoder: RowEncoder, sentences: Sequence[Sequence[str]],
               tags: Sequence[Sequence[str]] | None = None,
               docs: Sequence[Hashable | None] | None = None) -> list[Item]:
    """The focus layout's rows: :func:`document_rows`' windows, the last copy holding only
    the words a row reads."""
    return _rows(encoder, sentences, tags, docs, focus_segment)


def _rows(encoder: RowEncoder, sentences: Sequence[Sequence[str]],
          tags: Sequence[Sequence[str]] | None, docs: Sequence[Hashable | None] | None,
          segment: SegmentBuilder) -> list[Item]:
    if docs is None:
        docs = [None] * len(sentences)
    if len(docs) != len(sentences):
        raise ValueError(f"{len(docs)} document ids for {len(sentences)} sentences")
    out = []
    for group in documents(docs):
        if len(group) == 1:  # nothing around it: exactly the sentence-level rows
            out += sentence_items(encoder, group[0], sentences[group[0]], tags)
            continue
        ids, leads = zip(*(encoder.word_ids(sentences[i]) for i in group), strict=True)
        gold = None if tags is None else [label_ids(tags[i], encoder.label2id) for i in group]
        for seg, places in encode_document(ids, encoder.spec, encoder.context_tokens,
                                           encoder.context_separator, leads, segment,
                                           encoder.context_overlap):
            where = tuple((group[s], w) for s, w in places)
            labels = None if gold is None else tuple(gold[s][w] for s, w in places)
            out.append(Item(where[0][0], seg, labels, where))
    return out


def text_documents(owners: Sequence[int], count: int,
                   ids: Sequence[Hashable | None] | None = None) -> list[int]:
    """The document of each sentence cut from ``count`` texts, for inference: ``owners`` gives
    the text each sentence comes from. Every text is one document, and consecutive texts
    whose ``ids`` are equal (not None) are one document together; returns one document
    number per sentence (for :meth:`~seqrep.encode.pipeline.Encoder.items`' ``docs``)."""
    number = [0] * count
    for n, group in enumerate(documents(list(ids) if ids is not None else [None] * count)):
        for i in group:
            number[i] = n
    return [number[i] for i in owners]
