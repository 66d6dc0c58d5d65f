"""The in-memory matrix of normalized vectors for one model, kept in step with the database.

Appends (new or re-embedded memories) are read incrementally by embedding rowid; anything
else (a delete, a trash or restore) bumps a generation counter and the matrix is reloaded.
"""

from __future__ import annotations

import numpy as np

from app.core.ranking import cosine_crowd
from app.core.store import Store


class VectorIndex:
    """Cosine similarity of a query to every memory, by its best chunk."""

    def __init__(self, model_id: str, dim: int):
        self.model_id = model_id
        self.dim = dim
        self._buf = np.empty((0, dim), dtype=np.float32)
        self._owner = np.empty(0, dtype=np.int64)  # memory seq per row; -1 = superseded
        self._n = 0
        self._top_rowid = 0
        self._generation: int | None = None
        self._mem_seqs = np.empty(0, dtype=np.int64)
        self._row_mem = np.empty(0, dtype=np.int64)
        self._one_row_each = True
        self._mapping_stale = True

    def __len__(self) -> int:
        """How many memories have vectors in the index."""
        self._update_mapping()
        return len(self._mem_seqs)

    def _append(self, rows: list[tuple[int, int, bytes]]) -> None:
        if not rows:
            return
        seqs = np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows))
        flat = np.frombuffer(b"".join(r[2] for r in rows), dtype="<f4")
        if flat.size != len(rows) * self.dim:
            raise ValueError("stored vectors do not match the model's dimension")
        vecs = flat.reshape(len(rows), self.dim)
        if self._n:
            # Rows for these memories supersede the ones we hold (a re-embed).
            stale = np.isin(self._owner[: self._n], seqs)
            self._owner[: self._n][stale] = -1
        need = self._n + len(rows)
        if need > len(self._buf):
            cap = max(need, int(len(self._buf) * 1.5) + 1024)
            buf = np.empty((cap, self.dim), dtype=np.float32)
            buf[: self._n] = self._buf[: self._n]
            owner = np.full(cap, -1, dtype=np.int64)
            owner[: self._n] = self._owner[: self._n]
            self._buf, self._owner = buf, owner
        self._buf[self._n : need] = vecs
        self._owner[self._n : need] = seqs
        self._n = need
        self._top_rowid = max(self._top_rowid, rows[-1][0])
        self._mapping_stale = True

    def refresh(self, store: Store) -> None:
        """Bring the matrix up to date with the database (cheap when nothing changed)."""
        top, generation = store.vector_watermark()
        if generation != self._generation:
            self._n, self._top_rowid = 0, 0
            self._generation = generation
            self._mapping_stale = True
            self._append(store.vector_rows(self.model_id))
        elif top > self._top_rowid:
            self._append(store.vector_rows(self.model_id, self._top_rowid))

    def _update_mapping(self) -> None:
        if not self._mapping_stale:
            return
        owners = self._owner[: self._n]
        live = owners >= 0
        self._mem_seqs, inverse = np.unique(owners[live], return_inverse=True)
        self._row_mem = np.full(self._n, -1, dtype=np.int64)
        self._row_mem[live] = inverse
        self._one_row_each = bool(live.all()) and len(self._mem_seqs) == self._n
        self._mapping_stale = False

    def scores(self, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(memory seqs, best-chunk cosine) for every memory in the index."""
        self._update_mapping()
        if not self._n:
            return self._mem_seqs, np.empty(0, dtype=np.float32)
        rows = self._buf[: self._n] @ query.astype(np.float32)
        if self._one_row_each:
            best = np.empty(len(self._mem_seqs), dtype=np.float32)
            best[self._row_mem] = rows
            return self._mem_seqs, best
        best = np.full(len(self._mem_seqs), -np.inf, dtype=np.float32)
        live = self._row_mem >= 0
        np.maximum.at(best, self._row_mem[live], rows[live])
        return self._mem_seqs, best

    def near_pairs(
        self, threshold: float, limit: int = 500, block: int = 2048
    ) -> list[tuple[int, int, float]]:
        """(seq a, seq b, cosine) for distinct memories with chunks at least this close."""
        vecs, owners = self._buf[: self._n], self._owner[: self._n]
        best: dict[tuple[int, int], float] = {}
        for start in range(0, self._n, block):
            sims = vecs[start : start + block] @ vecs.T
            rows, cols = np.nonzero(sims >= threshold)
            for r, c in zip(rows, cols, strict=True):
                a, b = int(owners[start + r]), int(owners[c])
                if a < 0 or b < 0 or a >= b:
                    continue  # superseded row, the same memory, or the mirror of a pair
                best[(a, b)] = max(best.get((a, b), -1.0), float(sims[r, c]))
        ranked = sorted(best.items(), key=lambda item: -item[1])[:limit]
        return [(a, b, score) for (a, b), score in ranked]

    def top(
        self, query: np.ndarray, k: int, allowed: np.ndarray | None = None, minimum: float = -1.0
    ) -> tuple[list[tuple[int, float]], ScoreLookup]:
        """The k most similar memories (seq, cosine) at or above `minimum`, and every score."""
        seqs, best = self.scores(query)
        crowd = cosine_crowd(best)
        if allowed is not None:
            keep = np.isin(seqs, allowed)
            seqs, best = seqs[keep], best[keep]
        eligible = np.flatnonzero(best >= minimum)
        if len(eligible) > k:
            part = np.argpartition(-best[eligible], k - 1)[:k]
            eligible = eligible[part]
        order = eligible[np.argsort(-best[eligible], kind="stable")]
        hits = [(int(seqs[i]), float(best[i])) for i in order]
        return hits, ScoreLookup(seqs, best, crowd)


class ScoreLookup:
    """Cosine by memory seq, looked up in the sorted score arrays, and the query's crowd:
    (mean, σ) of its cosines over the whole collection (`ranking.cosine_crowd`)."""

    def __init__(self, seqs: np.ndarray, best: np.ndarray, crowd: tuple[float, float]):
        self._seqs, self._best = seqs, best
        self.crowd = crowd

    def get(self, seq: int, default: float | None = None) -> float | None:
        """The memory's best-chunk cosine, or `default` if it has no vectors."""
        i = int(np.searchsorted(self._seqs, seq))
        if i < len(self._seqs) and self._seqs[i] == seq:
            return float(self._best[i])
        return default
