"""The second red team's findings (issue 21), reproduced as they were found: a second local
user (uid 65534 through setpriv), umask 0, links planted in a shared folder."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from app.core import paths
from tests.conftest import REPO

OTHER = 65534  # nobody: the second local user
AS_ROOT = os.name == "posix" and os.geteuid() == 0 and shutil.which("setpriv") is not None
SECOND_USER = pytest.mark.skipif(not AS_ROOT, reason="needs root and setpriv for a second user")


def _as_other(*command: str) -> None:
    subprocess.run(
        ["setpriv", f"--reuid={OTHER}", f"--regid={OTHER}", "--clear-groups", *command],
        check=True,
        capture_output=True,
    )


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


@SECOND_USER
def test_an_export_never_writes_through_a_link_another_user_planted(tmp_path, monkeypatch, request):
    # GIVEN a shared folder (like /tmp: sticky, everyone writes) and a file of the victim's
    shared = Path(tempfile.mkdtemp(prefix="mnemo-shared-", dir="/tmp"))
    shared.chmod(0o1777)
    request.addfinalizer(lambda: shutil.rmtree(shared, ignore_errors=True))
    victim_file = tmp_path / "victim-notes.txt"
    victim_file.write_text("the victim's own file\n")
    # AND the other user planted a link where the export's temporary file would go (the
    # old name was .NAME.PID.tmp: guessable)
    monkeypatch.setattr(paths.secrets, "token_hex", lambda n: "guessed")
    planted = shared / ".x.jsonl.guessed.tmp"
    _as_other("ln", "-s", str(victim_file), str(planted))
    assert planted.is_symlink()
    from app.core.engine import Engine

    engine = Engine()
    engine.remember("A private note the other user must not read", force=True)
    # WHEN the victim exports into the shared folder
    with pytest.raises(Exception, match="cannot write"):
        engine.export_to(shared / "x.jsonl")
    engine.close()
    # THEN nothing went through the link: the victim's file is as it was, no export landed
    assert victim_file.read_text() == "the victim's own file\n"
    assert not (shared / "x.jsonl").exists()
    # AND with a name nobody can guess, the export is written, private to the victim
    monkeypatch.undo()
    engine = Engine()
    engine.export_to(shared / "x.jsonl")
    engine.close()
    assert _mode(shared / "x.jsonl") == 0o600 and victim_file.read_text().startswith("the")


@pytest.mark.skipif(os.name != "posix", reason="umask")
def test_under_umask_0_the_folders_above_mnemos_are_not_writable_by_others(tmp_path):
    # GIVEN a new user's home, no ~/.config, ~/.local, ~/.cache yet, and a umask of 0
    home = tmp_path / "user"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "MNEMO_HOME" and not k.startswith("XDG_")}
    env["HOME"] = str(home)
    done = subprocess.run(
        [sys.executable, "-m", "app", "remember", "A note from the user's own home"],
        capture_output=True,
        env=env,
        cwd=REPO,
        timeout=120,
        preexec_fn=lambda: os.umask(0),
    )
    assert done.returncode == 0, done.stderr
    # THEN the folders made above Mnemo's own are 0755 (they were 0777: another user
    # planted ~/.config/autostart/evil.desktop and renamed ~/.local/share/mnemo away)
    above = [home / ".config", home / ".local", home / ".local" / "share", home / ".cache"]
    for folder in above:
        assert folder.is_dir() and _mode(folder) == 0o755, (folder, oct(_mode(folder)))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="XDG launchers")
def test_the_launcher_and_autostart_entry_are_not_written_through_links(tmp_path, monkeypatch):
    from app.gui import desktop

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setattr(desktop, "system_launcher", lambda: None)
    target = tmp_path / "elsewhere.txt"
    target.write_text("not a launcher")
    (tmp_path / "config" / "autostart").mkdir(parents=True)
    (tmp_path / "config" / "autostart" / "mnemo.desktop").symlink_to(target)
    old = os.umask(0)
    try:
        launcher = desktop.install_launcher()
        autostart = desktop.set_autostart(True)
    finally:
        os.umask(old)
    assert target.read_text() == "not a launcher"  # the link was replaced, not followed
    for path in (launcher, autostart):
        assert path.is_file() and not path.is_symlink() and "Exec=" in path.read_text()
        assert _mode(path.parent) in (0o755, 0o700) and _mode(path) == 0o600


def test_deep_nesting_is_a_bad_line_not_a_crash(tmp_path, mnemo_home):
    # The red team: 5,000 nested arrays on a line (or 1,500 inside "text") gave a
    # RecursionError traceback and imported nothing, good lines included
    from tests.conftest import run_cli

    path = tmp_path / "deep.jsonl"
    lines = [
        json.dumps({"text": "a good line before"}),
        "[" * 5000 + "]" * 5000,
        '{"text": ' + "[" * 1500 + "]" * 1500 + "}",
        json.dumps({"text": "a good line after"}),
    ]
    path.write_text("\n".join(lines) + "\n")
    done = run_cli("import", str(path))
    err = done.stderr.decode()
    assert done.returncode == 1 and "Traceback" not in err, err
    assert "deep.jsonl:2" in err and "nested too deeply" in err
    assert b"2 new memories" in done.stdout


def test_an_unreadable_settings_file_is_said_and_kept_not_overwritten(mnemo_home):
    # The red team: garbage, NaN or nesting in settings.json made every command traceback
    # or was ignored without a word, and the next `mnemo settings KEY VALUE` rewrote the
    # file with that key alone: the hotkey, mirror_dir and categories were lost
    from tests.conftest import run_cli

    config = mnemo_home / "config"
    config.mkdir(parents=True)
    settings = config / "settings.json"
    for broken in ('{"hotkey": "Ctrl+Alt+M", "default_limit": 7,}', "[" * 5000 + "]" * 5000):
        settings.write_text(broken)
        for args in (("recall", "anything"), ("remember", "a note"), ("doctor",)):
            done = run_cli(*args)
            assert "Traceback" not in done.stderr.decode(), (args, done.stderr)
        shown = run_cli("settings")
        assert b"cannot be read" in shown.stderr and shown.returncode == 0
        assert b"settings: the settings file" in run_cli("doctor").stdout
        run_cli("settings", "default_limit", "5")
        kept = sorted(config.glob("settings.json.unreadable-*"))
        assert kept and kept[-1].read_text() == broken  # what the user wrote is kept
        for extra in kept:
            extra.unlink()
    # NaN for one setting: that setting takes its default, the others stay
    settings.write_text('{"default_limit": NaN, "popup_results": 12}')
    assert b"popup_results = 12" in run_cli("settings").stdout


def test_one_bad_markdown_file_does_not_stop_a_folder(tmp_path, mnemo_home):
    # The red team and the desktop pass: one Latin-1 file (or NUL bytes) stopped a whole
    # folder import with 0 imported, and only the first offender was named
    from tests.conftest import run_cli

    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("# Good one\n\nA note that imports.\n")
    (folder / "b.md").write_bytes("# Caf\xe9\n\nLatin-1 text.\n".encode("latin-1"))
    (folder / "c.md").write_bytes(b"# Binary\n\nNUL \x00 bytes\n")
    (folder / "d.md").write_text("# Good two\n\nAnother note that imports.\n")
    done = run_cli("import", str(folder))
    err = done.stderr.decode()
    assert done.returncode == 1 and "Traceback" not in err
    assert "b.md" in err and "c.md" in err
    assert b"2 new memories" in done.stdout


def test_an_import_report_names_every_skipped_line(tmp_path, mnemo_home):
    # The red team: the report listed 20 skipped lines, then "... and 30 more"
    from tests.conftest import run_cli

    notes = tmp_path / "notes.jsonl"
    lines = [json.dumps({"text": f"line {i}", "pinned": "no"}) for i in range(50)]
    notes.write_text("\n".join(['{"text": "the one good line"}', *lines]) + "\n")
    done = run_cli("import", "--no-embed", str(notes))
    err = done.stderr.decode()
    assert done.returncode == 1 and "Traceback" not in err
    named = {int(line.split(":")[2]) for line in err.splitlines() if f"{notes}:" in line}
    assert named == set(range(2, 52)), sorted(set(range(2, 52)) - named)
    assert "50 line(s) or section(s) skipped" in err and b"1 new memories" in done.stdout


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_named_pipe_or_device_where_a_file_belongs_is_one_line_not_a_hang(tmp_path, mnemo_home):
    # The red team: a FIFO as model_path hung settings, remember, `model use` and doctor;
    # an import of a FIFO said "no such file"
    from tests.conftest import run_cli

    pipe = tmp_path / "model.gguf"
    os.mkfifo(pipe)
    notes = tmp_path / "notes.jsonl"
    os.mkfifo(notes)
    good = tmp_path / "good.jsonl"
    good.write_text('{"text": "a note beside a pipe"}\n')

    def one_line(done, code: int = 1) -> str:
        err = done.stderr.decode()
        assert done.returncode == code and "Traceback" not in err, err
        return err

    assert "named pipe" in one_line(run_cli("settings", "model_path", str(pipe), timeout=30))
    assert "named pipe" in one_line(run_cli("model", "use", str(pipe), timeout=30))
    stored = run_cli("remember", "a note", env={"MNEMO_MODEL": str(pipe)}, timeout=30)
    assert "named pipe" in one_line(stored, 0) and b"Remembered" in stored.stdout
    doctor = run_cli("doctor", env={"MNEMO_MODEL": str(pipe)}, timeout=30)
    assert b"named pipe" in doctor.stdout and doctor.returncode == 1
    assert "named pipe" in one_line(run_cli("import", str(notes), timeout=30))
    assert "is a device" in one_line(run_cli("import", "/dev/zero", timeout=30))
    both = run_cli("import", "--no-embed", str(notes), str(good), timeout=30)
    assert f"skipped {notes}: {notes} is a named pipe" in one_line(both)
    assert b"1 new memories" in both.stdout
    settings = paths.settings_path()
    settings.unlink(missing_ok=True)
    os.mkfifo(settings)
    shown = run_cli("settings", timeout=30)
    assert b"named pipe" in shown.stderr and shown.returncode == 0


@pytest.mark.skipif(not hasattr(os, "O_NOFOLLOW"), reason="needs O_NOFOLLOW")
def test_the_log_and_crash_files_are_never_written_through_links(tmp_path, mnemo_home):
    # A sibling of finding 1: the log, the crash file and the running marker were opened
    # with O_CREAT and no O_NOFOLLOW (the only writers left outside paths.private_file)
    victim = tmp_path / "victim.txt"
    victim.write_text("the victim's own file\n")
    victim.chmod(0o644)
    folder = paths.log_dir()  # made by asking for it
    for name in ("mnemo.log", "crash.log", "running.pid", "stacks.log"):
        (folder / name).symlink_to(victim)
    done = subprocess.run(
        [sys.executable, "-c", "from app.core import crash; crash.install('app')"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert victim.read_text() == "the victim's own file\n"
    assert _mode(victim) == 0o644


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_disk_loses_log_lines_quietly(mnemo_home):
    # The red team: on a full disk the MCP server and the app printed "--- Logging error
    # ---" tracebacks (the MCP server's stderr is the agent's)
    code = (
        "import logging; from app.core import crash; crash.install('mcp'); "
        "[setattr(h, 'stream', open('/dev/full', 'w')) for h in logging.getLogger().handlers "
        "if hasattr(h, 'stream') and h.stream.name.endswith('.log')]; "
        "logging.getLogger('app').warning('a line that cannot be written'); print('went on')"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    assert done.returncode == 0 and "went on" in done.stdout, done.stderr
    assert "Logging error" not in done.stderr and "Traceback" not in done.stderr


def test_a_mirror_in_an_existing_folder_keeps_that_folders_mode(tmp_path, mnemo_home):
    # The red team: `mirror_dir` set to an existing folder chmodded it 0700 (as root,
    # mirror_dir=/tmp would have closed /tmp to everyone)
    from tests.conftest import run_cli

    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    assert run_cli("settings", "mirror_dir", str(shared)).returncode == 0
    assert run_cli("remember", "A note mirrored into a shared folder").returncode == 0
    assert _mode(shared) == 0o1777
    (mirror,) = shared.glob("mnemo-*.md")
    assert _mode(mirror) == 0o600  # the file itself is ours alone


@SECOND_USER
def test_a_socket_folder_squatted_by_another_user_does_not_block_the_app(
    monkeypatch, mnemo_home, request
):
    # The red team: with XDG_RUNTIME_DIR unset, another user's `mkdir -m700
    # /tmp/mnemo-<uid>` blocked the app for good (the victim cannot remove it)
    from app import local_socket

    shared = Path(tempfile.mkdtemp(prefix="mnemo-shared-", dir="/tmp"))
    shared.chmod(0o1777)
    request.addfinalizer(lambda: subprocess.run(["rm", "-rf", str(shared)], check=False))
    _as_other("mkdir", "-m", "700", str(shared / f"mnemo-{os.geteuid()}"))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(shared))
    real_isdir = os.path.isdir
    monkeypatch.setattr(local_socket.os.path, "isdir", lambda p: p != "/tmp" and real_isdir(p))
    path = local_socket.socket_path()
    assert path.parent == mnemo_home / "state" / "run"
    assert _mode(path.parent) == 0o700


def test_hidden_formatting_is_written_out_wherever_a_memory_is_shown(mnemo_home):
    # Red team (issue 21, low): a right-to-left override made "gnp<RLO>exe.png" show as an
    # image name while it ends in .exe, and C1 controls went to the terminal raw
    from tests.conftest import run_cli

    text = "Download gnp\u202eexe.png from the share \u0085 then \u009b31m"
    stored = run_cli("remember", text, "--force", "--json")
    assert stored.returncode == 0, stored.stderr
    memory_id = json.loads(stored.stdout)["id"]
    outputs = {
        "remember": stored,
        "list": run_cli("list"),
        "show": run_cli("show", memory_id),
        "recall": run_cli("recall", "download from the share"),
    }
    outputs["remember"] = run_cli("remember", text + " again", "--force")
    for name, done in outputs.items():
        out = done.stdout.decode()
        # THEN every one is written out where it stands, none is sent raw
        assert "<U+202E>" in out, (name, out)
        assert not any(c in out for c in "\u202e\u0085\u009b"), (name, out)
    assert "<U+0085>" in outputs["show"].stdout.decode()
    # AND what was stored is exactly what was written (JSON gives it as it is)
    shown = json.loads(run_cli("show", memory_id, "--json").stdout)
    assert shown["text"] == text


def test_closed_standard_output_is_one_line_and_nothing_is_done(mnemo_home):
    # Red team (issue 21, low): `mnemo list >&-` ended in an AttributeError traceback
    def shell(command: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["bash", "-c", f"{sys.executable} -m app {command}"],
            capture_output=True,
            cwd=REPO,
            env=os.environ.copy(),
        )

    listed = shell("list >&-")
    stored = shell("remember 'written with stdout closed' --force >&-")
    assert listed.returncode == stored.returncode == 1
    for done in (listed, stored):
        assert done.stderr.decode().strip() == (
            "mnemo: error: standard output is closed; nothing was done"
        )
    assert b"written with stdout closed" not in shell("list").stdout  # nothing half-done
    # (a closed stderr is no reason to fail: the command runs, its notices go nowhere)
    quiet = shell("remember 'written with stderr closed' --force 2>&-")
    assert quiet.returncode == 0 and b"Remembered" in quiet.stdout


def test_a_mnemo_home_that_is_not_utf8_is_one_line(tmp_path):
    # Red team (issue 21, low): a non-UTF-8 MNEMO_HOME gave a UnicodeEncodeError traceback
    home = os.fsencode(tmp_path) + b"/caf\xe9"
    done = subprocess.run(
        [sys.executable, "-m", "app", "list"],
        capture_output=True,
        cwd=REPO,
        env={**os.environ, "MNEMO_HOME": os.fsdecode(home)},
    )
    assert done.returncode == 1
    assert done.stderr.decode().strip() == (
        f"mnemo: error: MNEMO_HOME={home!r} is not UTF-8 text; choose a folder whose name is"
    )


@SECOND_USER
def test_a_mirror_file_another_user_made_first_is_never_written_and_it_is_said(
    tmp_path, mnemo_home
):
    """Issue 40, 10 and 13: the mirror appended to this month's file that another user
    had made in a shared folder (readable by them); a link planted there failed silently.
    Now neither is written, `remember` says so, and `doctor` names it."""
    import datetime as dt

    from tests.conftest import run_cli

    shared = Path(tempfile.mkdtemp(prefix="mnemo-mirror-", dir="/tmp"))
    shared.chmod(0o1777)
    month = shared / f"mnemo-{dt.datetime.now(dt.UTC):%Y-%m}.md"
    try:
        _as_other("sh", "-c", f"umask 0; : > {month}")
        assert run_cli("settings", "mirror_dir", str(shared)).returncode == 0
        done = run_cli("remember", "A note that must not land in their file")
        assert done.returncode == 0
        assert "mirror was not written" in done.stderr.decode()
        assert "another user" in done.stderr.decode()
        assert month.read_bytes() == b""
        doctor = run_cli("doctor").stdout.decode()
        assert "mirror:" in doctor and "another user" in doctor
        subprocess.run(["rm", "-f", str(month)], check=True)
        month.symlink_to(tmp_path / "elsewhere.md")
        done = run_cli("remember", "A second note, never through a link")
        assert "symbolic link" in done.stderr.decode()
        assert not (tmp_path / "elsewhere.md").exists()
    finally:
        subprocess.run(["rm", "-rf", str(shared)], check=False)
