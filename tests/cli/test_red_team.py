"""The second red team's findings (issue 21), reproduced as they were found: a second local
user (uid 65534 through setpriv), umask 0, links planted in a shared folder."""

from __future__ import annotations

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
def test_an_export_never_writes_through_a_link_another_user_planted(
    tmp_path, monkeypatch, request
):
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
