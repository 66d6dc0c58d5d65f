"""What Mnemo knows about a model file without reading it again.

A model file's SHA-256 (seconds to compute), the few metadata scalars `inspect_model` uses
(reading past the 30,000 vocabulary strings before them costs 15 ms) and whether its vectors
passed the self-check (15 ms) are kept in one small JSON file in the cache folder, keyed by
the file's path, size and modification time: a file changed or replaced is read and checked
again. A cold start of the hook helper or the CLI then goes straight to loading the model.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

from app.core import paths

CACHE_NAME = "model-sha256.json"  # named when it held digests only (a digest is one fact)


def _key(path: Path) -> str | None:
    """The cache key of a model file, None when it cannot be looked at (the caller's read
    then says what is wrong)."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return f"{path}|{stat.st_size}|{stat.st_mtime_ns}"


def _load() -> dict[str, Any]:
    try:
        cache = json.loads((paths.cache_dir() / CACHE_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return cache if isinstance(cache, dict) else {}


def known(path: Path) -> dict[str, Any]:
    """The facts kept about this file as it is now ({} when none)."""
    key = _key(Path(path).resolve())
    entry = _load().get(key) if key else None
    if isinstance(entry, str):  # the first format: the digest alone
        return {"sha256": entry}
    return dict(entry) if isinstance(entry, dict) else {}


def remember(path: Path, **facts: Any) -> None:
    """Keep facts about this file as it is now (a cache: a failed write is no error)."""
    path = Path(path).resolve()
    key = _key(path)
    if key is None:
        return
    cache = _load()
    entry = cache.get(key)
    for stale in [k for k in cache if k != key and k.rsplit("|", 2)[0] == str(path)]:
        del cache[stale]  # what was kept about this file before it changed
    entry = {"sha256": entry} if isinstance(entry, str) else dict(entry or {})
    entry.update(facts)
    cache[key] = entry
    with contextlib.suppress(OSError):
        paths.replace_file(paths.cache_dir() / CACHE_NAME, lambda f: json.dump(cache, f))
