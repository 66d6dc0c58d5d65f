"""The int8 rows of one model's vector index kept beside the database (`mnemo.db.vectors/`)
and memory-mapped at the next start (`VectorIndex` reads its rows from here when it can).

Reading 100k vectors back from SQLite and quantizing them took about a second; a quarter of
float32's bytes on disk. The copy is never trusted blindly: it is used only while the
database's generation is the one it was written at, its last embedding row still holds the
same vector, sampled rows (or, while it is small, every byte: a CRC) are the quantized
database rows; rows added since are read from the database. An encrypted database's copy is
sealed (AES-256-GCM, a block of rows at a time) and unsealed into memory, never mapped
(ADR 0014). Each write has files of its own, named in a JSON renamed into place last.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import secrets
import stat
import zlib
from pathlib import Path

import numpy as np

from app.core import paths
from app.core.search.rows import quantize
from app.core.storage.store import Store
from app.core.storage.vector_rows import decode_vector

log = logging.getLogger("app.core.search.vectors")  # (its lines read as before)

CACHE_FORMAT = 2  # 1: float32 rows (a second copy of every vector); 2: int8 rows and scales
SEAL_MAGIC = b"MNEMO-SEALED-VECTORS-1\n"
# At open the copy is checked on SAMPLE_AT_OPEN rows against the database (one statement;
# each row a random read of a cold disk: 32 of them took 74 ms at 100k), and whole (a CRC of
# every array, 4 GB/s, reading the rows the first scan reads anyway) when its int8 rows are
# at most CHECK_WHOLE_BELOW bytes (about 170,000 memories); `mnemo doctor` checks all.
SAMPLE_AT_OPEN = 16
CHECK_WHOLE_BELOW = 64 << 20


def _regular(path: Path) -> bool:
    """Whether `path` is a regular file (not a FIFO, a device or a link to one)."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


SEAL_BLOCK = 65536  # rows sealed together (AES-256-GCM, a nonce and a tag each)


def _seal_aad(index: int, rows: int, dim: int, dtype: str) -> bytes:
    return f"mnemo vector copy|{dtype}|block {index}|{rows}x{dim}".encode()


def _write_sealed(f, blocks, key: bytes, dim: int, dtype: str) -> None:
    """Write row blocks sealed by `key` (an encrypted database's copy: ADR 0014)."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    aead = AESGCM(key)
    f.write(SEAL_MAGIC)
    index, pending, held = 0, [], 0

    def seal(rows: np.ndarray) -> None:
        nonlocal index
        nonce = secrets.token_bytes(12)
        f.write(nonce)
        data = rows.astype(dtype).tobytes()
        f.write(aead.encrypt(nonce, data, _seal_aad(index, len(rows), dim, dtype)))
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


def _read_sealed(path: Path, key: bytes, rows: int, dim: int, dtype: str) -> np.ndarray:
    """The rows of a sealed copy, unsealed into memory (never a mapping of clear text);
    InvalidTag (another key, a changed byte) or ValueError when they are not whole."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    aead = AESGCM(key)
    out = np.empty((rows, dim), dtype=dtype)
    rows_out = memoryview(out).cast("B")
    row_bytes = dim * out.itemsize
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
            aead.decrypt_into(nonce, sealed, _seal_aad(index, count, dim, dtype), target)
        if f.read(1):
            raise ValueError("the sealed copy is longer than its rows")
    return out


def _crc(blocks, crc: int = 0) -> int:
    """CRC-32 of arrays in turn (the int8 rows a block at a time, then the scales, seqs and
    rowids): 4 GB/s."""
    for block in blocks:
        crc = zlib.crc32(np.ascontiguousarray(block).data, crc)
    return crc


def _crc_problem(meta: dict, *arrays: np.ndarray) -> str | None:
    """What the copy's checksum says (None: it matches, or a sealed copy has none)."""
    if "crc32" not in meta:
        return None
    q8, *more = arrays
    rows = (q8[start : start + 65536] for start in range(0, len(q8), 65536))
    crc = _crc(more, _crc(rows))
    return None if crc == meta["crc32"] else "its checksum does not match its rows"


class VectorCopy:
    """The copy on disk of one model's int8 rows (None `folder`: none is kept)."""

    def __init__(self, model_id: str, dim: int, folder: Path | None, seal_key: bytes | None):
        self.model_id = model_id
        self.dim = dim
        self.folder = folder
        self.seal_key = seal_key  # an encrypted database's: the copy is sealed
        self.damage: str | None = None  # what was wrong with a copy found damaged (rebuilt)

    def meta_path(self) -> Path | None:
        """The copy's description (None: no copy is kept)."""
        if self.folder is None:
            return None
        return self.folder / (re.sub(r"[^A-Za-z0-9_.-]", "_", self.model_id) + ".json")

    @staticmethod
    def row_digest(store: Store, rowid: int) -> str:
        """A fingerprint of one embedding row's vector ('' if the row is gone)."""
        blob = store.vectors.blob(rowid) if rowid else b""
        return hashlib.sha256(blob or b"").hexdigest()[:16]

    def _open(self, meta: dict):
        """(int8 rows, scales, seqs, rowids) of the copy `meta` describes; ValueError when
        its files are not what it says."""
        names = (meta["q8"], meta["scale"], meta["seqs"], meta["rowids"])
        for name in names:
            if not _regular(self.folder / name):
                raise ValueError(f"{name} is not a regular file")
        rows = meta["rows"]
        if self.seal_key is not None:
            q8 = _read_sealed(self.folder / names[0], self.seal_key, rows, self.dim, "i1")
            scale = _read_sealed(self.folder / names[1], self.seal_key, rows, 1, "<f4")
            scale = scale[:, 0].astype(np.float32)
        else:
            q8 = np.load(self.folder / names[0], mmap_mode="r")
            scale = np.load(self.folder / names[1]).astype(np.float32, copy=False)
        owner = np.load(self.folder / names[2]).astype(np.int64, copy=False)
        rowid = np.load(self.folder / names[3]).astype(np.int64, copy=False)
        if (
            q8.dtype != np.int8
            or q8.shape != (rows, self.dim)
            or scale.shape != (rows,)
            or owner.shape != (rows,)
            or rowid.shape != (rows,)
        ):
            raise ValueError("its size does not match its description")
        return q8, scale, owner, rowid

    def load(self, store: Store, top: int, generation: int) -> tuple | None:
        """(int8 rows mapped or unsealed, scales, seqs, rowids, rows, top rowid) of the copy
        on disk if it still describes this database (generation `generation`, rows up to
        `top`); None if not (`damage` says why when it was damaged)."""
        meta_path = self.meta_path()
        if meta_path is None or not meta_path.exists():
            return None
        try:
            if not _regular(meta_path):  # a FIFO put there would hang the read
                raise ValueError(f"{meta_path.name} is not a regular file")
            meta = json.loads(meta_path.read_text())
            if meta.get("format") != CACHE_FORMAT:  # float32 rows a version before wrote:
                self.drop()  # a second copy of every vector, made again as int8
                return None
            if (
                bool(meta.get("sealed")) != (self.seal_key is not None)
                or meta.get("model_id") != self.model_id
                or meta.get("dim") != self.dim
                or meta.get("generation") != generation
                or meta.get("top_rowid", 0) > top
                or meta.get("last_row") != self.row_digest(store, meta.get("top_rowid", 0))
            ):
                return None
            q8, scale, owner, rowid = self._open(meta)
            whole = q8.nbytes <= CHECK_WHOLE_BELOW  # a changed byte anywhere is seen: a few
            problem = _crc_problem(meta, q8, scale, owner, rowid) if whole else None
            if problem is None:  # rows then say it was made from this very database
                sample = SAMPLE_AT_OPEN // 4 if whole and "crc32" in meta else SAMPLE_AT_OPEN
                problem = self._check_rows(store, q8, scale, owner, rowid, sample)
            if problem is not None:
                log.warning("the vector copy in %s is damaged (%s): rebuilt", self.folder, problem)
                self.damage = problem
                return None
        except Exception as exc:  # noqa: BLE001 - any damage (a mangled header raised
            # tokenize.TokenError) only means the copy is not used
            log.info("vector copy in %s not used: %s", self.folder, exc)
            self.damage = f"it could not be read ({type(exc).__name__})"
            return None
        return q8, scale, owner, rowid, meta["rows"], meta["top_rowid"]

    def _check_rows(
        self,
        store: Store,
        q8: np.ndarray,
        scale: np.ndarray,
        owner: np.ndarray,
        rowid: np.ndarray,
        sample: int,
    ) -> str | None:
        """What is wrong with the copy's rows, checked on `sample` rows evenly spaced (and the
        last): each the quantized vector the database holds at its rowid, for its memory
        and this model. None when nothing is."""
        rows = len(owner)
        if not rows:
            return None
        picks = np.unique(np.linspace(0, rows - 1, min(sample, rows)).astype(np.int64))
        held = store.vectors.rows_by_id([int(rowid[i]) for i in picks])  # one statement
        for i in picks.tolist():
            seq, model_id, blob = held.get(int(rowid[i]), (None, "", b""))
            if seq != int(owner[i]) or model_id != self.model_id:
                return f"row {i} is not the database's vector for its memory"
            try:
                want_q8, want_scale = quantize(decode_vector(blob, self.dim)[None, :])
            except ValueError:
                return f"row {i} is not the database's vector for its memory"
            if not (np.array_equal(np.asarray(q8[i]), want_q8[0]) and scale[i] == want_scale[0]):
                return f"row {i} is not the database's vector"
        return None

    def verify(self, store: Store) -> str | None:
        """Every row of the copy on disk checked (`mnemo doctor`): None when it is sound or
        there is none, else what is wrong with it."""
        meta_path = self.meta_path()
        if meta_path is None or not meta_path.exists():
            return None
        try:
            if not _regular(meta_path):
                return f"{meta_path.name} is not a regular file"
            meta = json.loads(meta_path.read_text())
            if meta.get("format") != CACHE_FORMAT:
                return "it is of an older format (float32 rows: a second copy of each vector)"
            q8, scale, owner, rowid = self._open(meta)
            if not (np.isfinite(scale).all() and (scale > 0).all()):
                return "its scales are not all positive numbers"
            return _crc_problem(meta, q8, scale, owner, rowid) or self._check_rows(
                store, q8, scale, owner, rowid, 256
            )
        except Exception as exc:  # noqa: BLE001 - whatever is wrong, it is damaged
            return f"it cannot be read ({type(exc).__name__}: {exc})"[:200]

    def drop(self) -> None:
        """Delete the copy on disk (the next start writes it again from the database)."""
        meta_path = self.meta_path()
        if meta_path is None:
            return
        for path in [
            meta_path,
            *self.folder.glob(f"{meta_path.stem}.*.npy"),
            *self.folder.glob(f"{meta_path.stem}.*.sealed"),
        ]:
            with contextlib.suppress(OSError):
                path.unlink()

    def write(
        self, store: Store, generation: int, top_rowid: int, rows: int, kept: dict, blocks
    ) -> bool:
        """Write `rows` int8 rows (`blocks(size)` yields them, `size` rows at a time) and
        `kept` (their scales, seqs and rowids) as the copy of the database at `generation`,
        its rows up to `top_rowid`; whether it was written. Each write has files of its own,
        named in the JSON that is renamed into place last, so two processes saving at once
        never mix their files; a read-only or full disk just means no copy."""
        meta_path = self.meta_path()
        if meta_path is None:
            return False
        stem = f"{meta_path.stem}.{os.getpid()}-{secrets.token_hex(4)}"
        sealed = self.seal_key is not None
        meta = {
            "format": CACHE_FORMAT,
            "model_id": self.model_id,
            "dim": self.dim,
            "generation": generation,
            "top_rowid": top_rowid,
            "last_row": self.row_digest(store, top_rowid),
            "rows": rows,
            "q8": f"{stem}.q8.sealed" if sealed else f"{stem}.q8.npy",
            "scale": f"{stem}.scale.sealed" if sealed else f"{stem}.scale.npy",
            "seqs": f"{stem}.seq.npy",
            "rowids": f"{stem}.rowid.npy",
        }
        if sealed:
            meta["sealed"] = True
        written: list[Path] = []
        try:
            paths.private_dir(self.folder)
            written.append(self.folder / meta["q8"])
            with os.fdopen(paths.private_file(written[-1]), "wb") as f:
                if sealed:  # its tags check it: no checksum of the rows
                    blocks = blocks(SEAL_BLOCK)
                    _write_sealed(f, blocks, self.seal_key, self.dim, "i1")
                else:
                    header = {"descr": "|i1", "fortran_order": False,
                              "shape": (meta["rows"], self.dim)}  # fmt: skip
                    np.lib.format.write_array_header_1_0(f, header)
                    crc = 0
                    for block in blocks(16384):  # never a second copy
                        f.write(block.data)
                        crc = _crc([block], crc)
                    meta["crc32"] = _crc(kept.values(), crc)
            for key, values in kept.items():
                written.append(self.folder / meta[key])
                with os.fdopen(paths.private_file(written[-1]), "wb") as f:
                    if sealed and key == "scale":
                        _write_sealed(f, [values[:, None]], self.seal_key, 1, "<f4")
                    else:
                        np.save(f, values)
            paths.replace_file(meta_path, lambda f: json.dump(meta, f))
        except Exception as exc:  # noqa: BLE001 - a cache: any failure means no copy
            log.info("vector copy not written to %s: %s", self.folder, exc)
            for path in written:
                with contextlib.suppress(OSError):
                    path.unlink(missing_ok=True)
            return False
        # Older copies of this model go (a reader that mapped one keeps its mapping).
        names = {meta[key] for key in ("q8", "scale", "seqs", "rowids")}
        for pattern in (f"{meta_path.stem}.[0-9]*-*.npy", f"{meta_path.stem}.[0-9]*-*.sealed"):
            for old in self.folder.glob(pattern):
                if old.name not in names:
                    with contextlib.suppress(OSError):
                        old.unlink()
        return True
