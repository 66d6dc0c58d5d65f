"""`mnemo hook EVENT --agent AGENT`: what an agent's hook runs, kept light.

The agent starts this process at a session's start, before every prompt and after its
shell commands, with the event's JSON on standard input. It hands the bytes as they came to
the hook helper (`app.agents.helper`, a resident process with the model loaded) over a local
socket and writes back the helper's answer, already in the shape that agent reads. No
helper yet: it starts one (detached) and waits for it a little; a helper that cannot start
makes the session-start hook do the work in this process (the slow path), and a prompt go
without memories, said in one line on standard error. A hook never fails the agent: it
always exits 0.

Every prompt pays for this module's start-up, so its fast path imports only `os`, `sys`,
`_socket` (the C module under `socket`), `stat`, `struct` and `zlib`: no `json`, `re`,
`pathlib` or `socket` (30 ms less a prompt).

The protocol: `MNEMO-HOOK VERSION EVENT AGENT\\n` and the event's bytes, then the hook shuts
its side; the helper answers `ok\\n` and the output, `restart\\n` (a helper of other code:
it exits, and the hook starts a new one) or `error MESSAGE\\n`.
"""

from __future__ import annotations

import _socket  # the C module: `socket` costs each prompt 11 ms (enum, selectors)
import os
import stat
import sys
import time

from app import __version__

# The helper is asked only by hooks of the same code: a newer install's hook makes an older
# helper exit (its reply says so) and starts its own.
VERSION = f"{__version__}:{int(os.stat(__file__).st_mtime)}"
EVENTS = ("session-start", "prompt", "tool")
AGENTS = ("claude", "codex", "gemini", "cursor")
MAX_INPUT = 32_000_000  # an event's bytes (a prompt with pasted files); longer is not read
# How long a hook waits for its answer, start-up of a helper included. The agents kill a hook
# after their own timeout (Claude Code, Gemini CLI and Cursor: 60 s by default; Codex: 600 s);
# a person waits on every prompt, so a prompt (and a tool's event) gets at most 2 s and goes
# without memories after that, said on standard error.
DEADLINE_S = {"session-start": 30.0, "prompt": 2.0, "tool": 2.0}
MISSES = 2  # a helper that missed this many deadlines in a row (alive but stuck) is replaced


def fast_path() -> str | None:
    """Where the helper of this environment's data folder listens, found without loading
    anything: `$XDG_RUNTIME_DIR/mnemo/hook-KEY.sock` (or, without a runtime folder, in the
    private `mnemo-UID` folder of the temp folder), KEY a checksum of what chooses the data
    folder (MNEMO_HOME, XDG_DATA_HOME, HOME). The helper makes or checks that folder (ours
    alone, 0700); the hook checks the socket is ours and so is the process answering. None
    where that cannot be (then the lock file names the socket)."""
    if not hasattr(os, "geteuid"):
        return None
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        folder = os.path.join(runtime, "mnemo")
    else:
        temp = os.environ.get("TMPDIR") or "/tmp"
        folder = os.path.join(temp, f"mnemo-{os.geteuid()}")
    import zlib

    chooses = "|".join(os.environ.get(k, "") for k in ("MNEMO_HOME", "XDG_DATA_HOME", "HOME"))
    path = os.path.join(folder, f"hook-{zlib.crc32(chooses.encode()):08x}.sock")
    return path if len(os.fsencode(path)) <= 100 else None


def socket_path() -> str:
    """Where a helper started from here listens (the fast path, or a private folder)."""
    found = fast_path()
    if found is not None:
        return found
    from app import local_socket

    return str(local_socket.socket_path("-hook"))


def lock_path() -> str:
    """The helper's lock file: its pid and the socket it listens on ("PID\\nPATH")."""
    from app.core import paths

    return str(paths.state_dir() / "hook-helper.lock")


def running_pid() -> int | None:
    """The pid of this data folder's helper while one runs, else None (the slow path: a
    deadline was missed, `hook status`)."""
    try:
        import fcntl
    except ImportError:  # (Windows: no helper)
        return None
    try:
        with open(lock_path()) as f:
            try:
                fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return int((f.read().strip("\0").split() or ["0"])[0]) or None
            fcntl.flock(f, fcntl.LOCK_UN)
    except (OSError, ValueError):
        return None
    return None


def advertised() -> str | None:
    """The socket the running helper said it listens on (a hook started with another
    XDG_RUNTIME_DIR or TMPDIR computes another path for the same data folder)."""
    try:
        with open(lock_path()) as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    return lines[1] if len(lines) > 1 and lines[1] else None


class Refused(Exception):
    """The socket is another user's, or not a socket: never talked to."""


def _peer_uid(conn: _socket.socket) -> int | None:
    if hasattr(_socket, "SO_PEERCRED"):  # Linux
        import struct

        creds = conn.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, struct.calcsize("3i"))
        return struct.unpack("3i", creds)[1]
    from app import local_socket

    return local_socket.peer_uid(conn.fileno())


def _connect(path: str, timeout: float) -> _socket.socket | None:
    """A connection to the helper at `path`, None when none listens there; Refused when
    the socket or the process at the other end is not this user's."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if st.st_uid != os.geteuid():
        raise Refused(f"another user (uid {st.st_uid}) holds {path}; not talking to it")
    if not stat.S_ISSOCK(st.st_mode):
        raise Refused(f"{path} is not a socket; remove it and try again")
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    conn.settimeout(timeout)
    try:
        conn.connect(path)
        uid = _peer_uid(conn)
    except OSError:
        conn.close()
        return None
    if uid is not None and uid != os.geteuid():
        conn.close()
        raise Refused(f"another user (uid {uid}) answers on {path}; not talking to it")
    return conn


def _left(deadline: float) -> float:
    return max(0.01, deadline - time.monotonic())


def ask(
    event: str, agent: str, raw: bytes, path: str | None = None, deadline: float | None = None
) -> tuple[str, bytes]:
    """The helper's answer to one event: ("ok", output), ("restart", b""), ("error",
    message), ("none", b"") when no helper answers at `path`, or ("late", b"") when one
    took the connection but did not answer by `deadline` (time.monotonic())."""
    if deadline is None:
        deadline = time.monotonic() + DEADLINE_S.get(event, 2.0)
    conn = _connect(path or socket_path(), min(2.0, _left(deadline)))
    if conn is None:
        return "none", b""
    chunks = []
    try:
        conn.settimeout(_left(deadline))
        conn.sendall(f"MNEMO-HOOK {VERSION} {event} {agent}\n".encode() + raw)
        conn.shutdown(_socket.SHUT_WR)
        while True:
            conn.settimeout(_left(deadline))
            chunk = conn.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    except TimeoutError:
        return "late", b""
    finally:
        conn.close()
    status, _, rest = b"".join(chunks).partition(b"\n")
    word, _, message = status.decode("utf-8", "replace").partition(" ")
    if word == "ok":
        return "ok", rest
    if word == "error":
        return "error", message.encode()
    return ("restart", b"") if word == "restart" else ("none", b"")


def _ask_any(event: str, agent: str, raw: bytes, path: str, deadline: float) -> tuple[str, bytes]:
    reply = ask(event, agent, raw, path, deadline)
    if reply[0] == "none" and (other := advertised()) not in (None, path):
        reply = ask(event, agent, raw, other, deadline)
    return reply


def _stopped(pid: int) -> bool:
    """Whether the process is stopped (SIGSTOP, a debugger): it will not answer."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b") ", 1)[1][:1] in (b"T", b"t")
    except (OSError, IndexError):
        return False


def _forget(path: str) -> bool:
    """Remove a file if it is there (`contextlib` would cost every prompt its import)."""
    try:
        os.unlink(path)
    except OSError:
        return False
    return True


def _missed(path: str) -> bool:
    """The running helper took a request and did not answer in time: counted (beside its
    socket); stopped, or stuck for MISSES requests in a row, it is killed and a new one
    started for the next prompt. Whether it was replaced."""
    pid = running_pid()
    if pid is None or pid == os.getpid():
        return False
    misses = path + ".misses"
    try:
        with open(misses) as f:
            last_pid, count = (int(w) for w in f.read().split())
    except (OSError, ValueError):
        last_pid, count = 0, 0
    count = count + 1 if last_pid == pid else 1
    if count < MISSES and not _stopped(pid):
        fd = os.open(misses, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(f"{pid} {count}")
        return False
    import signal

    try:
        os.kill(pid, signal.SIGKILL)  # (the lock it holds says it is the helper)
    except OSError:
        return False
    _wait(lambda: running_pid() != pid, 5.0)
    _forget(misses)
    start_helper()
    return True


def helper_command() -> list[str]:
    """This install's command running `hook serve`."""
    if getattr(sys, "frozen", False):
        return [sys.executable, "hook", "serve"]
    return [sys.executable, "-m", "app", "hook", "serve"]


def start_helper():
    """Start the helper, detached from this hook (it outlives it; never a zombie of the
    agent's: its own session, no inherited descriptors), in the folder that holds this
    `app` package: `python -m app` then runs this very code, never a package named `app`
    in the agent's project (the hook runs in it)."""
    import subprocess

    return subprocess.Popen(
        helper_command(),
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )


def ask_or_start(event: str, agent: str, raw: bytes) -> tuple[str, bytes]:
    """Ask the helper; none there (or an older one that stepped down): start one and wait for
    it until the event's deadline (DEADLINE_S). ("none", b"") when no helper answered in
    time; ("late", b"") when the running one did not (it is replaced if stuck: `_missed`)."""
    if not hasattr(os, "geteuid") or not hasattr(_socket, "AF_UNIX"):
        return "unsupported", b""  # Windows: no helper; the session block is made here
    deadline = time.monotonic() + DEADLINE_S[event]
    path = socket_path()
    reply = _ask_any(event, agent, raw, path, deadline)
    if reply[0] == "late":
        return ("replaced" if _missed(path) else "late"), b""
    if reply[0] not in ("none", "restart"):
        if os.path.exists(path + ".misses"):  # it answers again: its misses are forgotten
            _forget(path + ".misses")
        return reply
    if reply[0] == "restart":  # it is exiting: wait for its socket to go
        _wait(lambda: not os.path.exists(path), min(5.0, _left(deadline)))
    proc = start_helper()
    tries = 0
    while time.monotonic() < deadline:
        # The helper started here listens at `path` (reading the lock file each time costs a
        # cold start 12 ms); one that was serving already (this one then exits 0), or that
        # could not listen there, is found through the lock file, looked at now and then
        tries += 1
        elsewhere = proc.poll() == 0 or fast_path() is None or tries % 10 == 0
        reply = (
            _ask_any(event, agent, raw, path, deadline)
            if elsewhere
            else ask(event, agent, raw, path, deadline)
        )
        if reply[0] not in ("none", "restart", "late"):
            return reply
        if reply[0] == "late" or proc.poll() not in (None, 0):  # still loading; or it failed
            return "none", b""
        time.sleep(0.01)
    return "none", b""


def _wait(condition, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)


def _in_process(event: str, data: dict) -> str:
    """The slow path, without a helper: the session-start block made here."""
    if event != "session-start":
        return ""
    from app.agents import events
    from app.core.engine import Engine

    engine = Engine()
    try:
        return engine.context(cwd=events.folder_of(data)).markdown()
    finally:
        engine.close()


def _say(line: str) -> None:
    if sys.stderr is not None:
        print(f"mnemo hook: {line}", file=sys.stderr)


def run(event: str, agent: str, raw: bytes) -> bytes:
    """What to write for one event (a problem is said on standard error, never raised)."""
    try:
        status, out = ask_or_start(event, agent, raw)
    except Refused as exc:
        _say(str(exc))
        status, out = "refused", b""
    except OSError as exc:
        _say(f"the memory helper did not answer ({exc})")
        status, out = "none", b""
    if status == "ok":
        return out
    from app.agents import events  # the slow path: the event read here

    text = ""
    if status == "error":
        _say(out.decode("utf-8", "replace"))
    elif status in ("late", "replaced"):  # the agent's time is spent: nothing made here
        _say(
            f"the memory helper did not answer in {DEADLINE_S[event]:.0f} s; no memories this "
            + ("time (it was stuck: a new one is starting)" if status == "replaced" else "time")
        )
    else:
        try:
            text = _in_process(event, events.parse(raw))
        except Exception as exc:  # the agent must go on whatever happened here
            _say(f"no memories this time: {exc}")
        if event == "prompt" and status == "none":
            _say("the memory helper is starting; memories come with the next prompt")
    return events.render(agent, event, text).encode("utf-8", "replace")


USAGE = (
    "usage: mnemo hook {session-start,prompt,tool} [--agent claude|codex|gemini|cursor] "
    "< event.json\n       mnemo hook serve | stop | status"
)


def _usage() -> None:
    if sys.stderr is not None:  # (with standard error closed, never on the agent's output)
        print(USAGE, file=sys.stderr)


def _read_input() -> bytes:
    stream = sys.stdin
    if stream is None or stream.isatty():
        return b""
    raw = stream.buffer.read(MAX_INPUT + 1)
    return b"" if len(raw) > MAX_INPUT else raw  # too large to be an event: not read


def main(argv: list[str]) -> int:
    """`mnemo hook …` (parsed by hand: argparse costs a prompt 5 ms)."""
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    event, rest = argv[0], argv[1:]
    agent = "claude"
    if len(rest) == 2 and rest[0] == "--agent":
        agent = rest[1]
    elif rest:
        _usage()
        return 2
    if event not in EVENTS or agent not in AGENTS:
        _usage()
        return 2
    out = run(event, agent, _read_input())
    try:
        if out and sys.stdout is not None:
            sys.stdout.buffer.write(out + b"\n")
            sys.stdout.flush()
    except OSError:  # the agent stopped reading (a closed pipe): nothing to tell it
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0
