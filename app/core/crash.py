"""Crash and log plumbing for a tray app that starts at login (after qutebrowser's
`misc/crashsignal.py`): a rotating log file, `faulthandler` writing a crash file (llama.cpp
can abort the process), hooks that log uncaught exceptions and tell the user, and a "running"
marker so the next start can say, once, that the last run did not end cleanly.

Everything here is plain Python: the GUI registers how to notify (`set_notifier`) and handles
signals itself. Files are private to the user (0600 in a 0700 folder), whatever the umask.
A traceback in the log names its exceptions without their messages (`Formatter`): a message
may quote what it failed on, a memory's text or title, and logs hold no memory content.
"""

from __future__ import annotations

import contextlib
import faulthandler
import logging
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable
from logging.handlers import RotatingFileHandler
from pathlib import Path
from types import TracebackType

from app.core import paths

log = logging.getLogger(__name__)

LOG_BYTES = 1_000_000
LOG_BACKUPS = 3
MARKER = "running.pid"  # the desktop app's pid while it runs; removed by `clean_exit`
ACKNOWLEDGED = "crash.ack"  # the size of crash.log the user has already been told about
FORMAT = "%(asctime)s %(process)d %(threadName)s %(levelname)s %(name)s: %(message)s"

Notifier = Callable[[str, str], None]

_notifier: Notifier | None = None
_handler: logging.Handler | None = None
_crash_file = None  # kept open: faulthandler writes to its descriptor at the moment of death
_stacks_file = None  # the same, for the stacks SIGUSR1 asks for
_kind = "app"


def log_path(kind: str = "app") -> Path:
    """The log file of the desktop app (`kind="app"`) or of another front end (`"mcp"`)."""
    return _folder() / ("mnemo.log" if kind == "app" else f"mnemo-{kind}.log")


def crash_path(kind: str = "app") -> Path:
    """Where `faulthandler` writes the Python traceback of a fatal error (abort, segfault)."""
    return _folder() / ("crash.log" if kind == "app" else f"crash-{kind}.log")


def stacks_path(kind: str = "app") -> Path:
    """Where every thread's stack goes on SIGUSR1 (`kill -USR1 <pid>`), for a process that
    hangs: kept apart from the crash file, so the next start reports no crash."""
    return _folder() / ("stacks.log" if kind == "app" else f"stacks-{kind}.log")


def install(kind: str = "app") -> Path:
    """Log to a rotating file, write fatal errors to the crash file, hook uncaught
    exceptions and (for the desktop app) mark this run as running; returns the log file."""
    global _kind
    _kind = kind
    # A log line that cannot be written (a full disk) is lost quietly: logging's own
    # "--- Logging error ---" traceback on stderr helped no one (and the MCP server's
    # stderr is the agent's)
    logging.raiseExceptions = False
    sys.excepthook = _excepthook
    threading.excepthook = _thread_excepthook
    path, crash = log_path(kind), crash_path(kind)
    try:
        _log_to(path)
        _crash_to(crash)
        if kind == "app":
            _write_private(_folder() / MARKER, f"{os.getpid()}\n")
    except OSError as exc:  # a full disk or a read-only folder is no reason not to start
        log.error("cannot write to the log folder %s: %s", path.parent, exc)
    else:
        log.info("mnemo %s started (pid %d); fatal errors go to %s", kind, os.getpid(), crash)
    _stacks_to(stacks_path(kind))
    return path


def set_notifier(fn: Notifier | None) -> None:
    """Register `fn(title, text)` to tell the user about an uncaught exception.

    It may be called from any thread: a GUI must hand the call over to its own thread.
    """
    global _notifier
    _notifier = fn


def clean_exit() -> None:
    """Record that this run ended on purpose, so the next start says nothing."""
    marker = _folder() / MARKER
    if _read_pid(marker) == os.getpid():
        with contextlib.suppress(OSError):
            marker.unlink(missing_ok=True)
    log.info("mnemo %s exited cleanly", _kind)


def running_pid() -> int | None:
    """The desktop app's pid while its process lives (its running marker), else None: for
    an app that no longer answers."""
    pid = _read_pid(_folder() / MARKER)
    return pid if pid != os.getpid() and _alive(pid) else None


def previous_crash() -> str | None:
    """One line for the user if the last desktop run crashed (said once), else None.

    Call it before `install`: a marker left by a process that is gone, or a crash file that
    grew since the last notice, both mean the last run did not end cleanly.
    """
    folder = _folder()
    marker = folder / MARKER
    stale = marker.exists() and not _alive(_read_pid(marker))
    crash = crash_path()
    size = crash.stat().st_size if crash.exists() else 0
    told = _read_int(folder / ACKNOWLEDGED) or 0
    try:  # acknowledge, so the notice is given once
        if stale:
            marker.unlink(missing_ok=True)
        if size != told:  # grew: a new crash; shrank or vanished: start counting again
            _write_private(folder / ACKNOWLEDGED, f"{size}\n")
    except OSError as exc:
        log.error("cannot write to the log folder %s: %s", folder, exc)
    if size > told:
        return f"Mnemo quit unexpectedly last time; details are in {crash}"
    if stale:
        return f"Mnemo quit unexpectedly last time; details are in {log_path()}"
    return None


# ---- installing ----------------------------------------------------------------------
def close_files() -> None:
    """Close the crash and stacks files `install` keeps open and forget the log handler it
    added (what a process embedding the core, or a test, does before installing again)."""
    global _crash_file, _stacks_file, _handler
    for kept in (_crash_file, _stacks_file):
        if kept is not None:
            kept.close()
    _crash_file = _stacks_file = _handler = None


def _log_to(path: Path) -> None:
    global _handler
    root = logging.getLogger()
    if _handler is not None:
        root.removeHandler(_handler)
        _handler.close()
    _handler = _PrivateRotatingFileHandler(
        path, maxBytes=LOG_BYTES, backupCount=LOG_BACKUPS, encoding="utf-8"
    )
    _handler.setLevel(logging.INFO)
    _handler.setFormatter(Formatter(FORMAT))
    if root.getEffectiveLevel() > logging.INFO:
        # Lowering the root level must not make the existing handlers (stderr) chattier.
        for handler in root.handlers:
            if handler.level < root.getEffectiveLevel():
                handler.setLevel(root.getEffectiveLevel())
        root.setLevel(logging.INFO)
    root.addHandler(_handler)


def _crash_to(path: Path) -> None:
    global _crash_file
    previous = _crash_file
    _crash_file = os.fdopen(_open_private(path, os.O_APPEND), "a", encoding="utf-8")
    faulthandler.enable(file=_crash_file, all_threads=True)
    if previous is not None:
        previous.close()


def _stacks_to(path: Path) -> None:
    """SIGUSR1 writes every Python thread's stack to `path`; when it cannot be opened, to
    stderr (never stdout: the MCP server's protocol), else it is ignored: the signal's
    default action would end the process it was meant to look into."""
    global _stacks_file
    if not hasattr(signal, "SIGUSR1"):  # Windows
        return
    previous = _stacks_file
    try:
        _stacks_file = os.fdopen(_open_private(path, os.O_APPEND), "a", encoding="utf-8")
    except OSError as exc:
        _stacks_file = None
        log.warning("cannot write to %s (%s): SIGUSR1 writes the stacks to stderr", path, exc)
        try:
            faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)
        except (AttributeError, ValueError, OSError):  # no stderr (pythonw, `2>&-`)
            faulthandler.unregister(signal.SIGUSR1)
            signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    else:
        faulthandler.register(signal.SIGUSR1, file=_stacks_file, all_threads=True)
    if previous is not None:
        previous.close()


# ---- tracebacks without messages ------------------------------------------------------
class Formatter(logging.Formatter):
    """Log lines whose tracebacks keep where each exception was raised and its type, not its
    message (`withheld_traceback`): an exception may quote what it failed on, a memory's
    text or title, and the log holds no memory content (issue 26)."""

    def format(self, record: logging.LogRecord) -> str:
        # Another handler's formatter may have cached the traceback, message and all
        cached, record.exc_text = record.exc_text, None
        try:
            return super().format(record)
        finally:
            record.exc_text = cached

    def formatException(self, ei) -> str:  # noqa: N802 - logging's name
        if ei[1] is None:
            return super().formatException(ei)
        return withheld_traceback(ei[1]).rstrip("\n")


def withheld_traceback(exc: BaseException) -> str:
    """The traceback Python prints for `exc` (its causes and contexts first), each
    exception's message replaced by its length."""
    chain: list[tuple[BaseException, str]] = []  # each with what links it to the next
    seen: set[int] = set()
    current: BaseException | None = exc
    link = ""
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        chain.append((current, link))
        if current.__cause__ is not None:
            current, link = current.__cause__, _CAUSE
        elif current.__context__ is not None and not current.__suppress_context__:
            current, link = current.__context__, _CONTEXT
        else:
            current = None
    parts: list[str] = []
    for error, link in reversed(chain):
        if error.__traceback__ is not None:
            parts.append("Traceback (most recent call last):\n")
            parts.extend(traceback.format_tb(error.__traceback__))
        parts.append(f"{_named(error)}\n{link}")
    return "".join(parts)


_CAUSE = "\nThe above exception was the direct cause of the following exception:\n\n"
_CONTEXT = "\nDuring handling of the above exception, another exception occurred:\n\n"


def _named(exc: BaseException) -> str:
    kind = type(exc)
    name = kind.__qualname__
    if kind.__module__ not in ("builtins", "__main__"):
        name = f"{kind.__module__}.{name}"
    try:
        said = len(str(exc))
    except Exception:  # a broken __str__: the type still says something
        said = 0
    return f"{name} (message of {said} characters not logged)" if said else name


# ---- hooks ---------------------------------------------------------------------------
def _excepthook(
    exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None
) -> None:
    if not issubclass(exc_type, Exception):  # KeyboardInterrupt and the like: not a bug
        sys.__excepthook__(exc_type, exc, tb)
        return
    log.critical("uncaught exception", exc_info=(exc_type, exc, tb))
    _tell_user(exc_type, exc)


def _thread_excepthook(args: threading.ExceptHookArgs) -> None:
    if args.exc_type is SystemExit:
        return
    name = args.thread.name if args.thread is not None else "?"
    exc_info = (args.exc_type, args.exc_value, args.exc_traceback)
    log.critical("uncaught exception in thread %s", name, exc_info=exc_info)
    _tell_user(args.exc_type, args.exc_value)


def _tell_user(exc_type: type[BaseException], exc: BaseException | None) -> None:
    if _notifier is None:
        return
    message = f"{exc_type.__name__}: {exc}" if str(exc or "") else exc_type.__name__
    if len(message) > 200:
        message = message[:199] + "…"
    try:
        _notifier("Mnemo hit a bug", f"{message}\nDetails are in {log_path(_kind)}")
    except Exception:
        log.exception("could not show the error notification")


# ---- private files -------------------------------------------------------------------
class _PrivateRotatingFileHandler(RotatingFileHandler):
    """A rotating log whose every new file is created 0600."""

    def _open(self):
        os.close(_open_private(Path(self.baseFilename), os.O_APPEND))
        return super()._open()


def _folder() -> Path:
    folder = paths.log_dir()
    with contextlib.suppress(OSError):  # a file system without modes (FAT) is no reason to fail
        os.chmod(folder, 0o700)
    return folder


def _open_private(path: Path, flags: int) -> int:
    """The log or a marker file, 0600 and never through a link another user planted."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | flags | paths.NOFOLLOW, 0o600)
    with contextlib.suppress(OSError, AttributeError):  # umasked; an old file keeps its own
        os.fchmod(fd, 0o600)  # (a file system without modes, FAT, refuses: no reason to fail)
    return fd


def _write_private(path: Path, text: str) -> None:
    with os.fdopen(_open_private(path, os.O_TRUNC), "w", encoding="utf-8") as f:
        f.write(text)


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _read_pid(path: Path) -> int | None:
    pid = _read_int(path)
    return pid if pid is not None and pid > 0 else None


def _alive(pid: int | None) -> bool:
    if pid is None:  # unreadable marker: the process died while writing it
        return False
    if pid == os.getpid():
        return True
    if os.name == "nt":
        # os.kill would terminate the process there; and the app is single-instance, so a
        # marker found while no instance answers is stale.
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process reuses the pid: ours is gone
        return False
    except OSError:
        return True
    return True
