"""The in-memory matrix of normalized vectors for one model, kept in step with the database.

Appends (new or re-embedded memories) are read incrementally by embedding rowid; anything
else (a delete, a trash or restore) bumps a generation counter and the matrix is reloaded.

A copy of the matrix is kept beside the database (`mnemo.db.vectors/`) and memory-mapped at
the next start: reading 100k vectors back from SQLite took 0.9-1.2 s quiet (7.6 s on a busy
laptop), mapping the copy takes milliseconds. The copy is never trusted blindly: it is used
only while the database's generation is the one it was written at, its last embedding row
still holds the same vector, and rows added since are read from the database.

A search of a large collection scans an int8 copy of the matrix (NumKong's SIMD kernels, a
quarter of the memory to read) and rescores the best candidates exactly in float32: at
100k memories 1.4 ms instead of 3.5, at 1M 15 ms instead of 24-35 (ADR 0008).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import mmap
import os
import re
import secrets
import stat
import weakref
import zlib
from pathlib import Path

import numpy as np

from app.core import paths
from app.core.search.ranking import cosine_crowd
from app.core.storage.store import Store

try:  # SIMD int8 dot products; without it every search scans the float32 matrix
    import numkong
except ImportError:  # pragma: no cover - a platform without a wheel
    numkong = None

log = logging.getLogger(__name__)
# Past QUANTIZE_ABOVE rows a search scans the int8 copy, then rescores its RESCORE best
# memories (at least 4 × the number asked for) exactly; below, the float32 scan is as fast.
QUANTIZE_ABOVE = 20_000
RESCORE = 256
# The query's crowd (ranking.cosine_crowd) is measured on at most this many memories,
# evenly spaced: its median over a million cosines cost 14 ms, over 16k 0.2 ms.
CROWD_SAMPLE = 16_384
TOP_SAMPLE = 4096  # values sampled for the cut `largest` partitions above
CACHE_FORMAT = 1
SEAL_MAGIC = b"MNEMO-SEALED-VECTORS-1\n"
READ_BATCH = 50_000  # vector rows read from the database at a time
# Past REWRITE_ABOVE rows (15 MB at 384 dimensions) the copy is rewritten at close only once
# a REWRITE_SHARE-th of the rows were added since it was written: those are read from the
# database at the next start, and rewriting 150 MB after each `mnemo remember` at 100k
# memories would cost more than reading them.
REWRITE_ABOVE = 10_000
REWRITE_SHARE = 20
# At open the copy is checked on SAMPLE_AT_OPEN rows against the database, and whole (a
# checksum) when it is at most CHECK_WHOLE_BELOW bytes (about 20,000 memories: ~15 ms);
# `mnemo doctor` checks every row of any size.
SAMPLE_AT_OPEN = 32
CHECK_WHOLE_BELOW = 32 << 20


def _unit(row: np.ndarray) -> bool:
    """Whether a finite row has length 1 (a damaged one may overflow: not a warning)."""
    with np.errstate(all="ignore"):
        return abs(float(row @ row) - 1.0) <= 1e-3


def _regular(path: Path) -> bool:
    """Whether `path` is a regular file (not a FIFO, a device or a link to one)."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


SEAL_BLOCK = 65536  # rows sealed together (AES-256-GCM, a nonce and a tag each)


def _seal_aad(index: int, rows: int, dim: int) -> bytes:
    return f"mnemo vector copy|block {index}|{rows}x{dim}".encode()


def _write_sealed(f, blocks, key: bytes, dim: int) -> None:
    """Write row blocks sealed by `key` (an encrypted database's copy: ADR 0014)."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    aead = AESGCM(key)
    f.write(SEAL_MAGIC)
    index, pending, held = 0, [], 0

    def seal(rows: np.ndarray) -> None:
        nonlocal index
        nonce = secrets.token_bytes(12)
        f.write(nonce)
        f.write(aead.encrypt(nonce, rows.astype("<f4").tobytes(), _seal_aad(index, len(rows), dim)))
        index += 1

    for block in blocks:  # regrouped: every sealed block but the last holds SEAL_BLOCK rows
        pending.append(block)
        held += len(block)
        while held >= SEAL_BLOCK:
            joined = np.concatenate(pending) if len(pending) > 1 else pending[0]
            seal(joined[:SEAL_BLOCK])
            rest = joined[SEAL_BLOCK:]
            pending, held = ([rest] if len(rest) else []), len(rest)
    if held:
        seal(np.concatenate(pending) if len(pending) > 1 else pending[0])


def _read_sealed(path: Path, key: bytes, rows: int, dim: int) -> np.ndarray:
    """The rows of a sealed copy, unsealed into memory (never a mapping of clear text);
    InvalidTag (another key, a changed byte) or ValueError when they are not whole."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    aead = AESGCM(key)
    out = np.empty((rows, dim), dtype="<f4")
    rows_out = memoryview(out).cast("B")
    row_bytes = dim * 4
    buffer = memoryview(bytearray(min(rows, SEAL_BLOCK) * row_bytes + 16))
    with open(path, "rb", buffering=0) as f:
        if f.read(len(SEAL_MAGIC)) != SEAL_MAGIC:
            raise ValueError("not a sealed vector copy")
        for index, start in enumerate(range(0, rows, SEAL_BLOCK)):
            count = min(SEAL_BLOCK, rows - start)
            nonce = f.read(12)
            sealed = buffer[: count * row_bytes + 16]
            if len(nonce) != 12 or f.readinto(sealed) != len(sealed):
                raise ValueError("the sealed copy is shorter than its rows")
            # straight into the matrix: no second copy of the rows
            target = rows_out[start * row_bytes : (start + count) * row_bytes]
            aead.decrypt_into(nonce, sealed, _seal_aad(index, count, dim), target)
        if f.read(1):
            raise ValueError("the sealed copy is longer than its rows")
    return out.astype(np.float32, copy=False)


def _crc_problem(matrix: np.ndarray, meta: dict) -> str | None:
    """What the rows' checksum says (None: matches, or an older copy without one)."""
    if "crc32" not in meta:
        return None
    crc = 0
    for start in range(0, len(matrix), 65536):
        crc = zlib.crc32(np.ascontiguousarray(matrix[start : start + 65536]).data, crc)
    return None if crc == meta["crc32"] else "its checksum does not match its rows"


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
        self.cache_dir = cache_dir  # None: no copy on disk (tests, a read-only database)
        # An encrypted database's copy is sealed (AES-256-GCM) and read into memory whole
        self.seal_key = seal_key
        self.loaded_from = ""  # "cache" or "database": how the last full load was made
        self.damage: str | None = None  # what was wrong with a copy found damaged (rebuilt)
        self._saved_rows = -1  # rows in the copy on disk; -1 = none written by us
        # Rows [0, _n_base) are the matrix as loaded (memory-mapped from the copy on disk, or
        # read from the database); rows added since are in _tail, so adding one never copies
        # the matrix (at 1M memories, 1.5 GB).
        self._base = np.empty((0, dim), dtype=np.float32)
        self._n_base = 0
        self._reader: RowReader | None = None  # the base's rows by pread (no mapping)
        self._tail = np.empty((0, dim), dtype=np.float32)
        self._owner = np.empty(0, dtype=np.int64)  # memory seq per row; -1 = superseded
        self._n = 0
        self._top_rowid = 0
        self._generation: int | None = None
        self._mem_seqs = np.empty(0, dtype=np.int64)
        self._row_mem = np.empty(0, dtype=np.int64)
        self._one_row_each = True
        self._in_order = True  # one row each, row i memory i: scores need no reordering
        self._mapping_stale = True
        self._mapped_rows = 0  # rows the mapping covers; 0: build it anew
        self._rows_by_memory = np.empty(0, dtype=np.int64)  # row numbers sorted by memory
        self._first_row = np.empty(0, dtype=np.int64)  # where each memory's rows start there
        self._q8: np.ndarray | None = None  # int8 rows; row r ≈ _q8[r] * _q8_scale[r]
        self._q8_scale = np.empty(0, dtype=np.float32)
        self._q8_rows = 0  # rows quantized so far

    def __len__(self) -> int:
        """How many memories have vectors in the index."""
        self._update_mapping()
        return len(self._mem_seqs)

    def _append(self, rows: list[tuple[int, int, bytes]], held: int | None = None) -> None:
        """Add rows; rows held before (the first `held`, default all) of the same memories
        are superseded (a re-embed read incrementally)."""
        if not rows:
            return
        seqs = np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows))
        flat = np.frombuffer(b"".join(r[2] for r in rows), dtype="<f4")
        if flat.size != len(rows) * self.dim:
            raise ValueError("stored vectors do not match the model's dimension")
        vecs = flat.reshape(len(rows), self.dim)
        held = self._n if held is None else held
        if held:
            # Rows for these memories supersede the ones we held (a re-embed); not those of
            # the same read, where a memory's chunks may straddle two batches.
            stale = np.isin(self._owner[:held], seqs)
            if stale.any():
                self._owner[:held][stale] = -1
                self._mapped_rows = 0
        need = self._n + len(rows)
        if need > len(self._owner):
            owner = np.full(max(need, int(len(self._owner) * 1.5) + 1024), -1, dtype=np.int64)
            owner[: self._n] = self._owner[: self._n]
            self._owner = owner
        used, tail_need = self._n - self._n_base, need - self._n_base
        if tail_need > len(self._tail):
            tail = np.empty(
                (max(tail_need, int(len(self._tail) * 1.5) + 1024), self.dim), np.float32
            )
            tail[:used] = self._tail[:used]
            self._tail = tail
        self._tail[used:tail_need] = vecs
        self._owner[self._n : need] = seqs
        self._n = need
        self._top_rowid = max(self._top_rowid, rows[-1][0])
        self._mapping_stale = True

    def refresh(self, store: Store) -> None:
        """Bring the matrix up to date with the database (cheap when nothing changed)."""
        top, generation = store.vector_watermark()
        if generation != self._generation:
            self._n, self._top_rowid, self._saved_rows = 0, 0, -1
            self._base, self._n_base = np.empty((0, self.dim), dtype=np.float32), 0
            self.close()
            self._q8, self._q8_rows = None, 0
            self._mapped_rows = 0
            self._generation = generation
            self._mapping_stale = True
            if self._load_copy(store, top, generation):
                self.loaded_from = "cache"
                if top > self._top_rowid:
                    self._read(store, top)
            else:
                self.loaded_from = "database"
                self._read(store, top)
                self.save(store)
                # Read back as a mapping: the rows read from the database are let go.
                if self._saved_rows == self._n:
                    self._load_copy(store, top, generation)
        elif top > self._top_rowid:
            self._read(store, top)

    def _read(self, store: Store, top: int) -> None:
        """Append the model's rows after the last one held, READ_BATCH at a time (a million
        vector blobs read at once held 1.4 GB of the heap after they were let go). Rows up
        to `top`, the watermark read before, are then all seen: even when the newest rows
        are another model's or a trashed memory's, the next refresh reads nothing."""
        held, after = self._n, self._top_rowid
        while True:
            rows = store.vector_rows(self.model_id, after, READ_BATCH)
            self._append([r for r in rows if r[1] is not None], held)
            if rows:
                after = rows[-1][0]
            if len(rows) < READ_BATCH:
                break
        self._top_rowid = max(self._top_rowid, after, top)

    # ---- the copy on disk ----------------------------------------------------------
    def _meta_path(self) -> Path | None:
        if self.cache_dir is None:
            return None
        return self.cache_dir / (re.sub(r"[^A-Za-z0-9_.-]", "_", self.model_id) + ".json")

    @staticmethod
    def _row_digest(store: Store, rowid: int) -> str:
        """A fingerprint of one embedding row's vector ('' if the row is gone)."""
        blob = store.vector_blob(rowid) if rowid else b""
        return hashlib.sha256(blob or b"").hexdigest()[:16]

    def _load_copy(self, store: Store, top: int, generation: int) -> bool:
        """Map the copy on disk if it still describes this database; False if not."""
        meta_path = self._meta_path()
        if meta_path is None or not meta_path.exists():
            return False
        try:
            if not _regular(meta_path):  # a FIFO put there would hang the read
                raise ValueError(f"{meta_path.name} is not a regular file")
            meta = json.loads(meta_path.read_text())
            if (
                meta.get("format") != CACHE_FORMAT
                or bool(meta.get("sealed")) != (self.seal_key is not None)
                or meta.get("model_id") != self.model_id
                or meta.get("dim") != self.dim
                or meta.get("generation") != generation
                or meta.get("top_rowid", 0) > top
                or meta.get("last_row") != self._row_digest(store, meta.get("top_rowid", 0))
            ):
                return False
            for name in (meta["matrix"], meta["seqs"]):
                if not _regular(self.cache_dir / name):
                    raise ValueError(f"{name} is not a regular file")
            if self.seal_key is not None:
                reader = None
                matrix = _read_sealed(
                    self.cache_dir / meta["matrix"], self.seal_key, meta["rows"], self.dim
                )
            else:
                reader = RowReader.open(self.cache_dir / meta["matrix"], self.dim)
                matrix = np.load(self.cache_dir / meta["matrix"], mmap_mode="r")
            owner = np.load(self.cache_dir / meta["seqs"])
            if matrix.shape != (meta["rows"], self.dim) or owner.shape != (meta["rows"],):
                return False
            if reader is not None and not reader.reads(self.cache_dir / meta["matrix"], matrix):
                reader = None  # the file was replaced between the two opens: map only
            problem = self._check_rows(store, matrix, owner, SAMPLE_AT_OPEN)
            if problem is None and matrix.nbytes <= CHECK_WHOLE_BELOW:
                problem = _crc_problem(matrix, meta)
            if problem is not None:
                log.warning(
                    "the vector copy in %s is damaged (%s): rebuilt", self.cache_dir, problem
                )
                self.damage = problem
                return False
        except Exception as exc:  # noqa: BLE001 - any damage (a mangled header raised
            # tokenize.TokenError) only means the copy is not used
            log.info("vector copy in %s not used: %s", self.cache_dir, exc)
            self.damage = f"it could not be read ({type(exc).__name__})"
            return False
        self.close()
        self._base, self._n_base, self._reader = matrix, meta["rows"], reader
        self._tail = np.empty((0, self.dim), dtype=np.float32)
        self._owner = owner.astype(np.int64, copy=False)
        self._q8, self._q8_rows = None, 0
        self._mapping_stale, self._mapped_rows = True, 0
        self._n, self._top_rowid = meta["rows"], meta["top_rowid"]
        self._saved_rows = self._n
        return True

    def _check_rows(
        self, store: Store, matrix: np.ndarray, owner: np.ndarray, sample: int
    ) -> str | None:
        """What is wrong with the copy's rows, checked on `sample` rows evenly spaced (and the
        last): each finite, unit-length and the vector the database holds for its memory.
        None when nothing is."""
        rows = len(owner)
        if not rows:
            return None
        picks = np.unique(np.linspace(0, rows - 1, min(sample, rows)).astype(np.int64))
        for i in picks:
            row = np.asarray(matrix[i], dtype=np.float32)
            if not np.isfinite(row).all() or not _unit(row):
                return f"row {int(i)} is not a unit vector"
            if row.astype("<f4").tobytes() not in store.vector_blobs_of(
                int(owner[i]), self.model_id
            ):
                return f"row {int(i)} is not the database's vector for its memory"
        return None

    def verify(self, store: Store) -> str | None:
        """Every row of the copy on disk checked (`mnemo doctor`): None when it is sound or
        there is none, else what is wrong with it."""
        meta_path = self._meta_path()
        if meta_path is None or not meta_path.exists():
            return None
        try:
            if not _regular(meta_path):
                return f"{meta_path.name} is not a regular file"
            meta = json.loads(meta_path.read_text())
            for name in (meta["matrix"], meta["seqs"]):
                if not _regular(self.cache_dir / name):
                    return f"{name} is not a regular file"
            if self.seal_key is not None:
                matrix = _read_sealed(
                    self.cache_dir / meta["matrix"], self.seal_key, meta["rows"], self.dim
                )
            else:
                matrix = np.load(self.cache_dir / meta["matrix"], mmap_mode="r")
            owner = np.load(self.cache_dir / meta["seqs"])
            if matrix.shape != (meta["rows"], self.dim) or owner.shape != (meta["rows"],):
                return "its size does not match its description"
            for start in range(0, len(owner), 65536):
                if not np.isfinite(matrix[start : start + 65536]).all():
                    return "it holds numbers that are not finite"
            return _crc_problem(matrix, meta) or self._check_rows(store, matrix, owner, 256)
        except Exception as exc:  # noqa: BLE001 - whatever is wrong, it is damaged
            return f"it cannot be read ({type(exc).__name__}: {exc})"[:200]

    def close(self) -> None:
        """Close the file rescoring reads (the mapping stays readable)."""
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    def drop_copy(self) -> None:
        """Delete the copy on disk (the next start writes it again from the database)."""
        meta_path = self._meta_path()
        if meta_path is None:
            return
        for path in [meta_path, *self.cache_dir.glob(f"{meta_path.stem}.*.npy")]:
            with contextlib.suppress(OSError):
                path.unlink()

    def save(self, store: Store) -> None:
        """Write the matrix beside the database for the next start; a read-only or full
        disk just means no copy. Each write has files of its own, named in the JSON that is
        renamed into place last, so two processes saving at once never mix their files."""
        meta_path = self._meta_path()
        if meta_path is None or self._generation is None or self._saved_rows == self._n:
            return
        added = self._n - self._saved_rows
        if self._saved_rows >= 0 and self._n > REWRITE_ABOVE and added * REWRITE_SHARE < self._n:
            return  # the copy on disk is close enough: the next start reads the rest
        live = self._owner[: self._n] >= 0
        stem = f"{meta_path.stem}.{os.getpid()}-{secrets.token_hex(4)}"
        meta = {
            "format": CACHE_FORMAT,
            "model_id": self.model_id,
            "dim": self.dim,
            "generation": self._generation,
            "top_rowid": self._top_rowid,
            "last_row": self._row_digest(store, self._top_rowid),
            "rows": int(live.sum()),
            "matrix": f"{stem}.f32.npy" if self.seal_key is None else f"{stem}.f32.sealed",
            "seqs": f"{stem}.seq.npy",
        }
        if self.seal_key is not None:
            meta["sealed"] = True
        written: list[Path] = []
        try:
            paths.private_dir(self.cache_dir)
            written.append(self.cache_dir / meta["matrix"])
            with os.fdopen(paths.private_file(written[-1]), "wb") as f:
                if self.seal_key is not None:  # its tags check it: no checksum of the rows
                    _write_sealed(f, self._live_blocks(live, SEAL_BLOCK), self.seal_key, self.dim)
                else:
                    header = {
                        "descr": "<f4",
                        "fortran_order": False,
                        "shape": (meta["rows"], self.dim),
                    }
                    np.lib.format.write_array_header_1_0(f, header)
                    crc = 0
                    for block in self._live_blocks(live, 65536):  # never a second copy
                        f.write(block.data)
                        crc = zlib.crc32(block.data, crc)
                    meta["crc32"] = crc  # of the rows, for `verify` (a small copy at open)
            written.append(self.cache_dir / meta["seqs"])
            with os.fdopen(paths.private_file(written[-1]), "wb") as f:
                np.save(f, np.ascontiguousarray(self._owner[: self._n][live]))
            paths.replace_file(meta_path, lambda f: json.dump(meta, f))
            self._saved_rows = self._n
        except Exception as exc:  # noqa: BLE001 - a cache: any failure means no copy
            log.info("vector copy not written to %s: %s", self.cache_dir, exc)
            for path in written:
                with contextlib.suppress(OSError):
                    path.unlink(missing_ok=True)
            return
        # Older copies of this model go (a reader that mapped one keeps its mapping).
        for pattern in (f"{meta_path.stem}.[0-9]*-*.npy", f"{meta_path.stem}.[0-9]*-*.sealed"):
            for old in self.cache_dir.glob(pattern):
                if old.name not in (meta["matrix"], meta["seqs"]):
                    with contextlib.suppress(OSError):
                        old.unlink()

    def _live_blocks(self, live: np.ndarray, size: int):
        """The rows still in use, `size` rows of the matrix at a time (each one array)."""
        for start in range(0, self._n, size):
            stop = min(start + size, self._n)
            block = np.ascontiguousarray(self._block(start, stop)[live[start:stop]])
            if len(block):
                yield block

    # ---- rows ----------------------------------------------------------------------
    def _block(self, start: int, stop: int) -> np.ndarray:
        """Rows [start, stop) as one array (a view when they lie in one part)."""
        nb = self._n_base
        if stop <= nb:
            return self._base[start:stop]
        if start >= nb:
            return self._tail[start - nb : stop - nb]
        return np.concatenate([self._base[start:nb], self._tail[: stop - nb]])

    def _take(self, rows: np.ndarray) -> tuple[np.ndarray, bool]:
        """Rows by number, in the order given (sorted numbers read a file fastest), and
        whether the mapping was read (its pages are then this process's until let go)."""
        nb = self._n_base
        out = np.empty((len(rows), self.dim), dtype=np.float32)
        in_base = rows < nb
        mapped = False
        if in_base.any():
            at = np.flatnonzero(in_base)
            if self._reader is None or not self._reader.read(rows[at], out, at):
                out[at] = self._base[rows[at]]
                mapped = True
        out[~in_base] = self._tail[rows[~in_base] - nb]
        return out, mapped

    def _dots(self, query: np.ndarray) -> np.ndarray:
        """The dot product of every row with the query."""
        out = np.empty(self._n, dtype=np.float32)
        nb = min(self._n_base, self._n)
        if nb:
            np.dot(self._base[:nb], query, out=out[:nb])
        if self._n > nb:
            np.dot(self._tail[: self._n - nb], query, out=out[nb:])
        return out

    def _update_mapping(self) -> None:
        if not self._mapping_stale:
            return
        if 0 < self._mapped_rows <= self._n and self._extend_mapping():
            self._mapping_stale, self._mapped_rows = False, self._n
            return
        owners = self._owner[: self._n]
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
        """(memory seqs, best-chunk cosine) for every memory in the index."""
        self._update_mapping()
        if not self._n:
            return self._mem_seqs, np.empty(0, dtype=np.float32)
        rows = self._dots(query.astype(np.float32))
        if self._n_base >= QUANTIZE_ABOVE:  # a full scan (context) read every mapped page
            _let_go(self._base)
        return self._mem_seqs, self._best_per_memory(rows)

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

    def near_pairs(
        self, threshold: float, limit: int = 500, block: int = 2048
    ) -> list[tuple[int, int, float, float]]:
        """(seq a, seq b, cosine, share) for distinct memories with chunks at least this
        close, closest first. `share` is how much of the two the match covers: the smaller
        of the parts of each memory's chunks that have a close chunk in the other (1.0 for
        two short notes; 0.01 for a note that is the start of a text 100 times longer)."""
        vecs, owners = self._block(0, self._n), self._owner[: self._n]
        best: dict[tuple[int, int], float] = {}
        matched: dict[tuple[int, int], tuple[set[int], set[int]]] = {}
        for start in range(0, self._n, block):
            sims = vecs[start : start + block] @ vecs.T
            rows, cols = np.nonzero(sims >= threshold)
            for r, c in zip(rows, cols, strict=True):
                a, b = int(owners[start + r]), int(owners[c])
                if a < 0 or b < 0 or a >= b:
                    continue  # superseded row, the same memory, or the mirror of a pair
                best[(a, b)] = max(best.get((a, b), -1.0), float(sims[r, c]))
                rows_a, rows_b = matched.setdefault((a, b), (set(), set()))
                rows_a.add(start + int(r))
                rows_b.add(int(c))
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

    def _quantized(self) -> np.ndarray | None:
        """The int8 copy of the rows, brought up to date; None below QUANTIZE_ABOVE rows
        or without NumKong."""
        if numkong is None or self._n < QUANTIZE_ABOVE:
            return None
        if self._q8 is None:
            self._q8_rows = 0
        if self._q8 is None or len(self._q8) < self._n:
            cap = max(self._n, len(self._owner))
            q8, scale = np.empty((cap, self.dim), dtype=np.int8), np.empty(cap, np.float32)
            if self._q8 is not None:
                q8[: self._q8_rows] = self._q8[: self._q8_rows]
                scale[: self._q8_rows] = self._q8_scale[: self._q8_rows]
            self._q8, self._q8_scale = q8, scale
        first, block = self._q8_rows, 8192
        for start in range(first, self._n, block):
            rows = np.asarray(self._block(start, min(start + block, self._n)), dtype=np.float32)
            scale = np.abs(rows).max(axis=1) / 127
            scale[scale == 0] = 1.0
            self._q8[start : start + len(rows)] = np.rint(rows / scale[:, None])
            self._q8_scale[start : start + len(rows)] = scale
        self._q8_rows = self._n
        if first < self._n_base:  # the mapped pages read for this stay in the page cache,
            _let_go(self._base)  # not in our memory: rescoring reads a few hundred rows back
        return self._q8

    def prepare(self) -> None:
        """Do now what the first search would otherwise do: the memory mapping and, in a
        large collection, the int8 copy (70 ms at 100k memories, 0.7 s at 1M)."""
        self._update_mapping()
        self._quantized()

    def _approximate(self, query: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """(memory seqs, best-chunk cosine) from the int8 copy (within about 0.003), or None
        when the exact scan is used."""
        self._update_mapping()
        q8 = self._quantized()
        if q8 is None:
            return None
        q_scale = max(float(np.abs(query).max()) / 127, 1e-12)
        q = np.rint(query / q_scale).astype(np.int8)[None, :]
        # float32: the int8 dot products exact up to 1,040 dimensions (< 2^24), within 1e-7
        # beyond (far below the int8 error the rescoring corrects)
        rows = np.asarray(
            numkong.cdist(q, q8[: self._n], metric="dot", threads=1, out_dtype="float32")
        )[0]
        rows *= self._q8_scale[: self._n]
        rows *= q_scale
        return self._mem_seqs, self._best_per_memory(rows)

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
            order = np.argsort(rows)  # a file reads best in its order
            out = np.empty(len(rows), dtype=np.float32)
            taken, mapped = self._take(rows[order])
            out[order] = taken @ query
        else:  # each memory's best chunk, in one read of all their rows
            starts, ends = self._first_row[positions], self._first_row[positions + 1]
            rows = np.concatenate(
                [self._rows_by_memory[a:b] for a, b in zip(starts, ends, strict=True)]
            )
            order = np.argsort(rows)
            dots = np.empty(len(rows), dtype=np.float32)
            taken, mapped = self._take(rows[order])
            dots[order] = taken @ query
            groups = np.concatenate([[0], np.cumsum(ends - starts)[:-1]])
            out = np.maximum.reduceat(dots, groups) if len(rows) else dots[:0]
        if mapped and self._n_base >= QUANTIZE_ABOVE:
            # The kernel maps whole folios of the file around each row read (256 rows took
            # 140 MB into this process): let them go again, 0.4 ms at 1M memories.
            _let_go(self._base)
        return out

    def top(
        self, query: np.ndarray, k: int, allowed: np.ndarray | None = None, minimum: float = -1.0
    ) -> tuple[list[tuple[int, float]], ScoreLookup]:
        """The k most similar memories (seq, cosine) at or above `minimum`, and every score.

        In a large collection the scores come from the int8 copy, and the RESCORE best of
        them are rescored exactly: the hits' cosines are exact, and so is any memory's that
        ScoreLookup is asked for."""
        self._update_mapping()
        approximate = self._approximate(query) if self._n else None
        seqs, best = approximate if approximate is not None else self.scores(query)
        if not np.isfinite(best).all():  # damage the checks at open did not sample
            log.warning("the vector copy in %s holds non-finite numbers: dropped", self.cache_dir)
            self.damage = "it held numbers that are not finite"
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


class RowReader:
    """Rows of the copy on disk read with `preadv` into the caller's array: rescoring 256
    rows through the mapping faulted in whole folios around each (1.2 ms at 300k) that
    then had to be let go (`madvise`, 0.4 ms), at every query. The file is opened before it
    is mapped and kept open, so it reads the very file the mapping shows even after a newer
    copy is renamed over it."""

    def __init__(self, fd: int, row_bytes: int) -> None:
        self.fd, self.row_bytes, self.offset = fd, row_bytes, 0
        self.close = weakref.finalize(self, os.close, fd)  # also when dropped unclosed

    @classmethod
    def open(cls, path: Path, dim: int) -> RowReader | None:
        """A reader of the .npy file at `path`, None where `preadv` is missing (Windows)."""
        if not hasattr(os, "preadv"):
            return None
        try:
            return cls(os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)), dim * 4)
        except OSError:
            return None

    def reads(self, path: Path, matrix: np.ndarray) -> bool:
        """Whether this reader's file is the one `matrix` maps (set its data offset)."""
        try:
            mine, now = os.fstat(self.fd), os.stat(path)
        except OSError:
            return False
        if (mine.st_dev, mine.st_ino) != (now.st_dev, now.st_ino):
            return False
        offset = getattr(matrix, "offset", None)
        if not isinstance(offset, int) or matrix.dtype != np.dtype(np.float32):
            return False
        self.offset = offset
        return True

    def read(self, rows: np.ndarray, out: np.ndarray, at: np.ndarray) -> bool:
        """Row `rows[i]` into `out[at[i]]` for each i; False when one could not be read
        whole (the caller reads through the mapping instead)."""
        fd, size = self.fd, self.row_bytes
        try:
            for row, slot in zip(rows.tolist(), at.tolist(), strict=True):
                view = memoryview(out[slot]).cast("B")
                if os.preadv(fd, [view], self.offset + row * size) != size:
                    return False
        except (OSError, ValueError):
            return False
        return True


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


def _let_go(matrix: np.ndarray) -> None:
    """Drop a memory-mapped matrix's pages from this process (they stay in the page cache
    and come back on the next read); nothing for a matrix in memory."""
    mapping = getattr(matrix, "_mmap", None)
    if isinstance(mapping, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):
        with contextlib.suppress(OSError, ValueError):
            mapping.madvise(mmap.MADV_DONTNEED)


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
