"""Hostile environments: another local user, odd targets, no display, a full disk (issue 8).

Each case gave a traceback, a SIGABRT, a world-readable file or a false message before.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, run_cli, wait

POSIX_ONLY = pytest.mark.skipif(os.name != "posix", reason="POSIX file modes and devices")


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _cli_umask0(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "app", *args],
        capture_output=True,
        env={**os.environ, **(env or {})},
        cwd=REPO,
        timeout=120,
        preexec_fn=lambda: os.umask(0),
    )


@POSIX_ONLY
def test_every_file_is_private_whatever_the_umask(mnemo_home, tmp_path):
    # GIVEN a umask of 0 (files would be created 0666, folders 0777)
    mirror = tmp_path / "mirror"
    assert _cli_umask0("settings", "mirror_dir", str(mirror)).returncode == 0
    assert _cli_umask0("remember", "My diary: I told nobody about the interview").returncode == 0
    out = tmp_path / "export.jsonl"
    assert _cli_umask0("export", "-o", str(out)).returncode == 0
    data = mnemo_home / "data"
    files = [data / "mnemo.db", mnemo_home / "config" / "settings.json", out]
    files += list(mirror.glob("*.md"))
    wal = data / "mnemo.db-wal"
    if wal.exists():
        files.append(wal)
    assert len(files) >= 4
    for path in files:
        assert _mode(path) == 0o600, path
    for folder in (data, mnemo_home / "config", mirror):
        assert _mode(folder) == 0o700, folder
    # AND everything else Mnemo wrote under its home (the model checksum cache, the vector
    # copy, logs) is private too
    written = list(mnemo_home.rglob("*"))
    assert mnemo_home / "cache" / "model-sha256.json" in written
    for path in written:
        assert _mode(path) == (0o700 if path.is_dir() else 0o600), path


@POSIX_ONLY
def test_the_folders_mnemo_creates_in_the_users_home_are_private(tmp_path):
    # GIVEN no MNEMO_HOME: the XDG folders of a user whose umask is 0
    home = tmp_path / "user"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "MNEMO_HOME" and not k.startswith("XDG_")}
    env["HOME"] = str(home)
    for args in (("remember", "A note from the user's own home"), ("doctor",)):
        done = subprocess.run(
            [sys.executable, "-m", "app", *args],
            capture_output=True,
            env=env,
            cwd=REPO,
            timeout=120,
            preexec_fn=lambda: os.umask(0),
        )
        assert done.returncode == 0, done.stderr
    assert (home / ".local" / "state" / "mnemo" / "log").is_dir()  # where logs go
    # THEN every folder named for Mnemo, and all below it, is 0700 and every file 0600
    ours = [p for p in home.rglob("mnemo") if p.is_dir()]
    assert len(ours) == 4, ours  # data, config, cache, state (logs)
    for top in ours:
        for path in [top, *top.rglob("*")]:
            assert _mode(path) == (0o700 if path.is_dir() else 0o600), path


@POSIX_ONLY
def test_an_older_world_readable_database_is_narrowed(mnemo_home):
    run_cli("remember", "An older note")
    db = mnemo_home / "data" / "mnemo.db"
    db.chmod(0o644)
    (mnemo_home / "data").chmod(0o755)
    run_cli("stats")
    assert _mode(db) == 0o600 and _mode(mnemo_home / "data") == 0o700


def _one_line_error(result: subprocess.CompletedProcess) -> str:
    err = result.stderr.decode()
    assert result.returncode == 1, (result.stdout, err)
    assert "Traceback" not in err and err.startswith("mnemo: error: ")
    assert len(err.strip().splitlines()) == 1
    return err


def test_non_utf8_arguments_and_a_home_that_is_a_file(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "app", "remember", b"caf\xe9 \xff\xfe"],
        capture_output=True,
        cwd=REPO,
        timeout=60,
    )
    assert "not UTF-8" in _one_line_error(result)
    a_file = tmp_path / "not-a-folder"
    a_file.write_text("x")
    assert "is not a folder" in _one_line_error(run_cli("stats", env={"MNEMO_HOME": str(a_file)}))


def test_status_and_gui_without_a_display_say_so_instead_of_aborting():
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env.pop("QT_QPA_PLATFORM", None)
    status = subprocess.run(
        [sys.executable, "-m", "app", "status"], capture_output=True, env=env, cwd=REPO, timeout=60
    )
    assert status.returncode == 1 and b"not running" in status.stdout  # not SIGABRT (-6)
    gui = subprocess.run(
        [sys.executable, "-m", "app", "gui"], capture_output=True, env=env, cwd=REPO, timeout=60
    )
    assert "no display" in _one_line_error(gui)


@pytest.mark.parametrize(
    "stale",
    [
        {"WAYLAND_DISPLAY": "wayland-9"},  # an SSH session that inherited a desktop's variables
        {"DISPLAY": ":97"},
        {"WAYLAND_DISPLAY": "wayland-9", "DISPLAY": "localhost:97.0"},  # ssh -X, tunnel gone
    ],
)
def test_a_display_that_no_longer_answers_is_named_instead_of_aborting(tmp_path, stale):
    # GIVEN display variables naming servers that are gone (no socket, nothing listening)
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env.pop("QT_QPA_PLATFORM", None)
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    env.update(stale, XDG_RUNTIME_DIR=str(runtime), MNEMO_HOME=str(tmp_path / "home"))
    # WHEN the desktop app starts
    gui = subprocess.run(
        [sys.executable, "-m", "app", "gui"], capture_output=True, env=env, cwd=REPO, timeout=60
    )
    # THEN it says which display does not answer, in one line, instead of a Qt abort (-6)
    err = _one_line_error(gui)
    assert "no display to show the desktop app on" in err
    for name, value in stale.items():
        assert f"{name}={value}" in err


@POSIX_ONLY
def test_export_writes_only_regular_files(tmp_path):
    run_cli("remember", "Something to export")
    target = tmp_path / "real.jsonl"
    target.write_text("old")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    for path in ("/dev/null", str(link), str(tmp_path)):
        assert "not a regular file" in _one_line_error(run_cli("export", "-o", path))
    assert target.read_text() == "old"  # the symlink's target is untouched
    assert run_cli("export", "-o", str(target)).returncode == 0
    assert json.loads(target.read_text().splitlines()[0])["text"] == "Something to export"
    with open("/dev/full", "wb") as full:
        result = subprocess.run(
            [sys.executable, "-m", "app", "export"],
            stdout=full,
            stderr=subprocess.PIPE,
            cwd=REPO,
            timeout=60,
        )
    assert result.returncode == 1 and b"the disk is full" in result.stderr
    assert b"Traceback" not in result.stderr


@pytest.fixture
def tiny_disk(tmp_path):
    """A 1 MB tmpfs: room for the first note (its log checkpointed, its vector copy), not
    for the import (root can mount one; elsewhere the test is skipped)."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.decode().strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_is_named_and_the_import_says_exactly_what_landed(tiny_disk, tmp_path):
    env = {"MNEMO_HOME": str(tiny_disk / "home")}
    assert run_cli("remember", "first note", env=env).returncode == 0
    notes = tmp_path / "big.jsonl"
    notes.write_text(
        "".join(
            json.dumps({"text": f"note {i} " + "lorem ipsum dolor sit amet " * 8}) + "\n"
            for i in range(3000)
        )
    )
    err = _one_line_error(run_cli("import", str(notes), "--no-embed", env=env))
    assert "is full" in err and "nothing was written" not in err
    stats = json.loads(run_cli("stats", "--json", env=env).stdout)
    landed = stats["memories"] - 1
    assert f"{landed} memories from earlier batches were imported" in err
    err = _one_line_error(run_cli("settings", "weight_vector", "0.5", env=env))
    assert "the disk is full" in err
    assert not list((tiny_disk / "home" / "config").glob("*.tmp"))  # no half-written file


@POSIX_ONLY
def test_the_hook_helper_and_agents_locks_are_private_whatever_the_umask(mnemo_home, tmp_path):
    """Issue 40, 13: hook-helper.lock and agents.lock were created 0666 under umask 0."""
    started = subprocess.Popen(  # the helper as a hook starts it, under umask 0
        [sys.executable, "-m", "app", "hook", "serve"],
        cwd=REPO,
        env={**os.environ},
        preexec_fn=lambda: os.umask(0),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        lock = wait(lambda: next(mnemo_home.rglob("hook-helper.lock"), None), 60, "the lock")
        assert _mode(lock) == 0o600
        assert _cli_umask0("agents", "uninstall", "--project", str(tmp_path)).returncode == 0
        assert _mode(mnemo_home / "data" / "agents.lock") == 0o600
    finally:
        _cli_umask0("hook", "stop")
        started.wait(30)
