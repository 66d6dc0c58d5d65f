"""The freedesktop launcher: from a checkout, from a bundle, and beside a system package."""

from __future__ import annotations

import sys

from app.gui import desktop


def test_a_bundle_starts_itself_not_python_dash_m(monkeypatch):
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "executable", "/opt/mnemo/mnemo")
    monkeypatch.setattr(sys, "argv", ["mnemo"])  # started through PATH: argv[0] is bare
    assert desktop.command() == "/opt/mnemo/mnemo"
    assert "-m app" not in desktop.entry()


def test_a_system_package_launcher_is_used_instead_of_writing_a_users_copy(monkeypatch, tmp_path):
    # GIVEN a bundle installed by the .deb, whose launcher is in a system data folder
    system = tmp_path / "usr-share"
    (system / "applications").mkdir(parents=True)
    (system / "applications" / "mnemo.desktop").write_text(desktop.entry(exe="/usr/bin/mnemo"))
    user = tmp_path / "user-share"
    monkeypatch.setenv("XDG_DATA_DIRS", str(system))
    monkeypatch.setenv("XDG_DATA_HOME", str(user))
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    # WHEN the app starts THEN no copy goes into the user's folder (it would outlive the
    # package and point at a removed program)
    assert desktop.install_launcher() == system / "applications" / "mnemo.desktop"
    assert not (user / "applications" / "mnemo.desktop").exists()
    # while from a checkout the user's launcher is written as before
    monkeypatch.setattr(sys, "frozen", False)
    assert desktop.install_launcher() == user / "applications" / "mnemo.desktop"
    assert (user / "applications" / "mnemo.desktop").is_file()


def test_the_system_launcher_names_the_installed_command_and_the_themed_icon():
    text = desktop.entry(exe="/usr/bin/mnemo", icon="mnemo")
    assert "Exec=/usr/bin/mnemo\n" in text and "Icon=mnemo\n" in text
    assert "Exec=/usr/bin/mnemo popup\n" in text and "Exec=/usr/bin/mnemo manager\n" in text
    assert "Exec=/usr/bin/mnemo settings --window\n" in text  # reachable without a tray


def test_the_entry_starts_this_home_and_is_skipped_once_uninstalled(monkeypatch, tmp_path):
    # The red team (issue 21): a portable install's autostart entry started the default
    # MNEMO_HOME, and the entry outlived `apt remove`
    monkeypatch.setenv("MNEMO_HOME", str(tmp_path / "portable"))
    text = desktop.entry()
    assert f"Exec=env MNEMO_HOME={tmp_path / 'portable'} " in text
    assert "\nTryExec=" in text  # desktops skip it when the program is gone
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "executable", "/opt/mnemo/mnemo")
    assert "TryExec=/opt/mnemo/mnemo\n" in desktop.entry()
    assert "TryExec=/usr/bin/mnemo\n" in desktop.entry(exe="/usr/bin/mnemo", icon="mnemo")


def test_start_at_login_set_from_the_command_line_is_applied_at_once(tmp_path):
    # Set while the app was not running, it was never applied
    import os
    import subprocess

    from tests.conftest import REPO

    env = {**os.environ, "MNEMO_HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path)}
    for value, exists in (("true", True), ("false", False)):
        done = subprocess.run(
            [sys.executable, "-m", "app", "settings", "start_at_login", value],
            env=env, cwd=REPO, capture_output=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert (tmp_path / "autostart" / "mnemo.desktop").exists() is exists
