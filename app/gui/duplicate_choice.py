"""The questions of Remember clipboard (a near-duplicate, a secret): small windows that never
take the focus.

A modal dialog took the focus from whatever the user was typing in, and a space typed there
pressed its default button (Merge). This window shows without activating, accepts no focus,
and its buttons have no default: only a deliberate click chooses.
"""

from __future__ import annotations

import html

from app.gui.qt import Qt, QtGui, QtWidgets, Signal

CHOICES = ("merge", "keep", "cancel")


class QuietChoice(QtWidgets.QWidget):
    """A question in a small window that never takes the focus: only a click answers it."""

    chosen = Signal(str)  # the key of the button clicked

    def __init__(
        self, window_title: str, html: str, choices: tuple[tuple[str, str], ...], parent=None
    ):
        super().__init__(
            parent,
            Qt.Tool | Qt.WindowStaysOnTopHint | Qt.WindowDoesNotAcceptFocus,
        )
        self.setAttribute(Qt.WA_ShowWithoutActivating, True)
        self.setAttribute(Qt.WA_DeleteOnClose, True)
        self.setFocusPolicy(Qt.NoFocus)
        self.setWindowTitle(window_title)
        text = QtWidgets.QLabel(html)
        text.setWordWrap(True)
        text.setTextFormat(Qt.RichText)
        self.buttons: dict[str, QtWidgets.QPushButton] = {}
        row = QtWidgets.QHBoxLayout()
        row.addStretch(1)
        for key, label in choices:
            button = QtWidgets.QPushButton(label, objectName=f"choice-{key}")
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
        """Show centred on the screen under the mouse, in front, without taking the focus.
        Not in a corner: notifications show there (dunst at the top right, Plasma and
        Windows at the bottom right), and the daemon keeps them above every window, so a
        question opened at the top right was under the bubble and never seen."""
        screen = QtGui.QGuiApplication.screenAt(QtGui.QCursor.pos()) or self.screen()
        area = screen.availableGeometry()
        self.adjustSize()
        frame = self.frameGeometry().size() - self.size()  # the title bar and borders
        width, height = self.width() + frame.width(), self.height() + frame.height()
        self.move(
            area.left() + max(0, (area.width() - width) // 2),
            area.top() + max(0, (area.height() - height) // 2),
        )
        self.show()
        self.raise_()  # in front of the windows already open (the focus stays where it is)

    def _choose(self, key: str) -> None:
        self.chosen.emit(key)
        self.close()


class DuplicateChoice(QuietChoice):
    """Merge / Keep both / Don't save, for a memory very similar to one already stored."""

    def __init__(self, title: str, similarity: float, parent=None):
        super().__init__(
            "Mnemo: near-duplicate",
            # (never "100 %": an identical text is counted as seen again, not asked about)
            f"<b>This is very similar ({min(int(similarity * 100), 99)} % alike) to "
            f"“{html.escape(title)}”.</b>"
            "<br>Merge keeps every statement of both in one memory (the original goes to the "
            "trash); Keep both stores this one as well.",
            tuple(zip(CHOICES, ("Merge", "Keep both", "Don't save"), strict=True)),
            parent,
        )


class SecretChoice(QuietChoice):
    """Store a redacted copy / Don't save, for a clipboard holding a secret."""

    def __init__(self, what: str, parent=None):
        super().__init__(
            "Mnemo: secret found",
            f"<b>What you copied contains {html.escape(what)}.</b><br>Mnemo never stores "
            "secrets as they are. Store a copy with the secret replaced by [REDACTED]?",
            (("redact", "Store a redacted copy"), ("cancel", "Don't save")),
            parent,
        )


def secret_question(what: str, parent: QtWidgets.QWidget | None) -> QtWidgets.QMessageBox:
    """The question asked above the open popup when what it stores holds a secret (it has
    the focus already): Yes stores a copy with the secret redacted; No by default and on
    Esc, and no mnemonic (a typed "y" or "n" answers nothing)."""
    box = QtWidgets.QMessageBox(
        QtWidgets.QMessageBox.Warning,
        "Mnemo: secret found",
        f"The text contains {what}. Mnemo never stores secrets as they are.\n\n"
        "Store a copy with the secret replaced by [REDACTED]?",
        QtWidgets.QMessageBox.Yes | QtWidgets.QMessageBox.No,
        parent,
    )
    box.button(QtWidgets.QMessageBox.Yes).setText("Store a redacted copy")
    box.button(QtWidgets.QMessageBox.No).setText("Don't save")
    box.setDefaultButton(QtWidgets.QMessageBox.No)
    box.setEscapeButton(QtWidgets.QMessageBox.No)
    box.setWindowFlag(Qt.WindowStaysOnTopHint, True)
    return box


def quiet_secret_question(what: str, store, refused) -> SecretChoice:
    """Asked when nothing of Mnemo is open (Remember clipboard), in a window that takes no
    focus: a click on Store a redacted copy calls `store()`, any other answer `refused()`.
    Shown; returned so that its caller keeps it while it is open."""
    choice = SecretChoice(what)
    choice.chosen.connect(lambda key: store() if key == "redact" else refused())
    choice.present()
    return choice
