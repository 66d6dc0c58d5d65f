"""The near-duplicate question of Remember clipboard: a small window that never takes focus.

A modal dialog took the focus from whatever the user was typing in, and a space typed there
pressed its default button (Merge). This window shows without activating, accepts no focus,
and its buttons have no default: only a deliberate click chooses.
"""

from __future__ import annotations

from app.gui.qt import Qt, QtGui, QtWidgets, Signal

CHOICES = ("merge", "keep", "cancel")


class DuplicateChoice(QtWidgets.QWidget):
    """Merge / Keep both / Don't save, for a memory very similar to one already stored."""

    chosen = Signal(str)  # one of CHOICES

    def __init__(self, title: str, similarity: float, parent=None):
        super().__init__(
            parent,
            Qt.Tool | Qt.WindowStaysOnTopHint | Qt.WindowDoesNotAcceptFocus,
        )
        self.setAttribute(Qt.WA_ShowWithoutActivating, True)
        self.setAttribute(Qt.WA_DeleteOnClose, True)
        self.setFocusPolicy(Qt.NoFocus)
        self.setWindowTitle("Mnemo: near-duplicate")
        text = QtWidgets.QLabel(
            f"<b>This is very similar ({similarity:.2f}) to “{title}”.</b><br>"
            "Merge keeps every statement of both in one memory (the original goes to the "
            "trash); Keep both stores this one as well."
        )
        text.setWordWrap(True)
        text.setTextFormat(Qt.RichText)
        self.buttons: dict[str, QtWidgets.QPushButton] = {}
        row = QtWidgets.QHBoxLayout()
        row.addStretch(1)
        for key, label in zip(CHOICES, ("Merge", "Keep both", "Don't save"), strict=True):
            button = QtWidgets.QPushButton(label, objectName=f"duplicate-{key}")
            button.setFocusPolicy(Qt.NoFocus)  # a key typed elsewhere can never press it
            button.setAutoDefault(False)
            button.setDefault(False)
            button.clicked.connect(lambda _=False, k=key: self._choose(k))
            row.addWidget(button)
            self.buttons[key] = button
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(text)
        layout.addLayout(row)
        self.setFixedWidth(460)

    def present(self) -> None:
        """Show near the top of the screen under the mouse, without taking the focus."""
        screen = QtGui.QGuiApplication.screenAt(QtGui.QCursor.pos()) or self.screen()
        area = screen.availableGeometry()
        self.adjustSize()
        self.move(area.right() - self.width() - 16, area.top() + 16)
        self.show()

    def _choose(self, key: str) -> None:
        self.chosen.emit(key)
        self.close()
