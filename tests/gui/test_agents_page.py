"""The Agents page of the settings (issue 25): the same as `mnemo agents status`, and wiring
and taking out an agent from it, with a real dialog and real config files."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from app.agents.wiring import AGENTS
from app.gui.qt import QtCore
from app.gui.settings_dialog import SettingsDialog


def _row(page, key: str) -> int:
    return next(i for i, r in enumerate(page.rows) if r["agent"] == key)


def _agents_page(qtbot, worker, settings, monkeypatch, home: Path):
    """The settings dialog open on its Agents page for `home`, once every agent has a row."""
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    dialog = SettingsDialog(settings, worker)
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.tabs.setCurrentWidget(dialog.agents)
    page = dialog.agents
    qtbot.waitUntil(lambda: page.table.rowCount() == len(AGENTS), timeout=10_000)
    return page


def test_the_agents_page_wires_and_takes_out_an_agent(
    qtbot, worker, settings, tmp_path, monkeypatch
):
    home = tmp_path / "user"
    (home / ".codex").mkdir(parents=True)
    config = home / ".codex" / "config.toml"
    config.write_text('# mine\nmodel = "o4"\n')
    # THEN every agent has a row; Codex is found (its folder exists), not wired yet
    page = _agents_page(qtbot, worker, settings, monkeypatch, home)
    codex = _row(page, "codex")
    assert page.table.item(codex, 1).text() == "found"
    assert page.table.item(codex, 2).text() == "absent"
    assert page.table.item(codex, 4).text() == str(config)
    # WHEN Codex's row is selected and wired
    page.table.selectRow(codex)
    qtbot.mouseClick(page.wire, QtCore.Qt.LeftButton)
    qtbot.waitUntil(lambda: page.table.item(codex, 2).text() == "wired", timeout=10_000)
    assert page.status.text() == "Wired: codex."
    text = config.read_text()
    assert text.startswith('# mine\nmodel = "o4"\n')
    assert tomllib.loads(text)["mcp_servers"]["mnemo"]["args"][-1] == "mcp"
    # AND the connection check starts the server as Codex would
    qtbot.mouseClick(page.check, QtCore.Qt.LeftButton)
    qtbot.waitUntil(lambda: "answers" in page.table.item(codex, 2).text(), timeout=60_000)
    # WHEN it is taken out THEN the file is as before, byte for byte
    page.table.selectRow(codex)
    qtbot.mouseClick(page.unwire, QtCore.Qt.LeftButton)
    qtbot.waitUntil(lambda: page.table.item(codex, 2).text() == "absent", timeout=10_000)
    assert config.read_text() == '# mine\nmodel = "o4"\n'
    assert not Path(str(config) + ".mnemo-backup").exists()  # (no copy left: issue 42)


def test_nothing_selected_says_what_to_do(qtbot, worker, settings, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    dialog = SettingsDialog(settings, worker)
    qtbot.addWidget(dialog)
    page = dialog.agents
    qtbot.waitUntil(lambda: page.table.rowCount() == len(AGENTS), timeout=10_000)
    page.table.clearSelection()
    qtbot.mouseClick(page.wire, QtCore.Qt.LeftButton)
    assert page.status.text().startswith("Select the agents first")
    assert not (tmp_path / ".claude.json").exists()


def test_the_agents_page_names_every_hook_and_the_one_taken_out_by_hand(
    qtbot, worker, settings, tmp_path, monkeypatch
):
    # GIVEN Claude Code wired from the page
    home = tmp_path / "user"
    (home / ".claude").mkdir(parents=True)
    page = _agents_page(qtbot, worker, settings, monkeypatch, home)
    claude = _row(page, "claude")
    page.table.selectRow(claude)
    qtbot.mouseClick(page.wire, QtCore.Qt.LeftButton)
    # THEN its Hooks cell names each hook Mnemo wired, as `mnemo agents status` does
    qtbot.waitUntil(lambda: page.table.item(claude, 2).text() == "wired", timeout=10_000)
    assert page.table.item(claude, 3).text() == "wired: session-start, prompt, Bash"
    # WHEN the prompt hook is taken out by hand and the page checked again (F5)
    settings_file = home / ".claude" / "settings.json"
    value = json.loads(settings_file.read_text())
    del value["hooks"]["UserPromptSubmit"]
    settings_file.write_text(json.dumps(value, indent=2))
    qtbot.keyClick(page, QtCore.Qt.Key_F5)
    # THEN the cell says which one is missing (before: "partly")
    qtbot.waitUntil(lambda: "missing" in page.table.item(claude, 3).text(), timeout=10_000)
    assert page.table.item(claude, 3).text() == "wired: session-start, Bash (missing: prompt)"
