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
import logging
import os
import signal
import socket
import sys
import time
from pathlib import Path

from app import local_socket
from app.agents import events, hook, meaning, rules
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
MAX_REQUEST = hook.MAX_INPUT + 4096
SESSIONS = 64  # sessions whose shown memories it keeps in mind
# Codex cuts a hook's output at about 2,500 tokens; Claude Code at 10,000 characters
SESSION_CHARS = {"codex": 6_000}


def idle_seconds() -> float:
    try:
        return max(1.0, float(os.environ.get("MNEMO_HOOK_IDLE_S", IDLE_S)))
    except ValueError:
        return IDLE_S


lock_path = hook.lock_path
running_pid = hook.running_pid


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
            if self.runner.model_state[0] == "locked":  # started without the key (issue 26):
                return "the database is locked"  # the next hook, with it, starts a new helper
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
        if self.runner.model_state[0] == "locked":
            return "the database is locked"
        return None

    def _answer(self, conn: socket.socket) -> None:
        conn.settimeout(5)
        try:
            uid = local_socket.peer_uid(conn.fileno())
            if uid is not None and uid != os.geteuid():
                log.warning("refused a hook connection from uid %s", uid)
                return
            conn.sendall(self.handle(_read_all(conn)))
        except (OSError, ValueError) as exc:
            log.info("a hook request was not answered: %s", type(exc).__name__)
        except Exception:  # a bug: logged (never the request), the helper goes on
            log.exception("a hook request failed")

    def handle(self, request: bytes) -> bytes:
        """One request (`hook` module: the protocol) → `ok\\n` and the output for the agent,
        `restart\\n` or `error MESSAGE\\n`."""
        header, _, raw = request.partition(b"\n")
        words = header.decode("utf-8", "replace").split(" ")
        if len(words) != 4 or words[0] != "MNEMO-HOOK":
            return b"error not a hook request\n"
        _, version, event, agent = words
        if version != hook.VERSION:
            self.stopping = True  # another Mnemo's hook: it starts a helper of its own
            return b"restart\n"
        if event not in hook.EVENTS or agent not in hook.AGENTS:
            return f"error unknown event {event!r} or agent {agent!r}\n".encode()
        data = events.parse(raw)
        session = events.session_of(data)
        seen = self.sessions.shown(session) if session else set()
        try:
            text, ids = (
                self.runner.submit(
                    lambda engine: _work(engine, event, agent, data, frozenset(seen)),
                    INTERACTIVE,
                ).result(timeout=60)
                if _asks(event, agent)
                else ("", [])  # (a tool call: the agent waits for nothing of the engine)
            )
        except MnemoError as exc:
            return f"error {exc}\n".encode()
        except Exception as exc:  # a bug: logged with its traceback, said in one line
            log.exception("a hook request failed")
            return f"error internal error ({type(exc).__name__}); see mnemo-hook.log\n".encode()
        seen.update(ids)
        # Before the reply, at the same priority: the agent's next request runs after them.
        # What was shown counts as recalled: a write (and its fsync) the reply never waits on
        if ids:
            self.runner.submit(lambda engine: engine.mark_used(ids), INTERACTIVE)
        self.runner.submit(
            lambda engine: _captures(engine, event, data, agent, self.commands), INTERACTIVE
        )
        return b"ok\n" + events.render(agent, event, text).encode("utf-8", "replace")


def _asks(event: str, agent: str) -> bool:
    """Whether the event's answer holds memories (else the reply goes out at once)."""
    return event == "session-start" or (event == "prompt" and agent != "cursor")


def _work(engine, event: str, agent: str, data: dict, seen: frozenset) -> tuple[str, list[str]]:
    """What one hook event asks of the engine: the block to inject (and the ids in it)."""
    if event == "session-start":
        block = engine.context(
            cwd=events.folder_of(data), max_chars=SESSION_CHARS.get(agent, 9_000), track=False
        )
        return block.markdown(), [m.id for m, _, _ in block.fit().entries]
    if _asks(event, agent):  # (Cursor's prompt hook may not add context)
        prompt = data.get("prompt")
        return engine.prompt_context(prompt if isinstance(prompt, str) else "", seen, track=False)
    return "", []


def _captures(engine, event: str, data: dict, agent: str, commands: rules.CommandWatch) -> None:
    """What the event states as lasting, proposed for review (after the answer was sent:
    the agent never waits on this)."""
    if not engine.settings["capture"]:
        return
    if event == "prompt":
        prompt = data.get("prompt") if isinstance(data.get("prompt"), str) else ""
        for statement in meaning.statements(prompt, engine.embedder):
            _capture(engine, statement, agent, data, prompt)
    elif event == "tool":
        call = events.shell_call(data)
        statement = commands.saw(events.session_of(data), *call) if call else None
        if statement is not None:
            _capture(engine, statement, agent, data, "")


def _capture(engine, statement: rules.Statement, agent: str, data: dict, said: str) -> None:
    """Propose a statement (or store it: a rule the user lets in without review)."""
    folder = events.folder_of(data)
    candidate = Candidate(
        statement.text,
        statement.rule,
        list(statement.keywords),
        agent,
        folder.name if folder else None,
        events.session_of(data),
        said,
    )
    auto = statement.rule in engine.settings["capture_auto_accept"]
    try:
        what, _ = engine.capture(candidate, auto=auto)
    except SecretError:
        log.info("a %s capture held a secret: not kept", statement.rule)
        return
    except MnemoError as exc:
        # (its type only: a message may quote the statement, and logs hold no memory text)
        log.info("a %s capture was not kept: %s", statement.rule, type(exc).__name__)
        return
    log.info("a %s capture: %s", statement.rule, what)


def _read_all(conn: socket.socket) -> bytes:
    """The request: everything until the hook shuts its side (at most MAX_REQUEST)."""
    chunks, size = [], 0
    while chunk := conn.recv(1 << 20):
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_REQUEST:
            raise ValueError("request too large")
    return b"".join(chunks)


def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _bind(path: Path) -> socket.socket:
    """Listen at `path` (its folder made or checked private); OSError or SocketError when
    it cannot, or when a live helper (of another data folder whose key collides) is there."""
    local_socket.private_dir(path.parent)
    if local_socket.ours(path):  # a socket of ours: stale (we hold the lock) unless it answers
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            probe.settimeout(1)
            try:
                probe.connect(str(path))
            except OSError:
                path.unlink()
            else:
                raise OSError(f"another helper answers at {path}")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        server.bind(str(path))
    except OSError:
        server.close()
        raise
    finally:
        os.umask(old)
    server.listen(16)
    return server


def _listen() -> tuple[Path, socket.socket]:
    """The socket hooks find first (`hook.fast_path`), else one in a private folder."""
    first = hook.fast_path()
    if first is not None:
        try:
            return Path(first), _bind(Path(first))
        except (OSError, local_socket.SocketError) as exc:
            log.info("cannot listen at %s (%s); using a private folder", first, exc)
    path = local_socket.socket_path("-hook")
    return path, _bind(path)


def serve() -> int:
    """`mnemo hook serve`: be this data folder's helper until idle (exit 0 at once when
    another already is)."""
    if fcntl is None or not local_socket.UNIX:
        log.info("no hook helper on this platform")
        return 1
    # held for the whole process; ours alone whatever the umask (0600, never a link)
    lock = os.fdopen(paths.private_file(Path(lock_path()), os.O_RDWR | os.O_CREAT), "a+")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return 0  # another helper serves this data folder
    path, server = _listen()
    # (from the start: a helper killed before it could empty the file left its lines there)
    lock.seek(0)
    lock.truncate(0)
    lock.write(f"{os.getpid()}\n{path}\n")  # hooks of another environment find it here
    lock.flush()
    runner = Runner(load_model=True, kind="helper")
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
