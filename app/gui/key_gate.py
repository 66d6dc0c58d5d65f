"""Keys that reach the popup directly wait for the keys the hotkey kept (issue 46, item 1).

After the hotkey, the X11 listener holds the keyboard until the popup has the focus, then
lets it go and hands the keys it kept to the popup (`HotkeyBackend.typed`, a queued signal).
A key typed after the release reaches the popup through Qt, and on a busy machine Qt can
deliver it before that signal: `OPS` arrived as `SOP`. So from the hand-over until the kept
keys arrive, the gate keeps every key the window system delivers to the popup, and gives
them back after the kept ones, in the order they were typed. Keys the popup sends itself
(the replay: not spontaneous) pass.
"""

from __future__ import annotations

from app.gui.qt import QtCore, QtGui, QtWidgets

WAIT_MS = 3000  # the longest keys wait for the kept ones (a listener that never answers;
# as long as the listener holds the keyboard at most, `x11.HOLD_S`)


def replay(keys: list, window: QtWidgets.QWidget, target: QtWidgets.QWidget) -> None:
    """Type `keys` ([(Qt key, modifiers, text)], in order) into `target` as if they had come,
    while `window` shows (Esc or Enter among them hid it: the rest was meant for nothing)."""
    for key, modifiers, text in keys:
        if not window.isVisible():
            return
        for kind in (QtCore.QEvent.KeyPress, QtCore.QEvent.KeyRelease):
            event = QtGui.QKeyEvent(kind, key, QtCore.Qt.KeyboardModifier(modifiers), text)
            QtWidgets.QApplication.sendEvent(target, event)


class KeyGate(QtCore.QObject):
    """Keeps the keys the window system delivers to `window` while it is shut."""

    def __init__(self, window: QtWidgets.QWidget, opened):
        super().__init__(window)
        self._window = window
        self._opened = opened  # called with the keys kept, when the wait ran out
        self._kept: list[tuple[int, int, str]] | None = None  # None: open
        self._timer = QtCore.QTimer(self, singleShot=True, interval=WAIT_MS)
        self._timer.timeout.connect(lambda: self._opened(self.open()))

    def shut(self) -> None:
        """Keep the keys from now on (until `open`)."""
        if self._kept is not None:
            return
        self._kept = []
        QtWidgets.QApplication.instance().installEventFilter(self)
        self._timer.start()

    @property
    def shut_now(self) -> bool:
        return self._kept is not None

    def open(self) -> list[tuple[int, int, str]]:
        """Let keys through again; the keys kept meanwhile, in order."""
        kept, self._kept = self._kept or [], None
        self._timer.stop()
        QtWidgets.QApplication.instance().removeEventFilter(self)
        return kept

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 - Qt API
        kind = event.type()
        if (
            self._kept is None
            or kind not in (QtCore.QEvent.KeyPress, QtCore.QEvent.KeyRelease)
            or not event.spontaneous()
            or not isinstance(obj, QtWidgets.QWidget)
            or obj.window() is not self._window
        ):
            return False
        if kind == QtCore.QEvent.KeyPress:
            self._kept.append((event.key(), event.modifiers().value, event.text()))
        return True
