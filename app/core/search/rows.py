"""Vector rows in memory: int8 quantization, rows that grow without being copied, and
the heap their reading leaves.

`quantize` gives every row its own scale (the copy beside the database is checked by
quantizing the database's rows again: the same rows must give the same bytes). `Rows`
holds the rows a vector index adds after its load, in parts. `give_back` returns the C
heap's free memory to the system: glibc keeps what a large read freed (blobs, decoded
blocks) inside the process, and a model switch's 100k rows read in 50 batches held 1.22x
the memory the index needs once done. Other C libraries (musl) and other systems have no
`malloc_trim`: there nothing is done.
"""

from __future__ import annotations

import ctypes
import sys

import numpy as np


def _trimmer():
    if not sys.platform.startswith("linux"):
        return None
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc, or a static build
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


_TRIM = _trimmer()


def give_back() -> bool:
    """Return the heap's free pages to the system (about 1 ms); False where it cannot."""
    if _TRIM is None:
        return False
    _TRIM(0)
    return True


def quantize(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(int8 rows, float32 scale per row): row ≈ q8 * scale, each row scaled by its own
    largest number. The same rows always give the same bytes (the copy is checked so)."""
    rows = np.asarray(rows, dtype=np.float32)
    # |x|'s largest without an array of |x| (one temporary the size of the rows, not three)
    largest = np.maximum(rows.max(axis=1), -rows.min(axis=1))
    scale = (largest / np.float32(127)).astype(np.float32)
    scale[scale == 0] = 1.0
    scaled = rows / scale[:, None]
    np.rint(scaled, out=scaled)
    return scaled.astype(np.int8), scale


class Rows:
    """Rows appended in place, in parts that are never copied: when the room runs out a
    new part is added, half as large as the room before (so there are few). Growing one
    array by half copied every row held into the bigger one, both held at once: a model
    switch re-embedding a million memories held 0.8 GB more than the rows."""

    def __init__(self, dim: int, dtype) -> None:
        self.dim, self.dtype = dim, dtype
        self._parts: list[tuple[int, np.ndarray, np.ndarray]] = []  # (first row, rows, scales)
        self.capacity = 0
        self.filled = 0  # rows [0, filled) are written

    def reserve(self, cap: int) -> None:
        """Room for `cap` rows in all (a part not yet written takes no memory)."""
        if cap > self.capacity:
            size = cap - self.capacity
            rows = np.empty((size, self.dim), dtype=self.dtype)
            self._parts.append((self.capacity, rows, np.empty(size, dtype=np.float32)))
            self.capacity = cap

    def put(self, at: int, rows: np.ndarray, scale: np.ndarray | None = None) -> None:
        """Write rows from row `at` on (at most where the rows written end: never a gap of
        rows nobody wrote, which a scan would read as vectors)."""
        if at > self.filled:
            raise ValueError(f"rows put at {at}, after the {self.filled} written")
        need = at + len(rows)
        if need > self.capacity:
            self.reserve(max(need, int(self.capacity * 1.5) + 1024))
        for start, part, scales in self.blocks(at, need):
            part[:] = rows[start - at : start - at + len(part)]
            if scale is not None:
                scales[:] = scale[start - at : start - at + len(part)]
        self.filled = max(self.filled, need)

    def blocks(self, start: int, stop: int):
        """(first row, rows, scales) of rows [start, stop): views, one a part."""
        for first, rows, scales in self._parts:
            a, b = max(start, first), min(stop, first + len(rows))
            if a < b:
                yield a, rows[a - first : b - first], scales[a - first : b - first]

    def rows(self, start: int, stop: int) -> np.ndarray:
        """Rows [start, stop) as one array (a view when they lie in one part)."""
        views = [rows for _, rows, _ in self.blocks(start, stop)]
        if len(views) == 1:
            return views[0]
        return np.concatenate(views) if views else np.empty((0, self.dim), dtype=self.dtype)

    def scales(self, start: int, stop: int) -> np.ndarray:
        """The scales of rows [start, stop) (a new array)."""
        views = [scales for _, _, scales in self.blocks(start, stop)]
        return np.concatenate(views) if views else np.empty(0, dtype=np.float32)

    def drain(self, stop: int, size: int):
        """Rows [0, stop), `size` at a time, each part let go once read: rows moving
        elsewhere (float32 ones becoming int8) are never held whole twice. Emptied from
        the first block on: nothing else reads it meanwhile (the engine's one thread owns
        the index), and a caller that fails halfway must start again from the database."""
        parts, self._parts, self.capacity, self.filled = self._parts, [], 0, 0
        while parts:
            first, rows, _ = parts.pop(0)
            for a in range(first, min(stop, first + len(rows)), size):
                yield rows[a - first : min(a + size, stop, first + len(rows)) - first]
            del rows

    def take(self, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(rows, scales) by row number, in the order given."""
        rows = np.empty((len(at), self.dim), dtype=self.dtype)
        scales = np.empty(len(at), dtype=np.float32)
        for first, part, part_scales in self._parts:
            here = (at >= first) & (at < first + len(part))
            if here.any():
                rows[here] = part[at[here] - first]
                scales[here] = part_scales[at[here] - first]
        return rows, scales
