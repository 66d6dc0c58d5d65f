"""The memories' vectors in the database (table `embeddings`): each memory's chunk vectors
from each model, stored once as little-endian float16 (ADR 0017), and the reads a vector
index makes of them (rows after a rowid, rows by rowid, SQLite's incremental blob reads).
"""

from __future__ import annotations

import apsw
import numpy as np

from app.core.errors import ModelError
from app.core.storage.db import Database, in_slices

# Vectors are stored once, as little-endian float16 (ADR 0017): half the bytes of float32,
# cosines within about 1e-4 of float32's. Rows written as float32 by a version before
# m013 (or an older process still running) are read by their length.
VECTOR_DTYPE = "<f2"


def encode_vector(vector: np.ndarray) -> bytes:
    """One vector as stored: little-endian float16."""
    return np.asarray(vector, dtype=np.float32).astype(VECTOR_DTYPE).tobytes()


def decode_vectors(blobs: list[bytes], dim: int) -> np.ndarray:
    """Stored vectors as float32 rows, one join and one conversion when they are all of one
    kind (float16, or float32 from before m013). ValueError for a row of another size."""
    if not blobs:
        return np.empty((0, dim), dtype=np.float32)
    sizes = {len(b) for b in blobs}
    for itemsize, dtype in ((2, VECTOR_DTYPE), (4, "<f4")):
        if sizes == {itemsize * dim}:
            flat = np.frombuffer(b"".join(blobs), dtype=dtype)
            return flat.astype(np.float32).reshape(len(blobs), dim)
    return np.stack([decode_vector(b, dim) for b in blobs])


def decode_vector(blob: bytes, dim: int | None = None) -> np.ndarray:
    """A stored vector as float32: float16 (2 bytes a number) unless its length says
    float32 for `dim` numbers (a row written before m013). ValueError for another size."""
    size = len(blob)
    if dim is not None and size == 4 * dim:
        return np.frombuffer(blob, dtype="<f4").astype(np.float32)
    if size % 2 or (dim is not None and size != 2 * dim):
        raise ValueError(f"a stored vector of {size} bytes is not one of {dim} numbers")
    return np.frombuffer(blob, dtype=VECTOR_DTYPE).astype(np.float32)


class VectorRows:
    """The vectors of one database's memories (`Store.vectors`)."""

    def __init__(self, db: Database):
        self.db = db

    def embedded_ids(self, ids: list[str], model_id: str) -> set[str]:
        """Which of these memories have vectors from `model_id`."""
        found: set[str] = set()
        for part, marks in in_slices(ids):
            found.update(
                r[0]
                for r in self.db.query(
                    f"SELECT DISTINCT memory_id FROM embeddings WHERE model_id = ? "
                    f"AND memory_id IN ({marks})",
                    (model_id, *part),
                )
            )
        return found

    def save(self, memory_id: str, model_id: str, digest: str, vectors: np.ndarray) -> None:
        """Replace a memory's vectors with these chunk vectors, in one transaction (vectors
        that are not finite numbers are refused: a damaged model gives them)."""
        with np.errstate(over="ignore", invalid="ignore"):  # refused below: not finite
            stored = np.asarray(vectors, dtype=np.float32).astype(VECTOR_DTYPE)
        if not np.isfinite(stored).all():  # NaN, infinity, or past float16's range
            raise ModelError("the model gave vectors that are not numbers: none were stored")
        with self.db.write() as conn:
            if not conn.execute("SELECT 1 FROM memories WHERE id = ?", (memory_id,)).fetchall():
                return  # deleted for good while it was being embedded
            conn.execute("DELETE FROM embeddings WHERE memory_id = ?", (memory_id,))
            conn.executemany(
                "INSERT INTO embeddings(memory_id, chunk, model_id, content_hash, vector) "
                "VALUES (?, ?, ?, ?, ?)",
                [(memory_id, i, model_id, digest, v.tobytes()) for i, v in enumerate(stored)],
            )

    def counts(self, model_id: str) -> dict[str, int]:
        """How many live memories have current vectors, stale vectors, or none."""
        row = self.db.query(
            "SELECT count(*) FILTER (WHERE cur), count(*) FILTER (WHERE NOT cur AND other), "
            "count(*) FILTER (WHERE NOT cur AND NOT other) FROM (SELECT "
            "EXISTS (SELECT 1 FROM embeddings e WHERE e.memory_id = m.id "
            "AND e.model_id = ?) cur, "
            "EXISTS (SELECT 1 FROM embeddings e WHERE e.memory_id = m.id "
            "AND e.model_id != ?) other "
            "FROM memories m WHERE m.deleted_at IS NULL)",
            (model_id, model_id),
        )[0]
        return {"embedded": row[0], "stale": row[1], "missing": row[2]}

    def embedded_count(self, model_id: str) -> int:
        """Live memories with vectors from this model (cheap enough for a status bar): the
        embeddings index counts every memory, the trash index takes the trashed ones off."""
        return self.db.query(
            "SELECT (SELECT count(DISTINCT memory_id) FROM embeddings WHERE model_id = ?) - "
            "(SELECT count(*) FROM memories m WHERE m.deleted_at IS NOT NULL AND EXISTS "
            "(SELECT 1 FROM embeddings e WHERE e.memory_id = m.id AND e.model_id = ?))",
            (model_id, model_id),
        )[0][0]

    def rows(
        self, model_id: str, after_rowid: int = 0, limit: int = -1
    ) -> list[tuple[int, int | None, bytes | None]]:
        """(embedding rowid, memory seq, vector blob) for the model's embedding rows after a
        rowid, at most `limit` of them (-1: all), in rowid order; seq and blob are None for
        a row whose memory is trashed or gone (it still tells where the rows ended)."""
        # `+model_id`: walk the rowid range, not the model's index (whose rows would all
        # be read and sorted for every batch).
        return self.db.query(
            "SELECT e.rowid, m.seq, CASE WHEN m.seq IS NOT NULL THEN e.vector END FROM "
            "(SELECT rowid, memory_id, vector FROM embeddings WHERE +model_id = ? AND rowid > ? "
            "ORDER BY rowid LIMIT ?) e "
            "LEFT JOIN memories m ON m.id = e.memory_id AND m.deleted_at IS NULL "
            "ORDER BY e.rowid",
            (model_id, after_rowid, limit),
        )

    def rows_by_id(self, rowids: list[int]) -> dict[int, tuple[int | None, str, bytes]]:
        """{embedding rowid: (memory seq or None if trashed or gone, model id, vector blob)}
        for the rows that exist, in one statement."""
        marks = ",".join("?" * len(rowids))
        rows = self.db.query(
            "SELECT e.rowid, m.seq, e.model_id, e.vector FROM embeddings e LEFT JOIN memories m "
            f"ON m.id = e.memory_id AND m.deleted_at IS NULL WHERE e.rowid IN ({marks})",
            tuple(rowids),
        )
        return {r[0]: (r[1], r[2], r[3]) for r in rows}

    def count(self, model_id: str) -> int:
        """How many embedding rows this model has (trashed memories' too: an upper bound)."""
        sql = "SELECT count(*) FROM embeddings WHERE model_id = ?"
        return self.db.query(sql, (model_id,))[0][0]

    def watermark(self) -> tuple[int, int]:
        """(largest embedding rowid, reload generation): tells a reader what changed."""
        top = self.db.query("SELECT coalesce(max(rowid), 0) FROM embeddings")[0][0]
        generation = int(self.db.get_meta("vector_generation", "0"))
        return top, generation

    def blob(self, rowid: int) -> bytes | None:
        """One embedding row's vector, by rowid (None if it is gone)."""
        rows = self.db.query("SELECT vector FROM embeddings WHERE rowid = ?", (rowid,))
        return rows[0][0] if rows else None

    def of(self, memory_id: str, model_id: str, dim: int | None = None) -> np.ndarray | None:
        """A memory's chunk vectors from this model (float32), if any."""
        rows = self.db.query(
            "SELECT vector FROM embeddings WHERE memory_id = ? AND model_id = ? ORDER BY chunk",
            (memory_id, model_id),
        )
        if not rows:
            return None
        if dim is None:  # one model's rows: float16 ones are the shortest a row can be
            dim = min(len(r[0]) for r in rows) // 2
        return decode_vectors([r[0] for r in rows], dim)

    def read_into(self, rowids: np.ndarray, out: np.ndarray) -> bool:
        """Embedding rows by rowid into `out` (float32, one row each), through SQLite's
        incremental blob reads: 0.6 µs a row, as fast as reading a file (a query with
        `rowid IN (…)` took 2-4 µs). False when a row is gone or not of out's width (the
        caller's rows are out of date)."""
        if not len(rowids):
            return True
        dim = out.shape[1]
        half = np.empty(dim, dtype=VECTOR_DTYPE)
        try:
            blob = self.db.conn.blob_open("main", "embeddings", "vector", int(rowids[0]), False)
        except apsw.Error:
            return False
        try:  # closed at once: an open blob keeps a read transaction (and the WAL) open
            for i, rowid in enumerate(rowids.tolist()):
                if i:
                    blob.reopen(rowid)
                size = blob.length()
                if size == 2 * dim:
                    blob.read_into(half)
                    out[i] = half
                elif size == 4 * dim:  # a row written as float32 before m013
                    blob.read_into(out[i])
                else:
                    return False
        except apsw.Error:
            return False
        finally:
            blob.close()
        return True
