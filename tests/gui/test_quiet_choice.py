"""The questions of Remember clipboard (near-duplicate, secret) open where a notification
does not cover them, in front, without taking the focus. Real widgets, offscreen."""

from __future__ import annotations

import pytest

from app.gui.duplicate_choice import DuplicateChoice, SecretChoice
from app.gui.qt import QtCore, QtGui, QtWidgets

# Where desktops show notifications: a corner of the screen, stacked from it. dunst's default
# is 300 px wide, 30 px from the right and 20 from the top; Plasma's and Windows' are 360-370
# px wide at the bottom right; a few stacked reach 300 px down or up.
NOTIFICATION_WIDTH, NOTIFICATION_HEIGHT = 420, 320


def _corners(area: QtCore.QRect) -> list[QtCore.QRect]:
    w, h = NOTIFICATION_WIDTH, NOTIFICATION_HEIGHT
    return [
        QtCore.QRect(area.left(), area.top(), w, h),
        QtCore.QRect(area.right() - w + 1, area.top(), w, h),
        QtCore.QRect(area.left(), area.bottom() - h + 1, w, h),
        QtCore.QRect(area.right() - w + 1, area.bottom() - h + 1, w, h),
    ]


@pytest.mark.parametrize(
    "make",
    [
        lambda: DuplicateChoice("The window cleaner comes every second Tuesday", 0.93),
        lambda: SecretChoice("a password"),
    ],
    ids=["near-duplicate", "secret"],
)
def test_a_question_opens_centred_where_no_notification_covers_it(qtbot, qapp, make):
    # Issue 46, item 8: the near-duplicate question opened at the top right, under dunst's
    # bubble (a notification daemon keeps its bubbles above every window): not seen.
    typing = QtWidgets.QLineEdit()  # where the user is typing
    qtbot.addWidget(typing)
    typing.show()
    typing.activateWindow()
    typing.setFocus()
    qtbot.waitUntil(lambda: QtWidgets.QApplication.focusWidget() is typing)
    choice = make()
    qtbot.addWidget(choice)
    choice.present()
    qtbot.waitExposed(choice)
    screen = QtGui.QGuiApplication.screenAt(QtGui.QCursor.pos()) or qapp.primaryScreen()
    area = screen.availableGeometry()
    shown = choice.frameGeometry()
    assert area.contains(shown)
    for corner in _corners(area):
        assert not shown.intersects(corner), (shown, corner)
    assert abs(shown.center().x() - area.center().x()) <= 2
    assert abs(shown.center().y() - area.center().y()) <= 2
    # shown, and the focus left where it was (raised in front of the other windows: the
    # offscreen platform has no stacking; tests/e2e/test_desktop.py checks it on X11)
    assert choice.isVisible() and not choice.isMinimized()
    assert QtWidgets.QApplication.focusWidget() is typing
    assert not choice.isActiveWindow()
