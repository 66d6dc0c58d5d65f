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

from app.agents import configs, hooks, yaml_text
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


def command_for(project: Path | None) -> list[str]:
    """The command a config names: this installation's, by its absolute path, in the user's
    own configs; plain `mnemo`, found on PATH, in a project's (a team commits them: a path
    of this machine would start nothing on a teammate's)."""
    return ["mnemo"] if project is not None else mnemo_command()


def _user_config() -> Path:
    """Where desktop apps keep their settings (VS Code's `Code/User` lives under it)."""
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support"
    if os.name == "nt":
        return Path(os.environ.get("APPDATA", Path.home() / "AppData" / "Roaming"))
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")


def _xdg_config() -> Path:
    """~/.config (or XDG_CONFIG_HOME): Zed and Goose keep their settings there on macOS too."""
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")


def _cline_settings() -> Path:
    """Cline's MCP settings: `~/.cline/data/settings/` (its CLI, and its VS Code extension
    since 2026), or the extension's own folder where only that one exists."""
    if os.environ.get("CLINE_MCP_SETTINGS_PATH"):
        return Path(os.environ["CLINE_MCP_SETTINGS_PATH"])
    data = Path(os.environ.get("CLINE_DATA_DIR") or Path.home() / ".cline" / "data")
    new = data / "settings" / "cline_mcp_settings.json"
    legacy = _cline_legacy() / "settings" / "cline_mcp_settings.json"
    return legacy if legacy.exists() and not new.exists() else new


def _cline_legacy() -> Path:
    return _user_config() / "Code" / "User" / "globalStorage" / "saoudrizwan.claude-dev"


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
    # (the agent's name of a hook event, the `mnemo hook` event run there, its matcher)
    hook_events: tuple[tuple[str, str, str | None], ...] = ()
    flat: bool = False  # Cursor's hooks.json: {"version": 1, "hooks": {EVENT: [{command}]}}
    trusts: bool = False  # Codex: hooks run once trusted in config.toml (`hooks.py`)
    listed: bool = False  # the servers are a list of entries with a `name` (Continue)
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
        (
            ("SessionStart", "session-start", None),
            ("UserPromptSubmit", "prompt", None),
            ("PostToolUse", "tool", "Bash"),  # a command that worked
            ("PostToolUseFailure", "tool", "Bash"),  # one that failed (PostToolUse is not run)
        ),
    ),
    Agent(
        "codex",
        "Codex CLI",
        "codex",
        _codex_home,
        lambda project: None if project else _codex_home() / "config.toml",
        "mcp_servers",
        lambda command: _server(command, startup_timeout_sec=STARTUP_S),
        lambda project: None if project else _codex_home() / "hooks.json",
        (("SessionStart", "session-start", None), ("UserPromptSubmit", "prompt", None)),
        trusts=True,
        notes="Codex reads MCP servers from ~/.codex/config.toml only; Mnemo trusts its own "
        "hooks there (Codex runs no untrusted hook)",
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
        (  # answered in JSON
            ("SessionStart", "session-start", None),
            ("BeforeAgent", "prompt", None),
            ("AfterTool", "tool", "run_shell_command"),
        ),
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
        lambda project: (project or Path.home()) / ".cursor" / "hooks.json",
        # beforeSubmitPrompt may not add context: it only lets Mnemo capture from the prompt
        (("sessionStart", "session-start", None), ("beforeSubmitPrompt", "prompt", None)),
        flat=True,
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
    Agent(
        "zed",
        "Zed",
        "zed",
        lambda: _xdg_config() / "zed",
        lambda project: (
            project / ".zed" / "settings.json"
            if project
            else _xdg_config() / "zed" / "settings.json"
        ),
        "context_servers",
        lambda command: {"source": "custom", **_server(command, env={})},
        notes="Zed runs a project's servers once you trusted its folder",
    ),
    Agent(
        "cline",
        "Cline",
        "cline",
        lambda: Path.home() / ".cline" if not _cline_legacy().exists() else _cline_legacy(),
        lambda project: None if project else _cline_settings(),
        "mcpServers",
        lambda command: _server(command, disabled=False, timeout=STARTUP_S * 2),
        notes="Cline reads MCP servers from your user settings only",
    ),
    Agent(
        "goose",
        "Goose",
        "goose",
        lambda: _xdg_config() / "goose",
        lambda project: None if project else _xdg_config() / "goose" / "config.yaml",
        "extensions",
        lambda command: {
            "enabled": True,
            "type": "stdio",
            "name": NAME,
            "description": "Mnemo: your memory, found by meaning",
            "cmd": command[0],
            "args": [*command[1:], "mcp"],
            "envs": {},
            "env_keys": [],
            "timeout": 300,
            "bundled": None,
        },
        notes="Goose reads extensions from ~/.config/goose/config.yaml only",
    ),
    Agent(
        "continue",
        "Continue",
        "cn",
        lambda: Path.home() / ".continue",
        lambda project: None if project else Path.home() / ".continue" / "config.yaml",
        "mcpServers",
        lambda command: {"name": NAME, "type": "stdio", **_server(command)},
        listed=True,
        notes="Continue: Mnemo goes in ~/.continue/config.yaml (a project's servers are "
        "block files in .continue/mcpServers/)",
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
    fmt: str  # "json" | "toml" | "yaml"; "jsonc" when a JSON file has comments (as text)
    before: bytes | None = None
    value: Any = None
    changed: bool = False
    original: Any = None  # a JSONC file's value as read
    first: bytes | None = None  # (YAML) the file before Mnemo first wrote it, when kept

    def __post_init__(self) -> None:
        self.before = configs.read_bytes(self.path)
        if self.fmt == "json" and configs.is_jsonc(self.before):
            self.fmt = "jsonc"
            self.value = configs.jsonc_value(self.path, self.before)
            self.original = _plain(self.value)
            return
        load = {"toml": configs.load_toml, "yaml": configs.load_yaml}.get(self.fmt)
        self.value = (load or configs.load_json)(self.path, self.before)
        if self.fmt == "yaml":
            self.original = _plain(self.value)
        if self.fmt == "json":
            self.original = json.loads(json.dumps(self.value))  # (a copy: edits change value)

    def data(self) -> bytes:
        if self.fmt == "yaml":
            return configs.dump_yaml(self.path, self.value, self.before, self.original, self.first)
        if self.fmt == "toml":
            import tomlkit

            cut = configs.toml_cut(self.before, _plain(self.value)) if self.before else None
            return cut if cut is not None else tomlkit.dumps(self.value).encode()
        if self.fmt == "jsonc":
            return configs.jsonc_edit(
                self.path, self.before, self.original, _plain(self.value), NAME
            )
        return configs.json_edit(self.path, self.before, self.original, self.value, NAME)


def _wanted(command: list[str], agent: Agent) -> dict[str, tuple[str, str | None]]:
    return hooks.commands(command, agent.key, agent.hook_events)


def _ours(command: list[str], agent: Agent) -> set[str]:
    return hooks.lines(_wanted(command, agent))


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str)) if value is not None else None


def _format(path: Path) -> str:
    return {".toml": "toml", ".yaml": "yaml", ".yml": "yaml"}.get(path.suffix, "json")


def _get_entry(servers: Any) -> Any:
    """Mnemo's entry in a table of servers (by key), or in a list of them (Continue's: by
    its `name`); None when there is none."""
    if isinstance(servers, dict):
        return servers.get(NAME)
    if isinstance(servers, list):
        return next((s for s in servers if isinstance(s, dict) and s.get("name") == NAME), None)
    return None


def _drop_entry(servers: Any) -> bool:
    """Take Mnemo's entry out; in YAML that ruamel.yaml writes, the remarks after it when it
    is the last go to the one before (ruamel.yaml hangs them on the last entry)."""
    if isinstance(servers, dict) and NAME in servers:
        keys = list(servers)
        if keys[-1] == NAME and len(keys) > 1 and hasattr(servers, "ca"):
            yaml_text.pass_on_remarks(servers, NAME, keys[-2])
        del servers[NAME]
        return True
    if isinstance(servers, list):
        for n, item in enumerate(servers):
            if isinstance(item, dict) and item.get("name") == NAME:
                if n == len(servers) - 1 and n > 0 and hasattr(servers, "ca"):
                    yaml_text.pass_on_remarks(servers, n, n - 1)
                del servers[n]
                return True
    return False


def _set_entry(servers: Any, entry: dict[str, Any]) -> None:
    """Replace Mnemo's entry where it is, or add it last (YAML too: it goes in as text after
    the last entry's own lines, `yaml_text`, so no remark of the user's ends up over it;
    where ruamel.yaml writes it, the remarks after the last entry move after Mnemo's)."""
    if isinstance(servers, dict):
        last = list(servers)[-1] if servers and NAME not in servers else None
        if last is not None and hasattr(servers, "ca"):
            servers[NAME] = yaml_text.commented(entry)
            yaml_text.pass_on_remarks(servers, last, NAME)
            return
        servers[NAME] = entry
        return
    for n, item in enumerate(servers):
        if isinstance(item, dict) and item.get("name") == NAME:
            servers[n] = entry
            return
    if servers and hasattr(servers, "ca"):
        servers.append(yaml_text.commented(entry))
        yaml_text.pass_on_remarks(servers, len(servers) - 2, len(servers) - 1)
        return
    servers.append(entry)


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
            servers = [] if agent.listed else {}
        edit.value[agent.servers] = servers
    elif not isinstance(servers, list if agent.listed else dict):
        raise InputError(f"{edit.path}: `{agent.servers}` is not a table of servers; not changed")
    current = _plain(_get_entry(servers))
    if current == entry:
        return "already"
    if current is not None and current not in (known or []):
        raise InputError(
            f"{edit.path} has a server named {NAME} that Mnemo did not put there; not changed "
            "(rename or remove it, then run this again)"
        )
    _set_entry(servers, entry)
    edit.changed = True
    return "updated" if current is not None else "added"


def _files(agent: Agent, project: Path | None, with_hooks: bool) -> dict[Path, list[str]]:
    """The files an agent's wiring touches and what goes in each ("server", "hook", and
    "trust": Codex's trust of the hooks, after the hooks file is written)."""
    out: dict[Path, list[str]] = {}
    hook = agent.hook_file(project) if with_hooks else None
    if hook is not None:
        out.setdefault(hook, []).append("hook")
    mcp = agent.mcp_file(project)
    if mcp is not None:
        out.setdefault(mcp, []).append("server")
        if hook is not None and agent.trusts:
            out[mcp].append("trust")
    return out


def _plain_of(fmt: str, data: bytes | None) -> dict[str, Any]:
    if not data:
        return {}
    text = data.decode("utf-8-sig")
    if fmt == "jsonc":
        return configs.Jsonc(Path(), text).value()
    if fmt == "yaml":
        return configs.plain_yaml(text)
    return tomllib.loads(text) if fmt == "toml" else json.loads(text)


def _without_ours(
    value: dict[str, Any], agent: Agent, parts: list[str], ours: set[str], hook_path: Path | None
) -> Any:
    """A config's plain value with Mnemo's entries (and containers left empty) taken out."""
    value = json.loads(json.dumps(value, default=str))
    servers = value.get(agent.servers)
    if "server" in parts and isinstance(servers, dict | list):
        _drop_entry(servers)
    if "server" in parts and agent.servers in value and not value[agent.servers]:
        value.pop(agent.servers)  # (a key left with no entries is null in YAML)
    if "hook" in parts:
        hooks.drop(value, ours)
        events = value.get("hooks")
        if isinstance(events, dict):  # (the user's empty lists: as Mnemo's leave none)
            for name in [name for name, items in events.items() if items == []]:
                del events[name]
            if not events:
                value.pop("hooks")
        if agent.flat and value == {"version": 1}:
            value.pop("version")
    if "trust" in parts and hook_path is not None:
        hooks.drop_trust(value, hook_path, ours)
    return value


def _check_only_ours(
    edit: _Edit, data: bytes, agent: Agent, parts: list[str], ours: set[str], hook_path=None
) -> None:
    """Refuse an edit that would change anything but Mnemo's entries (read back by a parser
    of the format: tomlkit put a table between a user's dotted keys once)."""
    try:
        before = _without_ours(_plain_of(edit.fmt, edit.before), agent, parts, ours, hook_path)
        after = _without_ours(_plain_of(edit.fmt, data), agent, parts, ours, hook_path)
    except (ValueError, InputError, tomllib.TOMLDecodeError):
        after, before = None, True
    if before != after:
        raise InputError(
            f"{edit.path}: Mnemo's edit would change other entries of it (its layout is one "
            "Mnemo cannot edit safely); not changed"
        )


@contextlib.contextmanager
def _locked():
    """One `mnemo agents` at a time on this machine's record of what it wrote."""
    path = paths.data_dir() / "agents.lock"  # (0600 whatever the umask, never a link)
    with os.fdopen(paths.private_file(path, os.O_RDWR | os.O_CREAT), "a+") as lock:
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
        mine = agent.entry(command)
        entry[agent.servers] = [mine] if agent.listed else {NAME: mine}
    if "hook" in parts:
        entry["hooks"] = {}
        hooks.put(entry, Path(), _wanted(command, agent), agent.flat)
    if "trust" in parts:
        entry["trust"] = "then trust Mnemo's hooks in Codex (its /hooks screen)"
    return json.dumps(entry)


def _install_file(
    agent: Agent,
    path: Path,
    parts: list[str],
    command: list[str],
    state: dict,
    project: Path | None = None,
) -> list[Outcome]:
    """Put Mnemo's entries in one file, in one write."""
    record = state.get(str(path)) or {}
    edit = _Edit(path, _format(path))
    whats = []
    hook_path = agent.hook_file(project)
    for part in parts:
        if part == "server":
            known = list(record.get("entries", {}).values())
            whats.append(_put_server(edit, agent, agent.entry(command), known))
            continue
        if part == "hook":
            what = hooks.put(edit.value, path, _wanted(command, agent), agent.flat)
        else:  # Codex's trust of the hooks just written
            written = _Edit(hook_path, "json").value
            trust = hooks.codex_trust(written, hook_path, _ours(command, agent))
            what = hooks.put_trust(edit.value, path, trust)
        edit.changed = edit.changed or what != "already"
        whats.append(what)
    if edit.changed:
        data = edit.data()
        _check_only_ours(edit, data, agent, parts, _ours(command, agent), hook_path)
        made = _missing_folders(path)
        configs.write(path, data, edit.before)
        wrote_last = record.get("wrote")
        if not record or wrote_last != (configs.digest(edit.before) if edit.before else None):
            # First touch, or the file changed since Mnemo last wrote it: what is there now
            # is what an uninstall may put back (never an older version)
            record = {"created": edit.before is None, "entries": {}}
            if made:  # folders the agent never made: an uninstall takes them away if empty
                record["made"] = [str(folder) for folder in made]
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
    command = command_for(project)
    agents = chosen(names)
    if not agents:
        raise InputError(
            "no agent found on this machine (looked for "
            + ", ".join(a.name for a in AGENTS)
            + "); name one: mnemo agents install claude"
        )
    done: list[Outcome] = []
    if project is not None and shutil.which("mnemo") is None:
        done.append(
            Outcome(
                agents[0].key, Path(), "note",
                "the project's configs start `mnemo` from PATH, and it is not on this one: "
                f"put {mnemo_command()[0]}'s folder on PATH (or install the package)",
            )
        )  # fmt: skip
    with _locked():
        state = _state()
        for agent in agents:
            files = _files(agent, project, hooks)
            if not files:
                done.append(Outcome(agent.key, Path(), "skipped", agent.notes))
            for path, parts in files.items():
                try:
                    done += _install_file(agent, path, parts, command, state, project)
                except InputError as exc:
                    hand = _by_hand(agent, parts, command)
                    done.append(Outcome(agent.key, path, "refused", f"{exc}: {hand}"))
        _save_state(state)
    return done


def _missing_folders(path: Path) -> list[Path]:
    """The folders above `path` that do not exist yet, deepest first."""
    missing, folder = [], path.parent
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing


def _leave_no_trace(path: Path) -> None:
    """After an uninstall: the copies Mnemo kept beside `path` go (a backup of a config may
    hold a token)."""
    for suffix in (configs.BACKUP_SUFFIX, ".mnemo-original"):
        with contextlib.suppress(FileNotFoundError):
            path.with_name(path.name + suffix).unlink()


def _remove_folders(made: list[str]) -> None:
    """The folders Mnemo made for configs it has now removed, deepest first, each only when
    it is empty: what an agent or the user put there since stays, and its folders with it."""
    for folder in sorted(set(made), key=lambda f: -len(Path(f).parts)):
        with contextlib.suppress(OSError):
            os.rmdir(folder)


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
    agent: Agent,
    path: Path,
    parts: list[str],
    command: list[str],
    state: dict,
    project: Path | None = None,
    made: list[str] | None = None,
) -> list[Outcome]:
    """Take Mnemo's entries out of one file; the folders Mnemo made for it join `made`."""
    record = state.get(str(path))
    if record and made is not None:
        made += record.get("made", [])
    current = configs.read_bytes(path)
    if current is None:
        state.pop(str(path), None)
        _leave_no_trace(path)
        return []
    if record and record.get("wrote") == configs.digest(current):
        restored = _restore(path, current, bool(record.get("created")))
        if restored:
            state.pop(str(path), None)
            _leave_no_trace(path)
            return [Outcome(agent.key, path, "restored", restored)]
    edit = _Edit(path, _format(path))
    original = path.with_name(path.name + ".mnemo-original")
    if record and original.exists():  # (a list Mnemo empties gets the user's line back)
        edit.first = original.read_bytes()
    known = list((record or {}).get("entries", {}).values()) + [agent.entry(command)]
    out = []
    if "server" in parts:
        servers = edit.value.get(agent.servers)
        if _get_entry(servers) is not None:
            if _plain(_get_entry(servers)) in known:
                _drop_entry(servers)
                edit.changed = True
            else:
                out.append(Outcome(agent.key, path, "kept", f"its {NAME} server is not Mnemo's"))
    hook_path = agent.hook_file(project)
    if "hook" in parts and hooks.drop(edit.value, _ours(command, agent)):
        edit.changed = True
        if agent.flat and edit.value == {"version": 1}:
            edit.value.pop("version")
    if "trust" in parts and hooks.drop_trust(edit.value, hook_path, _ours(command, agent)):
        edit.changed = True
    if edit.changed:
        data = edit.data()
        _check_only_ours(edit, data, agent, parts, _ours(command, agent), hook_path)
        configs.write(path, data, current)
        out.append(Outcome(agent.key, path, "removed", ", ".join(parts)))
    state.pop(str(path), None)
    _leave_no_trace(path)  # (the copy from before: changed since, no use now)
    return out


def uninstall(
    names: list[str] | None = None, project: Path | None = None, hooks: bool = True
) -> list[Outcome]:
    """Take Mnemo's entries out again; a file as Mnemo left it gets its old bytes back."""
    command = command_for(project)
    done: list[Outcome] = []
    made: list[str] = []
    with _locked():
        state = _state()
        for agent in chosen(names) if names else list(AGENTS):
            for path, parts in _files(agent, project, hooks).items():
                try:
                    done += _uninstall_file(agent, path, parts, command, state, project, made)
                except InputError as exc:
                    done.append(Outcome(agent.key, path, "refused", str(exc)))
        _save_state(state)
        _remove_folders(made)
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


def _trust_state(
    hooks_value: dict, toml: _Edit, hook_path: Path, command: list[str], agent: Agent
) -> str:
    """ "wired" when Codex trusts every Mnemo hook as it now reads, else "wired, untrusted"."""
    wanted = hooks.codex_trust(hooks_value, hook_path, _ours(command, agent))
    table = toml.value.get("hooks", {}).get("state", {}) if toml.value.get("hooks") else {}
    trusted = all(
        isinstance(table.get(key), dict) and table[key].get("trusted_hash") == digest
        for key, digest in wanted.items()
    )
    return "wired" if trusted else "wired, untrusted (run mnemo agents install codex)"


def _hook_rows(agent: Agent, value: dict, command: list[str]) -> list[dict[str, Any]]:
    """Each hook Mnemo wires into `agent`: the agent's event, the `mnemo hook` event it
    runs, its matcher, and whether it is in the config's `value` (`hooks.states`)."""
    found = hooks.states(value, _wanted(command, agent))
    return [
        {"event": name, "runs": runs, "matcher": matcher, "state": found[name]}
        for name, runs, matcher in agent.hook_events
    ]


def status(project: Path | None = None, check: bool = True) -> list[dict[str, Any]]:
    """Per agent: present, where its config is, whether Mnemo's server and hooks are in it
    (this installation's, or another's), and whether this installation's server answers.
    Only Mnemo's own command is ever started: a config's entry may name any program (a
    project's `mnemo` is checked by running this installation)."""
    command = command_for(project)
    answer: list[str | None] = []
    read: dict[Path, _Edit] = {}  # Gemini's server and hook share one file: read once

    def config(path: Path) -> _Edit:
        if path not in read:
            read[path] = _Edit(path, _format(path))
        return read[path]

    out = []
    for agent in AGENTS:
        row: dict[str, Any] = {"agent": agent.key, "name": agent.name, "present": agent.present()}
        row["notes"] = agent.notes
        mcp = agent.mcp_file(project)
        row["config"] = str(mcp) if mcp else None
        row["server"], row["hook"], row["problem"], row["answers"] = "absent", None, None, None
        row["hooks"] = []
        try:
            if mcp is not None:
                servers = config(mcp).value.get(agent.servers)
                entry = _plain(_get_entry(servers))
                if entry is not None:
                    mine = entry == agent.entry(command)
                    row["server"] = "wired" if mine else "another entry named mnemo"
                    if mine and check:
                        if not answer:
                            answer.append(answers([*mnemo_command(), "mcp"]))
                        row["answers"], row["problem"] = answer[0] is None, answer[0]
            hook_path = agent.hook_file(project)
            if hook_path is not None:
                row["hook"] = hooks.state(config(hook_path).value, _wanted(command, agent))
                row["hooks"] = _hook_rows(agent, config(hook_path).value, command)
                if agent.trusts and row["hook"] == "wired" and mcp is not None:
                    row["hook"] = _trust_state(
                        config(hook_path).value, config(mcp), hook_path, command, agent
                    )
        except InputError as exc:
            row["problem"] = str(exc)
        out.append(row)
    return out
