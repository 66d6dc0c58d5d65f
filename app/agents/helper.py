"""The hook helper: a small resident process that keeps the engine warm for agents' hooks.

An agent runs a hook before every prompt; starting Python, the database and the model for
each would cost the user half a second a prompt. The first hook starts this helper
(`mnemo hook serve`, detached); it loads the model once and answers later hooks over a local
socket only this user can reach (`app.local_socket`), in milliseconds. It never outlives
its use: it exits by itself after `MNEMO_HOOK_IDLE_S` seconds without a request (15 minutes
by default), when its socket or the database is removed, when a newer Mnemo asks it to, and
on SIGTERM (`mnemo hook stop`). One helper per data folder: a lock file says which.

Nothing it is asked is logged: a prompt may hold anything.
"""

from __future__ import annotations

import collections
import contextlib
import json
import logging
import os
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any

from app import local_socket
from app.agents import hook, rules
from app.core import paths
from app.core.errors import MnemoError, SecretError
from app.core.runner import INTERACTIVE, Runner
from app.core.storage.inbox import Candidate

try:
    import fcntl
except ImportError:  # Windows: no helper (hooks take the cold path)
    fcntl = None

log = logging.getLogger(__name__)

IDLE_S = 15 * 60
TICK_S = 0.5  # how often it looks at its socket, the database and the clock
MAX_REQUEST = 4 * 1024 * 1024
SESSIONS = 64  # sessions whose shown memories it keeps in mind
# Codex cuts a hook's output at about 2,500 tokens; Claude Code at 10,000 characters
SESSION_CHARS = {"codex": 6_000}


def idle_seconds() -> float:
    try:
        return max(1.0, float(os.environ.get("MNEMO_HOOK_IDLE_S", IDLE_S)))
    except ValueError:
        return IDLE_S


lock_path = hook.lock_path


def running_pid() -> int | None:
    """The pid of this data folder's helper while one runs, else None."""
    try:
        with open(lock_path()) as f:
            if fcntl is not None:
                try:
                    fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
                except BlockingIOError:
                    return int((f.read().split() or ["0"])[0]) or None
                fcntl.flock(f, fcntl.LOCK_UN)
    except (OSError, ValueError):
        return None
    return None


class Sessions:
    """Which memories each agent session was shown already (no memory twice a session)."""

    def __init__(self, keep: int = SESSIONS) -> None:
        self._shown: collections.OrderedDict[str, set[str]] = collections.OrderedDict()
        self._keep = keep

    def shown(self, session: str) -> set[str]:
        if session not in self._shown:
            self._shown[session] = set()
            while len(self._shown) > self._keep:
                self._shown.popitem(last=False)
        self._shown.move_to_end(session)
        return self._shown[session]


class Helper:
    """Answers hook requests on a bound socket until idle or told to stop."""

    def __init__(self, server: socket.socket, runner: Runner, idle_s: float) -> None:
        self.server = server
        self.runner = runner
        self.idle_s = idle_s
        self.sessions = Sessions()
        self.commands = rules.CommandWatch()
        self.last = time.monotonic()
        self.stopping = False
        self._socket_id = _identity(server.getsockname())
        self._database = paths.database_path()

    def serve(self) -> str:
        """Serve until there is a reason to stop; the reason."""
        self.server.settimeout(TICK_S)
        while not self.stopping:
            try:
                conn, _ = self.server.accept()
            except TimeoutError:
                reason = self._reason_to_stop()
                if reason:
                    return reason
                continue
            with conn:
                self._answer(conn)
            self.last = time.monotonic()
        return "asked to stop"

    def _reason_to_stop(self) -> str | None:
        if time.monotonic() - self.last > self.idle_s:
            return f"idle for {self.idle_s:.0f} s"
        if _identity(self.server.getsockname()) != self._socket_id:
            return "its socket was removed or replaced"
        if not self._database.exists():
            return "the database was removed"
        if self.runner.stopped.is_set():
            return "the engine stopped"
        return None

    def _answer(self, conn: socket.socket) -> None:
        conn.settimeout(5)
        try:
            uid = local_socket.peer_uid(conn.fileno())
            if uid is not None and uid != os.geteuid():
                log.warning("refused a hook connection from uid %s", uid)
                return
            request = _read_line(conn)
            reply = self.handle(json.loads(request))
            conn.sendall(json.dumps(reply).encode() + b"\n")
        except (OSError, ValueError, RecursionError) as exc:
            log.info("a hook request was not answered: %s", type(exc).__name__)
        except Exception:  # a bug: logged (never the request), the helper goes on
            log.exception("a hook request failed")

    def handle(self, request: Any) -> dict[str, Any]:
        """One request: {"v", "event", "agent", "input"} → {"text", "ids"} or {"error"}."""
        if not isinstance(request, dict):
            return {"error": "not a request"}
        if request.get("v") != hook.VERSION:
            self.stopping = True  # another Mnemo's hook: it starts a helper of its own
            return {"restart": True}
        event = request.get("event")
        data = request.get("input") if isinstance(request.get("input"), dict) else {}
        session = hook.session_of(data)
        if event == "ping":
            return {"pid": os.getpid()}
        if event not in hook.EVENTS:
            return {"error": f"unknown event {event!r}"}
        seen = self.sessions.shown(session) if session else set()
        agent = str(request.get("agent"))
        try:
            text, ids = self.runner.submit(
                lambda engine: _work(engine, event, agent, data, frozenset(seen)), INTERACTIVE
            ).result(timeout=60)
        except MnemoError as exc:
            return {"error": str(exc)}
        except Exception as exc:  # a bug: logged with its traceback, said in one line
            log.exception("a hook request failed")
            return {"error": f"internal error ({type(exc).__name__}); see mnemo-hook.log"}
        seen.update(ids)
        # Before the reply, at the same priority: the agent's next request runs after it
        self.runner.submit(
            lambda engine: _captures(engine, event, data, agent, self.commands), INTERACTIVE
        )
        return {"text": text, "ids": ids}


def _work(engine, event: str, agent: str, data: dict, seen: frozenset) -> tuple[str, list[str]]:
    """What one hook event asks of the engine: the block to inject (and the ids in it)."""
    if event == "session-start":
        block = engine.context(cwd=hook.folder_of(data), max_chars=SESSION_CHARS.get(agent, 9_000))
        return block.markdown(), [m.id for m, _, _ in block.fit().entries]
    if event == "prompt" and agent != "cursor":  # Cursor's prompt hook may not add context
        prompt = data.get("prompt")
        return engine.prompt_context(prompt if isinstance(prompt, str) else "", seen)
    return "", []


def _captures(engine, event: str, data: dict, agent: str, commands: rules.CommandWatch) -> None:
    """What the event states as lasting, proposed for review (after the answer was sent:
    the agent never waits on this)."""
    if not engine.settings["capture"]:
        return
    if event == "prompt":
        prompt = data.get("prompt") if isinstance(data.get("prompt"), str) else ""
        for statement in rules.statements(prompt):
            _capture(engine, statement, agent, data, prompt)
    elif event == "tool":
        call = hook.shell_call(data)
        statement = commands.saw(hook.session_of(data), *call) if call else None
        if statement is not None:
            _capture(engine, statement, agent, data, "")


def _capture(engine, statement: rules.Statement, agent: str, data: dict, said: str) -> None:
    """Propose a statement (or store it: a rule the user lets in without review)."""
    folder = hook.folder_of(data)
    candidate = Candidate(
        statement.text,
        statement.rule,
        list(statement.keywords),
        agent,
        folder.name if folder else None,
        hook.session_of(data),
        said,
    )
    auto = statement.rule in engine.settings["capture_auto_accept"]
    try:
        what, _ = engine.capture(candidate, auto=auto)
    except SecretError:
        log.info("a %s capture held a secret: not kept", statement.rule)
        return
    except MnemoError as exc:
        log.info("a %s capture was not kept: %s", statement.rule, exc)
        return
    log.info("a %s capture: %s", statement.rule, what)


def _read_line(conn: socket.socket) -> bytes:
    chunks, size = [], 0
    while True:
        chunk = conn.recv(65536)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if b"\n" in chunk or size > MAX_REQUEST:
            break
    data = b"".join(chunks)
    if size > MAX_REQUEST:
        raise ValueError("request too large")
    return data.split(b"\n", 1)[0]


def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _bind(path: Path) -> socket.socket:
    if local_socket.ours(path):  # a stale socket of an earlier helper (we hold the lock)
        path.unlink()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        server.bind(str(path))
    finally:
        os.umask(old)
    server.listen(16)
    return server


def serve() -> int:
    """`mnemo hook serve`: be this data folder's helper until idle (exit 0 at once when
    another already is)."""
    if fcntl is None or not local_socket.UNIX:
        log.info("no hook helper on this platform")
        return 1
    lock = open(lock_path(), "a+")  # noqa: SIM115 - held for the whole process
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return 0  # another helper serves this data folder
    path = hook.socket_path()
    server = _bind(path)
    lock.truncate(0)
    lock.write(f"{os.getpid()}\n{path}\n")  # hooks of another environment find it here
    lock.flush()
    runner = Runner(load_model=True)
    runner.start()
    helper = Helper(server, runner, idle_seconds())

    def stop(_signum, _frame):
        helper.stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    started = time.monotonic()
    log.info("hook helper %s serving %s", os.getpid(), path)
    try:
        reason = helper.serve()
    finally:
        with contextlib.suppress(OSError):
            if _identity(str(path)) == helper._socket_id:
                path.unlink()
        server.close()
        runner.stop(10)
        lock.truncate(0)
        lock.close()
    log.info("hook helper exits after %.0f s: %s", time.monotonic() - started, reason)
    return 0


def stop(timeout: float = 10.0) -> bool:
    """Ask this data folder's helper to exit (SIGTERM); whether it did within `timeout`
    (True when none ran)."""
    pid = running_pid()
    if pid is None:
        return True
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while running_pid() is not None and time.monotonic() < deadline:
        time.sleep(0.02)
    return running_pid() is None


def command(word: str) -> int:
    """`mnemo hook serve | stop | status`."""
    if word == "serve":
        from app.core import crash

        logging.basicConfig(level=logging.INFO, format="mnemo-hook: %(levelname)s: %(message)s")
        crash.install("hook")
        return serve()
    if word == "stop":
        pid = running_pid()
        if pid is None:
            print("the hook helper is not running")
        elif stop():
            print(f"the hook helper (pid {pid}) stopped")
        else:
            print(f"the hook helper (pid {pid}) did not exit in 10 s", file=sys.stderr)
            return 1
        return 0
    pid = running_pid()
    print(f"the hook helper runs (pid {pid})" if pid else "the hook helper is not running")
    return 0
