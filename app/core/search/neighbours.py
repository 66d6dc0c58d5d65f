"""Memories close in meaning to each other: those near a new text's vectors (a write's
near-duplicates, related memories) and the pairs of nearly the same memories (the
duplicates view)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from app.core.memory import Memory
from app.core.search.vectors import VectorIndex
from app.core.storage.store import Store


@dataclass(frozen=True)
class NearPair:
    """Two memories whose meaning is nearly the same (`Engine.duplicate_pairs`)."""

    a: Memory
    b: Memory
    similarity: float  # the cosine of their closest chunks
    share: float  # how much of both the match covers: 1.0 whole, 0.01 a start of a long one

    @property
    def partial(self) -> bool:
        """One holds the other (or a part of it), rather than both saying the same."""
        return self.share < 0.5


def similar(
    index: VectorIndex | None,
    store: Store,
    vectors: np.ndarray,
    exclude: str | None,
    floor: float,
    k: int,
) -> list[tuple[Memory, float]]:
    """Live memories whose best chunk is at least `floor` close to any of these vectors
    (the first 8), closest first, `k` at most."""
    if index is None or vectors is None or not len(vectors):
        return []
    best: dict[int, float] = {}
    for vec in vectors[:8]:
        hits, _ = index.top(vec, k + 1, None, floor)
        for seq, score in hits:
            best[seq] = max(best.get(seq, -1.0), score)
    found = store.by_seqs(best)
    pairs = [(found[s], best[s]) for s in best if s in found and found[s].id != exclude]
    return sorted(pairs, key=lambda p: -p[1])[:k]


def near_pairs(index: VectorIndex, store: Store, floor: float, limit: int) -> list[NearPair]:
    """Pairs of live memories at least `floor` close, closest first; pairs said not to be
    duplicates are left out."""
    pairs = index.near_pairs(floor, limit)
    found = store.by_seqs({s for a, b, _, _ in pairs for s in (a, b)})
    dismissed = store.not_duplicates()
    return [
        NearPair(found[a], found[b], score, share)
        for a, b, score, share in pairs
        if a in found and b in found and tuple(sorted((found[a].id, found[b].id))) not in dismissed
    ]
