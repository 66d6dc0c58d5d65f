"""Who does a database's background work: one process at a time (issue 43).

Every long-lived front end has a Runner (the desktop app, each MCP server, the agents' hook
helper). The background duties of a database — sync passes (compaction is part of a pass)
and the periodic snapshot — are done by one of them only: the process holding the lock on
`<database>.duties` (`flock`, the mechanism the hook helper's own lock uses). The others
only read the journal, and learn of the owner's passes from the record it keeps in that
same file. When the owner ends, however it ends (kill -9 too), the kernel lets go of its
lock and the next runner to look (every poll, about 2 s) takes over.

An owner that is stopped (Ctrl+Z on the agent that started it, SIGSTOP, a debugger) keeps
its lock but does nothing: one other runner stands in (the lock on
`<database>.duties-standin`) until it runs again. An owner that cannot open the database
any more (encrypted meanwhile, its key not at hand) lets go (the runner's part).

The file holds no memory text: who owns (pid, what it is, since when) and the summary of
its last pass; whatever else is found there is read as no record. Where the file cannot be
used (a directory, a link or another user's file planted there, a read-only folder) and on
a system without `flock` (Windows), every process does its own background work, as before
this module, and `mnemo sync status` says so.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import stat
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
_LATEST = 2**33  # seconds: a time past the year 2242 is no time this record holds
_NUMBERS = ("written", "read", "applied", "conflicts")


def lock_path(database: Path, suffix: str = ".duties") -> Path:
    """The file whose lock says who does `database`'s background work."""
    database = Path(database)
    return database.with_name(database.name + suffix)


class Duties:
    """This process's claim on a database's background work: `held()` takes it when no one
    has it, `let_go()` gives it back, `note_pass` tells the other processes about a pass.
    (`suffix=".duties-standin"`: the claim to stand in for a stopped owner.)"""

    def __init__(self, database: Path, kind: str, suffix: str = ".duties"):
        self.path = lock_path(database, suffix)
        self.kind = kind if kind in KINDS else "cli"
        self._file: int | None = None
        self._record: dict[str, Any] = {}
        self._problem = ""  # why the file cannot be used (said once)

    def held(self) -> bool:
        """Whether this process does the background work now (taking it when no one does).
        True also where the lock cannot be used (no `flock`, a file that cannot be): then
        every process does its own, as before."""
        if fcntl is None:
            return True
        if self._file is not None:
            if self._still_ours():
                return True
            self.let_go()  # the file was removed or replaced: the one there now decides
        fd = self._open()
        if fd is None:
            return True
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

    def _open(self) -> int | None:
        """The lock file, opened (made if missing, 0600, never through a link, never a pipe
        or a folder); None when it cannot be used (said once, in one line)."""
        problem = ""
        fd = None
        try:
            fd = paths.private_file(self.path, os.O_RDWR | os.O_CREAT | os.O_NONBLOCK)
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                problem = "it is not a regular file"
        except OSError as exc:
            problem = exc.strerror or str(exc)
        if not problem:
            self._problem = ""
            return fd
        if fd is not None:
            os.close(fd)
        if problem != self._problem:
            self._problem = problem
            log.warning(
                "%s cannot be used (%s): every Mnemo process does the background work",
                self.path,
                problem,
            )
        return None

    def _still_ours(self) -> bool:
        """Whether the file locked is still the one at its path (one removed or replaced
        would let a second process take the one there now: two owners)."""
        try:
            here, ours = os.stat(self.path, follow_symlinks=False), os.fstat(self._file)
        except OSError:
            return False
        return (here.st_dev, here.st_ino) == (ours.st_dev, ours.st_ino)

    @property
    def holding(self) -> bool:
        """Whether this process holds the lock now (without taking it)."""
        return self._file is not None

    @property
    def problem(self) -> str:
        """Why the lock file cannot be used ("" when it can)."""
        return self._problem

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
    "last_pass", "stopped"}; or {"problem"} when the lock file cannot be used (every
    process does it); None when no process does (none runs), or where there is no
    `flock`."""
    record = read(database)
    if record and record.get("problem"):
        return record
    return record if record and record.get("owner") else None


def read(database: Path, suffix: str = ".duties") -> dict[str, Any] | None:
    """The record of `database`'s background work, owned now or not ({"owner": bool, ...},
    or {"problem": why the file cannot be used}); None when there is none (no process ever
    did it) or it cannot be read."""
    path = lock_path(database, suffix)
    if fcntl is None:
        return {"problem": "this system has no file locks (flock)"}
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | paths.NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as exc:  # a link, a folder, another user's file
        return {"problem": f"{path} cannot be used ({exc.strerror or exc})"}
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return {"problem": f"{path} cannot be used (it is not a regular file)"}
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
        record["what"] = KINDS.get(record["kind"], "a Mnemo process")
        record["stopped"] = record["owner"] and stopped(record["pid"])
        return record
    finally:
        os.close(fd)


def stopped(pid: int) -> bool:
    """Whether the process is stopped (SIGSTOP, Ctrl+Z, a debugger): it does nothing until
    it is continued. (Linux: /proc; elsewhere never said.)"""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b") ", 1)[1][:1] in (b"T", b"t")
    except (OSError, IndexError):
        return False


def describe(owner: dict[str, Any] | None) -> str:
    """Which process makes the sync passes in the background, in a line for a person."""
    if owner is None:
        return (
            "Background passes: none now (no Mnemo app, MCP server or hook helper runs here; "
            "the first to start makes them, or run `mnemo sync now`)"
        )
    if owner.get("problem"):
        return f"Background passes: every Mnemo process makes them: {owner['problem']}"
    since = time.strftime("%Y-%m-%d %H:%M", time.localtime(owner["since"]))
    last = owner.get("last_pass") or {}
    at = last.get("at")
    when = time.strftime(", last pass at %H:%M:%S", time.localtime(at)) if at else ""
    problem = f" ({last['problem']})" if last.get("problem") else ""
    line = f"Background passes: {owner['what']}, pid {owner['pid']}, since {since}{when}{problem}"
    if owner.get("stopped"):
        line += (
            "; it is stopped (Ctrl+Z, a debugger): another Mnemo process stands in until it "
            "runs again"
        )
    return line


def _read(fd: int) -> bytes:
    try:
        return os.pread(fd, RECORD_BYTES, 0)
    except OSError:
        return b""


def _parse(data: bytes) -> dict[str, Any] | None:
    """A record, each field of the type it must have (an empty or half-written record, one
    planted by hand or of another version: None, or the fields that are not dropped)."""
    if data.count(b"[") + data.count(b"{") > 64:  # a record nests two deep: never parsed
        return None  # (thousands deep, the parser's recursion error left Python's AST
    try:  # module unable to parse later in the same process, CPython 3.11)
        raw = json.loads(data.decode())
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(raw, dict):
        return None
    pid = raw.get("pid")
    if type(pid) is not int or not 0 < pid < 2**31:
        return None
    kind = raw.get("kind")
    passes = raw.get("passes")
    return {
        "pid": pid,
        "kind": kind if isinstance(kind, str) and kind in KINDS else "?",
        "since": _time(raw.get("since")),
        "passes": passes if type(passes) is int and passes >= 0 else 0,
        "last_pass": _summary(raw.get("last_pass")),
    }


def _summary(raw: Any) -> dict[str, Any] | None:
    """A pass's summary as `Pass.summary` makes it, or None."""
    if not isinstance(raw, dict):
        return None
    out: dict[str, Any] = {
        name: raw[name] if type(raw.get(name)) is int and raw[name] >= 0 else 0 for name in _NUMBERS
    }
    problem = raw.get("problem")
    out["problem"] = problem[:500] if isinstance(problem, str) else ""
    devices = raw.get("new_devices")
    out["new_devices"] = (
        [d for d in devices[:50] if isinstance(d, str) and len(d) <= 64]
        if isinstance(devices, list)
        else []
    )
    held = raw.get("held")
    out["held"] = (
        {
            str(k)[:64]: v
            for k, v in list(held.items())[:50]
            if type(v) is int and v >= 0 and isinstance(k, str)
        }
        if isinstance(held, dict)
        else {}
    )
    n = raw.get("n")
    out["n"] = n[:40] if isinstance(n, str) else ""
    out["at"] = _time(raw.get("at"))
    return out


def _time(value: Any) -> float:
    """Seconds since the epoch, or 0 for anything that is not a time this record holds."""
    if type(value) in (int, float) and math.isfinite(value) and 0 <= value < _LATEST:
        return float(value)
    return 0.0
