"""Which agents there are, where each keeps its config, and what Mnemo puts there.

Formats from each agent's documentation (2026-11): Claude Code `~/.claude.json` (user) or
`.mcp.json` (project) `mcpServers`, hooks in `~/.claude/settings.json`; Codex
`~/.codex/config.toml` `[mcp_servers.NAME]`; Gemini CLI `~/.gemini/settings.json`
`mcpServers`; Cursor `~/.cursor/mcp.json` `mcpServers`; VS Code `Code/User/mcp.json` or
`.vscode/mcp.json` `servers` with `type: stdio`.

An install records a digest of each file it wrote (`agents.json` in Mnemo's data folder):
an uninstall that finds the file as Mnemo left it puts back the exact bytes from before;
one changed since (by the agent or by hand) loses only Mnemo's entries.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # Windows: one `mnemo agents` at a time is left to the user
    fcntl = None

from app.agents import configs
from app.core import paths
from app.core.errors import InputError

NAME = "mnemo"  # the server's name in every agent's config
STARTUP_S = 30  # agents give an MCP server this long to answer (Mnemo loads a model first)


def mnemo_command() -> list[str]:
    """The absolute command of this installation: the bundle's (or the .deb's) program, the
    wheel's or the venv's `mnemo` script, or this Python running the source tree."""
    if getattr(sys, "frozen", False):
        return [sys.executable]
    script = Path(sys.executable).parent / ("mnemo.exe" if os.name == "nt" else "mnemo")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "app"]


def _user_config() -> Path:
    """Where desktop apps keep their settings (VS Code's `Code/User` lives under it)."""
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support"
    if os.name == "nt":
        return Path(os.environ.get("APPDATA", Path.home() / "AppData" / "Roaming"))
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")


def _codex_home() -> Path:
    return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")


@dataclass(frozen=True)
class Agent:
    """One agent: how to find it, its MCP config file and the entry Mnemo puts there."""

    key: str
    name: str
    program: str  # on PATH when the agent is installed
    marker: Callable[[], Path]  # a folder or file that exists once the agent has run
    mcp_file: Callable[[Path | None], Path | None]  # user file, or the project's (None: none)
    servers: str  # the key holding the servers
    entry: Callable[[list[str]], dict[str, Any]]
    hook_file: Callable[[Path | None], Path | None] = lambda _project: None
    # (the agent's name of a hook event, the `mnemo hook` event run there)
    hook_events: tuple[tuple[str, str], ...] = ()
    notes: str = ""

    def present(self) -> bool:
        return shutil.which(self.program) is not None or self.marker().exists()


def _server(command: list[str], **more) -> dict[str, Any]:
    """Mnemo's MCP server entry: this install's command running `mcp`, and what the agent
    wants besides."""
    return {"command": command[0], "args": [*command[1:], "mcp"], **more}


def _stdio(command: list[str], **more) -> dict[str, Any]:
    return {"type": "stdio", **_server(command, **more)}


AGENTS: tuple[Agent, ...] = (
    Agent(
        "claude",
        "Claude Code",
        "claude",
        lambda: Path.home() / ".claude",
        lambda project: project / ".mcp.json" if project else Path.home() / ".claude.json",
        "mcpServers",
        lambda command: _stdio(command, env={}),
        lambda project: (project or Path.home()) / ".claude" / "settings.json",
        (("SessionStart", "session-start"), ("UserPromptSubmit", "prompt")),
    ),
    Agent(
        "codex",
        "Codex CLI",
        "codex",
        _codex_home,
        lambda project: None if project else _codex_home() / "config.toml",
        "mcp_servers",
        lambda command: _server(command, startup_timeout_sec=STARTUP_S),
        notes="Codex reads MCP servers from ~/.codex/config.toml only",
    ),
    Agent(
        "gemini",
        "Gemini CLI",
        "gemini",
        lambda: Path.home() / ".gemini",
        lambda project: (project or Path.home()) / ".gemini" / "settings.json",
        "mcpServers",
        lambda command: _server(command, timeout=STARTUP_S * 1000),
        lambda project: (project or Path.home()) / ".gemini" / "settings.json",
        (("SessionStart", "session-start"), ("BeforeAgent", "prompt")),  # answered in JSON
        notes="Gemini CLI runs MCP servers and hooks only in folders you trusted in it",
    ),
    Agent(
        "cursor",
        "Cursor",
        "cursor",
        lambda: Path.home() / ".cursor",
        lambda project: (project or Path.home()) / ".cursor" / "mcp.json",
        "mcpServers",
        _stdio,
    ),
    Agent(
        "vscode",
        "VS Code",
        "code",
        lambda: _user_config() / "Code" / "User",
        lambda project: (
            project / ".vscode" / "mcp.json"
            if project
            else _user_config() / "Code" / "User" / "mcp.json"
        ),
        "servers",
        _stdio,
    ),
)
BY_KEY = {a.key: a for a in AGENTS}


def chosen(names: list[str] | None) -> list[Agent]:
    """The agents named (every one of them known), or those present on this machine."""
    if not names:
        return [a for a in AGENTS if a.present()]
    unknown = [n for n in names if n not in BY_KEY]
    if unknown:
        raise InputError(f"unknown agent {', '.join(unknown)}; choose from {', '.join(BY_KEY)}")
    return [BY_KEY[n] for n in dict.fromkeys(names)]


# ---- what Mnemo wrote (so an uninstall can put back the bytes from before) -------------
def _state_path() -> Path:
    return paths.data_dir() / "agents.json"


def _state() -> dict[str, dict[str, Any]]:
    try:
        value = json.loads(_state_path().read_text())
        return value if isinstance(value, dict) else {}
    except (OSError, ValueError):
        return {}


def _save_state(state: dict[str, dict[str, Any]]) -> None:
    paths.replace_file(_state_path(), lambda f: f.write(json.dumps(state, indent=2)))


@dataclass
class Outcome:
    """What one install or uninstall did to one file."""

    agent: str
    path: Path
    what: str  # "added", "updated", "already", "removed", "absent", "restored", "refused"
    detail: str = ""


@dataclass
class _Edit:
    """A file read once, changed in memory, written once."""

    path: Path
    fmt: str  # "json" | "toml"
    before: bytes | None = None
    value: Any = None
    changed: bool = False

    def __post_init__(self) -> None:
        self.before = configs.read_bytes(self.path)
        load = configs.load_toml if self.fmt == "toml" else configs.load_json
        self.value = load(self.path, self.before)

    def data(self) -> bytes:
        if self.fmt == "toml":
            import tomlkit

            return tomlkit.dumps(self.value).encode()
        return configs.dump_json(self.path, self.value, self.before)


def _hook_commands(command: list[str], agent: Agent) -> dict[str, str]:
    """Each hook event's command line: this install's `mnemo hook EVENT --agent AGENT`."""
    return {
        name: shlex.join([*command, "hook", event, "--agent", agent.key])
        for name, event in agent.hook_events
    }


def _is_our_hook(hook: Any, ours: set[str] | frozenset[str]) -> bool:
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
        and rest[1] in ("session-start", "prompt")
        and (len(rest) == 2 or rest[2] == "--agent")
    )


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str)) if value is not None else None


def _put_server(
    edit: _Edit, agent: Agent, entry: dict[str, Any], known: list[Any] | None = None
) -> str:
    """Put Mnemo's entry in; one named `mnemo` that Mnemo did not write (`known`: the
    entries it wrote there before) is the user's: refused, never replaced."""
    servers = edit.value.get(agent.servers)
    if servers is None:
        if edit.fmt == "toml":
            import tomlkit

            servers = tomlkit.table(is_super_table=True)
        else:
            servers = {}
        edit.value[agent.servers] = servers
    elif not isinstance(servers, dict):
        raise InputError(f"{edit.path}: `{agent.servers}` is not a table of servers; not changed")
    current = _plain(servers.get(NAME))
    if current == entry:
        return "already"
    if current is not None and current not in (known or []):
        raise InputError(
            f"{edit.path} has a server named {NAME} that Mnemo did not put there; not changed "
            "(rename or remove it, then run this again)"
        )
    servers[NAME] = entry
    edit.changed = True
    return "updated" if current is not None else "added"


def _put_hook_for(edit: _Edit, hooks: dict, name: str, ours: str, every: set[str]) -> str:
    """Mnemo's hook in one event's list: already there, brought up to date (another
    install's, or an older form), or added in a group of its own."""
    groups = hooks.setdefault(name, [])
    if not isinstance(groups, list):
        raise InputError(f"{edit.path}: `hooks.{name}` is not a list; not changed")
    for group in groups:
        inner = group.get("hooks") if isinstance(group, dict) else None
        for hook in inner if isinstance(inner, list) else []:
            if _is_our_hook(hook, every):
                if hook.get("command") == ours:
                    return "already"
                hook["command"] = ours
                edit.changed = True
                return "updated"
    groups.append({"hooks": [{"type": "command", "command": ours}]})
    edit.changed = True
    return "added"


def _put_hook(edit: _Edit, command: list[str], agent: Agent) -> str:
    commands = _hook_commands(command, agent)
    hooks = edit.value.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise InputError(f"{edit.path}: `hooks` is not an object; not changed")
    whats = [
        _put_hook_for(edit, hooks, name, ours, set(commands.values()))
        for name, ours in commands.items()
    ]
    return next((w for w in ("added", "updated") if w in whats), "already")


def _drop_hooks(value: dict[str, Any], ours: set[str]) -> bool:
    """Take Mnemo's hooks out of every event of `value` (a config's plain or editable
    value), and the groups and lists they leave empty; whether anything was taken."""
    hooks = value.get("hooks")
    if not isinstance(hooks, dict):
        return False
    taken = False
    for name in list(hooks):
        groups = hooks[name]
        if not isinstance(groups, list):
            continue
        kept = []
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if isinstance(inner, list):
                left = [h for h in inner if not _is_our_hook(h, ours)]
                if len(left) != len(inner):
                    taken = True
                    if not left:
                        continue
                    group = {**group, "hooks": left}
            kept.append(group)
        if kept != groups:
            hooks[name] = kept
            if not kept:
                del hooks[name]
    if taken and not hooks:
        del value["hooks"]
    return taken


def _drop_hook(edit: _Edit, command: list[str], agent: Agent) -> bool:
    if _drop_hooks(edit.value, set(_hook_commands(command, agent).values())):
        edit.changed = True
    return edit.changed


def _files(agent: Agent, project: Path | None, hooks: bool) -> dict[Path, list[str]]:
    """The files an agent's wiring touches and what goes in each ("server", "hook")."""
    out: dict[Path, list[str]] = {}
    mcp = agent.mcp_file(project)
    if mcp is not None:
        out.setdefault(mcp, []).append("server")
    hook = agent.hook_file(project) if hooks else None
    if hook is not None:
        out.setdefault(hook, []).append("hook")
    return out


def _plain_of(fmt: str, data: bytes | None) -> dict[str, Any]:
    if not data:
        return {}
    text = data.decode("utf-8-sig")
    return tomllib.loads(text) if fmt == "toml" else json.loads(text)


def _without_ours(value: dict[str, Any], agent: Agent, parts: list[str], ours: set[str]) -> Any:
    """A config's plain value with Mnemo's entries (and containers left empty) taken out."""
    value = json.loads(json.dumps(value, default=str))
    servers = value.get(agent.servers)
    if "server" in parts and isinstance(servers, dict):
        servers.pop(NAME, None)
        if not servers:
            value.pop(agent.servers)
    if "hook" in parts:
        _drop_hooks(value, ours)
    return value


def _check_only_ours(
    edit: _Edit, data: bytes, agent: Agent, parts: list[str], ours: set[str]
) -> None:
    """Refuse an edit that would change anything but Mnemo's entries (read back by a parser
    of the format: tomlkit put a table between a user's dotted keys once)."""
    try:
        before = _without_ours(_plain_of(edit.fmt, edit.before), agent, parts, ours)
        after = _without_ours(_plain_of(edit.fmt, data), agent, parts, ours)
    except (ValueError, tomllib.TOMLDecodeError):
        after, before = None, True
    if before != after:
        raise InputError(
            f"{edit.path}: Mnemo's edit would change other entries of it (its layout is one "
            "Mnemo cannot edit safely); not changed"
        )


@contextlib.contextmanager
def _locked():
    """One `mnemo agents` at a time on this machine's record of what it wrote."""
    path = paths.data_dir() / "agents.lock"
    with open(path, "a+") as lock:
        if fcntl is not None:
            fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            if fcntl is not None:
                fcntl.flock(lock, fcntl.LOCK_UN)


def _by_hand(agent: Agent, parts: list[str], command: list[str]) -> str:
    entry: dict[str, Any] = {}
    if "server" in parts:
        entry[agent.servers] = {NAME: agent.entry(command)}
    if "hook" in parts:
        entry["hooks"] = {
            name: [{"hooks": [{"type": "command", "command": line}]}]
            for name, line in _hook_commands(command, agent).items()
        }
    return json.dumps(entry)


def _install_file(
    agent: Agent, path: Path, parts: list[str], command: list[str], state: dict
) -> list[Outcome]:
    """Put Mnemo's entries in one file, in one write."""
    record = state.get(str(path)) or {}
    edit = _Edit(path, "toml" if path.suffix == ".toml" else "json")
    whats = []
    for part in parts:
        if part == "server":
            known = list(record.get("entries", {}).values())
            whats.append(_put_server(edit, agent, agent.entry(command), known))
        else:
            whats.append(_put_hook(edit, command, agent))
    if edit.changed:
        data = edit.data()
        _check_only_ours(edit, data, agent, parts, set(_hook_commands(command, agent).values()))
        configs.write(path, data, edit.before)
        wrote_last = record.get("wrote")
        if not record or wrote_last != (configs.digest(edit.before) if edit.before else None):
            # First touch, or the file changed since Mnemo last wrote it: what is there now
            # is what an uninstall may put back (never an older version)
            record = {"created": edit.before is None, "entries": {}}
            original = path.with_name(path.name + ".mnemo-original")
            if edit.before is not None:
                configs.put(original, edit.before, path.stat().st_mode & 0o777)
            elif original.exists():
                original.unlink()
        record["wrote"] = configs.digest(data)
        if "server" in parts:
            record.setdefault("entries", {})[agent.key] = agent.entry(command)
        state[str(path)] = record
    return [Outcome(agent.key, path, what, part) for what, part in zip(whats, parts, strict=True)]


def install(
    names: list[str] | None = None, project: Path | None = None, hooks: bool = True
) -> list[Outcome]:
    """Merge Mnemo's MCP server (and session-start hook) into each agent's config."""
    command = mnemo_command()
    agents = chosen(names)
    if not agents:
        raise InputError(
            "no agent found on this machine (looked for "
            + ", ".join(a.name for a in AGENTS)
            + "); name one: mnemo agents install claude"
        )
    done: list[Outcome] = []
    with _locked():
        state = _state()
        for agent in agents:
            files = _files(agent, project, hooks)
            if not files:
                done.append(Outcome(agent.key, Path(), "skipped", agent.notes))
            for path, parts in files.items():
                try:
                    done += _install_file(agent, path, parts, command, state)
                except InputError as exc:
                    hand = _by_hand(agent, parts, command)
                    done.append(Outcome(agent.key, path, "refused", f"{exc}: {hand}"))
        _save_state(state)
    return done


def _restore(path: Path, current: bytes, created: bool) -> str:
    """Put back a file as it was before Mnemo changed it ('' when that is unknown)."""
    original = path.with_name(path.name + ".mnemo-original")
    if created:
        configs.remove(path)
        return "removed: Mnemo had made it"
    if original.exists():
        configs.write(path, original.read_bytes(), current)
        original.unlink()
        return "its bytes from before"
    return ""


def _uninstall_file(
    agent: Agent, path: Path, parts: list[str], command: list[str], state: dict
) -> list[Outcome]:
    record = state.get(str(path))
    current = configs.read_bytes(path)
    if current is None:
        state.pop(str(path), None)
        return []
    if record and record.get("wrote") == configs.digest(current):
        restored = _restore(path, current, bool(record.get("created")))
        if restored:
            state.pop(str(path), None)
            return [Outcome(agent.key, path, "restored", restored)]
    edit = _Edit(path, "toml" if path.suffix == ".toml" else "json")
    known = list((record or {}).get("entries", {}).values()) + [agent.entry(command)]
    out = []
    if "server" in parts:
        servers = edit.value.get(agent.servers)
        if isinstance(servers, dict) and NAME in servers:
            if _plain(servers[NAME]) in known:
                del servers[NAME]
                edit.changed = True
            else:
                out.append(Outcome(agent.key, path, "kept", f"its {NAME} server is not Mnemo's"))
    if "hook" in parts:
        _drop_hook(edit, command, agent)
    if edit.changed:
        data = edit.data()
        _check_only_ours(edit, data, agent, parts, set(_hook_commands(command, agent).values()))
        configs.write(path, data, current)
        out.append(Outcome(agent.key, path, "removed", ", ".join(parts)))
    state.pop(str(path), None)
    original = path.with_name(path.name + ".mnemo-original")
    if original.exists():  # changed since: no use now
        original.unlink()
    return out


def uninstall(
    names: list[str] | None = None, project: Path | None = None, hooks: bool = True
) -> list[Outcome]:
    """Take Mnemo's entries out again; a file as Mnemo left it gets its old bytes back."""
    command = mnemo_command()
    done: list[Outcome] = []
    with _locked():
        state = _state()
        for agent in chosen(names) if names else list(AGENTS):
            for path, parts in _files(agent, project, hooks).items():
                try:
                    done += _uninstall_file(agent, path, parts, command, state)
                except InputError as exc:
                    done.append(Outcome(agent.key, path, "refused", str(exc)))
        _save_state(state)
    return done


def answers(command: list[str], timeout: float = 60) -> str | None:
    """Whether an MCP server started with `command` answers `initialize` (None) or what
    went wrong, as an agent would start it."""
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "mnemo-agents-status", "version": "1"},
        },
    }
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
    except OSError as exc:
        return f"cannot start {command[0]}: {exc.strerror}"
    try:
        out, _ = proc.communicate(json.dumps(hello) + "\n", timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return f"no answer in {timeout:.0f} s"
    for line in out.splitlines():
        try:
            reply = json.loads(line)
        except ValueError:
            continue
        if reply.get("id") == 1 and "result" in reply:
            return None
    took = time.monotonic() - started
    return f"it exited without answering (status {proc.returncode}, {took:.1f} s)"


def _hook_state(value: dict[str, Any], command: list[str], agent: Agent) -> str:
    """ "wired" (every event has this install's hook), "partly" (some have), "another
    install" (only another Mnemo's hooks are there, or an older form), or "absent"."""
    commands = _hook_commands(command, agent)
    hooks = value.get("hooks") if isinstance(value.get("hooks"), dict) else {}
    found: dict[str, list[str]] = {}
    for name in hooks:
        groups = hooks[name] if isinstance(hooks[name], list) else []
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            for hook in inner if isinstance(inner, list) else []:
                if _is_our_hook(hook, set(commands.values())):
                    found.setdefault(name, []).append(hook["command"])
    wired = [name for name, line in commands.items() if line in found.get(name, [])]
    if len(wired) == len(commands):
        return "wired"
    if wired:
        return "partly"
    return "another install" if found else "absent"


def status(project: Path | None = None, check: bool = True) -> list[dict[str, Any]]:
    """Per agent: present, where its config is, whether Mnemo's server and hook are in it
    (this installation's, or another's), and whether this installation's server answers.
    Only Mnemo's own command is ever started: a config's entry may name any program."""
    command = mnemo_command()
    answer: list[str | None] = []
    read: dict[Path, _Edit] = {}  # Gemini's server and hook share one file: read once

    def config(path: Path) -> _Edit:
        if path not in read:
            read[path] = _Edit(path, "toml" if path.suffix == ".toml" else "json")
        return read[path]

    out = []
    for agent in AGENTS:
        row: dict[str, Any] = {"agent": agent.key, "name": agent.name, "present": agent.present()}
        row["notes"] = agent.notes
        mcp = agent.mcp_file(project)
        row["config"] = str(mcp) if mcp else None
        row["server"], row["hook"], row["problem"], row["answers"] = "absent", None, None, None
        try:
            if mcp is not None:
                servers = config(mcp).value.get(agent.servers)
                entry = _plain(servers.get(NAME)) if isinstance(servers, dict) else None
                if entry is not None:
                    mine = entry == agent.entry(command)
                    row["server"] = "wired" if mine else "another entry named mnemo"
                    if mine and check:
                        if not answer:
                            answer.append(answers([*command, "mcp"]))
                        row["answers"], row["problem"] = answer[0] is None, answer[0]
            hook_path = agent.hook_file(project)
            if hook_path is not None:
                row["hook"] = _hook_state(config(hook_path).value, command, agent)
        except InputError as exc:
            row["problem"] = str(exc)
        out.append(row)
    return out
