"""Reads a GGUF file's scalar metadata in about a millisecond, without loading the model.

gguf's own `GGUFReader` parses every array and tensor (about 0.6 s for MiniLM); at start-up
we only need a handful of scalars to size the context before llama.cpp sees the file.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any, BinaryIO

from app.core import paths
from app.core.errors import ModelError

_SCALARS = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
_STRING, _ARRAY = 8, 9
MAX_KEYS = 100_000


def _read(f: BinaryIO, n: int) -> bytes:
    data = f.read(n)
    if len(data) != n:
        raise ValueError("file ends inside the metadata")
    return data


def _string(f: BinaryIO) -> str:
    (length,) = struct.unpack("<Q", _read(f, 8))
    if length > 1 << 24:
        raise ValueError("implausible string length")
    return _read(f, length).decode("utf-8", errors="replace")


def _value(f: BinaryIO, vtype: int) -> Any:
    if vtype in _SCALARS:
        fmt = _SCALARS[vtype]
        return struct.unpack(fmt, _read(f, struct.calcsize(fmt)))[0]
    if vtype == _STRING:
        return _string(f)
    if vtype == _ARRAY:
        (item_type,) = struct.unpack("<I", _read(f, 4))
        (count,) = struct.unpack("<Q", _read(f, 8))
        if item_type in _SCALARS:
            f.seek(struct.calcsize(_SCALARS[item_type]) * count, 1)
        else:
            for _ in range(count):
                _value(f, item_type)
        return None  # arrays (vocabularies) are skipped: we never need them here
    raise ValueError(f"unknown metadata type {vtype}")


def _entries(f: BinaryIO):
    """(key, value type) of each metadata entry, the file positioned at its value; the
    caller reads the value (`_value`) before asking for the next."""
    if f.read(4) != b"GGUF":
        raise ValueError("not a GGUF file (bad magic)")
    (version,) = struct.unpack("<I", _read(f, 4))
    if version not in (2, 3):
        raise ValueError(f"unsupported GGUF version {version}")
    _tensors, n_kv = struct.unpack("<QQ", _read(f, 16))
    if n_kv > MAX_KEYS:
        raise ValueError("implausible metadata size")
    for _ in range(n_kv):
        key = _string(f)
        (vtype,) = struct.unpack("<I", _read(f, 4))
        yield key, vtype


def _open_gguf(path: Path, read):
    """`read(file)` on a GGUF file, its problems as ModelError."""
    try:
        with paths.open_regular(path) as f:
            return read(f)
    except FileNotFoundError:
        raise ModelError(f"model file not found: {path}") from None
    except paths.NotAFile as exc:
        raise ModelError(f"model file {exc}") from None
    except (OSError, ValueError, struct.error, UnicodeDecodeError) as exc:
        raise ModelError(f"model file {path} is not a usable GGUF file: {exc}") from None


def read_metadata(path: Path) -> dict[str, Any]:
    """The scalar key/value metadata of a GGUF file; ModelError if it is not a GGUF file."""

    def read(f: BinaryIO) -> dict[str, Any]:
        meta: dict[str, Any] = {}
        for key, vtype in _entries(f):
            value = _value(f, vtype)
            if value is not None:
                meta[key] = value
        return meta

    return _open_gguf(Path(path), read)


def read_strings(path: Path, key: str) -> list[str]:
    """One array-of-strings metadata value of a GGUF file (e.g. `tokenizer.ggml.tokens`),
    read without the rest of the file; [] when the key is absent. ModelError if the file
    is not a GGUF file."""

    def read(f: BinaryIO) -> list[str]:
        for name, vtype in _entries(f):
            if name == key and vtype == _ARRAY:
                item_type, count = struct.unpack("<IQ", _read(f, 12))
                return [_string(f) for _ in range(count)] if item_type == _STRING else []
            _value(f, vtype)
        return []

    return _open_gguf(Path(path), read)
