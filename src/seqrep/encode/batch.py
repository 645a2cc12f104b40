"""Pad segments into a batch, and group sentences into length-sorted batches.

Padding goes after the whole repeated sequence (``side="right"``) or before it (``"left"``);
positions count from 0 at the segment's first real token either way, and padding is always
masked. So a segment's tensors, apart from the padding, never depend on its batch-mates.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from seqrep.encode.repeat import Segment


@dataclass
class Batch:
    """Model inputs for a batch of segments and the recipe to pool word states out of them.

    Attributes:
        input_ids: ``(B, T)`` ids, padded.
        attention_mask: ``(B, T)`` 1 for real tokens, 0 for padding.
        position_ids: ``(B, T)`` 0-based positions of real tokens (0 on padding).
        read_batch, read_pos: ``(R,)`` which hidden states to read.
        read_word: ``(R,)`` row of the pooled ``(W, H)`` output each read goes to.
        read_weight: ``(R,)`` averaging weight of each read (1 / reads of that word).
        num_words: ``W``, words in the batch (in segment order).
        labels: ``(W,)`` label ids, or None.
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    position_ids: torch.Tensor
    read_batch: torch.Tensor
    read_pos: torch.Tensor
    read_word: torch.Tensor
    read_weight: torch.Tensor
    num_words: int
    labels: torch.Tensor | None = None

    def to(self, device: torch.device | str) -> Batch:
        """Move every tensor to ``device``."""
        kw = {k: (v.to(device) if isinstance(v, torch.Tensor) else v)
              for k, v in vars(self).items()}
        return Batch(**kw)

    @property
    def tokens(self) -> int:
        """Real (non-padding) tokens."""
        return int(self.attention_mask.sum())


def collate(segments: Sequence[Segment], pad_id: int, side: str = "right",
            labels: Sequence[Sequence[int]] | None = None) -> Batch:
    """Pad ``segments`` into one :class:`Batch`.

    Args:
        segments: the rows.
        pad_id: id placed on padding (masked, so its value does not matter).
        side: ``"right"`` or ``"left"`` padding.
        labels: optional label ids per segment, one per entry of ``segment.words``.
    """
    if side not in ("right", "left"):
        raise ValueError(f"padding side must be right or left, got {side!r}")
    width = max(len(s) for s in segments)
    B = len(segments)
    ids = torch.full((B, width), pad_id, dtype=torch.long)
    mask = torch.zeros((B, width), dtype=torch.long)
    pos = torch.zeros((B, width), dtype=torch.long)
    rb, rp, rw, wt = [], [], [], []
    word = 0
    for b, seg in enumerate(segments):
        n = len(seg)
        off = 0 if side == "right" else width - n
        ids[b, off : off + n] = torch.tensor(seg.input_ids, dtype=torch.long)
        mask[b, off : off + n] = 1
        pos[b, off : off + n] = torch.arange(n)
        for reads in seg.reads:
            for p in reads:
                rb.append(b)
                rp.append(off + p)
                rw.append(word)
                wt.append(1.0 / len(reads))
            word += 1
    lab = None
    if labels is not None:
        lab = torch.tensor([x for seg_labels in labels for x in seg_labels], dtype=torch.long)
        if lab.numel() != word:
            raise ValueError(f"{lab.numel()} labels for {word} words")
    long = torch.long
    return Batch(ids, mask, pos, torch.tensor(rb, dtype=long), torch.tensor(rp, dtype=long),
                 torch.tensor(rw, dtype=long), torch.tensor(wt), word, lab)


def length_batches(lengths: Sequence[int], batch_size: int, shuffle: bool = False,
                   seed: int = 0, batch_tokens: int | None = None,
                   sizes: Sequence[int] | None = None) -> list[list[int]]:
    """Group item indices into batches of similar length, so little compute goes to padding.

    Items are sorted by length; consecutive runs form batches of at most ``batch_size`` items
    (and at most ``batch_tokens`` padded tokens, if given). With ``sizes`` an item counts its
    size instead of one (a document row: the sentences it reads), and a batch closes before
    the item that would take it past ``batch_size`` (an item alone may be larger). With
    ``shuffle``, lengths are jittered within a bucket of 50 batches and the batch order is
    shuffled, both from ``seed``.

    Returns:
        Lists of indices into ``lengths``.
    """
    rng = random.Random(seed)
    order = list(range(len(lengths)))
    if shuffle:
        rng.shuffle(order)
        # sort inside large chunks only, so batches vary from epoch to epoch
        chunk = batch_size * 50
        order = [i for c in range(0, len(order), chunk)
                 for i in sorted(order[c : c + chunk], key=lambda i: lengths[i])]
    else:
        order.sort(key=lambda i: lengths[i])
    batches: list[list[int]] = []
    cur: list[int] = []
    held = 0  # what cur counts: its items, or their sizes
    for i in order:
        size = 1 if sizes is None else sizes[i]
        longest = max([lengths[j] for j in cur] + [lengths[i]])
        too_many = batch_tokens is not None and cur and longest * (len(cur) + 1) > batch_tokens
        if (cur and held + size > batch_size) or too_many:
            batches.append(cur)
            cur, held = [], 0
        cur.append(i)
        held += size
    if cur:
        batches.append(cur)
    if shuffle:
        rng.shuffle(batches)
    return batches


def padding_waste(lengths: Sequence[int], batches: Sequence[Sequence[int]]) -> float:
    """Share of padded tokens (0..1) when ``batches`` are padded to their longest item."""
    real = sum(lengths[i] for b in batches for i in b)
    padded = sum(max(lengths[i] for i in b) * len(b) for b in batches)
    return 1.0 - real / padded if padded else 0.0
