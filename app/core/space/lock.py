"""One change to this device's spaces at a time (review of issue 45): two `mnemo space`
commands at once on one home each read this device's events, add one and write them
back; without a lock the second write loses the first's event (a removal that said it
was done, and is not). The lock is a `flock` on a file beside the database
(`<database>.spaces-lock`, 0600, never through a link: as `duties.py` and the agents'
lock do), held across the read, the checks and the write of every command, and taken
again by a command another one calls (`create` ends with `members`) without waiting on
itself. Where there is no `flock` (Windows), commands run as before."""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from app.core import paths
from app.core.errors import InputError

try:
    import fcntl
except ImportError:  # pragma: no cover (Windows)
    fcntl = None  # type: ignore[assignment]

SUFFIX = ".spaces-lock"
_depth = threading.local()  # lock file → how many commands of this thread hold it


@contextlib.contextmanager
def held(database: Path) -> Iterator[None]:
    """This device's spaces, for this process alone while the block runs."""
    path = Path(database).with_name(Path(database).name + SUFFIX)
    depth = getattr(_depth, "held", None)
    if depth is None:
        depth = _depth.held = {}
    key = str(path)
    if depth.get(key) or fcntl is None:
        depth[key] = depth.get(key, 0) + 1
        try:
            yield
        finally:
            depth[key] -= 1
        return
    try:
        fd = paths.private_file(path, os.O_RDWR | os.O_CREAT)
    except OSError as exc:
        raise InputError(f"cannot use the lock file {path}: {exc.strerror or exc}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        depth[key] = 1
        yield
    finally:
        depth.pop(key, None)
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def one_at_a_time(method: Callable[..., Any]) -> Callable[..., Any]:
    """A `Spaces` method run holding this device's spaces' lock (`held`)."""

    @functools.wraps(method)
    def locked(self, *args, **kwargs):
        with held(self._db.path):
            return method(self, *args, **kwargs)

    return locked
