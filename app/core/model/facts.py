"""What Mnemo knows about a model file without reading it again.

A model file's SHA-256 (seconds to compute), the few metadata scalars `inspect_model` uses
(reading past the 30,000 vocabulary strings before them costs 15 ms) and whether its vectors
passed the self-check (15 ms) are kept in one small JSON file in the cache folder, keyed by
the file's identity: path, device, inode, size, modification and change time. A file
changed, replaced or restored from a copy (`cp -p` keeps the modification time, never the
change time) is read and checked again. A cache file that is damaged or of another shape
only means reading the model file again.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from pathlib import Path
from typing import Any

from app.core import paths

CACHE_NAME = "model-sha256.json"  # named when it held digests only (a digest is one fact)
MAX_CACHE_BYTES = 1 << 20
MAX_ENTRIES = 64
_SHA256 = re.compile(r"[0-9a-f]{64}")


def identity(path: Path) -> str | None:
    """The cache key of a file as it is now, None when it cannot be looked at (the
    caller's read then says what is wrong)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (
        f"{path}|{st.st_dev}|{st.st_ino}|{st.st_size}|{st.st_mtime_ns}|"
        f"{getattr(st, 'st_ctime_ns', 0)}"
    )


def _load() -> dict[str, Any]:
    try:
        with paths.open_regular(paths.cache_dir() / CACHE_NAME) as f:
            data = f.read(MAX_CACHE_BYTES + 1)
        cache = json.loads(data) if len(data) <= MAX_CACHE_BYTES else {}
    except Exception:  # noqa: BLE001 - missing, damaged, nested too deep: read the file
        return {}
    return cache if isinstance(cache, dict) else {}


def _valid(entry: Any) -> dict[str, Any]:
    """The facts of an entry that have the shape Mnemo writes (others are dropped)."""
    if not isinstance(entry, dict):
        return {}
    out: dict[str, Any] = {}
    for key in ("sha256", "checked"):
        if isinstance(entry.get(key), str) and _SHA256.fullmatch(entry[key]):
            out[key] = entry[key]
    meta = entry.get("metadata")
    if isinstance(meta, dict) and all(
        isinstance(k, str) and type(v) in (int, str) for k, v in meta.items()
    ):
        out["metadata"] = meta
    return out


def known(path: Path) -> dict[str, Any]:
    """The facts kept about this file as it is now ({} when none)."""
    key = identity(Path(path).resolve())
    return _valid(_load().get(key)) if key else {}


def remember(path: Path, key: str | None = None, **facts: Any) -> None:
    """Keep facts about this file (a cache: a failed write is no error). `key`: the file's
    identity when the facts were read from it; nothing is kept if it changed since."""
    path = Path(path).resolve()
    now = identity(path)
    if now is None or (key is not None and key != now):
        return
    cache = _load()
    entry = _valid(cache.get(now))
    entry.update(facts)
    for old in list(cache):  # this file before it changed, files gone, and the oldest
        name = old.split("|")[0] if isinstance(old, str) else ""
        if old != now and (name == str(path) or not os.path.exists(name)):
            del cache[old]
    cache[now] = entry
    while len(cache) > MAX_ENTRIES:
        del cache[next(iter(cache))]
    with contextlib.suppress(OSError):
        paths.replace_file(paths.cache_dir() / CACHE_NAME, lambda f: json.dump(cache, f))
