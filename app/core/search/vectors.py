"""The vectors of one model held for search, kept in step with the database.

Appends (new or re-embedded memories) are read incrementally by embedding rowid; anything
else (a delete, a trash or restore) bumps a generation counter and the rows are reloaded.

The database holds each vector once, as float16 (ADR 0017). A small collection (fewer than
QUANTIZE_ABOVE rows) is read from it into memory as float32 and scanned exactly. A large one
is scanned as int8 (each row scaled by its own largest number) with NumKong's SIMD kernels,
and the best candidates are rescored exactly from the database's own rows, read by rowid
(SQLite's incremental blob reads: 0.6 µs a row). Its int8 rows are kept beside the database
(`mnemo.db.vectors/`, a quarter of float32's bytes) and memory-mapped at the next start:
reading 100k vectors back from SQLite and quantizing them took about a second. The copy
(`vector_copy.py`) is never trusted blindly: it is used only while it still describes the
database, and rows added since are read from the database.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from app.core.search.ranking import cosine_crowd
from app.core.search.rows import Rows, give_back, quantize
from app.core.search.vector_copy import VectorCopy
from app.core.storage.store import Store
from app.core.storage.vector_rows import decode_vectors

try:  # SIMD int8 dot products; without it every collection is scanned in float32
    import numkong
except ImportError:  # pragma: no cover - a platform without a wheel
    numkong = None

log = logging.getLogger(__name__)
# From QUANTIZE_ABOVE rows a search scans the int8 rows, then rescores its RESCORE best
# memories (at least 4 × the number asked for) exactly; below, the float32 scan is as fast.
QUANTIZE_ABOVE = 20_000
RESCORE = 256
# The query's crowd (ranking.cosine_crowd) is measured on at most this many memories,
# evenly spaced: its median over a million cosines cost 14 ms, over 16k 0.2 ms.
CROWD_SAMPLE = 16_384
TOP_SAMPLE = 4096  # values sampled for the cut `largest` partitions above
SCAN_BLOCK = 65_536  # int8 rows scored at a time (their scores stay in the cache)
READ_BATCH = 8192  # vector rows read from the database at a time
DECODE_BLOCK = 4096  # of them decoded to float32 (and quantized) at a time
# After reading this many rows (in one read or several) the C heap's free memory goes back
# to the system: glibc kept what the reads freed (blobs, decoded blocks), and a model
# switch's 100k rows arriving in 50 reads held 1.22x the memory the index needs once done
# (1.17x with the trim, bench.reembed); a trim costs about 1 ms.
TRIM_AFTER = 1024
# Past REWRITE_ABOVE rows the copy is rewritten at close only once a REWRITE_SHARE-th of
# the rows were added since it was written: those are read from the database at the next
# start (rewriting 40 MB after each `mnemo remember` at 100k memories would cost more).
REWRITE_ABOVE = 10_000
REWRITE_SHARE = 20
# The int8 scores of two rows are within about 0.01 of their cosine (0.003 typical): the
# duplicate finder confirms every pair within this of its threshold on the exact rows.
NEAR_MARGIN = 0.02


class VectorIndex:
    """Cosine similarity of a query to every memory, by its best chunk."""

    def __init__(
        self,
        model_id: str,
        dim: int,
        cache_dir: Path | None = None,
        seal_key: bytes | None = None,
    ):
        self.model_id = model_id
        self.dim = dim
        # The int8 rows kept beside the database (no `cache_dir`: none; tests, a read-only
        # database); an encrypted database's is sealed and read into memory whole
        self.copy = VectorCopy(model_id, dim, cache_dir, seal_key)
        self.loaded_from = ""  # "cache" or "database": how the last full load was made
        self._store: Store | None = None  # where rows are read exactly (set by `refresh`)
        self._generation: int | None = None
        self._moved_at: tuple | None = None  # the database as the last refresh saw it
        self._untrimmed = 0  # rows read since the C heap was last trimmed (TRIM_AFTER)
        self._reset()

    def _reset(self) -> None:
        """No rows: the state a full load starts from."""
        self._saved_rows = -1  # rows in the copy on disk; -1 = none written by us
        self._owner = np.empty(0, dtype=np.int64)  # memory seq per row; -1 = superseded
        self._rowid = np.empty(0, dtype=np.int64)  # the database's embedding rowid per row
        self._n = 0
        self._top_rowid = 0
        # A small collection: float32 rows in memory. A large one (None here): int8 rows,
        # [0, _n_base) mapped from the copy on disk (or unsealed into memory) and the rows
        # added since in _q8_tail, so adding one never copies the mapped rows.
        self._float: Rows | None = Rows(self.dim, np.float32)
        self._q8_base = np.empty((0, self.dim), dtype=np.int8)
        self._scale_base = np.empty(0, dtype=np.float32)
        self._n_base = 0
        self._q8_tail = Rows(self.dim, np.int8)
        self._mem_seqs = np.empty(0, dtype=np.int64)
        self._row_mem = np.empty(0, dtype=np.int64)
        self._one_row_each = True
        self._in_order = True  # one row each, row i memory i: scores need no reordering
        self._mapping_stale = True
        self._mapped_rows = 0  # rows the mapping covers; 0: build it anew
        self._rows_by_memory = np.empty(0, dtype=np.int64)  # row numbers sorted by memory
        self._first_row = np.empty(0, dtype=np.int64)  # where each memory's rows start there

    @property
    def quantized(self) -> bool:
        """Whether searches scan int8 rows (a large collection) rather than float32."""
        return self._float is None

    # What a test or `mnemo doctor` may look at (read only)
    @property
    def rows_held(self) -> int:
        """How many vector rows are held (a memory's chunks each a row; superseded ones
        too until the next full load)."""
        return self._n

    @property
    def rows_mapped(self) -> int:
        """How many of them are memory-mapped (or unsealed) from the copy on disk; the rest
        were read since (the int8 tail)."""
        return self._n_base

    @property
    def mapped(self) -> bool:
        """Whether the int8 rows come mapped from the copy on disk (not read into memory)."""
        return isinstance(self._q8_base, np.memmap)

    @property
    def one_row_each(self) -> bool:
        """Whether every memory has one row (no long memory split into chunks)."""
        self._update_mapping()
        return self._one_row_each

    def __len__(self) -> int:
        """How many memories have vectors in the index."""
        self._update_mapping()
        return len(self._mem_seqs)

    @staticmethod
    def _grown(array: np.ndarray, need: int, held: int, fill: int) -> np.ndarray:
        if need <= len(array):
            return array
        grown = np.full(max(need, int(len(array) * 1.5) + 1024), fill, dtype=array.dtype)
        grown[:held] = array[:held]
        return grown

    def append(self, rows: list[tuple[int, int, bytes]], held: int | None = None) -> None:
        """Add (embedding rowid, memory seq, vector blob) rows, as `refresh` reads them;
        rows held before (the first `held`, default all) of the same memories are superseded
        (a re-embed read incrementally)."""
        if not rows:
            return
        seqs = np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows))
        rowids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        held = self._n if held is None else held
        if held:
            # Rows for these memories supersede the ones we held (a re-embed); not those of
            # the same read, where a memory's chunks may straddle two batches.
            stale = np.isin(self._owner[:held], seqs)
            if stale.any():
                self._owner[:held][stale] = -1
                self._mapped_rows = 0
        need = self._n + len(rows)
        self._owner = self._grown(self._owner, need, self._n, -1)
        self._rowid = self._grown(self._rowid, need, self._n, 0)
        for start in range(0, len(rows), DECODE_BLOCK):  # float32 rows: a block at a time
            try:
                vecs = decode_vectors([r[2] for r in rows[start : start + DECODE_BLOCK]], self.dim)
            except ValueError:
                raise ValueError("stored vectors do not match the model's dimension") from None
            if self._float is not None:
                self._float.put(self._n + start, vecs)
            else:
                self._q8_tail.put(self._n + start - self._n_base, *quantize(vecs))
        self._owner[self._n : need] = seqs
        self._rowid[self._n : need] = rowids
        self._n = need
        self._top_rowid = max(self._top_rowid, rows[-1][0])
        self._mapping_stale = True
        if self._float is not None and numkong is not None and self._n >= QUANTIZE_ABOVE:
            self._quantize_all()

    def _reserve(self, rows: int) -> None:
        """Room for this many rows, made once: grown by half at a time while a million were
        read, the arrays were copied, old and new held at once (1.6× the rows at the peak)."""
        self._owner = self._grown(self._owner, rows, self._n, -1)
        self._rowid = self._grown(self._rowid, rows, self._n, 0)
        if self._float is not None and numkong is not None and rows >= QUANTIZE_ABOVE:
            self._quantize_all()  # int8 from the first row
        if self._float is None:
            self._q8_tail.reserve(rows - self._n_base)

    def _quantize_all(self) -> None:
        """From float32 rows to int8 ones (the collection grew past QUANTIZE_ABOVE)."""
        floats, tail, at = self._float, Rows(self.dim, np.int8), 0
        tail.reserve(self._n)
        try:
            for block in floats.drain(self._n, DECODE_BLOCK):
                tail.put(at, *quantize(block))
                at += len(block)
        except BaseException:  # out of memory, Ctrl-C: the float rows are gone in part
            self._reset()
            self._generation = self._moved_at = None  # the next refresh reads every row again
            raise
        self._float, self._q8_tail, self._n_base = None, tail, 0
        self._q8_base = np.empty((0, self.dim), dtype=np.int8)
        self._scale_base = np.empty(0, dtype=np.float32)

    def refresh(self, store: Store) -> None:
        """Bring the rows up to date with the database (cheap when nothing changed)."""
        self._store = store
        moved = store.db.moved()  # the database's one "what moved since" check
        if moved == self._moved_at:
            return
        top, generation = store.vectors.watermark()
        if generation != self._generation:
            self._reset()
            self._generation = generation
            if self._load_copy(store, top, generation):
                self.loaded_from = "cache"
                if top > self._top_rowid:
                    self._read(store, top)
            else:
                self.loaded_from = "database"
                self._reserve(store.vectors.count(self.model_id))
                self._read(store, top)
                if self.quantized:
                    self.save(store)
                    # Read back as a mapping: the rows quantized in memory are let go first
                    # (held while the copy was checked, they were both in memory at once).
                    if self._saved_rows == self._n:
                        self._reset()
                        if not self._load_copy(store, top, generation):  # rare: read again
                            self._reserve(store.vectors.count(self.model_id))
                            self._read(store, top)
        elif top > self._top_rowid:
            self._read(store, top)
        self._moved_at = moved

    def _read(self, store: Store, top: int) -> None:
        """Append the model's rows after the last one held, READ_BATCH at a time (a million
        vector blobs read at once held 1.4 GB of the heap after they were let go). Rows up
        to `top`, the watermark read before, are then all seen: even when the newest rows
        are another model's or a trashed memory's, the next refresh reads nothing."""
        held, after = self._n, self._top_rowid
        while True:
            rows = store.vectors.rows(self.model_id, after, READ_BATCH)
            self.append([r for r in rows if r[1] is not None], held)
            if rows:
                after = rows[-1][0]
            if len(rows) < READ_BATCH:
                break
        self._top_rowid = max(self._top_rowid, after, top)
        self._untrimmed += self._n - held
        if self._untrimmed >= TRIM_AFTER:
            give_back()
            self._untrimmed = 0

    # ---- the copy on disk (`vector_copy.py`) -------------------------------------------
    @property
    def damage(self) -> str | None:
        """What was wrong with a copy found damaged (then rebuilt), if one was."""
        return self.copy.damage

    def _load_copy(self, store: Store, top: int, generation: int) -> bool:
        """Map the copy on disk if it still describes this database; False if not."""
        found = self.copy.load(store, top, generation) if numkong is not None else None
        if found is None:
            return False
        q8, scale, owner, rowid, rows, top_rowid = found
        self._reset()
        self._float = None
        self._q8_base, self._scale_base, self._n_base = q8, scale, rows
        self._owner, self._rowid = owner, rowid
        self._n, self._top_rowid = rows, top_rowid
        self._saved_rows = self._n
        return True

    def verify(self, store: Store) -> str | None:
        """Every row of the copy on disk checked (`mnemo doctor`): None when it is sound or
        there is none, else what is wrong with it."""
        return self.copy.verify(store)

    def drop_copy(self) -> None:
        """Delete the copy on disk (the next start writes it again from the database)."""
        self.copy.drop()

    def save(self, store: Store) -> None:
        """Write the int8 rows beside the database for the next start (a small collection
        has no copy: it is read from the database; `VectorCopy.write`)."""
        if (
            self.copy.meta_path() is None  # no copy kept (a read-only database)
            or self._generation is None
            or not self.quantized
            or self._saved_rows == self._n
        ):
            return
        added = self._n - self._saved_rows
        if self._saved_rows >= 0 and self._n > REWRITE_ABOVE and added * REWRITE_SHARE < self._n:
            return  # the copy on disk is close enough: the next start reads the rest
        live = self._owner[: self._n] >= 0
        kept = {  # what is written besides the rows, each once
            "scale": self.scales()[live],
            "seqs": np.ascontiguousarray(self._owner[: self._n][live]),
            "rowids": np.ascontiguousarray(self._rowid[: self._n][live]),
        }
        rows, top = int(live.sum()), self._top_rowid
        if self.copy.write(
            store, self._generation, top, rows, kept, lambda size: self._live_blocks(live, size)
        ):
            self._saved_rows = self._n

    def close(self) -> None:
        """Forget the database (the rows stay readable; a new `refresh` gives it again)."""
        self._store = None

    def _live_blocks(self, live: np.ndarray, size: int):
        """The int8 rows still in use, `size` rows at a time (each one array)."""
        for start in range(0, self._n, size):
            stop = min(start + size, self._n)
            block = np.ascontiguousarray(self._q8_block(start, stop)[live[start:stop]])
            if len(block):
                yield block

    # ---- rows ----------------------------------------------------------------------
    def _q8_block(self, start: int, stop: int) -> np.ndarray:
        """int8 rows [start, stop) as one array (a view when they lie in one part)."""
        nb, tail = self._n_base, self._q8_tail
        if stop <= nb:
            return self._q8_base[start:stop]
        if start >= nb:
            return tail.rows(start - nb, stop - nb)
        return np.concatenate([self._q8_base[start:nb], tail.rows(0, stop - nb)])

    def scales(self) -> np.ndarray:
        """Every int8 row's scale (a new array)."""
        nb = min(self._n_base, self._n)
        return np.concatenate([self._scale_base[:nb], self._q8_tail.scales(0, self._n - nb)])

    def _dequantized(self, rows: np.ndarray) -> np.ndarray:
        """The int8 rows' approximation of these rows (within about 0.003 a cosine)."""
        nb, out = self._n_base, np.empty((len(rows), self.dim), dtype=np.float32)
        base = rows < nb
        out[base] = self._q8_base[rows[base]] * self._scale_base[rows[base], None]
        tail_rows, tail_scales = self._q8_tail.take(rows[~base] - nb)
        out[~base] = tail_rows * tail_scales[:, None]
        return out

    def _take(self, rows: np.ndarray) -> np.ndarray:
        """Exact float32 rows by number, in the order given (sorted numbers read fastest):
        from memory in a small collection, else the database's own rows by rowid."""
        if self._float is not None:
            return self._float.take(rows)[0]
        out = np.empty((len(rows), self.dim), dtype=np.float32)
        if self._store is not None and self._store.vectors.read_into(self._rowid[rows], out):
            return out
        # another process changed the rows since the last refresh: the next one reloads
        log.info("vector rows changed under the index: int8 scores used until it reloads")
        return self._dequantized(rows)

    def _update_mapping(self) -> None:
        if not self._mapping_stale:
            return
        if 0 < self._mapped_rows <= self._n and self._extend_mapping():
            self._mapping_stale, self._mapped_rows = False, self._n
            return
        owners = self._owner[: self._n]
        if self._n and owners[0] >= 0 and bool((np.diff(owners) > 0).all()):
            # one row each, in seq order (the usual): no sort (np.unique, 70 ms at 1M rows
            # at every start)
            self._mem_seqs = owners.copy()
            self._row_mem = self._rows_by_memory = np.arange(self._n)
            self._first_row = np.arange(self._n + 1)
            self._one_row_each = self._in_order = True
            self._mapping_stale, self._mapped_rows = False, self._n
            return
        live = owners >= 0
        self._mem_seqs, inverse = np.unique(owners[live], return_inverse=True)
        self._row_mem = np.full(self._n, -1, dtype=np.int64)
        self._row_mem[live] = inverse
        self._one_row_each = bool(live.all()) and len(self._mem_seqs) == self._n
        self._in_order = self._one_row_each and bool((self._row_mem == np.arange(self._n)).all())
        rows = np.flatnonzero(live)
        if self._one_row_each:
            self._rows_by_memory = np.empty(len(rows), dtype=np.int64)
            self._rows_by_memory[inverse] = rows
            self._first_row = np.arange(len(rows) + 1)
        else:
            order = np.argsort(inverse, kind="stable")
            self._rows_by_memory = rows[order]
            self._first_row = np.searchsorted(inverse[order], np.arange(len(self._mem_seqs) + 1))
        self._mapping_stale, self._mapped_rows = False, self._n

    def _extend_mapping(self) -> bool:
        """Map rows appended for memories newer than every one held (a new memory's rows:
        the usual append) without sorting all rows again, which cost 60-100 ms a `remember`
        at 1M memories; False when the mapping must be built anew."""
        m, n = self._mapped_rows, self._n
        new = self._owner[m:n]
        if (new < 0).any() or (np.diff(new) < 0).any():
            return False
        if len(new) and len(self._mem_seqs) and new[0] <= self._mem_seqs[-1]:
            return False
        seqs, counts = np.unique(new, return_counts=True)
        row_mem = np.empty(n, dtype=np.int64)
        row_mem[:m] = self._row_mem[:m]
        row_mem[m:] = np.repeat(np.arange(len(self._mem_seqs), len(self._mem_seqs) + len(seqs)),
                                counts)  # fmt: skip
        self._row_mem = row_mem
        self._mem_seqs = np.concatenate([self._mem_seqs, seqs])
        self._one_row_each = self._one_row_each and bool((counts == 1).all())
        self._in_order = self._in_order and self._one_row_each
        self._rows_by_memory = np.concatenate([self._rows_by_memory, np.arange(m, n)])
        self._first_row = np.concatenate([self._first_row, self._first_row[-1] + np.cumsum(counts)])
        return True

    def scores(self, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(memory seqs, best-chunk cosine) for every memory in the index: exact in a small
        collection; in a large one the int8 scores (within about 0.003), the RESCORE best
        of them exact."""
        self._update_mapping()
        if not self._n:
            return self._mem_seqs, np.empty(0, dtype=np.float32)
        query = query.astype(np.float32)
        if self._float is not None:
            cosines = [rows @ query for _, rows, _ in self._float.blocks(0, self._n)]
            return self._mem_seqs, self._best_per_memory(np.concatenate(cosines))
        seqs, best = self._approximate(query)  # a new array: rescored in place
        pick = largest(best, RESCORE)
        best[pick] = self.exact(query, pick)
        return seqs, best

    def _best_per_memory(self, rows: np.ndarray) -> np.ndarray:
        """Each memory's best row score, in the order of the seq list (rows: one a row, a
        new array: it may be returned as it is)."""
        if self._in_order:  # the usual case: the scores are already in seq order
            return rows
        if self._one_row_each:
            best = np.empty(len(self._mem_seqs), dtype=np.float32)
            best[self._row_mem] = rows
            return best
        best = np.full(len(self._mem_seqs), -np.inf, dtype=np.float32)
        live = self._row_mem >= 0
        np.maximum.at(best, self._row_mem[live], rows[live])
        return best

    def _row_parts(self) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """(first row, rows, scales) of every row held, views a part: nothing copied (the
        scales of float32 rows mean nothing)."""
        if self._float is not None:
            return list(self._float.blocks(0, self._n))
        nb = min(self._n_base, self._n)
        parts = [(0, self._q8_base[:nb], self._scale_base[:nb])] if nb else []
        tail = self._q8_tail.blocks(0, self._n - nb)
        return parts + [(nb + first, rows, scales) for first, rows, scales in tail]

    def _block_sims(self, parts, scale: np.ndarray | None, start: int, stop: int) -> np.ndarray:
        """Rows [start, stop) against every row, a part at a time (the rows of a collection
        grown in parts were copied into one array: 384 MB at a million): cosines, int8
        ones when scaled."""
        rows = self._float.rows(start, stop) if scale is None else self._q8_block(start, stop)
        sims = np.empty((stop - start, self._n), dtype=np.float32)
        for first, part, _ in parts:
            if scale is None:
                sims[:, first : first + len(part)] = rows @ part.T
            else:
                dots = numkong.cdist(rows, part, metric="dot", threads=1, out_dtype="float32")
                sims[:, first : first + len(part)] = np.asarray(dots)
        if scale is not None:
            sims *= scale[start:stop, None]
            sims *= scale[None, :]
        return sims

    def near_pairs(
        self, threshold: float, limit: int = 500, block: int = 2048
    ) -> list[tuple[int, int, float, float]]:
        """(seq a, seq b, cosine, share) for distinct memories with chunks at least this
        close, closest first. `share` is how much of the two the match covers: the smaller
        of the parts of each memory's chunks that have a close chunk in the other (1.0 for
        two short notes; 0.01 for a note that is the start of a text 100 times longer).
        In a large collection the int8 scores find the candidates (within NEAR_MARGIN) and
        the database's rows decide."""
        owners = self._owner[: self._n]
        best: dict[tuple[int, int], float] = {}
        matched: dict[tuple[int, int], tuple[set[int], set[int]]] = {}
        near = threshold - (NEAR_MARGIN if self.quantized else 0.0)
        parts, scale = self._row_parts(), self.scales() if self.quantized else None
        for start in range(0, self._n, block):
            stop = min(start + block, self._n)
            sims = self._block_sims(parts, scale, start, stop)
            rows, cols = np.nonzero(sims >= near)
            a, b = owners[start + rows], owners[cols]
            keep = (a >= 0) & (b >= 0) & (a < b)  # not a superseded row, the same memory,
            rows, cols, values = start + rows[keep], cols[keep], sims[rows[keep], cols[keep]]
            if self.quantized and len(rows):  # nor the mirror of a pair
                values = self._pair_cosines(rows, cols)
                close = values >= threshold
                rows, cols, values = rows[close], cols[close], values[close]
            for r, c, v in zip(rows.tolist(), cols.tolist(), values.tolist(), strict=True):
                pair = (int(owners[r]), int(owners[c]))
                best[pair] = max(best.get(pair, -1.0), float(v))
                rows_a, rows_b = matched.setdefault(pair, (set(), set()))
                rows_a.add(r)
                rows_b.add(c)
        live = owners[owners >= 0]
        seqs, counts = np.unique(live, return_counts=True)
        chunks = dict(zip(seqs.tolist(), counts.tolist(), strict=True))
        ranked = sorted(best.items(), key=lambda item: -item[1])[:limit]
        out = []
        for (a, b), score in ranked:
            rows_a, rows_b = matched[(a, b)]
            share = min(len(rows_a) / chunks[a], len(rows_b) / chunks[b])
            out.append((a, b, score, min(1.0, share)))
        return out

    def _pair_cosines(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """The exact cosine of row rows[i] with row cols[i], for each i."""
        wanted = np.unique(np.concatenate([rows, cols]))
        exact = self._take(wanted)
        left, right = np.searchsorted(wanted, rows), np.searchsorted(wanted, cols)
        return np.einsum("ij,ij->i", exact[left], exact[right])

    def prepare(self) -> None:
        """Do now what the first search would otherwise do: the memory mapping and, in a
        large collection, reading the int8 rows from disk (one scan)."""
        if self._float is not None and numkong is not None and self._n >= QUANTIZE_ABOVE:
            self._quantize_all()
        self._update_mapping()
        if self.quantized and self._n:
            self._approximate(np.eye(1, self.dim, dtype=np.float32)[0])

    def _approximate(self, query: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """(memory seqs, best-chunk cosine) from the int8 rows (within about 0.003), or None
        when the exact scan is used."""
        self._update_mapping()
        if not self.quantized:
            return None
        q_scale = max(float(np.abs(query).max()) / 127, 1e-12)
        q = np.rint(query / q_scale).astype(np.int8)[None, :]
        # float32: the int8 dot products exact up to 1,040 dimensions (< 2^24), within 1e-7
        # beyond (far below the int8 error the rescoring corrects)
        out = np.empty(self._n, dtype=np.float32)
        for start, part, scale in self._row_parts():
            # A block at a time, scaled while its scores are in the cache: scaling all of
            # them after the scan read them again from memory (0.5 ms a million)
            for a in range(0, len(part), SCAN_BLOCK):
                b = min(a + SCAN_BLOCK, len(part))
                scores = out[start + a : start + b]
                numkong.cdist(
                    q, part[a:b], metric="dot", threads=1, out=scores[None, :], out_dtype="float32"
                )
                np.multiply(scores, scale[a:b], out=scores)
                scores *= q_scale
        return self._mem_seqs, self._best_per_memory(out)

    def position(self, seq: int) -> int | None:
        """Where a memory is in the seq list of `scores`, or None if it has no vectors."""
        self._update_mapping()
        p = int(np.searchsorted(self._mem_seqs, seq))
        return p if p < len(self._mem_seqs) and self._mem_seqs[p] == seq else None

    def exact(self, query: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """The exact best-chunk cosine of the memories at these positions of the seq list."""
        self._update_mapping()
        query = query.astype(np.float32)
        positions = np.asarray(positions, dtype=np.int64)
        if not len(positions):
            return np.empty(0, dtype=np.float32)
        if self._one_row_each:
            rows = self._rows_by_memory[positions]
            order = np.argsort(rows)  # the database reads best in its order
            out = np.empty(len(rows), dtype=np.float32)
            out[order] = self._take(rows[order]) @ query
            return out
        # each memory's best chunk, in one read of all their rows
        starts, ends = self._first_row[positions], self._first_row[positions + 1]
        by_memory = self._rows_by_memory
        rows = np.concatenate([by_memory[a:b] for a, b in zip(starts, ends, strict=True)])
        order = np.argsort(rows)
        dots = np.empty(len(rows), dtype=np.float32)
        dots[order] = self._take(rows[order]) @ query
        groups = np.concatenate([[0], np.cumsum(ends - starts)[:-1]])
        return np.maximum.reduceat(dots, groups) if len(rows) else dots[:0]

    def top(
        self, query: np.ndarray, k: int, allowed: np.ndarray | None = None, minimum: float = -1.0
    ) -> tuple[list[tuple[int, float]], ScoreLookup]:
        """The k most similar memories (seq, cosine) at or above `minimum`, and every score.

        In a large collection the scores come from the int8 rows, and the RESCORE best of
        them are rescored exactly: the hits' cosines are exact, and so is any memory's that
        ScoreLookup is asked for."""
        self._update_mapping()
        approximate = self._approximate(query) if self._n else None
        seqs, best = approximate if approximate is not None else self.scores(query)
        if not np.isfinite(best).all():  # damage the checks at open did not sample
            log.warning("the vector copy in %s holds non-finite numbers: dropped", self.copy.folder)
            self.copy.damage = "it held numbers that are not finite"
            self.drop_copy()
            best = np.nan_to_num(best, nan=-1.0, posinf=-1.0, neginf=-1.0)
        crowd = cosine_crowd(_sample(best))
        positions = None  # in the seq list; None: the same as in `seqs`
        if allowed is not None:
            keep = np.flatnonzero(np.isin(seqs, allowed))
            seqs, best, positions = seqs[keep], best[keep], keep
        if approximate is not None and len(best):
            pick = largest(best, max(RESCORE, 4 * k))
            rescored = self.exact(query, pick if positions is None else positions[pick])
            seqs, best = seqs[pick], rescored
            order_by_seq = np.argsort(seqs)
            seqs, best = seqs[order_by_seq], best[order_by_seq]
        eligible = np.flatnonzero(best >= minimum)
        if len(eligible) > k:
            eligible = np.sort(eligible[largest(best[eligible], k)])  # ties: older first
        order = eligible[np.argsort(-best[eligible], kind="stable")]
        hits = [(int(seqs[i]), float(best[i])) for i in order]
        if approximate is None:
            return hits, ScoreLookup(seqs, best, crowd)
        return hits, ScoreLookup(seqs, best, crowd, self, query)


def largest(values: np.ndarray, n: int) -> np.ndarray:
    """The positions of the n largest values, in no order (all of them when there are not
    more). Not by partitioning every value (3 ms at 300k, 11 ms at 1M): a cut taken from an
    evenly spaced sample leaves about 2n values at or above it; when at least n are, the n
    largest are among them, and only those are partitioned (0.1 / 0.2 ms)."""
    size = len(values)
    if n >= size:
        return np.arange(size)
    if size >= max(16 * n, 4 * TOP_SAMPLE):
        sample = values[:: size // TOP_SAMPLE]
        rank = min(len(sample) - 1, 2 * n * len(sample) // size + 1)
        cut = np.partition(sample, len(sample) - 1 - rank)[len(sample) - 1 - rank]
        above = np.flatnonzero(values >= cut)
        if len(above) >= n:  # else an unlucky sample (or NaN): partition them all
            return above[np.argpartition(values[above], len(above) - n)[len(above) - n :]]
    return np.argpartition(values, size - n)[size - n :]


def _sample(values: np.ndarray) -> np.ndarray:
    """At most CROWD_SAMPLE of the values, evenly spaced (all of them when fewer)."""
    if len(values) <= CROWD_SAMPLE:
        return values
    return values[:: -(-len(values) // CROWD_SAMPLE)]


class ScoreLookup:
    """Cosine by memory seq, looked up in the sorted score arrays, and the query's crowd:
    (mean, σ) of its cosines over the collection (`ranking.cosine_crowd`). With an index
    and a query, the arrays hold only the rescored memories and any other is computed
    exactly on demand."""

    def __init__(
        self,
        seqs: np.ndarray,
        best: np.ndarray,
        crowd: tuple[float, float],
        index: VectorIndex | None = None,
        query: np.ndarray | None = None,
    ):
        self._seqs, self._best = seqs, best
        self.crowd = crowd
        self._index, self._query = index, query
        self._more: dict[int, float] = {}  # computed on demand (`fill`)

    def fill(self, seqs: list[int]) -> None:
        """Compute the cosines of these memories in one pass (before `get` asks for them)."""
        if self._index is None:
            return
        wanted = [s for s in seqs if s not in self._more and self._known(s) is None]
        places = [(s, p) for s in wanted if (p := self._index.position(s)) is not None]
        if places:
            cosines = self._index.exact(self._query, np.array([p for _, p in places]))
            self._more.update(zip([s for s, _ in places], cosines.tolist(), strict=True))

    def _known(self, seq: int) -> float | None:
        i = int(np.searchsorted(self._seqs, seq))
        if i < len(self._seqs) and self._seqs[i] == seq:
            return float(self._best[i])
        return None

    def get(self, seq: int, default: float | None = None) -> float | None:
        """The memory's best-chunk cosine, or `default` if it has no vectors."""
        if (known := self._known(seq)) is not None:
            return known
        if self._index is not None and seq not in self._more:
            self.fill([seq])
        return self._more.get(seq, default)
