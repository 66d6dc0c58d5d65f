"""An agent's hook event, on the helper's side: read from its raw JSON (only the fields
Mnemo uses, as plain text), a shell command in it, and the answer in the agent's shape.

The hook process (`app.agents.hook`) forwards the event's bytes as they came: parsing JSON
there would cost every prompt the import of `json` and `re`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

MAX_INPUT = 32_000_000  # an event's JSON (a prompt with pasted files); longer is not read
MAX_OUTPUT = 20_000  # of a tool's output: its end names the error
MAX_PROMPT = 8_000  # what of a prompt is searched and read by the rules
GEMINI_EVENT_NAMES = {"session-start": "SessionStart", "prompt": "BeforeAgent"}
# What an agent puts into a prompt's text beside the person's words: Gemini CLI puts the
# session-start hooks' context (Mnemo's own block among them) before the first prompt as
# `<hook_context>…</hook_context>`, and its own setup as `<session_context>`; Claude Code
# marks what it adds `<system-reminder>` or `<user-prompt-submit-hook>`.
INJECTED = ("hook_context", "session_context", "system-reminder", "user-prompt-submit-hook")


def parse(raw: bytes) -> dict:
    """The event's fields Mnemo reads ({} for anything but a JSON object)."""
    try:
        value = json.loads(raw.decode("utf-8", "replace") or "{}")
    except (ValueError, RecursionError):
        return {}
    return plain(value) if isinstance(value, dict) else {}


def own_words(prompt: str) -> str:
    """A prompt without what an agent injected into it (`INJECTED` blocks, wherever they
    are; one whose end was cut off runs to the end): what the person typed, the only text
    Mnemo searches for and reads statements from. Mnemo's own memories, handed back in the
    first prompt, are neither searched for nor observed again."""
    kept, at, cut = [], 0, False
    ahead = {tag: prompt.find(f"<{tag}>") for tag in INJECTED}  # each tag's next start
    while True:
        for tag, found in ahead.items():
            if 0 <= found < at:  # (inside a block just cut: looked for again past it)
                ahead[tag] = prompt.find(f"<{tag}>", at)
        starts = [(found, tag) for tag, found in ahead.items() if found >= 0]
        if not starts:
            kept.append(prompt[at:])
            break
        start, tag = min(starts)
        kept.append(prompt[at:start])
        cut = True
        end = prompt.find(f"</{tag}>", start)
        if end < 0:
            break
        at = end + len(tag) + 3
        ahead[tag] = prompt.find(f"<{tag}>", at)
    return "".join(kept).strip() if cut else prompt


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


def _text(value: Any, most: int) -> str | None:
    """A string of the event as text that can be written anywhere (a lone surrogate from
    a string cut mid-emoji, or a byte that was not UTF-8, becomes U+FFFD), cut at `most`."""
    if not isinstance(value, str):
        return None
    return value[:most].encode("utf-8", "replace").decode("utf-8")


def plain(event: dict) -> dict:
    """What Mnemo reads of an event, and nothing else: flat strings and a few lists, so
    a hostile event (nested thousands deep, megabytes of other fields) never travels on."""
    out: dict[str, Any] = {}
    for key in ("session_id", "conversation_id", "sessionId", "thread_id", "cwd",
                "hook_event_name", "tool_name"):  # fmt: skip
        if (text := _text(event.get(key), 4096)) is not None:
            out[key] = text
    prompt = event.get("prompt")
    if isinstance(prompt, str) and (text := _text(own_words(prompt), MAX_PROMPT)) is not None:
        out["prompt"] = text
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
