"""Asking every Mnemo process to let go of the database while it is replaced whole.

Encrypting, decrypting, rotating the key and restoring a backup replace the database file
with a new one. No connection may stay on the old file meanwhile: its next write would go
to a file nobody reads any more, and its WAL would mix with the new file's. So the process
that replaces it (the *switcher*) holds an exclusive `flock` on `mnemo.db.switch-lock` and
writes `mnemo.db.switching` (who, what, since when). Every other process sees that mark:

- a Runner (the tray app, an MCP server, the agents' hook helper) looks for it before
  each call and every couple of seconds when idle, closes its connection and waits;
- a new connection (`Database()`: the CLI, a hook) waits before opening.

When the mark goes, they open the new file (with its new key). A mark whose lock nobody
holds is left from a switcher that died: it is removed, and the file at the path is whole
(the old one or the new one, never half of either: the new one is renamed in whole).
The switcher still checks that no connection is left (SQLite refuses to leave WAL mode
while another connection is open) before it copies anything.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path

from app.core.errors import StoreError
from app.core.paths import private_file

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: msvcrt would do; not tested there
    fcntl = None

log = logging.getLogger(__name__)

WAIT_S = 300.0  # how long others wait for a switch (a 1 GB database copies in ~30 s)
TICK_S = 0.05


def mark_path(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + ".switching")


def lock_path(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + ".switch-lock")


def _held(db_path: Path) -> bool:
    """Whether a live switcher holds the lock."""
    if fcntl is None:
        return True
    try:
        fd = os.open(lock_path(db_path), os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # (closing drops our shared lock at once)
    return False


def wanted(db_path: Path) -> bool:
    """Whether a switch is under way (cheap: one stat when there is none). A mark left by
    a switcher that died is removed."""
    mark = mark_path(db_path)
    if not os.path.lexists(mark):
        return False
    if _held(db_path):
        return True
    with contextlib.suppress(FileNotFoundError):
        mark.unlink()
        log.info("removed the mark of a database switch that did not finish")
    return False


def what(db_path: Path) -> str:
    """What the switch under way does, for a message ("encrypt", "restore", ...)."""
    try:
        return str(json.loads(mark_path(db_path).read_text(encoding="utf-8"))["what"])
    except (OSError, ValueError, KeyError, TypeError):
        return "replace"


def wait(db_path: Path, timeout: float = WAIT_S) -> None:
    """Wait while a switch is under way; StoreError if it takes longer than `timeout`."""
    deadline = time.monotonic() + timeout
    while wanted(db_path):
        if time.monotonic() > deadline:
            raise StoreError(
                f"the database {db_path} is being switched ({what(db_path)}) by another "
                f"process for over {timeout:.0f} s; nothing was done, try again later"
            )
        time.sleep(TICK_S)


@contextlib.contextmanager
def hold(db_path: Path, action: str) -> Iterator[None]:
    """Be the switcher: take the lock, put up the mark, and take both down at the end
    (also on failure). StoreError if another switch is under way."""
    fd = private_file(lock_path(db_path), os.O_RDWR | os.O_CREAT)
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise StoreError(
                    f"another process is already switching the database ({what(db_path)}); "
                    "wait for it to finish"
                ) from None
        mark = mark_path(db_path)
        mark_fd = private_file(mark)
        with os.fdopen(mark_fd, "w", encoding="utf-8") as f:
            json.dump({"pid": os.getpid(), "what": action, "since": time.time()}, f)
        try:
            yield
        finally:
            with contextlib.suppress(FileNotFoundError):
                mark.unlink()
    finally:
        os.close(fd)


@contextlib.contextmanager
def idle(db_path: Path) -> Iterator[bool]:
    """Whether no switch is under way, holding the switch lock meanwhile so none starts (a
    switch asked for in that moment is refused as "already switching"): for tidying up
    after one that was killed. False when another process holds the lock or it cannot be
    taken (a read-only folder)."""
    try:
        fd = private_file(lock_path(db_path), os.O_RDWR | os.O_CREAT)
    except OSError:
        yield False
        return
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
        yield True
    finally:
        os.close(fd)


def holders(db_path: Path) -> list[str]:
    """The other processes that have the database open ("1234 mnemo mcp"), where the
    system tells (Linux /proc); [] elsewhere or when none."""
    found = []
    targets = {str(db_path.resolve())} | {
        str(db_path.resolve()) + suffix for suffix in ("-wal", "-shm")
    }
    proc = Path("/proc")
    if not proc.is_dir():
        return []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            links = {os.readlink(fd) for fd in (entry / "fd").iterdir()}
        except OSError:
            continue
        if links & targets:
            try:
                raw = (entry / "cmdline").read_bytes().split(b"\0")
                args = [a.decode(errors="replace") for a in raw if a]
            except OSError:
                args = []
            found.append(f"{entry.name} ({described(args)})")
    return found


def described(args: list[str]) -> str:
    """What a process holding the database is, by its command line, with how to end it
    when it is one of Mnemo's own (they let go by themselves unless stopped or hung)."""
    names = [Path(a).name for a in args]
    # `mnemo ARGS` (as run: the script, or python and the script) or `python -m app ARGS`
    if "mnemo" in names[:2]:
        mnemo, rest = True, names[names.index("mnemo") + 1 :]
    else:
        mnemo, rest = names[1:3] == ["-m", "app"], names[3:]
    if mnemo and rest[:2] == ["hook", "serve"]:
        return "Mnemo's hook helper for agents: mnemo hook stop ends it"
    if mnemo and rest[:1] == ["mcp"]:
        return "an agent's Mnemo MCP server: end that agent's session"
    if mnemo and rest[:1] in ([], ["gui"]):
        return "the Mnemo app: Quit in its tray menu"
    if mnemo:
        return "mnemo " + " ".join(rest[:2])
    return " ".join(names[:3]) or "?"
