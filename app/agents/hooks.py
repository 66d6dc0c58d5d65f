"""Mnemo's hook entries in an agent's config: put in, found, taken out, and trusted.

Two layouts, from the agents' documentation:

- nested (Claude Code, Codex, Gemini CLI): `hooks.EVENT` is a list of groups, each
  `{"matcher"?: …, "hooks": [{"type": "command", "command": …}]}`;
- flat (Cursor): `{"version": 1, "hooks": {"EVENT": [{"command": …}]}}`.

Codex runs a hook only once it is trusted: `[hooks.state."<hooks.json>:<event>:<group>:
<handler>"] trusted_hash = "sha256:…"` in its config.toml, the hash of the handler's group
as Codex normalizes it (`codex app-server` `hooks/list` reports the same `currentHash`).
An install trusts Mnemo's own hooks there, and nothing else.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from pathlib import Path
from typing import Any

from app.core.errors import InputError

MNEMO_EVENTS = ("session-start", "prompt", "tool")
CODEX_TIMEOUT_S = 600  # Codex's default, part of the hash it trusts


def commands(
    command: list[str], agent: str, events: tuple[tuple[str, str, str | None], ...]
) -> dict[str, tuple[str, str | None]]:
    """Each hook event's command line (`mnemo hook EVENT --agent AGENT` of this install)
    and its matcher."""
    return {
        name: (shlex.join([*command, "hook", event, "--agent", agent]), matcher)
        for name, event, matcher in events
    }


def lines(wanted: dict[str, tuple[str, str | None]]) -> set[str]:
    return {line for line, _ in wanted.values()}


def is_ours(hook: Any, ours: set[str] | frozenset[str]) -> bool:
    """Mnemo's hook: this install's command, or another Mnemo install's (a program named
    `mnemo` running exactly `context`, `context --hook AGENT` or `hook EVENT [--agent
    AGENT]`); never a user's own."""
    command = hook.get("command") if isinstance(hook, dict) else None
    if not isinstance(command, str):
        return False
    if command in ours:
        return True
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    program = Path(words[0]).name if words else ""
    rest = words[1:]
    if program not in ("mnemo", "mnemo.exe"):
        return False
    if rest == ["context"] or (len(rest) == 3 and rest[:2] == ["context", "--hook"]):
        return True
    return (
        len(rest) in (2, 4)
        and rest[0] == "hook"
        and rest[1] in MNEMO_EVENTS
        and (len(rest) == 2 or rest[2] == "--agent")
    )


def _handlers(item: Any) -> list | None:
    """A nested group's handler list (None: the item is a flat entry or not a group)."""
    inner = item.get("hooks") if isinstance(item, dict) else None
    return inner if isinstance(inner, list) else None


def _put_one(
    path: Path, hooks: dict, name: str, line: str, matcher: str | None, every: set, flat: bool
) -> str:
    """Mnemo's hook in one event's list: already there, brought up to date (another
    install's, or an older form), or added (in a group of its own, when nested)."""
    items = hooks.setdefault(name, [])
    if not isinstance(items, list):
        raise InputError(f"{path}: `hooks.{name}` is not a list; not changed")
    for item in items:
        for hook in [item] if flat else (_handlers(item) or []):
            if is_ours(hook, every):
                if hook.get("command") == line:
                    return "already"
                hook["command"] = line
                return "updated"
    if flat:
        items.append({"command": line})
    else:
        group: dict[str, Any] = {"matcher": matcher} if matcher else {}
        group["hooks"] = [{"type": "command", "command": line}]
        items.append(group)
    return "added"


def put(
    value: dict[str, Any], path: Path, wanted: dict[str, tuple[str, str | None]], flat: bool
) -> str:
    """Put every wanted hook in `value` (a config's editable value): "added", "updated" or
    "already" (the strongest of what happened to each)."""
    hooks = value.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise InputError(f"{path}: `hooks` is not an object; not changed")
    if flat:
        value.setdefault("version", 1)
    whats = [
        _put_one(path, hooks, name, line, matcher, lines(wanted), flat)
        for name, (line, matcher) in wanted.items()
    ]
    return next((w for w in ("added", "updated") if w in whats), "already")


def drop(value: dict[str, Any], ours: set[str]) -> bool:
    """Take Mnemo's hooks out of every event of `value` (either layout), and the groups and
    lists they leave empty; whether anything was taken."""
    hooks = value.get("hooks")
    if not isinstance(hooks, dict):
        return False
    taken = False
    for name in list(hooks):
        items = hooks[name]
        if not isinstance(items, list):
            continue
        kept = []
        for item in items:
            inner = _handlers(item)
            if inner is None:
                if is_ours(item, ours):  # a flat entry
                    taken = True
                    continue
            else:
                left = [h for h in inner if not is_ours(h, ours)]
                if len(left) != len(inner):
                    taken = True
                    if not left:
                        continue
                    item = {**item, "hooks": left}
            kept.append(item)
        if kept != items:
            hooks[name] = kept
            if not kept:
                del hooks[name]
    if taken and not hooks:
        del value["hooks"]
        if value.get("version") == 1 and set(value) == {"version"}:
            del value["version"]  # Mnemo's flat file, now empty
    return taken


def _found(value: dict[str, Any], ours: set[str]) -> dict[str, list[str]]:
    """Each event's Mnemo hooks (their command lines), this install's or another's."""
    hooks = value.get("hooks") if isinstance(value.get("hooks"), dict) else {}
    found: dict[str, list[str]] = {}
    for name, items in hooks.items():
        for item in items if isinstance(items, list) else []:
            inner = _handlers(item)
            for hook in [item] if inner is None else inner:
                if is_ours(hook, ours):
                    found.setdefault(name, []).append(hook["command"])
    return found


def states(value: dict[str, Any], wanted: dict[str, tuple[str, str | None]]) -> dict[str, str]:
    """Per wanted event: "wired" (this install's hook is there), "another install" (only
    another Mnemo's, or an older form) or "absent"."""
    found = _found(value, lines(wanted))
    return {name: _one_state(line, found.get(name, [])) for name, (line, _) in wanted.items()}


def _one_state(line: str, there: list[str]) -> str:
    if line in there:
        return "wired"
    return "another install" if there else "absent"


def state(value: dict[str, Any], wanted: dict[str, tuple[str, str | None]]) -> str:
    """ "wired" (every event has this install's hook), "partly" (some have), "another
    install" (only another Mnemo's hooks are there, or an older form), or "absent"."""
    found = _found(value, lines(wanted))
    wired = [name for name, (line, _) in wanted.items() if line in found.get(name, [])]
    if len(wired) == len(wanted):
        return "wired"
    if wired:
        return "partly"
    return "another install" if found else "absent"


# ---- Codex's trust ---------------------------------------------------------------------
def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def codex_hash(event: str, group: dict[str, Any]) -> str:
    """The hash Codex trusts a hook group by: its normalized form, key-sorted JSON."""
    handlers = []
    for hook in _handlers(group) or []:
        handlers.append(
            {
                "type": hook.get("type", "command"),
                "command": hook.get("command"),
                "timeout": hook.get("timeout", CODEX_TIMEOUT_S),
                "async": bool(hook.get("async", False)),
            }
        )
    form: dict[str, Any] = {"event_name": _snake(event), "hooks": handlers}
    if group.get("matcher"):
        form["matcher"] = group["matcher"]
    text = json.dumps(form, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def codex_trust(hooks_value: dict[str, Any], hooks_path: Path, ours: set[str]) -> dict[str, str]:
    """The trust entries (key → hash) of Mnemo's hooks in a Codex hooks.json's value."""
    out = {}
    hooks = hooks_value.get("hooks") if isinstance(hooks_value.get("hooks"), dict) else {}
    for name, groups in hooks.items():
        for g, group in enumerate(groups if isinstance(groups, list) else []):
            for h, hook in enumerate(_handlers(group) or []):
                if isinstance(hook, dict) and hook.get("command") in ours:
                    out[f"{hooks_path}:{_snake(name)}:{g}:{h}"] = codex_hash(name, group)
    return out


def _state_table(value: Any, create: bool) -> Any:
    hooks = value.get("hooks")
    if hooks is None and create:
        import tomlkit

        hooks = value["hooks"] = tomlkit.table(is_super_table=True)
    if not isinstance(hooks, dict):
        return None
    table = hooks.get("state")
    if table is None and create:
        import tomlkit

        table = hooks["state"] = tomlkit.table(is_super_table=True)
    return table if isinstance(table, dict) else None


def put_trust(value: Any, path: Path, entries: dict[str, str]) -> str:
    """Trust Mnemo's hooks in Codex's config.toml value: "added", "updated" or "already"."""
    table = _state_table(value, create=bool(entries))
    if table is None:
        if entries:
            raise InputError(f"{path}: `hooks.state` is not a table; not changed")
        return "already"
    what = "already"
    for key, digest in entries.items():
        current = table.get(key)
        if isinstance(current, dict) and current.get("trusted_hash") == digest:
            continue
        if isinstance(current, dict):
            current["trusted_hash"] = digest
            what = "updated"
        else:
            import tomlkit

            entry = tomlkit.table()
            entry["trusted_hash"] = digest
            table[key] = entry
            what = "added" if what == "already" else what
    return what


def drop_trust(value: Any, hooks_path: Path, ours: set[str]) -> bool:
    """Take out the trust entries for `hooks_path` of Mnemo's hooks (`ours`: their command
    lines; an entry is Mnemo's when its hash is that of a group holding one of them
    alone); whether any went. A user's own trust entries stay."""
    table = _state_table(value, create=False)
    if table is None:
        return False
    prefix = f"{hooks_path}:"
    taken = False
    for key in list(table):
        entry = table[key]
        if not (key.startswith(prefix) and isinstance(entry, dict)):
            continue
        name = "".join(p.capitalize() for p in key[len(prefix) :].split(":")[0].split("_"))
        mine = {codex_hash(name, {"hooks": [{"type": "command", "command": c}]}) for c in ours}
        if entry.get("trusted_hash") in mine:
            del table[key]
            taken = True
    hooks = value.get("hooks")
    if taken and not table:
        del hooks["state"]
    if taken and isinstance(hooks, dict) and not hooks:
        del value["hooks"]
    return taken


# ---- in a user's words ------------------------------------------------------------------
# A hook's state (`app.agents.hooks.states`) in the status line, in the order said
_HOOK_WORDS = {"wired": "wired", "another install": "another install's", "absent": "missing"}


def _labels(hooks: list[dict]) -> dict[str, list[str]]:
    """The hooks of one agent by state, in a user's words: "session-start", "prompt", or the
    tool a capture hook watches ("Bash"); the agent's event beside it when the events of one
    hook differ (Claude Code's Bash hook is two: after a command worked, after one failed)."""
    by_label: dict[str, list[dict]] = {}
    for hook in hooks:
        by_label.setdefault(hook["matcher"] or hook["runs"], []).append(hook)
    out: dict[str, list[str]] = {}
    for label, group in by_label.items():
        alike = len({hook["state"] for hook in group}) == 1
        for hook in group[:1] if alike else group:
            said = label if alike else f"{label} ({hook['event']})"
            out.setdefault(hook["state"], []).append(said)
    return out


def said(row: dict) -> str:
    """An agent's hooks (a row of `wiring.status`) in a user's words: `wired: session-start,
    prompt, Bash`, what is not wired in brackets after (`(missing: prompt)`); `absent` when
    none is there. `mnemo agents status` and the settings' Agents page say it."""
    labels = _labels(row["hooks"])
    if not labels or set(labels) == {"absent"}:
        return "absent"
    states = [state for state in _HOOK_WORDS if state in labels]
    first = row["hook"] if states == ["wired"] else _HOOK_WORDS[states[0]]  # (Codex: trusted?)
    rest = "; ".join(f"{_HOOK_WORDS[s]}: {', '.join(labels[s])}" for s in states[1:])
    return f"{first}: {', '.join(labels[states[0]])}" + (f" ({rest})" if rest else "")
