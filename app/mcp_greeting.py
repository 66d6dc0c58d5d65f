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

Answers are kept by code: one another Mnemo or another SDK gave (before an upgrade) is never
given, since its instructions or capabilities may not be this code's. With nothing kept (the
first start after an install or an upgrade), the answer this code's own constants make
(`builtin`) goes out at once when the installed SDK is the release it was checked against
(`CHECKED_SDK`: tests/test_mcp_server.py compares it with the SDK's for every protocol
version); with another SDK release, the SDK loads and answers, as before. A server that had to
load the SDK to answer (the first start after an install or an upgrade) then asks the SDK,
over a connection in memory, for its answers to the other protocol versions it negotiates
and keeps them too, after its own answer went out: the next agent's start is answered at
once whichever version it speaks, with no `mnemo agents install` run again.
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

INSTRUCTIONS = (
    "Mnemo is the user's long-term memory, shared with their other agents and their desktop "
    "app. Call search_memory before relying on assumptions about the user's projects, "
    "preferences or past decisions. Call store_memory when you learn something worth keeping "
    "beyond this session: a pattern that worked, an anti-pattern to avoid, a heuristic, with "
    "the reasoning behind it. Never store secrets (they are redacted)."
)
# The SDK release whose answer to `initialize` `builtin` makes, for these protocol versions
# (its HANDSHAKE_PROTOCOL_VERSIONS), and what it says the server can do (tools, prompts and
# resources: MCPServer registers handlers for all three)
CHECKED_SDK = "2.3.0"
PROTOCOLS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
CAPABILITIES = {
    "prompts": {"listChanged": False},
    "resources": {"listChanged": False, "subscribe": False},
    "tools": {"listChanged": False},
}
_MODULES = ("mcp_greeting.py", "mcp_server.py", "mcp_runtime.py", "mcp_transport.py")


@dataclass
class First:
    """What was read before the SDK loaded, and what was answered of it."""

    prefix: bytes = b""  # the input read so far (the first line, and what followed it)
    request_id: int | str | None = None  # the `initialize` request's id, if it was that
    key: str | None = None  # what the answer is kept under
    answered: bool = False  # whether it was answered early
    made: bool = False  # ... with `builtin`'s answer (nothing was kept for this code)


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


def keep(answers: dict[str, dict]) -> None:
    """Keep the SDK's answers (by key: one code's, a protocol version each), beside this same
    code's answers to other protocol versions (agents speak different ones); another code's
    (an older Mnemo's, or an older SDK's) are of no use and go. Nothing is written when that
    is what is kept already (every start but the first); servers starting together take
    turns on a lock file beside it, for at most a second."""
    from app.core import paths

    codes = {json.dumps(_code(key)) for key in answers}
    if len(codes) != 1 or None in map(_code, answers):
        return
    code = _code(next(iter(answers)))

    def wanted(kept: dict) -> dict:
        return {**{k: v for k, v in kept.items() if _code(k) == code}, **answers}

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
    """Hold the kept answers' lock (POSIX; elsewhere the last to write wins);
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


def missing(key: str) -> list[tuple[str, str]]:
    """(key, protocol version) of each version the SDK negotiates that the code of `key`
    (this running server's, as `greet` saw its files) has no usable answer kept for."""
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    code = _code(key)
    if not isinstance(code, list):
        return []
    kept = _kept()
    keys = [(json.dumps([*code, protocol]), protocol) for protocol in HANDSHAKE_PROTOCOL_VERSIONS]
    return [(k, protocol) for k, protocol in keys if not _usable(kept.get(k), protocol)]


def prepare(command: list[str], timeout: float = 60.0) -> int:
    """Have `command` (this installation's `mnemo`) answer `initialize` when this code has
    no answer kept for a protocol version the SDK negotiates, so that an agent's very first
    start after `mnemo agents install` is answered at once too: that server keeps its
    answer and the SDK's answers to the other versions (`app.mcp_transport`), within
    `timeout`. How many servers were started (0 or 1)."""
    import subprocess

    todo = [protocol for _, protocol in missing(_key("") or "")]  # (this code's key)
    if not todo:
        return 0
    hello = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": todo[0], "capabilities": {},
        "clientInfo": {"name": "mnemo-agents-install", "version": __version__}}}  # fmt: skip
    try:
        server = subprocess.Popen(
            [*command, "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    except OSError:
        return 0  # (the agents start it as before: their first start answers late)
    with contextlib.suppress(OSError):
        server.stdin.write(json.dumps(hello).encode() + b"\n")
        server.stdin.close()  # it answers what it was asked, then ends
    try:
        server.wait(timeout)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
    return 1


def refresh_later():
    """After an upgrade (answers kept, by an older Mnemo or SDK, none by this code), have
    this installation's `mnemo mcp` answer once, in the background (`prepare`), so that an
    agent's very first start after the upgrade is answered at once too: the desktop app
    does this as it starts, before the agents do. Nothing when no answer was ever kept (no
    agent wired) or this code's are kept already. The thread started, or None."""
    import threading

    if not _path().exists():
        return None

    def run() -> None:
        from app.agents import wiring

        try:
            prepare(wiring.mnemo_command())
        except (ImportError, OSError) as exc:  # the next agent's start loads the SDK instead
            import logging

            logging.getLogger("mnemo").info("MCP answers not kept ahead: %s", exc)

    thread = threading.Thread(target=run, name="mcp-answers", daemon=True)
    thread.start()
    return thread


def builtin(protocol: str) -> dict | None:
    """The SDK's answer to `initialize` in `protocol`, made from this code's constants,
    without loading the SDK: only when the installed SDK is `CHECKED_SDK` and speaks
    `protocol` (else None: the SDK answers)."""
    if protocol not in PROTOCOLS or _sdk_release() != CHECKED_SDK:
        return None
    return {
        "capabilities": json.loads(json.dumps(CAPABILITIES)),
        "instructions": INSTRUCTIONS,
        "protocolVersion": protocol,
        "serverInfo": {"name": "mnemo", "version": __version__},
    }


def _sdk_release() -> str | None:
    """The installed MCP SDK's release, read from its metadata (the SDK is not imported)."""
    import importlib.metadata

    try:
        return importlib.metadata.version("mcp")
    except (importlib.metadata.PackageNotFoundError, ValueError, OSError):
        return None


def _well_formed(message: dict) -> bool:
    """Whether an `initialize` is one the SDK accepts (JSON-RPC 2.0, capabilities an object,
    the client named with a name and a version): only such a one is answered early, or
    a client that sent a malformed one got a result and then the SDK's error."""
    params = message["params"]
    client = params.get("clientInfo")
    return (
        message.get("jsonrpc") == "2.0"
        and isinstance(params.get("capabilities"), dict)
        and isinstance(client, dict)
        and isinstance(client.get("name"), str)
        and isinstance(client.get("version"), str)
    )


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
    if not _well_formed(message):
        return first  # (the SDK answers it: with an error, never after a result given here)
    first.request_id, first.key = message["id"], _key(protocol)
    if first.key is None:
        return first
    result = _kept().get(first.key)
    if not _usable(result, protocol):
        result = builtin(protocol)  # (the first start after an install or an upgrade)
        first.made = result is not None
    if result is None:
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
