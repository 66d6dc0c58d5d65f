"""`mnemo agents`: Mnemo wired into real agent CLIs (Claude Code, Codex, Gemini CLI from npm,
pinned and installed by `scripts/setup --test`; they run offline for `mcp list`), and taken
out again without touching anything else (issue 25, item 1)."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
import tomllib
from pathlib import Path

import pytest

from tests.conftest import REPO

CLIS = REPO / ".venv" / ".mnemo-agent-clis"
MNEMO = Path(sys.executable).parent / "mnemo"


@pytest.fixture
def home(tmp_path, mnemo_home) -> Path:
    """A user's home with configs of their own in each agent (other servers, comments)."""
    home = tmp_path / "user"
    (home / ".codex").mkdir(parents=True)
    (home / ".codex" / "config.toml").write_text(
        '# my codex settings\nmodel = "o4"  # keep me\n\n'
        '[mcp_servers.other]\ncommand = "other-server"\nargs = ["--port", "1"]\n'
    )
    (home / ".claude.json").write_text(
        json.dumps({"mcpServers": {"other": {"command": "x"}}, "theme": "dark"}, indent=2)
    )
    (home / ".claude").mkdir()
    (home / ".claude" / "settings.json").write_text(
        '{\n    "hooks": {\n        "Stop": [{"hooks": [{"type": "command", "command": "say"}]}]'
        '\n    },\n    "model": "opus"\n}\n'
    )
    (home / ".gemini").mkdir()
    (home / "project").mkdir()
    # the user trusted this project folder in Gemini CLI (untrusted folders run no MCP server)
    (home / ".gemini" / "trustedFolders.json").write_text(
        json.dumps({str(home / "project"): "TRUST_FOLDER"})
    )
    return home


def _env(home: Path) -> dict[str, str]:
    env = {**os.environ, "HOME": str(home)}
    env.pop("XDG_CONFIG_HOME", None)
    if CLIS.exists():
        env["PATH"] = CLIS.read_text().strip() + os.pathsep + env["PATH"]
    return env


def _mnemo(home: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(MNEMO), "agents", *args], env=_env(home), capture_output=True, text=True, timeout=180
    )


def _tool(home: Path, *args: str) -> str:
    if not CLIS.exists():
        pytest.fail("the agent CLIs are not installed: run `scripts/setup --test` (needs npm)")
    done = subprocess.run(
        list(args), env=_env(home), cwd=home / "project", capture_output=True, text=True,
        timeout=180,
    )  # fmt: skip
    return done.stdout + done.stderr


def _snapshot(home: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(home)): p.read_bytes()
        for p in sorted(home.rglob("*"))
        if p.is_file() and "mnemo" not in p.name and ".mnemo-" not in p.name
    }


def test_install_wires_real_claude_codex_and_gemini_and_uninstall_restores_every_byte(home):
    before = _snapshot(home)
    # WHEN the user wires Mnemo into the three agents
    done = _mnemo(home, "install", "claude", "codex", "gemini")
    assert done.returncode == 0, done.stderr
    # 3 servers, the hooks of the three, and Codex's trust of its hooks
    assert done.stdout.count("added") == 7, done.stdout
    # THEN every other entry and comment of their configs is still there
    codex = (home / ".codex" / "config.toml").read_text()
    assert codex.startswith('# my codex settings\nmodel = "o4"  # keep me\n')
    servers = tomllib.loads(codex)["mcp_servers"]
    assert servers["other"] == {"command": "other-server", "args": ["--port", "1"]}
    assert servers["mnemo"] == {"command": str(MNEMO), "args": ["mcp"], "startup_timeout_sec": 30}
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    assert settings["model"] == "opus" and settings["hooks"]["Stop"]
    for event, what in (("SessionStart", "session-start"), ("UserPromptSubmit", "prompt")):
        line = f"{MNEMO} hook {what} --agent claude"
        assert settings["hooks"][event] == [{"hooks": [{"type": "command", "command": line}]}]
    for event in ("PostToolUse", "PostToolUseFailure"):  # shell commands only
        line = f"{MNEMO} hook tool --agent claude"
        group = {"matcher": "Bash", "hooks": [{"type": "command", "command": line}]}
        assert settings["hooks"][event] == [group]
    gemini = json.loads((home / ".gemini" / "settings.json").read_text())
    for event, what in (("SessionStart", "session-start"), ("BeforeAgent", "prompt")):
        line = f"{MNEMO} hook {what} --agent gemini"
        assert gemini["hooks"][event] == [{"hooks": [{"type": "command", "command": line}]}]
    assert (home / ".claude.json.mnemo-backup").exists()  # the previous version, beside it
    # AND a second install changes nothing
    wired = _snapshot(home)
    again = _mnemo(home, "install", "claude", "codex", "gemini")
    assert again.stdout.count("already") == 7 and _snapshot(home) == wired
    # AND uninstalled before the agents ran, every file is byte for byte as before
    gone = _mnemo(home, "uninstall", "claude", "codex", "gemini")
    assert gone.returncode == 0, gone.stderr
    assert _snapshot(home) == before, gone.stdout
    assert not list(home.rglob("*.mnemo-*"))  # (issue 42: no copy left behind either)


def test_the_real_agents_connect_to_mnemo_and_list_it_no_more_after_uninstall(home):
    assert _mnemo(home, "install", "claude", "codex", "gemini").returncode == 0
    # THEN each agent's own CLI sees the server, and Claude Code and Gemini CLI connect to it
    claude = _tool(home, "claude", "mcp", "list")
    assert "mnemo:" in claude and "✔ Connected" in claude.split("mnemo:")[1].splitlines()[0]
    codex = _tool(home, "codex", "mcp", "list")
    assert any(line.split()[:1] == ["mnemo"] and "enabled" in line for line in codex.splitlines())
    gemini = _tool(home, "gemini", "mcp", "list")
    assert "mnemo:" in gemini and "Connected" in gemini.split("mnemo:")[1].splitlines()[0]
    # AND `status` says the same, with the server answering
    status = json.loads(_mnemo(home, "status", "--json").stdout)
    rows = {r["agent"]: r for r in status}
    assert all(rows[a]["server"] == "wired" and rows[a]["answers"] for a in ("claude", "codex"))
    assert rows["claude"]["hook"] == "wired"
    # WHEN uninstalled (Claude Code rewrote its ~/.claude.json meanwhile)
    assert _mnemo(home, "uninstall").returncode == 0
    # THEN no agent lists Mnemo, and their other servers are kept
    assert "mnemo" not in _tool(home, "claude", "mcp", "list")
    assert "other:" in _tool(home, "claude", "mcp", "list")
    assert "mnemo" not in _tool(home, "codex", "mcp", "list")
    assert "mnemo" not in _tool(home, "gemini", "mcp", "list")
    assert json.loads((home / ".claude.json").read_text())["mcpServers"] == {
        "other": {"command": "x"}
    }


def test_a_config_mnemo_cannot_rewrite_safely_is_refused_and_left_alone(home):
    cursor = home / ".cursor" / "mcp.json"
    cursor.parent.mkdir()
    cursor.write_text('{"mcpServers": {"a": 1},')  # cut off mid-edit
    done = _mnemo(home, "install", "cursor")
    assert done.returncode == 1
    assert "is not valid JSON" in done.stdout
    assert '"mcpServers": {"mnemo": {"type": "stdio"' in done.stdout  # the entry to add by hand
    assert cursor.read_text() == '{"mcpServers": {"a": 1},'


def test_a_config_with_comments_keeps_every_comment(home):
    # GIVEN VS Code's mcp.json with comments and a trailing comma (JSONC, as VS Code allows)
    vscode = home / ".config" / "Code" / "User" / "mcp.json"
    vscode.parent.mkdir(parents=True)
    theirs = (
        '{\n  // my servers\n  "servers": {\n    "gh": {"url": "https://x"}, /* work */\n  },\n}\n'
    )
    vscode.write_text(theirs)
    # WHEN Mnemo is wired in and taken out again
    assert _mnemo(home, "install", "vscode").returncode == 0
    wired = vscode.read_text()
    # THEN its entry went in beside theirs, every comment and comma kept
    assert "// my servers" in wired and "/* work */" in wired
    # (in the file's own indentation, theirs untouched: issue 42)
    ours = json.dumps({"type": "stdio", "command": str(MNEMO), "args": ["mcp"]}, indent=2)
    ours = '"mnemo": ' + ours.replace("\n", "\n    ")
    assert wired == theirs.replace('"servers": {', '"servers": {\n    ' + ours + ",", 1)
    status = json.loads(_mnemo(home, "status", "--no-check", "--json").stdout)
    assert next(r for r in status if r["agent"] == "vscode")["server"] == "wired"
    # AND after the user edits elsewhere in it, an uninstall still takes out only Mnemo's entry
    vscode.write_text(wired.replace("// my servers", "// my servers, edited"))
    assert _mnemo(home, "uninstall", "vscode").returncode == 0
    assert vscode.read_text() == theirs.replace("// my servers", "// my servers, edited")


def test_a_project_gets_its_own_configs(home):
    project = home / "project"
    done = _mnemo(home, "install", "--project", str(project), "claude", "codex", "cursor", "vscode")
    assert done.returncode == 0, done.stderr
    assert "Codex CLI: skipped" in done.stdout  # it reads ~/.codex/config.toml only
    # (a team commits these: `mnemo` from PATH, never this machine's path; issue 42)
    entry = {"type": "stdio", "command": "mnemo", "args": ["mcp"]}
    assert json.loads((project / ".mcp.json").read_text())["mcpServers"]["mnemo"] == {
        **entry,
        "env": {},
    }
    assert (
        json.loads((project / ".cursor" / "mcp.json").read_text())["mcpServers"]["mnemo"] == entry
    )
    assert json.loads((project / ".vscode" / "mcp.json").read_text())["servers"]["mnemo"] == entry
    hook = json.loads((project / ".claude" / "settings.json").read_text())
    line = "mnemo hook session-start --agent claude"
    assert hook["hooks"]["SessionStart"][0]["hooks"][0]["command"] == line
    assert str(MNEMO.parent) not in "".join(p.read_text() for p in project.rglob("*.json"))
    assert not (home / ".codex" / "config.toml").read_text().count("mnemo")
    status = json.loads(_mnemo(home, "status", "--project", str(project), "--json").stdout)
    claude = next(r for r in status if r["agent"] == "claude")
    assert claude["server"] == "wired" and claude["answers"] is True, claude
    assert _mnemo(home, "uninstall", "--project", str(project)).returncode == 0
    assert sorted(p.name for p in project.rglob("*") if p.is_file() and "mnemo" not in p.name) == []


def test_a_project_install_says_when_mnemo_is_not_on_path(home):
    project = home / "project"
    bare = {**_env(home), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [str(MNEMO), "agents", "install", "--project", str(project), "vscode"],
        env=bare, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "start `mnemo` from PATH, and it is not on this one" in done.stdout, done.stdout
    on_path = {**bare, "PATH": f"{MNEMO.parent}:/usr/bin:/bin"}
    again = subprocess.run(
        [str(MNEMO), "agents", "install", "--project", str(project), "cursor"],
        env=on_path, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert again.returncode == 0 and "not on this one" not in again.stdout, again.stdout


def test_no_agent_found_says_how_to_name_one(tmp_path, mnemo_home):
    home = tmp_path / "empty"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [str(MNEMO), "agents", "install"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1 and "mnemo agents install claude" in done.stderr


def test_the_session_start_hooks_answer_each_agent_in_its_own_shape(home):
    # GIVEN memories, and each agent's documented SessionStart event on standard input
    project = home / "project"
    subprocess.run(["git", "init", "-q", "csv-importer"], cwd=project, check=True)
    folder = project / "csv-importer"
    for text in ("The CSV importer must keep quoted newlines", "Grandma's lasagne recipe"):
        subprocess.run([str(MNEMO), "remember", text], env=_env(home), check=True, timeout=120)
    event = {
        "session_id": "s1",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": str(folder),
        "hook_event_name": "SessionStart",
        "source": "startup",  # Claude Code's name for it
        "trigger": "startup",  # Gemini CLI's
    }

    def hook(*args: str) -> str:
        done = subprocess.run(
            [str(MNEMO), "context", *args], input=json.dumps(event), env=_env(home),
            cwd=home, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    # THEN Claude Code gets markdown on stdout (injected as is), under its 10,000 characters
    claude = hook("--hook", "claude")
    assert claude.startswith("#") and len(claude) < 10_000
    # the folder named in the event (csv-importer), not the hook's own: its memory, not the other
    assert "quoted newlines" in claude and "lasagne" not in claude, claude
    # AND Gemini CLI gets JSON only, the block in hookSpecificOutput.additionalContext
    gemini = json.loads(hook("--hook", "gemini"))
    out = gemini["hookSpecificOutput"]
    assert out["hookEventName"] == "SessionStart" and out["additionalContext"] == claude.rstrip(
        "\n"
    )


def test_a_config_the_agent_saves_meanwhile_is_not_overwritten(tmp_path):
    # The agent (Claude Code rewrites ~/.claude.json often) saves between Mnemo's read and
    # its write: Mnemo's write would lose the agent's change, so nothing is written.
    from app.agents import configs
    from app.core.errors import InputError

    path = tmp_path / ".claude.json"
    path.write_text('{"a": 1}\n')
    before = configs.read_bytes(path)
    path.write_text('{"a": 1, "b": 2}\n')  # the agent, meanwhile
    with pytest.raises(InputError, match="changed while Mnemo was editing it"):
        configs.write(path, b'{"a": 1, "mcpServers": {}}\n', before)
    assert path.read_text() == '{"a": 1, "b": 2}\n'


def test_a_config_that_is_a_symlink_stays_one(home):
    # Dotfiles kept in a repository and linked into the home (GNU stow): the link stays, the
    # file it points to is edited.
    kept = home / "dotfiles" / "config.toml"
    kept.parent.mkdir()
    (home / ".codex" / "config.toml").rename(kept)
    (home / ".codex" / "config.toml").symlink_to(kept)
    assert _mnemo(home, "install", "codex").returncode == 0
    assert (home / ".codex" / "config.toml").is_symlink()
    assert "mcp_servers.mnemo" in kept.read_text()
    assert _mnemo(home, "uninstall", "codex").returncode == 0
    assert (home / ".codex" / "config.toml").is_symlink() and "mnemo" not in kept.read_text()


# ---- what a red-team pass found (all of it lost or leaked a user's config) ---------------
def test_a_second_install_after_the_user_changed_the_file_never_undoes_their_change(home):
    cursor = home / ".cursor" / "mcp.json"
    assert _mnemo(home, "install", "cursor").returncode == 0  # Mnemo makes the file
    mine = json.loads(cursor.read_text())
    mine["mcpServers"] = {"github": {"command": "gh-mcp"}}  # the user's, Mnemo's taken out
    cursor.write_text(json.dumps(mine))
    assert _mnemo(home, "install", "cursor").returncode == 0
    assert _mnemo(home, "uninstall", "cursor").returncode == 0
    assert json.loads(cursor.read_text()) == {"mcpServers": {"github": {"command": "gh-mcp"}}}


def test_a_users_own_hooks_and_servers_named_alike_are_never_touched(home):
    settings = home / ".claude" / "settings.json"
    sync = {"type": "command", "command": "~/bin/mnemonic-sync context"}
    notes = {"type": "command", "command": "python3 ~/tools/mnemo_notes.py context"}
    theirs = [{"matcher": "startup", "hooks": [sync]}, {"hooks": [notes]}]
    settings.write_text(json.dumps({"hooks": {"SessionStart": theirs}}))
    cursor = home / ".cursor" / "mcp.json"
    cursor.parent.mkdir()
    own = {"command": "/opt/mnemo-dev/bin/mnemo", "args": ["--db", "/data/w.db", "mcp"]}
    cursor.write_text(json.dumps({"mcpServers": {"mnemo": own}}))
    done = _mnemo(home, "install", "claude", "cursor")
    assert done.returncode == 1 and "that Mnemo did not put there" in done.stdout
    assert json.loads(cursor.read_text()) == {"mcpServers": {"mnemo": own}}  # untouched
    assert json.loads(settings.read_text())["hooks"]["SessionStart"][:2] == theirs
    assert _mnemo(home, "uninstall", "claude", "cursor").returncode == 0
    assert json.loads(settings.read_text()) == {"hooks": {"SessionStart": theirs}}
    assert json.loads(cursor.read_text()) == {"mcpServers": {"mnemo": own}}


def test_status_never_starts_a_command_a_config_names(home):
    # A cloned repository's .mcp.json may name any program under "mnemo"
    project = home / "project"
    trap = home / "PWNED"
    entry = {"command": "sh", "args": ["-c", f"touch {trap}", "x"]}
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"mnemo": entry}}))
    done = _mnemo(home, "status", "--json", "--project", str(project))
    rows = {r["agent"]: r for r in json.loads(done.stdout)}
    assert rows["claude"]["server"] == "another entry named mnemo" and not trap.exists()


def test_toml_dotted_keys_are_kept_or_the_file_is_refused(home):
    codex = home / ".codex" / "config.toml"
    text = 'model = "o3"\nmcp_servers.other.command = "echo"\nmcp_servers.other.args = ["hi"]\n'
    codex.write_text(text)
    _mnemo(home, "install", "codex")
    assert tomllib.loads(codex.read_text())["mcp_servers"]["other"] == {
        "command": "echo",
        "args": ["hi"],
    }
    _mnemo(home, "uninstall", "codex")
    assert tomllib.loads(codex.read_text()) == tomllib.loads(text)


@pytest.mark.parametrize(
    "content",
    [
        b'{"ui": {"theme": "x"}, "big": 1e400}',  # would come back as Infinity
        b'{"a": NaN}',
        b'{"a": 1, "a": 2}',  # one would be lost
        b'{"name": "Jos\xe9"}',  # not UTF-8
        b"[" * 100_000 + b"]" * 100_000,
    ],
)
def test_json_mnemo_could_not_write_back_as_it_was_is_refused(home, content):
    gemini = home / ".gemini" / "settings.json"
    gemini.write_bytes(content)
    for action in ("install", "status", "uninstall"):
        done = _mnemo(home, action, "gemini") if action != "status" else _mnemo(home, "status")
        assert "Traceback" not in done.stderr, done.stderr
        assert gemini.read_bytes() == content
    assert _mnemo(home, "install", "gemini").returncode == 1


def test_json_is_edited_as_text_so_what_is_odd_in_it_stays_as_written(home):
    # a lone surrogate cannot be encoded again: written whole, the file was refused (issue 42:
    # edited as text, only Mnemo's member is written)
    gemini = home / ".gemini" / "settings.json"
    content = b'{"x": "\\ud800", "ui": {"theme": "x"}}'
    gemini.write_bytes(content)
    assert _mnemo(home, "install", "gemini").returncode == 0
    assert b'"x": "\\ud800"' in gemini.read_bytes()
    assert _mnemo(home, "uninstall", "gemini").returncode == 0
    assert gemini.read_bytes() == content


def test_uninstall_goes_on_past_a_file_it_cannot_read(home):
    (home / ".cursor" / "mcp.json").mkdir(parents=True)  # a folder where the file should be
    assert _mnemo(home, "install", "claude").returncode == 0
    done = _mnemo(home, "uninstall")
    assert "Claude Code: removed" in done.stdout or "Claude Code: restored" in done.stdout
    assert "Cursor: refused" in done.stdout and "Traceback" not in done.stderr


def test_an_odd_hooks_section_is_kept_as_it_is_beside_mnemos_hook(home):
    gemini = home / ".gemini" / "settings.json"
    gemini.write_text('{"hooks": {"SessionStart": [{"hooks": null}, "odd"]}}')
    done = _mnemo(home, "install", "gemini")
    assert done.returncode == 0 and "Traceback" not in done.stderr
    groups = json.loads(gemini.read_text())["hooks"]["SessionStart"]
    assert groups[:2] == [{"hooks": None}, "odd"] and len(groups) == 3
    assert _mnemo(home, "uninstall", "gemini").returncode == 0
    assert gemini.read_text() == '{"hooks": {"SessionStart": [{"hooks": null}, "odd"]}}'


def test_a_dangling_symlink_is_as_it_was_after_uninstall(home):
    link = home / ".cursor" / "mcp.json"
    link.parent.mkdir()
    target = home / "dotfiles" / "cursor-mcp.json"
    target.parent.mkdir()
    link.symlink_to(target)  # the dotfiles repository has no such file yet
    assert _mnemo(home, "install", "cursor").returncode == 0
    assert "mnemo" in json.loads(target.read_text())["mcpServers"]
    assert _mnemo(home, "uninstall", "cursor").returncode == 0
    assert link.is_symlink() and not target.exists()


def test_an_older_installs_session_start_hook_is_brought_up_to_date_not_doubled(home):
    # GIVEN the session-start hook an earlier Mnemo wrote (`mnemo context`), from another path
    settings = home / ".claude" / "settings.json"
    old = {"type": "command", "command": "/opt/old/bin/mnemo context"}
    settings.write_text(json.dumps({"hooks": {"SessionStart": [{"hooks": [old]}]}}))
    # WHEN this install wires Claude Code
    assert _mnemo(home, "install", "claude").returncode == 0
    # THEN that hook now runs this install's helper-backed hook, once, and the prompt hook is new
    hooks = json.loads(settings.read_text())["hooks"]
    assert hooks["SessionStart"] == [
        {"hooks": [{"type": "command", "command": f"{MNEMO} hook session-start --agent claude"}]}
    ]
    assert len(hooks["UserPromptSubmit"]) == 1
    status = json.loads(_mnemo(home, "status", "--no-check", "--json").stdout)
    assert next(r for r in status if r["agent"] == "claude")["hook"] == "wired"


def _status_lines(home: Path) -> dict[str, str]:
    """What `agents status` says of each agent found, after its "NAME (found): "."""
    out = _mnemo(home, "status", "--no-check").stdout
    return dict(line.split(" (found): ", 1) for line in out.splitlines() if " (found): " in line)


def test_status_names_every_hook_mnemo_wired_and_the_ones_taken_out_by_hand(home):
    # GIVEN Mnemo wired into Claude Code and Gemini CLI
    assert _mnemo(home, "install", "claude", "gemini").returncode == 0
    # WHEN the user asks what is wired
    said = _status_lines(home)
    # THEN each line names the server and every hook: session start, each prompt, the shell
    assert said["Claude Code"] == "server wired; hooks wired: session-start, prompt, Bash"
    assert said["Gemini CLI"] == (
        "server wired; hooks wired: session-start, prompt, run_shell_command"
    )
    # WHEN the user takes out by hand Claude Code's prompt hook and one of its two Bash hooks
    settings = home / ".claude" / "settings.json"
    value = json.loads(settings.read_text())
    del value["hooks"]["UserPromptSubmit"], value["hooks"]["PostToolUseFailure"]
    settings.write_text(json.dumps(value))
    # THEN the line says which are missing, and --json says it per event of the agent
    assert _status_lines(home)["Claude Code"] == (
        "server wired; hooks wired: session-start, Bash (PostToolUse) "
        "(missing: prompt, Bash (PostToolUseFailure))"
    )
    status = json.loads(_mnemo(home, "status", "--no-check", "--json").stdout)
    claude = next(r for r in status if r["agent"] == "claude")
    assert claude["hook"] == "partly"
    assert {h["event"]: h["state"] for h in claude["hooks"]} == {
        "SessionStart": "wired",
        "UserPromptSubmit": "absent",
        "PostToolUse": "wired",
        "PostToolUseFailure": "absent",
    }


def _codex_hooks(home: Path) -> list[dict]:
    """What the real Codex CLI says of the hooks it would run (`codex app-server`,
    `hooks/list`): each with its command and whether it is trusted."""
    if not CLIS.exists():
        pytest.fail("the agent CLIs are not installed: run `scripts/setup --test` (needs npm)")
    calls = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"clientInfo": {"name": "mnemo-test", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "hooks/list", "params": {}},
    ]  # fmt: skip
    proc = subprocess.Popen(
        ["codex", "app-server"], env=_env(home), cwd=home / "project", stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        for call in calls:
            proc.stdin.write(json.dumps(call) + "\n")
        proc.stdin.flush()
        for line in proc.stdout:
            reply = json.loads(line)
            if reply.get("id") == 2:
                return [h for d in reply["result"]["data"] for h in d["hooks"]]
    finally:
        proc.kill()
        proc.wait(30)
    raise AssertionError("codex app-server did not answer hooks/list")


def test_the_real_codex_trusts_mnemos_hooks_and_only_them(home):
    # GIVEN a hook of the user's own in Codex, not trusted
    theirs = {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "say"}]}]}}
    (home / ".codex" / "hooks.json").write_text(json.dumps(theirs))
    configs = [home / ".codex" / "hooks.json", home / ".codex" / "config.toml"]
    before = [p.read_bytes() for p in configs]
    # WHEN Mnemo is wired into Codex
    assert _mnemo(home, "install", "codex").returncode == 0
    # THEN Codex lists Mnemo's session-start and prompt hooks, trusted; the user's still not
    listed = {h["command"]: h["trustStatus"] for h in _codex_hooks(home)}
    assert listed == {
        f"{MNEMO} hook session-start --agent codex": "trusted",
        f"{MNEMO} hook prompt --agent codex": "trusted",
        "say": "untrusted",
    }
    status = json.loads(_mnemo(home, "status", "--no-check", "--json").stdout)
    assert next(r for r in status if r["agent"] == "codex")["hook"] == "wired"
    # AND after an uninstall Codex lists the user's hook alone, every file as before
    assert _mnemo(home, "uninstall", "codex").returncode == 0
    assert [h["command"] for h in _codex_hooks(home)] == ["say"]
    assert [p.read_bytes() for p in configs] == before


def test_codex_trust_goes_with_mnemos_hooks_after_the_user_edited_the_file(home):
    assert _mnemo(home, "install", "codex").returncode == 0
    config = home / ".codex" / "config.toml"
    trusted = tomllib.loads(config.read_text())["hooks"]["state"]
    assert len(trusted) == 2 and all(k.endswith(":0:0") for k in trusted)
    # WHEN the user trusts a hook of their own and edits the file after the install
    config.write_text(
        config.read_text() + '\n[hooks.state."/x/hooks.json:stop:0:0"]\ntrusted_hash = "sha256:1"\n'
    )
    assert _mnemo(home, "uninstall", "codex").returncode == 0
    # THEN Mnemo's server and trust are gone, the user's entries stay
    left = tomllib.loads(config.read_text())
    assert "mnemo" not in left["mcp_servers"] and left["model"] == "o4"
    assert list(left["hooks"]["state"]) == ["/x/hooks.json:stop:0:0"]
    assert not (home / ".codex" / "hooks.json").exists()  # Mnemo had made it


def test_cursor_gets_its_own_hooks_file_layout_and_keeps_the_users_hooks(home):
    cursor = home / ".cursor"
    cursor.mkdir()
    theirs = {"version": 1, "hooks": {"afterFileEdit": [{"command": "./format.sh"}]}}
    (cursor / "hooks.json").write_text(json.dumps(theirs, indent=2))
    before = (cursor / "hooks.json").read_bytes()
    assert _mnemo(home, "install", "cursor").returncode == 0
    wired = json.loads((cursor / "hooks.json").read_text())
    assert wired["version"] == 1 and wired["hooks"]["afterFileEdit"] == [{"command": "./format.sh"}]
    assert wired["hooks"]["sessionStart"] == [
        {"command": f"{MNEMO} hook session-start --agent cursor"}
    ]
    assert wired["hooks"]["beforeSubmitPrompt"] == [
        {"command": f"{MNEMO} hook prompt --agent cursor"}
    ]
    assert _mnemo(home, "uninstall", "cursor").returncode == 0
    assert (cursor / "hooks.json").read_bytes() == before


ZED = """// Zed settings
//
// For information on how to configure Zed, see the Zed
// documentation: https://zed.dev/docs/configuring-zed
{
  "ui_font_size": 16,
  "context_servers": {
    // the GitHub server, from Zed's docs
    "github": {"command": "github-mcp", "args": ["stdio"], "env": {}},
  },
}
"""
GOOSE = """# written by goose configure
GOOSE_PROVIDER: ollama
extensions:
  developer:
    bundled: true
    enabled: true
    name: developer
    timeout: 300
    type: builtin
"""
CONTINUE = """name: Local Config
version: 1.0.0
schema: v1
models: []  # none yet
mcpServers:
  - name: SQLite
    command: npx
    args: ["-y", "mcp-sqlite", "/tmp/db.sqlite"]
"""


def test_zed_cline_goose_and_continue_get_mnemo_in_their_own_formats(home):
    import yaml  # PyYAML: a second parser reads what ruamel.yaml wrote

    from app.agents.configs import Jsonc

    zed = home / ".config" / "zed" / "settings.json"
    goose = home / ".config" / "goose" / "config.yaml"
    cont = home / ".continue" / "config.yaml"
    cline = home / ".cline" / "data" / "settings" / "cline_mcp_settings.json"
    for path, text in ((zed, ZED), (goose, GOOSE), (cont, CONTINUE)):
        path.parent.mkdir(parents=True)
        path.write_text(text)
    cline.parent.mkdir(parents=True)
    cline.write_text(json.dumps({"mcpServers": {"fs": {"command": "fs-mcp", "disabled": True}}}))
    before = {p: p.read_bytes() for p in (zed, goose, cont, cline)}
    done = _mnemo(home, "install", "zed", "cline", "goose", "continue")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("added") == 4, done.stdout
    mcp = {"command": str(MNEMO), "args": ["mcp"]}
    # Zed: its comments kept, the entry in context_servers beside the user's
    text = zed.read_text()
    assert text.startswith("// Zed settings") and "// the GitHub server" in text
    servers = Jsonc(zed, text).value()["context_servers"]
    assert servers["mnemo"] == {"source": "custom", **mcp, "env": {}} and "github" in servers
    # Cline: its JSON, the user's server untouched
    servers = json.loads(cline.read_text())["mcpServers"]
    assert servers["mnemo"] == {**mcp, "disabled": False, "timeout": 60}
    assert servers["fs"] == {"command": "fs-mcp", "disabled": True}
    # Goose: a stdio extension, its comment and the builtin one kept
    text = goose.read_text()
    assert text.startswith("# written by goose configure")
    value = yaml.safe_load(text)
    assert value["extensions"]["developer"]["type"] == "builtin"
    ours = value["extensions"]["mnemo"]
    assert (ours["type"], ours["cmd"], ours["args"], ours["enabled"]) == (
        "stdio", str(MNEMO), ["mcp"], True,
    )  # fmt: skip
    # Continue: an item of its mcpServers list, the metadata and the user's server kept
    text = cont.read_text()
    assert "models: []  # none yet" in text
    value = yaml.safe_load(text)
    assert (value["name"], value["schema"]) == ("Local Config", "v1")
    assert value["mcpServers"][0]["name"] == "SQLite"  # (Mnemo's after the user's: item 5)
    assert value["mcpServers"][1] == {"name": "mnemo", "type": "stdio", **mcp}
    status = json.loads(_mnemo(home, "status", "--no-check", "--json").stdout)
    wired = {r["agent"] for r in status if r["server"] == "wired"}
    assert {"zed", "cline", "goose", "continue"} <= wired
    # AND the uninstall puts every byte back
    assert _mnemo(home, "uninstall", "zed", "cline", "goose", "continue").returncode == 0
    assert {p: p.read_bytes() for p in before} == before


def test_yaml_configs_edited_after_the_install_lose_only_mnemos_entry(home):
    import yaml

    goose = home / ".config" / "goose" / "config.yaml"
    cont = home / ".continue" / "config.yaml"
    for path, text in ((goose, GOOSE), (cont, CONTINUE)):
        path.parent.mkdir(parents=True)
        path.write_text(text)
    assert _mnemo(home, "install", "goose", "continue").returncode == 0
    for path in (goose, cont):
        path.write_text(path.read_text() + "# added by me later\n")
    assert _mnemo(home, "uninstall", "goose", "continue").returncode == 0
    assert goose.read_text() == GOOSE + "# added by me later\n"
    assert cont.read_text() == CONTINUE + "# added by me later\n"
    assert "mnemo" not in yaml.safe_load(goose.read_text())["extensions"]


# ---- issue 42, item 5: Continue's YAML, its remarks where the user wrote them -------------
CONTINUE_CASES = {
    # a remark above the first item, one between items, one at the end, inline ones
    "remarks everywhere": """name: Local Config
version: 1.0.0
schema: v1
mcpServers:
  # the database server, see ~/notes/sqlite.md
  - name: SQLite
    command: npx  # from npm
    args: ["-y", "mcp-sqlite", "/tmp/db.sqlite"]
  # my own tools
  - name: tools
    command: /opt/tools/serve
    # args: [--verbose]
# end of my servers
""",
    "indented by 4": """name: Local Config
version: 1.0.0
models:
    -   name: Llama
        provider: ollama
mcpServers:
    # the database server
    -   name: SQLite
        command: npx
        args:
            - "-y"
            - mcp-sqlite
""",
    "a list at the key's indentation": """# written by cn
version: 1.0.0
mcpServers:
# the database server
- name: SQLite
  command: npx
models: []
""",
    "no list yet": "name: Local Config\nversion: 1.0.0\nschema: v1\nmodels: []  # none yet\n",
    "no list yet, no newline at the end": "# my config\nname: Local Config\nversion: 1.0.0",
}


def test_continues_remarks_stay_where_the_user_wrote_them_through_install_and_uninstall(home):
    import difflib

    import yaml

    cont = home / ".continue" / "config.yaml"
    cont.parent.mkdir()
    for case, text in CONTINUE_CASES.items():
        cont.write_text(text)
        done = _mnemo(home, "install", "continue")
        assert done.returncode == 0 and "added" in done.stdout, (case, done.stdout, done.stderr)
        wired = cont.read_text()
        servers = yaml.safe_load(wired)["mcpServers"]
        assert servers[-1] == {"name": "mnemo", "type": "stdio", "command": str(MNEMO),
                               "args": ["mcp"]}, case  # fmt: skip
        assert [s["name"] for s in servers[:-1]] == [
            s["name"] for s in (yaml.safe_load(text).get("mcpServers") or [])
        ], case
        # THEN the install only added lines (Mnemo's item), every line of the user's kept
        old, new = text.splitlines(), wired.splitlines()
        ops = difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
        changed = [op for op in ops if op[0] != "equal"]
        assert [op[0] for op in changed] == ["insert"], (case, wired)
        _, at, _, first, last = changed[0]
        assert "name: mnemo" in "".join(new[first:last]), case
        assert all("#" not in line for line in new[first:last]), case
        # AND no remark of the user's is right above Mnemo's item, as if about it (one inside
        # the item before, indented deeper, is that item's)
        above = new[first - 1] if first else ""
        ours = len(new[first]) - len(new[first].lstrip())
        assert not above[: ours + 1].lstrip().startswith("#"), (case, wired)
        # AND uninstalled as it is, the file is byte for byte the user's again
        assert _mnemo(home, "uninstall", "continue").returncode == 0
        assert cont.read_text() == text, case
        # AND so it is after the user edited the file since (the edit stays, nothing else)
        assert _mnemo(home, "install", "continue").returncode == 0
        edited = cont.read_text().replace("version: 1.0.0", "version: 1.0.1")
        cont.write_text(edited + ("" if edited.endswith("\n") else "\n") + "# added by me later\n")
        gone = _mnemo(home, "uninstall", "continue")
        assert gone.returncode == 0 and "removed" in gone.stdout, (case, gone.stdout)
        want = text.replace("version: 1.0.0", "version: 1.0.1")
        want += ("" if want.endswith("\n") else "\n") + "# added by me later\n"
        assert cont.read_text() == want, (case, cont.read_text())


# ---- issue 42, item 1: a real Gemini CLI run, its model API a local recorder ----------------
class _ModelAPI(http.server.BaseHTTPRequestHandler):
    """Gemini's API as far as one prompt needs it: every request body kept, "ok" answered."""

    bodies: list[dict] = []

    def do_POST(self):  # noqa: N802 (http.server's name)
        size = int(self.headers.get("Content-Length") or 0)
        type(self).bodies.append(json.loads(self.rfile.read(size) or b"{}"))
        answer = {
            "candidates": [
                {"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP"}
            ],
            "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1},
        }
        sse = "alt=sse" in self.path
        data = (f"data: {json.dumps(answer)}\r\n\r\n" if sse else json.dumps(answer)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream" if sse else "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def model_api():
    _ModelAPI.bodies = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _ModelAPI)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", _ModelAPI.bodies
    server.shutdown()


def _said_to_the_model(bodies: list[dict]) -> str:
    return "\n".join(
        part.get("text", "")
        for body in bodies
        for content in body.get("contents", [])
        for part in content.get("parts", [])
    )


def test_a_real_gemini_runs_first_prompt_gets_the_memory_its_question_is_about(home, model_api):
    url, bodies = model_api
    env = {**_env(home), "GEMINI_API_KEY": "not-a-key", "GOOGLE_GEMINI_BASE_URL": url}
    (home / ".gemini" / "settings.json").write_text(
        json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}})
    )
    assert _mnemo(home, "install", "gemini").returncode == 0

    def mnemo(*args: str, given: str | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(MNEMO), *args], input=given, env=env, cwd=home / "project",
            capture_output=True, text=True, timeout=180,
        )  # fmt: skip

    # GIVEN the memory a question will be about, then more recent ones that fill the block
    lasagne = "Grandma's lasagne needs three layers of béchamel and a pinch of nutmeg."
    assert mnemo("remember", lasagne).returncode == 0
    notes = "\n\n".join(
        f"# {topic}\n\nAlways check the {topic} runbook before changing the {topic} setup; "
        f"its owner signs off on every {topic} change, and the last review found {n} issues "
        "that were fixed in the following sprint with a short write-up for the team."
        for n, topic in enumerate(TOPICS)
    )
    (home / "notes.md").write_text(notes)
    assert mnemo("import", str(home / "notes.md")).returncode == 0
    block = json.loads(mnemo("context", "--json", "--max-chars", "9000").stdout)
    assert lasagne not in [e["text"] for e in block["entries"]]  # the session block lacks it
    # WHEN the person's first prompt in a real Gemini CLI asks about it, stating a rule too
    said = (
        "From now on, write all new scripts in TypeScript. "
        "How many layers of béchamel does grandma's lasagne need?"
    )
    try:
        run = subprocess.run(
            ["gemini", "-m", "gemini-2.5-flash", "-p", said], env=env, cwd=home / "project",
            capture_output=True, text=True, timeout=180,
        )  # fmt: skip
    finally:
        stopped = mnemo("hook", "stop")
    assert run.returncode == 0 and "ok" in run.stdout, run.stdout + run.stderr
    assert stopped.returncode == 0, stopped.stderr
    # THEN the model got the session block and, for this prompt, the memory asked about
    sent = _said_to_the_model(bodies)
    assert "## Memories from earlier sessions" in sent
    assert "## Memories that may bear on this prompt" in sent and lasagne in sent, sent[-3000:]
    # AND the person's rule waits for review, and nothing of the block
    waiting = json.loads(mnemo("inbox", "--json").stdout)
    assert [c["text"] for c in waiting] == ["From now on, write all new scripts in TypeScript."]
    # AND Gemini's own record of the session, read by `mnemo agents import` into a new data
    # folder, proposes the same rule, not the memories Mnemo put into that first prompt
    fresh = {**env, "MNEMO_HOME": str(home.parent / "fresh")}
    done = subprocess.run([str(MNEMO), "agents", "import"], env=fresh, cwd=home / "project",
                          capture_output=True, text=True, timeout=180)  # fmt: skip
    assert done.returncode == 0, done.stderr
    imported = json.loads(subprocess.run([str(MNEMO), "inbox", "--json"], env=fresh,
                                         capture_output=True, text=True).stdout)  # fmt: skip
    assert [(c["text"], c["agent"]) for c in imported] == [
        ("From now on, write all new scripts in TypeScript.", "gemini")
    ]


TOPICS = (
    "billing", "search", "payments", "mobile", "backup", "monitoring", "logging", "alerting",
    "staging", "CDN", "DNS", "VPN", "firewall", "database", "cache", "queue", "mail",
    "calendar", "wiki", "CI", "release", "onboarding", "hiring", "budget", "travel",
    "security", "compliance", "analytics", "design", "support", "docs", "sales",
)  # fmt: skip


# ---- issue 42, item 4 -------------------------------------------------------------------
ALL_NINE = ("claude", "codex", "gemini", "cursor", "vscode", "zed", "cline", "goose", "continue")


def test_uninstall_leaves_no_folder_and_no_copy_mnemo_made(tmp_path, mnemo_home):
    # GIVEN a home where only Codex was ever used, its config holding a token
    home = tmp_path / "user"
    (home / ".codex").mkdir(parents=True)
    codex = b'model = "o4"\n\n[shell_environment_policy.set]\nGH_TOKEN = "not-a-real-token"\n'
    (home / ".codex" / "config.toml").write_bytes(codex)
    before = sorted(str(p.relative_to(home)) for p in home.rglob("*"))
    # WHEN Mnemo is wired into all nine agents (twice: a second install writes again), then out
    for action in ("install", "install", "uninstall"):
        done = _mnemo(home, action, *ALL_NINE)
        assert done.returncode == 0, done.stdout + done.stderr
    # THEN the home is as it was: no agent folder Mnemo made, no backup or original left
    after = sorted(str(p.relative_to(home)) for p in home.rglob("*"))
    assert after == before
    assert (home / ".codex" / "config.toml").read_bytes() == codex
    # AND a later install finds only the agent the user has (none is on this PATH), not
    # eight more by folders Mnemo had made
    env = {**_env(home), "PATH": str(Path(sys.executable).parent) + os.pathsep + "/usr/bin:/bin"}
    again = subprocess.run(
        [str(MNEMO), "agents", "install"], env=env, capture_output=True, text=True, timeout=180
    )
    assert again.returncode == 0, again.stderr
    assert {line.split(":")[0] for line in again.stdout.splitlines()} == {"Codex CLI"}


def test_uninstall_keeps_a_folder_the_agent_has_used_since(tmp_path, mnemo_home):
    home = tmp_path / "user"
    home.mkdir()
    assert _mnemo(home, "install", "gemini").returncode == 0
    (home / ".gemini" / "history").mkdir()  # the agent ran meanwhile
    (home / ".gemini" / "history" / "chat.json").write_text("{}")
    assert _mnemo(home, "uninstall", "gemini").returncode == 0
    assert not (home / ".gemini" / "settings.json").exists()
    assert (home / ".gemini" / "history" / "chat.json").read_text() == "{}"


# ---- issue 42, item 5 -------------------------------------------------------------------
GEMINI_JSONC = """{
  // my theme
  "theme": "Dracula",
  "hooks": {
    "SessionStart": [
      {"hooks": [{"type": "command", "command": "echo hi"}]} // mine
    ]
  },
  /* servers */
  "mcpServers": {"other": {"command": "x", "args": ["a", "b"]}}
}
"""


def test_a_gemini_settings_file_with_comments_gets_mnemos_server_and_hooks(home):
    # GIVEN Gemini's settings.json with comments (Gemini CLI reads them)
    gemini = home / ".gemini" / "settings.json"
    gemini.write_text(GEMINI_JSONC)
    # WHEN Mnemo is wired in
    done = _mnemo(home, "install", "gemini")
    # THEN it is, beside every comment and the user's own hook, which keeps its remark
    assert done.returncode == 0, done.stdout + done.stderr
    wired = gemini.read_text()
    for kept in ("// my theme", "/* servers */", '"theme": "Dracula"', '"args": ["a", "b"]'):
        assert kept in wired
    assert '{"hooks": [{"type": "command", "command": "echo hi"}]}, // mine\n' in wired
    status = json.loads(_mnemo(home, "status", "--no-check", "--json").stdout)
    gemini_status = next(r for r in status if r["agent"] == "gemini")
    assert gemini_status["server"] == "wired", gemini_status
    # AND the real Gemini CLI reads it and lists Mnemo's server
    assert "mnemo:" in _tool(home, "gemini", "mcp", "list")
    # AND an uninstall after the user edited elsewhere takes out only Mnemo's entries
    gemini.write_text(wired.replace('"Dracula"', '"Nord"'))
    assert _mnemo(home, "uninstall", "gemini").returncode == 0
    assert gemini.read_text() == GEMINI_JSONC.replace('"Dracula"', '"Nord"')


def test_plain_json_keeps_its_own_layout_tabs_and_one_line_arrays(home):
    # GIVEN VS Code's mcp.json indented with tabs, with a one-line array
    vscode = home / ".config" / "Code" / "User" / "mcp.json"
    vscode.parent.mkdir(parents=True)
    theirs = '{\n\t"servers": {\n\t\t"gh": {"url": "https://x"}\n\t},\n\t"inputs": [1, 2, 3]\n}\n'
    vscode.write_text(theirs)
    # WHEN Mnemo is wired in
    assert _mnemo(home, "install", "vscode").returncode == 0
    wired = vscode.read_text()
    # THEN only its entry was added, in tabs; every line of theirs is as it was
    assert '\t"inputs": [1, 2, 3]\n' in wired and '\t\t"gh": {"url": "https://x"}\n' in wired
    added = [line for line in wired.splitlines() if line not in theirs.splitlines()]
    assert added and all(line.startswith("\t\t") for line in added), added
    assert json.loads(wired)["servers"]["mnemo"]["command"] == str(MNEMO)


def test_a_remark_after_mnemos_codex_tables_survives_an_uninstall(home):
    codex = home / ".codex" / "config.toml"
    assert _mnemo(home, "install", "codex").returncode == 0
    # WHEN the user appends a table of their own, with a remark above it
    mine = '\n# fast profile, for quick questions\n[profiles.fast]\nmodel = "o4-mini"\n'
    codex.write_text(codex.read_text() + mine)
    assert _mnemo(home, "uninstall", "codex").returncode == 0
    # THEN Mnemo's tables are gone, and their remark is still above their table
    text = codex.read_text()
    assert "mnemo" not in text and "hooks.state" not in text
    assert '# fast profile, for quick questions\n[profiles.fast]\nmodel = "o4-mini"\n' in text
    assert text.startswith('# my codex settings\nmodel = "o4"  # keep me\n')


# ---- issue 42: mnemo agents import --------------------------------------------------------
def _jsonl(path: Path, *lines: dict | str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))


def test_agents_import_proposes_what_the_agents_were_told_as_lasting(home, model_api):
    url, _ = model_api
    env = {**_env(home), "GEMINI_API_KEY": "not-a-key", "GOOGLE_GEMINI_BASE_URL": url}

    def mnemo(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(MNEMO), *args], env=env, cwd=home / "project",
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip

    # GIVEN a Gemini CLI session, really run (its transcript as Gemini CLI 0.61 writes it)
    (home / ".gemini" / "settings.json").write_text(
        json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}})
    )
    said = "Never push directly to the main branch. What does the deploy script do?"
    run = subprocess.run(
        ["gemini", "-m", "gemini-2.5-flash", "-p", said], env=env, cwd=home / "project",
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert list((home / ".gemini" / "tmp").glob("*/chats/session-*.json*"))
    # AND Claude Code's and Codex's transcripts in their documented shapes, memory files
    (home / ".claude" / "CLAUDE.md").write_text(
        "# Style\n\n- Always write commit messages in the imperative mood.\n"
        "- Use `uv` for Python environments, never pip.\n\n```sh\nrm -rf build\n```\n"
    )
    claude = home / ".claude" / "projects" / "-home-u-billing" / "c1.jsonl"
    _jsonl(
        claude,
        {"type": "user", "cwd": "/home/u/billing", "sessionId": "c1",
         "timestamp": "2026-11-20T09:00:00Z",
         "message": {"role": "user", "content": "From now on, write all new scripts in "
                     "TypeScript. Fix the flaky test."}},
        {"type": "assistant", "sessionId": "c1",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "Always x."}]}},
        {"type": "user", "isMeta": True, "sessionId": "c1",
         "message": {"role": "user", "content": "Caveat: remember that this is injected"}},
        {"type": "user", "sessionId": "c1", "message": {"role": "user", "content": [
            {"type": "tool_result", "content": "remember that a tool said this"}]}},
        {"type": "user", "cwd": "/home/u/billing", "sessionId": "c1",
         "timestamp": "2026-11-20T09:05:00Z", "message": {"role": "user", "content": [
             {"type": "text", "text": "Our CI runs on GitHub Actions, not Jenkins."}]}},
        {"type": "user", "sessionId": "c1", "message": {"role": "user", "content":
         "remember that the staging db password is Tq7#mZp2!vLx9"}},
        "{not json",
    )  # fmt: skip
    day = home / ".codex" / "sessions" / "2026" / "11" / "21"
    _jsonl(
        day / "rollout-2026-11-21T10-00-00-x1.jsonl",
        {"timestamp": "2026-11-21T10:00:00Z", "type": "session_meta",
         "payload": {"id": "x1", "cwd": "/home/u/shop", "cli_version": "0.169.0"}},
        {"timestamp": "2026-11-21T10:00:00Z", "type": "response_item", "payload": {
            "type": "message", "role": "user",
            "content": [{"type": "input_text",
                         "text": "<environment_context>Always y.</environment_context>"}]}},
        {"timestamp": "2026-11-21T10:00:01Z", "type": "event_msg", "payload": {
            "type": "user_message", "message": "I'd rather you use pnpm than npm. Add zod.",
            "kind": "plain"}},
        # (Codex 0.169 records the same words as an item too: read once)
        {"timestamp": "2026-11-21T10:00:01Z", "type": "event_msg", "payload": {
            "type": "item_completed", "thread_id": "x1", "turn_id": "t1", "item": {
                "type": "UserMessage", "id": "u1",
                "content": [{"type": "text",
                             "text": "I'd rather you use pnpm than npm. Add zod."}]}}},
    )  # fmt: skip
    (home / "project" / "AGENTS.md").write_text("Run `make check` before every commit.\n")
    # WHEN the user first asks what an import would propose THEN it says, keeping nothing
    dry = mnemo("agents", "import", "--project", str(home / "project"), "--dry-run")
    assert "Would propose up to 7 statements" in dry.stdout, dry.stdout
    assert "1 holding a secret (never kept)" in dry.stdout
    assert json.loads(mnemo("inbox", "--json").stdout) == []
    # WHEN the user imports what their agents know
    done = mnemo("agents", "import", "--project", str(home / "project"))
    # THEN each lasting statement waits for review, with the agent, project, session, date and
    # file it came from; nothing else (the agent's words, a tool's, an injected note, a task)
    assert done.returncode == 0, done.stderr
    assert "c1.jsonl: 1 line(s) not readable, skipped" in done.stderr
    assert "1 holding a secret (not kept)" in done.stdout, done.stdout
    waiting = json.loads(mnemo("inbox", "--json").stdout)
    by_text = {c["text"]: c for c in waiting}
    assert set(by_text) == {
        "Never push directly to the main branch.",
        "From now on, write all new scripts in TypeScript.",
        "Our CI runs on GitHub Actions, not Jenkins.",
        "I'd rather you use pnpm than npm.",
        "Always write commit messages in the imperative mood.",
        "Use `uv` for Python environments, never pip.",
        "Run `make check` before every commit.",
    }, sorted(by_text)
    ts = by_text["From now on, write all new scripts in TypeScript."]
    assert (ts["agent"], ts["project"], ts["session"]) == ("claude", "billing", "c1")
    assert ts["said_at"] == "2026-11-20T09:00:00Z" and ts["source"] == str(claude)
    pnpm = by_text["I'd rather you use pnpm than npm."]
    assert (pnpm["agent"], pnpm["project"], pnpm["session"]) == ("codex", "shop", "x1")
    assert pnpm["seen"] == 1
    gemini = by_text["Never push directly to the main branch."]
    assert gemini["agent"] == "gemini" and gemini["project"] == "project" and gemini["session"]
    assert by_text["Run `make check` before every commit."]["project"] == "project"
    # AND the secret is kept nowhere
    stored = b"".join(
        p.read_bytes() for p in Path(os.environ["MNEMO_HOME"]).rglob("*") if p.is_file()
    )
    assert b"Tq7#mZp2" not in stored
    # WHEN it runs again THEN nothing new is proposed or counted
    again = mnemo("agents", "import", "--project", str(home / "project"))
    assert "7 taken from the same file before" in again.stdout, again.stdout
    # AND a dry run says so too (it said "up to 7" again: a new user's walkthrough)
    dry = mnemo("agents", "import", "--project", str(home / "project"), "--dry-run")
    assert "up to 0 statements" in dry.stdout and "7 taken from the same file" in dry.stdout
    assert json.loads(mnemo("inbox", "--json").stdout) == waiting
    # AND a whole file's proposals are accepted at once
    accepted = mnemo("inbox", "accept", "--source", str(home / ".claude" / "CLAUDE.md"))
    assert accepted.stdout.count("Stored") == 2, accepted.stdout + accepted.stderr
    assert len(json.loads(mnemo("inbox", "--json").stdout)) == 5


# ---- found by the attack on JSON edited as text (issue 42) --------------------------------
@pytest.mark.parametrize(
    "content", ['{ // c\n  "a": "unterminated\n}\n', '{ // c\n  "a": 1 / 2\n}\n', "{ /* open\n"]
)
def test_a_commented_file_broken_further_on_is_refused_in_one_line(home, content):
    gemini = home / ".gemini" / "settings.json"
    gemini.write_text(content)
    for args in (("install", "gemini"), ("uninstall",), ("status", "--no-check")):
        done = _mnemo(home, *args)
        assert "Traceback" not in done.stderr, done.stderr
        assert gemini.read_text() == content
    refused = _mnemo(home, "install", "gemini").stdout
    assert "refused" in refused and "not changed" in refused, refused


def test_an_empty_hooks_object_of_the_users_does_not_refuse_the_install(home):
    settings = home / ".claude" / "settings.json"
    settings.write_text('{\n  "model": "opus",\n  "hooks": {}\n}\n')
    done = _mnemo(home, "install", "claude")
    assert done.returncode == 0 and "refused" not in done.stdout, done.stdout
    assert "SessionStart" in json.loads(settings.read_text())["hooks"]


def test_an_older_mnemos_hook_is_updated_where_it_is_beside_a_remark(home):
    cursor = home / ".cursor" / "hooks.json"
    cursor.parent.mkdir()
    cursor.write_text(
        '{\n  "version": 1,\n  "hooks": {\n    "sessionStart": [\n'
        '      {"command": "./my.sh"}, // mine\n'
        '      {"command": "/opt/old/bin/mnemo hook session-start --agent cursor"}\n'
        "    ]\n  }\n}\n"
    )
    assert _mnemo(home, "install", "cursor").returncode == 0
    text = cursor.read_text()
    assert '      {"command": "./my.sh"}, // mine\n' in text and "/opt/old" not in text
    new = f'      {{"command": "{MNEMO} hook session-start --agent cursor"}}\n'
    assert new in text, text


def test_a_remark_before_the_users_last_hook_is_not_copied(home):
    gemini = home / ".gemini" / "settings.json"
    theirs = (
        '{\n  "theme": "a",\n  "hooks": {\n    "SessionStart": [\n'
        '      /* greet */ {"hooks": [{"type": "command", "command": "echo hi"}]}\n'
        "    ]\n  }\n}\n"
    )
    gemini.write_text(theirs)
    assert _mnemo(home, "install", "gemini").returncode == 0
    assert gemini.read_text().count("/* greet */") == 1
    gemini.write_text(gemini.read_text().replace('"a"', '"b"'))
    assert _mnemo(home, "uninstall", "gemini").returncode == 0
    assert gemini.read_text().replace('  "mcpServers": {},\n', "") == theirs.replace('"a"', '"b"')


# ---- issue 42: real Claude Code and Codex runs against a local model API -----------------
class _AnthropicAndOpenAI(http.server.BaseHTTPRequestHandler):
    """Anthropic's Messages API and OpenAI's Responses API as far as one prompt needs them
    (what Claude Code 2.1 and Codex 0.169 call): every request body kept, "ok" answered."""

    protocol_version = "HTTP/1.1"
    bodies: list[dict] = []

    def do_HEAD(self):  # noqa: N802 (Claude Code checks that the API answers at all)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):  # noqa: N802
        size = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(size) or b"{}")
        type(self).bodies.append(body)
        if self.path.startswith("/v1/responses"):
            usage = {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}
            events = [
                {"type": "response.created", "response": {"id": "r1"}},
                {"type": "response.output_item.done", "item": {
                    "type": "message", "role": "assistant", "id": "m1",
                    "content": [{"type": "output_text", "text": "ok"}]}},
                {"type": "response.completed", "response": {"id": "r1", "usage": usage}},
            ]  # fmt: skip
        elif body.get("stream"):
            events = [
                {"type": "message_start", "message": {
                    "id": "m1", "type": "message", "role": "assistant", "model": body["model"],
                    "content": [], "stop_reason": None, "stop_sequence": None,
                    "usage": {"input_tokens": 1, "output_tokens": 1}}},
                {"type": "content_block_start", "index": 0,
                 "content_block": {"type": "text", "text": ""}},
                {"type": "content_block_delta", "index": 0,
                 "delta": {"type": "text_delta", "text": "ok"}},
                {"type": "content_block_stop", "index": 0},
                {"type": "message_delta", "delta": {"stop_reason": "end_turn",
                 "stop_sequence": None}, "usage": {"output_tokens": 1}},
                {"type": "message_stop"},
            ]  # fmt: skip
        else:
            events = None
        if events is None:
            answer = {"id": "m1", "type": "message", "role": "assistant", "stop_reason": "end_turn",
                      "model": body.get("model"), "content": [{"type": "text", "text": "ok"}],
                      "usage": {"input_tokens": 1, "output_tokens": 1}}  # fmt: skip
            data, kind = json.dumps(answer).encode(), "application/json"
        else:
            text = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
            data, kind = text.encode(), "text/event-stream"
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    return [s for item in value for s in _strings(item)] if isinstance(value, list) else []


@pytest.mark.parametrize("cli", ["claude", "codex"])
def test_a_real_claude_and_codex_prompt_gets_its_memory_and_their_transcripts_import(
    home, cli, tmp_path
):
    _AnthropicAndOpenAI.bodies = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _AnthropicAndOpenAI)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    env = {**_env(home), "ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "sk-ant-not-a-key",
           "MODEL_API_KEY": "x", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}  # fmt: skip
    codex = home / ".codex" / "config.toml"  # Codex's own settings: the local model API
    codex.write_text(
        codex.read_text().replace('model = "o4"', 'model = "gpt-5"\nmodel_provider = "local"')
        + f'\n[model_providers.local]\nname = "local"\nbase_url = "{url}/v1"\n'
        'wire_api = "responses"\nenv_key = "MODEL_API_KEY"\n'
    )
    project = home / "project"
    subprocess.run(["git", "init", "-q", str(project)], check=True)

    def mnemo(*args: str, **more: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(MNEMO), *args], env={**env, **more}, cwd=project,
                              capture_output=True, text=True, timeout=180)  # fmt: skip

    lasagne = "Grandma's lasagne needs three layers of béchamel and a pinch of nutmeg."
    assert mnemo("remember", lasagne).returncode == 0
    assert _mnemo(home, "install", cli).returncode == 0
    said = (
        "From now on, write all new scripts in TypeScript. "
        "How many layers of béchamel does grandma's lasagne need?"
    )
    command = {"claude": ["claude", "-p", said],
               "codex": ["codex", "exec", "--skip-git-repo-check", said]}[cli]  # fmt: skip
    try:
        # WHEN the person asks the real agent about a memory, stating a rule too
        run = subprocess.run(command, env=env, cwd=project, capture_output=True, text=True,
                             timeout=300)  # fmt: skip
    finally:
        stopped = mnemo("hook", "stop")
        server.shutdown()
    assert run.returncode == 0 and "ok" in run.stdout, run.stdout + run.stderr
    assert stopped.returncode == 0, stopped.stderr
    # THEN what reached the model holds the memory the prompt is about, from Mnemo's hook
    sent = "\n".join(s for body in _AnthropicAndOpenAI.bodies for s in _strings(body))
    assert "Memories that may bear on this prompt" in sent and lasagne in sent, sent[-3000:]
    # AND the person's rule waits for review
    waiting = json.loads(mnemo("inbox", "--json").stdout)
    assert [c["text"] for c in waiting] == ["From now on, write all new scripts in TypeScript."]
    # AND the agent's own transcript of the run, read by `mnemo agents import` into a new
    # data folder, proposes the same rule with where and when it was said
    fresh = str(tmp_path / "fresh")
    assert mnemo("agents", "import", MNEMO_HOME=fresh).returncode == 0
    (imported,) = json.loads(mnemo("inbox", "--json", MNEMO_HOME=fresh).stdout)
    assert imported["text"] == "From now on, write all new scripts in TypeScript."
    assert imported["agent"] == cli and imported["project"] == "project"
    assert imported["session"] and imported["said_at"].startswith("20")
    assert imported["source"].startswith(str(home / f".{cli}"))


# ---- review of issue 42: a list Mnemo empties is the user's line again, never a null -------
EMPTY_KEYS = {
    # Continue refuses `mcpServers:` read as null ("Failed to parse config"): an uninstall
    # gives back the user's own line, never a null where the user had a list or a map
    "an empty flow list with a remark": (
        "continue",
        """name: Local Config
version: 1.0.0
schema: v1
# my servers
mcpServers: []  # none yet
models:
  - name: Llama  # local
    provider: ollama
""",
    ),
    "an empty flow list": ("continue", "name: Local Config\nversion: 1.0.0\nmcpServers: []\n"),
    "a bare key": ("continue", "name: C\nversion: 1.0.0\nmcpServers:\nmodels: []\n"),
    "a bare key with a remark": ("continue", "name: C\nversion: 1.0.0\nmcpServers:  # none\n"),
    "goose's empty flow map with a remark": (
        "goose",
        "GOOSE_PROVIDER: openai\nextensions: {}  # none yet\n",
    ),
}


def test_a_users_empty_list_or_map_comes_back_as_written_after_an_install_and_uninstall(home):
    import yaml

    files = {"continue": home / ".continue" / "config.yaml",
             "goose": home / ".config" / "goose" / "config.yaml"}  # fmt: skip
    for path in files.values():
        path.parent.mkdir(parents=True)
    for case, (agent, text) in EMPTY_KEYS.items():
        path = files[agent]
        key = "mcpServers" if agent == "continue" else "extensions"
        path.write_text(text)
        done = _mnemo(home, "install", agent)
        assert done.returncode == 0 and "added" in done.stdout, (case, done.stdout, done.stderr)
        wired = yaml.safe_load(path.read_text())[key]
        assert "mnemo" in ([s["name"] for s in wired] if agent == "continue" else wired), case
        # WHEN the user edits the file since, then uninstalls
        path.write_text(path.read_text() + "# added by me later\n")
        gone = _mnemo(home, "uninstall", agent)
        assert gone.returncode == 0 and "removed" in gone.stdout, (case, gone.stdout)
        # THEN the user's lines are back byte for byte (the edit kept), never a null
        assert path.read_text() == text + "# added by me later\n", (case, path.read_text())
        if yaml.safe_load(text)[key] is not None:
            assert yaml.safe_load(path.read_text())[key] is not None, case


def test_a_list_emptied_with_no_copy_from_before_holds_an_empty_list_not_a_null(home):
    import yaml

    # GIVEN Mnemo's item under a remark of the user's, and no record of Mnemo writing it
    cont = home / ".continue" / "config.yaml"
    cont.parent.mkdir()
    ours = f"  - name: mnemo\n    type: stdio\n    command: {MNEMO}\n    args:\n      - mcp\n"
    cont.write_text("name: C\nversion: 1.0.0\nmcpServers:     # mine\n" + ours + "# end\n")
    gone = _mnemo(home, "uninstall", "continue")
    assert gone.returncode == 0 and "removed" in gone.stdout, gone.stdout + gone.stderr
    # THEN the key and the remarks stay, the list empty (Continue would refuse a null)
    assert cont.read_text() == "name: C\nversion: 1.0.0\nmcpServers: []  # mine\n# end\n"
    assert yaml.safe_load(cont.read_text())["mcpServers"] == []


# ---- review of issue 42: a config holding a timestamp is edited as text ------------------

TIMESTAMPED = """name: C
version: 1.0.0
updated: 2024-01-01T10:00:00Z
mcpServers:
  # db
  - name: A
    command: a
# end
"""


def test_a_config_holding_a_timestamp_is_edited_as_text_its_remarks_kept(home):
    import difflib

    cont = home / ".continue" / "config.yaml"
    cont.parent.mkdir()
    cont.write_text(TIMESTAMPED)
    assert _mnemo(home, "install", "continue").returncode == 0
    wired = cont.read_text()
    # THEN only Mnemo's lines went in, after the last item: the user's `# end` still ends the file
    old, new = TIMESTAMPED.splitlines(), wired.splitlines()
    ops = difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
    assert [op[0] for op in ops if op[0] != "equal"] == ["insert"], wired
    first = next(n for n, line in enumerate(new) if "name: mnemo" in line)
    assert new[first - 1] == "    command: a" and new[-1] == "# end", wired
    # AND after the user's edit, the uninstall keeps it and every other byte
    cont.write_text(wired + "# added by me later\n")
    assert _mnemo(home, "uninstall", "continue").returncode == 0
    assert cont.read_text() == TIMESTAMPED + "# added by me later\n", cont.read_text()


def test_remarks_after_mnemos_last_item_stay_when_ruamel_writes_the_uninstall(home):
    import yaml

    cont = home / ".continue" / "config.yaml"
    goose = home / ".config" / "goose" / "config.yaml"
    for path, text in ((cont, TIMESTAMPED), (goose, GOOSE)):
        path.parent.mkdir(parents=True)
        path.write_text(text)
    assert _mnemo(home, "install", "continue", "goose").returncode == 0
    # GIVEN the user since gave the list an anchor (a layout the text edit leaves to
    # ruamel.yaml) and wrote remarks after Mnemo's item, the file's last
    for path, key in ((cont, "mcpServers:"), (goose, "extensions:")):
        wired = path.read_text().replace(key + "\n", key + " &mine\n", 1)
        path.write_text(wired + "# added by me later\n# and another\n")
    gone = _mnemo(home, "uninstall", "continue", "goose")
    assert gone.returncode == 0 and gone.stdout.count("removed") == 2, gone.stdout
    # THEN Mnemo's item is out and the user's remarks after it stay, at the file's end
    for path in (cont, goose):
        text = path.read_text()
        assert text.endswith("\n# added by me later\n# and another\n"), text
        assert "mnemo" not in text, text
    assert [s["name"] for s in yaml.safe_load(cont.read_text())["mcpServers"]] == ["A"]
    assert "# db\n" in cont.read_text() and "# end\n" in cont.read_text()


def test_a_remark_after_the_list_stays_after_it_when_ruamel_writes_the_install(home):
    # GIVEN a list with an anchor (a layout the text edit leaves to ruamel.yaml), a remark
    # of the user's after its last item
    cont = home / ".continue" / "config.yaml"
    cont.parent.mkdir()
    cont.write_text(
        "name: C\nversion: 1.0.0\nmcpServers: &servers\n  - name: SQLite\n    command: npx\n"
        "# end of my servers\nmodels: []\n"
    )
    assert _mnemo(home, "install", "continue").returncode == 0
    # THEN Mnemo's item goes in after the user's, and the remark still follows the list
    lines = cont.read_text().splitlines()
    ours = lines.index("  - name: mnemo")
    assert lines[ours - 1] == "    command: npx", lines
    assert lines.index("# end of my servers") == lines.index("models: []") - 1 > ours, lines


def test_an_agent_without_hook_events_reads_absent_not_an_error():
    # a row with no hooks at all (an agent Mnemo wires no hook into) said in words, as the
    # settings' Agents page asks for every row (a review, helper-59: IndexError)
    from app.agents import hooks

    assert hooks.said({"hook": "wired", "hooks": []}) == "absent"
