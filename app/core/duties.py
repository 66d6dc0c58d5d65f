"""Who does a database's background work: one process at a time (issue 43).

Every long-lived front end has a Runner (the desktop app, each MCP server, the agents' hook
helper). The background duties of a database — sync passes (compaction is part of a pass)
and the periodic snapshot — are done by one of them only: the process holding the lock on
`<database>.duties` (`flock`, the mechanism the hook helper's own lock uses). The others
only read the journal, and learn of the owner's passes from the record it keeps in that
same file. When the owner ends, however it ends (kill -9 too), the kernel lets go of its
lock and the next runner to look (every poll, about 2 s) takes over.

The file holds no memory text: who owns (pid, what it is, since when) and the summary of
its last pass. On a system without `flock` (Windows) every process does its own background
work, as before this module.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from app.core import paths

try:
    import fcntl
except ImportError:  # (Windows)
    fcntl = None

log = logging.getLogger(__name__)

KINDS = {
    "app": "the desktop app",
    "mcp": "an MCP server",
    "helper": "the agents' hook helper",
    "cli": "a mnemo command",
}
RECORD_BYTES = 64 * 1024  # more than a record ever holds; never read further


def lock_path(database: Path) -> Path:
    """The file whose lock says who does `database`'s background work."""
    database = Path(database)
    return database.with_name(database.name + ".duties")


class Duties:
    """This process's claim on a database's background work: `held()` takes it when no one
    has it, `let_go()` gives it back, `note_pass` tells the other processes about a pass."""

    def __init__(self, database: Path, kind: str):
        self.path = lock_path(database)
        self.kind = kind if kind in KINDS else "cli"
        self._file: Any = None
        self._record: dict[str, Any] = {}

    def held(self) -> bool:
        """Whether this process does the background work now (taking it when no one does;
        always True where there is no `flock`)."""
        if fcntl is None:
            return True
        if self._file is not None:
            return True
        try:
            fd = paths.private_file(self.path, os.O_RDWR | os.O_CREAT)
        except OSError as exc:  # a read-only folder, a file of another user's
            log.info("cannot take the background work of %s: %s", self.path.name, exc)
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self._file = fd
        before = _parse(_read(fd))
        self._record = {
            "pid": os.getpid(),
            "kind": self.kind,
            "since": time.time(),
            "passes": 0,
            # the last pass anyone made, until this process makes one
            "last_pass": before.get("last_pass") if before else None,
        }
        self._write()
        log.info("this process (%s) does the background work now", self.kind)
        return True

    def note_pass(self, summary: dict[str, Any]) -> int:
        """Record a sync pass (or why it could not run) for the other processes to read;
        the number of passes this process made as owner."""
        if self._file is None:
            return 0
        self._record["passes"] += 1
        self._record["last_pass"] = {
            **summary,
            "n": f"{self._record['pid']}.{self._record['passes']}",
            "at": time.time(),
        }
        self._write()
        return self._record["passes"]

    def let_go(self) -> None:
        """Give the background work back (at a runner's stop): the next to look takes it."""
        fd, self._file = self._file, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        with contextlib.suppress(OSError):
            os.close(fd)

    def _write(self) -> None:
        data = json.dumps(self._record, sort_keys=True).encode()
        try:
            os.pwrite(self._file, data, 0)
            os.ftruncate(self._file, len(data))
        except OSError as exc:  # a full disk: the work goes on, only the record waits
            log.info("cannot write %s: %s", self.path.name, exc)


def owner(database: Path) -> dict[str, Any] | None:
    """Who does `database`'s background work now: {"pid", "kind", "what", "since",
    "last_pass"}; None when no process does (none runs), or where there is no `flock`."""
    record = read(database)
    return record if record and record.get("owner") else None


def describe(owner: dict[str, Any] | None) -> str:
    """Which process makes the sync passes in the background, in a line for a person."""
    if owner is None:
        return (
            "Background passes: none now (no Mnemo app, MCP server or hook helper runs here; "
            "the first to start makes them, or run `mnemo sync now`)"
        )
    since = time.strftime("%Y-%m-%d %H:%M", time.localtime(_number(owner.get("since"))))
    last = owner.get("last_pass") or {}
    when = (
        time.strftime(", last pass at %H:%M:%S", time.localtime(_number(last.get("at"))))
        if last.get("at")
        else ""
    )
    return f"Background passes: {owner['what']}, pid {owner['pid']}, since {since}{when}"


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) else 0.0


def read(database: Path) -> dict[str, Any] | None:
    """The record of `database`'s background work, owned now or not ({"owner": bool, ...});
    None when there is none (no process ever did it) or it cannot be read."""
    if fcntl is None:
        return None
    try:
        fd = os.open(lock_path(database), os.O_RDONLY | paths.NOFOLLOW)
    except OSError:
        return None
    try:
        for _ in range(3):  # (a record being rewritten as it is read: read again)
            record = _parse(_read(fd))
            if record is not None:
                break
            time.sleep(0.01)
        else:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            record["owner"] = True  # someone holds it
        else:
            fcntl.flock(fd, fcntl.LOCK_UN)
            record["owner"] = False
        record["what"] = KINDS.get(str(record.get("kind")), "a Mnemo process")
        return record
    finally:
        os.close(fd)


def _read(fd: int) -> bytes:
    try:
        return os.pread(fd, RECORD_BYTES, 0)
    except OSError:
        return b""


def _parse(data: bytes) -> dict[str, Any] | None:
    """A record (an empty or half-written one, a planted one: None)."""
    try:
        record = json.loads(data.decode())
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(record, dict) or not isinstance(record.get("pid"), int):
        return None
    if not isinstance(record.get("last_pass"), dict):
        record["last_pass"] = None
    return record
