"""`mnemo hook EVENT --agent AGENT`: what an agent's hook runs, kept light.

The agent starts this process at a session's start and before every prompt, with the
event's JSON on standard input. It asks the hook helper (`app.agents.helper`, a resident
process with the model loaded) over a local socket and prints what the agent should add to
its context, in the shape that agent reads. No helper yet: it starts one (detached) and
waits for it a little; a helper that cannot start makes the session-start hook do the work
in this process (the slow path), and a prompt go without memories, said in one line on
standard error. A hook never fails the agent: it always exits 0.

This module imports only the standard library and the socket helpers: every prompt pays
for its start-up.
"""

from __future__ import annotations

import json
import os
import re
import socket
import sys
import time
from pathlib import Path
from typing import Any

from app import __version__, local_socket

# The helper is asked only by hooks of the same code: a newer install's hook makes an older
# helper exit (its reply says so) and starts its own.
VERSION = f"{__version__}:{int(os.stat(__file__).st_mtime)}"
EVENTS = ("session-start", "prompt", "tool")
MAX_INPUT = 32_000_000  # an event's JSON (a prompt with pasted files); longer is not read
MAX_OUTPUT = 20_000  # of a tool's output: its end names the error
MAX_PROMPT = 8_000  # what of a prompt goes to the helper (its start says what it is about)
WAIT_S = {"session-start": 30.0, "prompt": 4.0, "tool": 4.0}  # for a helper just started to answer
ANSWER_S = 60.0  # for an answer once connected (the first waits for the model to load)
# How each agent names the prompt-time event in the JSON it reads back
EVENT_NAMES = {"session-start": "SessionStart", "prompt": "UserPromptSubmit"}
GEMINI_EVENT_NAMES = {"session-start": "SessionStart", "prompt": "BeforeAgent"}


def socket_path() -> Path:
    return local_socket.socket_path("-hook")


def session_of(event: dict) -> str:
    """The agent's id of the session (or conversation) an event belongs to, or ''."""
    for key in ("session_id", "conversation_id", "sessionId", "thread_id"):
        value = event.get(key)
        if isinstance(value, str) and value:
            return value[:200]
    return ""


def folder_of(event: dict) -> Path | None:
    """The project folder an event names (`cwd`, or Cursor's first workspace root)."""
    folder = event.get("cwd")
    roots = event.get("workspace_roots")
    if not isinstance(folder, str) and isinstance(roots, list) and roots:
        folder = roots[0]
    return Path(folder) if isinstance(folder, str) and Path(folder).is_dir() else None


SHELL_TOOLS = ("Bash", "run_shell_command", "shell", "Shell", "exec_command", "local_shell")


def shell_call(event: dict) -> tuple[str, bool, str] | None:
    """A shell command an agent ran, from its after-tool event: (command, whether it
    worked, its output), or None for another tool or a shape not known."""
    if event.get("tool_name") not in SHELL_TOOLS:
        return None
    given = event.get("tool_input") if isinstance(event.get("tool_input"), dict) else {}
    command = given.get("command")
    if isinstance(command, list):
        command = " ".join(str(w) for w in command)
    if not isinstance(command, str):
        return None
    answer = event.get("tool_response")
    if event.get("hook_event_name") == "PostToolUseFailure":
        error = event.get("error")
        return command, False, error if isinstance(error, str) else json.dumps(answer)
    if isinstance(answer, str):
        return command, True, answer
    if not isinstance(answer, dict):
        return None
    if isinstance(answer.get("llmContent"), str):  # Gemini CLI: "Exit Code: N" when not 0
        text = answer["llmContent"]
        failed = bool(re.search(r"^Exit Code: [1-9]", text, re.M)) or bool(answer.get("error"))
        return command, not failed, text
    code = next(
        (
            answer[k]
            for k in ("exit_code", "exitCode", "returncode")
            if isinstance(answer.get(k), int)
        ),
        None,
    )
    failed = code not in (None, 0) or answer.get("is_error") is True or answer.get("error")
    output = "\n".join(
        str(answer.get(k)) for k in ("stdout", "stderr", "output", "error") if answer.get(k)
    )
    return command, not failed and not answer.get("interrupted"), output


def _text(value: Any, most: int) -> str | None:
    """A string of the event as text that can be written anywhere (a lone surrogate from
    a string cut mid-emoji, or a byte that was not UTF-8, becomes U+FFFD), cut at `most`."""
    if not isinstance(value, str):
        return None
    return value[:most].encode("utf-8", "replace").decode("utf-8")


def _plain(event: dict) -> dict:
    """What Mnemo reads of an event, and nothing else: flat strings and a few lists, so
    a hostile event (nested thousands deep, megabytes of other fields) never travels on."""
    out: dict[str, Any] = {}
    for key in ("session_id", "conversation_id", "sessionId", "thread_id", "cwd",
                "hook_event_name", "tool_name"):  # fmt: skip
        if (text := _text(event.get(key), 4096)) is not None:
            out[key] = text
    if (prompt := _text(event.get("prompt"), MAX_PROMPT)) is not None:
        out["prompt"] = prompt
    if (error := _text(event.get("error"), MAX_OUTPUT)) is not None:
        out["error"] = error
    roots = event.get("workspace_roots")
    if isinstance(roots, list):
        out["workspace_roots"] = [r for r in (_text(x, 4096) for x in roots[:8]) if r]
    given = event.get("tool_input")
    if isinstance(given, dict):
        command = given.get("command")
        if isinstance(command, list):
            command = " ".join(str(w) for w in command[:200] if isinstance(w, str | int))
        if (text := _text(command, 4096)) is not None:
            out["tool_input"] = {"command": text}
    answer = event.get("tool_response")
    if isinstance(answer, str):
        out["tool_response"] = _text(answer, MAX_OUTPUT)
    elif isinstance(answer, dict):
        kept = {}
        for key, value in answer.items():
            if isinstance(value, bool | int) and not isinstance(value, float):
                kept[key] = value
            elif (text := _text(value, MAX_OUTPUT)) is not None:
                kept[key] = text
        out["tool_response"] = {k: kept[k] for k in list(kept)[:20]}
    return out


def read_event(stream=None) -> dict:
    """The event's JSON from standard input, as `_plain` keeps it ({} when there is none,
    or it is not a JSON object)."""
    stream = sys.stdin if stream is None else stream
    if stream is None or stream.isatty():
        return {}
    try:
        value = json.loads(stream.read(MAX_INPUT) or "{}")
    except (ValueError, UnicodeDecodeError, RecursionError):
        return {}
    return _plain(value) if isinstance(value, dict) else {}


def render(agent: str, event: str, text: str) -> str:
    """What the agent reads on standard output: plain text (Claude Code and Codex add it
    to the context), or JSON (Gemini CLI shows plain text to the user only; Cursor)."""
    if event == "tool":  # nothing to add after a tool (Gemini CLI reads JSON only)
        return "{}" if agent == "gemini" else ""
    if agent == "gemini":
        name = GEMINI_EVENT_NAMES[event]
        out = {"hookEventName": name, "additionalContext": text} if text else {}
        return json.dumps({"hookSpecificOutput": out} if out else {}, ensure_ascii=False)
    if agent == "cursor":
        if event == "prompt":  # beforeSubmitPrompt may only let the prompt through
            return json.dumps({"continue": True})
        return json.dumps({"additional_context": text} if text else {}, ensure_ascii=False)
    return text


def _connect(path: Path, timeout: float) -> socket.socket | None:
    try:
        if not local_socket.ours(path):
            return None
    except local_socket.SocketError:
        raise
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(timeout)
    try:
        conn.connect(str(path))
    except OSError:
        conn.close()
        return None
    uid = local_socket.peer_uid(conn.fileno())
    if uid is not None and uid != os.geteuid():
        conn.close()
        raise local_socket.foreign(path, uid)
    return conn


def ask(event: str, agent: str, data: dict, path: Path | None = None) -> dict | None:
    """The helper's reply to one request, or None when no helper answers."""
    path = path or socket_path()
    conn = _connect(path, 2.0)
    if conn is None:
        return None
    with conn:
        conn.settimeout(ANSWER_S)
        request = {"v": VERSION, "event": event, "agent": agent, "input": data}
        conn.sendall(json.dumps(request).encode() + b"\n")
        chunks = []
        while True:
            chunk = conn.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    try:
        reply = json.loads(b"".join(chunks) or b"null")
    except ValueError:
        return None
    return reply if isinstance(reply, dict) else None


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
        cwd=Path(__file__).resolve().parent.parent.parent,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )


def lock_path() -> Path:
    """The helper's lock file: its pid and the socket it listens on ("PID\nPATH")."""
    from app.core import paths

    return paths.state_dir() / "hook-helper.lock"


def advertised() -> Path | None:
    """The socket the running helper said it listens on (a hook started with another
    XDG_RUNTIME_DIR or TMPDIR computes another path for the same data folder)."""
    try:
        lines = lock_path().read_text().splitlines()
    except OSError:
        return None
    return Path(lines[1]) if len(lines) > 1 and lines[1] else None


def _ask_any(event: str, agent: str, data: dict, path: Path) -> dict | None:
    reply = ask(event, agent, data, path)
    if reply is None and (other := advertised()) not in (None, path):
        reply = ask(event, agent, data, other)
    return reply


def ask_or_start(event: str, agent: str, data: dict) -> dict | None:
    """Ask the helper; none there (or an older one that stepped down): start one and wait up
    to WAIT_S for it. None when no helper answered in time."""
    path = socket_path()
    reply = _ask_any(event, agent, data, path)
    if reply is not None and not reply.get("restart"):
        return reply
    if reply is not None:  # it is exiting: wait for its socket to go
        _wait(lambda: not path.exists(), 5.0)
    proc = start_helper()
    deadline = time.monotonic() + WAIT_S[event]
    while time.monotonic() < deadline:
        reply = _ask_any(event, agent, data, path)
        if reply is not None and not reply.get("restart"):
            return reply
        if proc.poll() not in (None, 0):  # it failed (a helper already serving exits 0)
            return None
        time.sleep(0.01)
    return None


def _wait(condition, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)


def _in_process(event: str, data: dict) -> str:
    """The slow path, without a helper: the session-start block made here."""
    if event != "session-start":
        return ""
    from app.core.engine import Engine

    engine = Engine()
    try:
        return engine.context(cwd=folder_of(data)).markdown()
    finally:
        engine.close()


def _say(line: str) -> None:
    if sys.stderr is not None:
        print(f"mnemo hook: {line}", file=sys.stderr)


def run(event: str, agent: str, data: dict) -> str:
    """What to print for one event (a problem is said on standard error, never raised)."""
    try:
        reply = ask_or_start(event, agent, data)
    except local_socket.SocketError as exc:
        _say(str(exc))
        reply, refused = None, True
    except OSError as exc:
        _say(f"the memory helper did not answer ({exc})")
        reply, refused = None, False
    else:
        refused = False
    if reply is None:
        try:
            text = _in_process(event, data)
        except Exception as exc:  # the agent must go on whatever happened here
            _say(f"no memories this time: {exc}")
            text = ""
        if event == "prompt" and not refused:
            _say("the memory helper is starting; memories come with the next prompt")
    elif "error" in reply:
        _say(str(reply["error"]))
        text = ""
    else:
        text = reply.get("text") or ""
    return render(agent, event, text)


USAGE = (
    "usage: mnemo hook {session-start,prompt,tool} [--agent claude|codex|gemini|cursor] "
    "< event.json\n       mnemo hook serve | stop | status"
)


def _usage() -> None:
    if sys.stderr is not None:  # (with standard error closed, never on the agent's output)
        print(USAGE, file=sys.stderr)


def main(argv: list[str]) -> int:
    """`mnemo hook …` (parsed by hand: argparse costs a prompt 5 ms)."""
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    event, rest = argv[0], argv[1:]
    if event in ("serve", "stop", "status") and not rest:
        from app.agents import helper

        return helper.command(event)
    agent = "claude"
    if len(rest) == 2 and rest[0] == "--agent":
        agent = rest[1]
    elif rest:
        _usage()
        return 2
    if event not in EVENTS or agent not in ("claude", "codex", "gemini", "cursor"):
        _usage()
        return 2
    out = run(event, agent, read_event())
    try:
        if out:
            print(out, flush=True)
    except (BrokenPipeError, OSError):  # the agent stopped reading: nothing to tell it
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0
