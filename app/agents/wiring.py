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

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
    hook_args: tuple[str, ...] = ("context",)  # what the session-start hook runs
    notes: str = ""

    def present(self) -> bool:
        return shutil.which(self.program) is not None or self.marker().exists()


def _stdio(command: list[str], **more) -> dict[str, Any]:
    return {"type": "stdio", "command": command[0], "args": [*command[1:], "mcp"], **more}


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
    ),
    Agent(
        "codex",
        "Codex CLI",
        "codex",
        _codex_home,
        lambda project: None if project else _codex_home() / "config.toml",
        "mcp_servers",
        lambda command: {
            "command": command[0],
            "args": [*command[1:], "mcp"],
            "startup_timeout_sec": STARTUP_S,
        },
        notes="Codex reads MCP servers from ~/.codex/config.toml only",
    ),
    Agent(
        "gemini",
        "Gemini CLI",
        "gemini",
        lambda: Path.home() / ".gemini",
        lambda project: (project or Path.home()) / ".gemini" / "settings.json",
        "mcpServers",
        lambda command: {
            "command": command[0],
            "args": [*command[1:], "mcp"],
            "timeout": STARTUP_S * 1000,
        },
        lambda project: (project or Path.home()) / ".gemini" / "settings.json",
        ("context", "--hook", "gemini"),  # its hooks answer in JSON
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
class Change:
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
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.before = configs.read_bytes(self.path)
        load = configs.load_toml if self.fmt == "toml" else configs.load_json
        self.value = load(self.path, self.before)

    def data(self) -> bytes:
        if self.fmt == "toml":
            import tomlkit

            return tomlkit.dumps(self.value).encode()
        return configs.dump_json(self.value, self.before)


def _hook_command(command: list[str], agent: Agent) -> str:
    return shlex.join([*command, *agent.hook_args])


def _hook(command: list[str], agent: Agent) -> dict[str, str]:
    return {"type": "command", "command": _hook_command(command, agent)}


def _is_our_hook(hook: Any, ours: str) -> bool:
    """Mnemo's hook: this install's command, or another install's (`…mnemo… context…`)."""
    command = hook.get("command", "") if isinstance(hook, dict) else ""
    return command == ours or (
        "mnemo" in command and (command.endswith(" context") or " context --hook " in command)
    )


def _put_server(edit: _Edit, agent: Agent, entry: dict[str, Any]) -> str:
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
    current = servers.get(NAME)
    plain = json.loads(json.dumps(current, default=str)) if current is not None else None
    if plain == entry:
        return "already"
    servers[NAME] = entry
    edit.changed = True
    return "updated" if current is not None else "added"


def _put_hook(edit: _Edit, command: list[str], agent: Agent) -> str:
    ours = _hook_command(command, agent)
    hooks = edit.value.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise InputError(f"{edit.path}: `hooks` is not an object; not changed")
    groups = hooks.setdefault("SessionStart", [])
    if not isinstance(groups, list):
        raise InputError(f"{edit.path}: `hooks.SessionStart` is not a list; not changed")
    for group in groups:
        for hook in group.get("hooks", []) if isinstance(group, dict) else []:
            if _is_our_hook(hook, ours):
                if hook.get("command") == ours:
                    return "already"
                hook["command"] = ours
                edit.changed = True
                return "updated"
    groups.append({"hooks": [_hook(command, agent)]})
    edit.changed = True
    return "added"


def _drop_hook(edit: _Edit, command: list[str], agent: Agent) -> bool:
    ours = _hook_command(command, agent)
    groups = edit.value.get("hooks", {}).get("SessionStart") if edit.value.get("hooks") else None
    if not isinstance(groups, list):
        return False
    kept = []
    for group in groups:
        if isinstance(group, dict) and isinstance(group.get("hooks"), list):
            left = [h for h in group["hooks"] if not _is_our_hook(h, ours)]
            if len(left) != len(group["hooks"]):
                edit.changed = True
                if not left:
                    continue
                group = {**group, "hooks": left}
        kept.append(group)
    if edit.changed:
        edit.value["hooks"]["SessionStart"] = kept
        if not kept:
            del edit.value["hooks"]["SessionStart"]
        if not edit.value["hooks"]:
            del edit.value["hooks"]
    return edit.changed


def _files(agent: Agent, project: Path | None, hooks: bool) -> list[tuple[Path, str]]:
    out = []
    mcp = agent.mcp_file(project)
    if mcp is not None:
        out.append((mcp, "server"))
    hook = agent.hook_file(project) if hooks else None
    if hook is not None:
        out.append((hook, "hook"))
    return out


def _restore(path: Path, current: bytes, created: bool) -> str:
    """Put back a file as it was before Mnemo first changed it ('' when that is unknown)."""
    original = path.with_name(path.name + ".mnemo-original")
    if created:
        configs.remove(path)
        return "removed: Mnemo had made it"
    if original.exists():
        configs.write(path, original.read_bytes(), current)
        original.unlink()
        return "its bytes from before"
    return ""


def install(
    names: list[str] | None = None, project: Path | None = None, hooks: bool = True
) -> list[Change]:
    """Merge Mnemo's MCP server (and session-start hook) into each agent's config."""
    command = mnemo_command()
    state = _state()
    done: list[Change] = []
    agents = chosen(names)
    if not agents:
        raise InputError(
            "no agent found on this machine (looked for "
            + ", ".join(a.name for a in AGENTS)
            + "); name one: mnemo agents install claude"
        )
    for agent in agents:
        files = _files(agent, project, hooks)
        if not files:
            done.append(Change(agent.key, Path(), "skipped", agent.notes))
        for path, part in files:
            try:
                edit = _Edit(path, "toml" if path.suffix == ".toml" else "json")
                what = (
                    _put_server(edit, agent, agent.entry(command))
                    if part == "server"
                    else _put_hook(edit, command, agent)
                )
            except InputError as exc:
                entry = (
                    {agent.servers: {NAME: agent.entry(command)}}
                    if part == "server"
                    else {"hooks": {"SessionStart": [{"hooks": [_hook(command, agent)]}]}}
                )
                done.append(Change(agent.key, path, "refused", f"{exc}: {json.dumps(entry)}"))
                continue
            if edit.changed:
                data = edit.data()
                try:
                    configs.write(path, data, edit.before)
                except InputError as exc:
                    done.append(Change(agent.key, path, "refused", str(exc)))
                    continue
                record = state.get(str(path))
                if record is None:  # the bytes from before Mnemo first touched it
                    record = {"created": edit.before is None}
                    if edit.before is not None:
                        original = path.with_name(path.name + ".mnemo-original")
                        original.write_bytes(edit.before)
                        os.chmod(original, path.stat().st_mode & 0o777)
                record["wrote"] = configs.digest(data)
                state[str(path)] = record
            done.append(Change(agent.key, path, what, part))
    _save_state(state)
    return done


def uninstall(
    names: list[str] | None = None, project: Path | None = None, hooks: bool = True
) -> list[Change]:
    """Take Mnemo's entries out again; a file as Mnemo left it gets its old bytes back."""
    command = mnemo_command()
    state = _state()
    done: list[Change] = []
    for agent in chosen(names) if names else list(AGENTS):
        for path, part in _files(agent, project, hooks):
            record = state.get(str(path))
            current = configs.read_bytes(path)
            if current is None:
                state.pop(str(path), None)
                continue
            if record and record.get("wrote") == configs.digest(current):
                try:
                    restored = _restore(path, current, bool(record.get("created")))
                except InputError as exc:
                    done.append(Change(agent.key, path, "refused", str(exc)))
                    continue
                if restored:
                    done.append(Change(agent.key, path, "restored", restored))
                    state.pop(str(path), None)
                    continue
            try:
                edit = _Edit(path, "toml" if path.suffix == ".toml" else "json")
            except InputError as exc:
                done.append(Change(agent.key, path, "refused", str(exc)))
                continue
            if part == "server":
                servers = edit.value.get(agent.servers)
                if isinstance(servers, dict) and NAME in servers:
                    del servers[NAME]
                    edit.changed = True
            else:
                _drop_hook(edit, command, agent)
            if edit.changed:
                try:
                    configs.write(path, edit.data(), current)
                except InputError as exc:
                    done.append(Change(agent.key, path, "refused", str(exc)))
                    continue
                done.append(Change(agent.key, path, "removed", part))
            state.pop(str(path), None)
            original = path.with_name(path.name + ".mnemo-original")
            if original.exists() and str(path) not in state:  # changed since: no use now
                original.unlink()
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


def status(project: Path | None = None, check: bool = True) -> list[dict[str, Any]]:
    """Per agent: present, where its config is, whether Mnemo's server and hook are in it
    (and point at this installation), and whether that server answers."""
    command = mnemo_command()
    checked: dict[str, str | None] = {}
    out = []
    for agent in AGENTS:
        row: dict[str, Any] = {"agent": agent.key, "name": agent.name, "present": agent.present()}
        row["notes"] = agent.notes
        mcp = agent.mcp_file(project)
        row["config"] = str(mcp) if mcp else None
        row["server"], row["hook"], row["problem"] = "absent", None, None
        try:
            if mcp is not None:
                edit = _Edit(mcp, "toml" if mcp.suffix == ".toml" else "json")
                entry = (edit.value.get(agent.servers) or {}).get(NAME)
                if entry is not None:
                    entry = json.loads(json.dumps(entry, default=str))
                    mine = entry == agent.entry(command)
                    row["server"] = "wired" if mine else "another install"
                    wired = [entry.get("command", ""), *entry.get("args", [])][:-1] or command
                    key = shlex.join(wired)
                    if check and key not in checked:
                        checked[key] = answers([*wired, "mcp"])
                    row["answers"] = checked.get(key) is None if check else None
                    row["problem"] = checked.get(key)
            hook_path = agent.hook_file(project)
            if hook_path is not None:
                edit = _Edit(hook_path, "json")
                groups = (edit.value.get("hooks") or {}).get("SessionStart") or []
                ours = _hook_command(command, agent)
                found = [
                    h.get("command")
                    for g in groups
                    if isinstance(g, dict)
                    for h in g.get("hooks", [])
                    if _is_our_hook(h, ours)
                ]
                row["hook"] = (
                    "wired" if ours in found else ("another install" if found else "absent")
                )
        except InputError as exc:
            row["problem"] = str(exc)
        out.append(row)
    return out
