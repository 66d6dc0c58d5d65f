"""Hints and help text are quiet but readable: WCAG 4.5:1 against their background, in a
light and a dark palette (the desktop pass, issue 22, low: low-contrast hint and help)."""

from __future__ import annotations

import re

import pytest

from app.core.memory import Memory
from app.gui.contrast import ratio
from app.gui.popup import Popup, preview_html
from app.gui.qt import QtGui, QtWidgets
from app.gui.settings_dialog import SettingsDialog
from app.gui.shares import badge_colors


def _shown(label: QtWidgets.QLabel) -> float:
    """The contrast of a label's text as Qt paints it (a disabled label: the Disabled group)."""
    palette = label.palette()
    group = QtGui.QPalette.Active if label.isEnabled() else QtGui.QPalette.Disabled
    return ratio(
        palette.color(group, QtGui.QPalette.WindowText), palette.color(group, QtGui.QPalette.Window)
    )


def _dark() -> QtGui.QPalette:
    palette = QtGui.QPalette()
    for role, color in (
        (QtGui.QPalette.Window, "#2b2b2b"), (QtGui.QPalette.WindowText, "#eeeeee"),
        (QtGui.QPalette.Base, "#1e1e1e"), (QtGui.QPalette.Text, "#eeeeee"),
        (QtGui.QPalette.Highlight, "#3daee9"), (QtGui.QPalette.HighlightedText, "#1e1e1e"),
    ):  # fmt: skip
        palette.setColor(role, QtGui.QColor(color))
    return palette


@pytest.fixture(params=["light", "dark"])
def theme(request, qapp):
    before = qapp.palette()
    qapp.setPalette(_dark() if request.param == "dark" else qapp.style().standardPalette())
    yield request.param
    qapp.setPalette(before)


def test_the_popup_hint_and_the_settings_help_read_at_4_5_to_1(qtbot, worker, settings, theme):
    popup = Popup(worker, settings)
    qtbot.addWidget(popup)
    assert _shown(popup.hint) >= 4.5, theme
    dialog = SettingsDialog(settings, worker)
    qtbot.addWidget(dialog)
    helps = [h for h in dialog.findChildren(QtWidgets.QLabel) if h.objectName().startswith("help_")]
    assert helps and all(_shown(h) >= 4.5 for h in helps), theme


def test_the_small_facts_of_the_preview_read_at_4_5_to_1(qapp):
    html = preview_html(Memory(id="a1", text="Boiler code F22", recall_count=1), "boiler")
    color = re.search(r"font-size:small;color:(#[0-9a-fA-F]{6})", html).group(1)
    assert ratio(QtGui.QColor(color), QtGui.QColor("white")) >= 4.5


@pytest.mark.parametrize("selected", [False, True])
def test_a_team_space_badge_reads_at_4_5_to_1(qapp, theme, selected):
    # Issue 45: the popup's badge of a result from a team space ("team · alice"), on a row
    # and on the selected row (the light theme's own highlight gives its text only 3.7:1)
    text, fill = badge_colors(qapp.palette(), selected)
    assert ratio(text, fill) >= 4.5, theme
    if not selected:
        assert fill != qapp.palette().base().color(), theme  # (a badge, not bare text)
