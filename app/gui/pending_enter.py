"""An Enter pressed before its text's results arrived (issue 46, item 2).

The rows on screen then answer an earlier text (dimmed), or none have come yet: the Enter is
held until this text's settled answer comes, and then acts on its top row, or on the memory
the user moved to or picked there (Ctrl+1…9) when it is among the answer's rows. A wait
longer than a moment is said on screen; typing on, Esc or a failure forgets the Enter.
"""

from __future__ import annotations

from collections.abc import Callable

from app.gui.qt import QtCore

ENTER_WAIT_MS = 300  # an Enter that waits for its text's results longer says so on screen


class PendingEnter(QtCore.QObject):
    """The one Enter held for a text's answer, if any."""

    def __init__(self, parent: QtCore.QObject, say_waiting: Callable[[], None]):
        super().__init__(parent)
        self._held: tuple[str, str, bool, bool] | None = None  # text, chosen, open, paste
        self._timer = QtCore.QTimer(self, singleShot=True, interval=ENTER_WAIT_MS)
        self._timer.timeout.connect(lambda: self._held is not None and say_waiting())

    def hold(self, text: str, chosen: str, open_it: bool, paste: bool) -> None:
        """Hold an Enter for `text`'s answer; `chosen`: the memory picked, "" for the top."""
        self._held = (text, chosen, open_it, paste)
        self._timer.start()

    def forget(self, unless_for: str | None = None) -> None:
        """Forget the Enter held (unless it is for the text `unless_for`)."""
        if self._held is not None and self._held[0] != unless_for:
            self._held = None
            self._timer.stop()

    def answered(self, text: str, ids: list[str]) -> tuple[int | None, bool, bool] | None:
        """`text`'s settled answer came (its memories' ids): (the row to act on, None when
        the memory chosen is not among them; open; paste), or None when no Enter waits."""
        if self._held is None or self._held[0] != text:
            return None
        _, chosen, open_it, paste = self._held
        self.forget()
        row = (ids.index(chosen) if chosen in ids else None) if chosen else 0
        return row, open_it, paste

    @property
    def said(self) -> bool:
        """An Enter is held, and has waited long enough to have been said on screen."""
        return self._held is not None and not self._timer.isActive()
