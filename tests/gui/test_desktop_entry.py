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
