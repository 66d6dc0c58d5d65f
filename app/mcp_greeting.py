"""The MCP server's answer to `initialize`, given before the SDK loads.

An agent starts `mnemo mcp` and waits for its answer to `initialize` (Claude Code's
`mcp list` shows the server as failed when it is late); importing the MCP SDK alone takes
about 0.7 s here. So `mnemo mcp` first reads the client's first line itself: when it is
`initialize`, and the answer this same code (Mnemo's MCP modules and the SDK, by their
files) gave to the same protocol version before is kept, that answer goes out at once.
The line is then handed to the SDK as if nothing had happened (the session learns who its
client is, as always) and the SDK's own answer to it is not written twice
(`app.mcp_transport`); when it differs from the one kept, it replaces it, and the next
start answers with it. Anything else on the first line: nothing is answered early.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass

from app import __version__

try:
    import fcntl  # servers started together take turns on the kept answers (POSIX)
except ImportError:
    fcntl = None

MAX_FIRST = 1 << 20  # what of the input is read before the SDK takes over
_MODULES = ("mcp_greeting.py", "mcp_server.py", "mcp_runtime.py", "mcp_transport.py")


@dataclass
class First:
    """What was read before the SDK loaded, and what was answered of it."""

    prefix: bytes = b""  # the input read so far (the first line, and what followed it)
    request_id: int | str | None = None  # the `initialize` request's id, if it was that
    key: str | None = None  # what the answer is kept under
    answered: bool = False  # whether it was answered early


first: First | None = None  # set by `greet`, read by the transport


def _key(protocol: str) -> str | None:
    """This code's answer for a protocol version: Mnemo's version and MCP modules and the
    SDK by their files (a bundle: its program's), or None when they cannot be looked at."""
    import importlib.util
    import sys

    try:
        if getattr(sys, "frozen", False):  # (a bundle holds no source files to look at)
            stamps = [os.stat(sys.executable).st_mtime_ns]
            sdk = 0
        else:
            here = os.path.dirname(os.path.abspath(__file__))
            stamps = [os.stat(os.path.join(here, name)).st_mtime_ns for name in _MODULES]
            spec = importlib.util.find_spec("mcp")
            sdk = os.stat(spec.origin).st_mtime_ns if spec is not None and spec.origin else 0
    except (OSError, ImportError, ValueError):
        return None
    return json.dumps([__version__, stamps, sdk, protocol])


def _path():
    from app.core import paths

    return paths.state_dir() / "mcp-initialize.json"


def _kept() -> dict:
    try:
        from app.core import paths

        value = json.loads(paths.read_regular(_path()))
    except (OSError, ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def keep(key: str, result: dict) -> None:
    """Keep the SDK's answer under `key`, beside this same code's answers to other protocol
    versions (agents speak different ones); another code's are of no use and go. Nothing is
    written when that is what is kept already (every start but the first); servers starting
    together (`prepare`) take turns on a lock file beside it, for at most a second."""
    from app.core import paths

    code = _code(key)

    def wanted(kept: dict) -> dict:
        return {**{k: v for k, v in kept.items() if _code(k) == code}, key: result}

    try:
        if wanted(kept := _kept()) == kept:
            return
        with _turn(paths):
            data = json.dumps(wanted(_kept()))
            paths.replace_file(_path(), lambda f: f.write(data))
    except (OSError, TypeError, ValueError, TimeoutError):
        pass  # the next start answers late, as before


@contextlib.contextmanager
def _turn(paths, within: float = 1.0):
    """Hold the kept answers' lock (POSIX; elsewhere `prepare` starts one server at a time);
    TimeoutError when another holds it longer than `within` seconds."""
    if fcntl is None:
        yield
        return
    import time

    lock = _path().with_suffix(".lock")
    with os.fdopen(paths.private_file(lock, os.O_RDWR | os.O_CREAT), "a") as f:
        deadline = time.monotonic() + within
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError("the kept answers are locked") from None
                time.sleep(0.01)
        yield


def _code(key: str) -> object:
    """The code part of a key (all but its protocol version)."""
    try:
        value = json.loads(key)
    except (ValueError, RecursionError):
        return None
    return value[:-1] if isinstance(value, list) and value else None


def prepare(command: list[str], timeout: float = 60.0) -> int:
    """Have `command` (this installation's `mnemo`) answer `initialize` once for each
    protocol version the SDK negotiates that this code has no answer kept for, so that an
    agent's very first start after `mnemo agents install` is answered at once too. The
    servers start together (one after the other where there is no lock file to share) and
    each keeps its own answer; all within `timeout`. How many were asked."""
    import subprocess
    import time

    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    deadline = time.monotonic() + timeout
    kept = _kept()
    started: list[subprocess.Popen] = []

    def finish(servers: list[subprocess.Popen]) -> None:
        for server in servers:
            try:
                server.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()

    for protocol in HANDSHAKE_PROTOCOL_VERSIONS:
        key = _key(protocol)
        if key is None or _usable(kept.get(key), protocol) or time.monotonic() > deadline:
            continue
        hello = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": protocol, "capabilities": {},
            "clientInfo": {"name": "mnemo-agents-install", "version": __version__}}}  # fmt: skip
        try:
            server = subprocess.Popen(
                [*command, "mcp"],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        except OSError:
            break  # (the agents start it as before: their first start answers late)
        started.append(server)
        with contextlib.suppress(OSError):
            server.stdin.write(json.dumps(hello).encode() + b"\n")
            server.stdin.close()  # it answers what it was asked, then ends
        if fcntl is None:  # (no lock to take turns on: one after the other)
            finish([server])
    finish(started)
    return len(started)


def _usable(result: object, protocol: str) -> bool:
    """An answer kept as the SDK gives it (a planted one naming another server is not)."""
    return (
        isinstance(result, dict)
        and result.get("protocolVersion") == protocol
        and isinstance(result.get("serverInfo"), dict)
        and result["serverInfo"].get("name") == "mnemo"
    )


def greet(fd_in: int = 0, fd_out: int = 1) -> First:
    """Read the client's first line; answer it now when it is `initialize` and its answer
    is kept. What was read is kept for the transport (`first`)."""
    global first
    chunks, size = [], 0
    try:
        while size <= MAX_FIRST:
            chunk = os.read(fd_in, 65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if b"\n" in chunk:
                break
    except OSError:
        pass  # the transport meets it again and says so
    read = b"".join(chunks)
    first = First(read)
    try:
        message = json.loads(read.split(b"\n", 1)[0])
    except (ValueError, RecursionError):
        return first
    if not isinstance(message, dict) or message.get("method") != "initialize":
        return first
    params = message.get("params")
    protocol = params.get("protocolVersion") if isinstance(params, dict) else None
    if type(message.get("id")) not in (int, str) or not isinstance(protocol, str):
        return first
    first.request_id, first.key = message["id"], _key(protocol)
    if first.key is None:
        return first
    result = _kept().get(first.key)
    if not _usable(result, protocol):
        return first
    answer = json.dumps(
        {"jsonrpc": "2.0", "id": message["id"], "result": result},
        ensure_ascii=False,
        separators=(",", ":"),
    )
    answer += "\n"
    data = answer.encode()
    try:
        while data:
            data = data[os.write(fd_out, data) :]
    except OSError:
        return first  # (the client is gone: the transport finds out)
    first.answered = True
    return first
