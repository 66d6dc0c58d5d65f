"""The capture inbox: what agents' hooks found the user stating as lasting, to accept (as
written, or edited first) or reject (the same words are not proposed again).

Opened from the manager's toolbar ("Inbox (N)") and the tray menu. It reads and writes
through the worker only, and follows changes made elsewhere (a hook capturing while it is
open) through the worker's `changes` signal.
"""

from __future__ import annotations

from app.core.memory import Change
from app.core.runner import INTERACTIVE
from app.core.storage.inbox import SUPERSEDES, Candidate
from app.gui.contrast import make_quiet
from app.gui.qt import QtCore, QtWidgets, Signal
from app.gui.worker import Worker

Qt = QtCore.Qt


STORE_LABEL = "Memory to store:"
NEWER_LABEL = "Newer memory (stored already), proposed to supersede an older one:"


def accepted_message(done: list) -> str:
    """What accepting did: stored, and older memories superseded (their words now a version
    of the newer one)."""
    superseded = sum(r.supersedes is not None and r.status == "superseded" for r in done)
    said = [f"Stored {len(done) - superseded} as memories"] if len(done) > superseded else []
    if superseded:
        said.append(
            f"{superseded} older memor{'y' if superseded == 1 else 'ies'} superseded: "
            "their words are in the newer one's History, the older ones in the trash"
        )
    return "; ".join(said)


class InboxDialog(QtWidgets.QDialog):
    """The candidates waiting, one selected at a time with its text to edit."""

    counted = Signal(int)  # how many wait, after each load

    def __init__(self, worker: Worker, parent=None):
        super().__init__(parent)
        self.setObjectName("inboxDialog")
        self.setWindowTitle("Mnemo — captured from your agents")
        self.resize(760, 460)
        self.worker = worker
        self.candidates: list[Candidate] = []
        self._done = ""  # what accepting or rejecting just did, said once the list is back

        self.list = QtWidgets.QListWidget(objectName="inboxList")
        self.list.setSelectionMode(QtWidgets.QAbstractItemView.ExtendedSelection)
        self.list.currentRowChanged.connect(self._show)
        self.text = QtWidgets.QPlainTextEdit(objectName="inboxText")
        self.text.setPlaceholderText("The memory it would become; edit it before accepting")
        self.said = QtWidgets.QLabel(objectName="inboxSaid", wordWrap=True)
        self.said.setTextFormat(Qt.PlainText)
        make_quiet(self.said)
        self.status = QtWidgets.QLabel(objectName="inboxStatus", wordWrap=True)

        self.accept_button = QtWidgets.QPushButton("Accept", objectName="inboxAccept")
        self.accept_button.setToolTip("Make the selected candidates memories")
        self.accept_button.clicked.connect(self.accept_selected)
        self.reject_button = QtWidgets.QPushButton("Reject", objectName="inboxReject")
        self.reject_button.setToolTip("Drop them; the same words are not proposed again")
        self.reject_button.clicked.connect(self.reject_selected)
        self.same_file = QtWidgets.QPushButton("Select the whole file", objectName="inboxSameFile")
        self.same_file.setToolTip(
            "Select every candidate imported from the same agent file (mnemo agents import), "
            "to accept or reject them at once"
        )
        self.same_file.clicked.connect(self.select_same_file)
        close = QtWidgets.QPushButton("Close", objectName="inboxClose")
        close.clicked.connect(self.close)

        right = QtWidgets.QVBoxLayout()
        self.text_label = QtWidgets.QLabel(STORE_LABEL)
        right.addWidget(self.text_label)
        right.addWidget(self.text, 1)
        right.addWidget(self.said)
        split = QtWidgets.QHBoxLayout()
        split.addWidget(self.list, 3)
        split.addLayout(right, 2)
        buttons = QtWidgets.QHBoxLayout()
        buttons.addWidget(self.accept_button)
        buttons.addWidget(self.reject_button)
        buttons.addWidget(self.same_file)
        buttons.addStretch(1)
        buttons.addWidget(close)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addLayout(split, 1)
        layout.addWidget(self.status)
        layout.addLayout(buttons)
        worker.changes.connect(self._on_changes)
        self.load()

    # ---- reading -----------------------------------------------------------------------
    def load(self) -> None:
        self.worker.call(
            lambda e: e.inbox(),
            self._loaded,
            self._failed,
            INTERACTIVE,
            channel="inbox-load",
        )

    def _on_changes(self, changes: list[Change]) -> None:
        if any(c.moves_inbox for c in changes):
            self.load()

    def _loaded(self, candidates: list[Candidate]) -> None:
        keep = self._selected_ids()
        row = self.list.currentRow()
        current = self.candidates[row].id if 0 <= row < len(self.candidates) else None
        self.candidates = candidates
        self.list.blockSignals(True)
        self.list.clear()
        for candidate in candidates:
            where = f" · {candidate.project}" if candidate.project else ""
            seen = f" · said {candidate.seen}×" if candidate.seen > 1 else ""
            came = f" · {candidate.agent}, {_file(candidate.source)}" if candidate.source else ""
            if candidate.rule == SUPERSEDES and candidate.agent:
                came += f" · written by {candidate.agent}"  # (an agent's claim: whose it is)
            item = QtWidgets.QListWidgetItem(
                f"{candidate.text}\n{candidate.rule}{where}{seen}{came}"
            )
            item.setData(Qt.UserRole, candidate.id)
            item.setToolTip(candidate.said or candidate.text)
            self.list.addItem(item)
            if candidate.id in keep:
                item.setSelected(True)
        again = next((n for n, c in enumerate(candidates) if c.id == current), None)
        if again is not None:  # the one shown stays current (a capture came in meanwhile)
            self.list.setCurrentRow(again, QtCore.QItemSelectionModel.NoUpdate)
        self.list.blockSignals(False)
        if candidates and not self.list.selectedItems():
            self.list.setCurrentRow(0)
        self._show(self.list.currentRow())  # (no signal when the row was current already)
        empty = not candidates
        self.accept_button.setEnabled(not empty)
        self.reject_button.setEnabled(not empty)
        if empty:  # (what was just done stays said)
            done = f"{self._done}. Nothing else waits." if self._done else ""
            self.status.setText(done or "Nothing waits: what your agents capture shows here.")
        self._done = ""
        self.counted.emit(len(candidates))

    def _show(self, row: int) -> None:
        candidate = self.candidates[row] if 0 <= row < len(self.candidates) else None
        self.text.setPlainText(candidate.text if candidate else "")
        self.text.setEnabled(candidate is not None)
        replacing = candidate is not None and candidate.rule == SUPERSEDES
        self.text.setReadOnly(replacing)  # (accepted as it is: it is a memory already)
        self.text_label.setText(NEWER_LABEL if replacing else STORE_LABEL)
        said = candidate.said if candidate else ""
        lines = [f"You wrote: “{said}”"] if said and not replacing else []
        if replacing:
            lines.append(
                f"Older memory {candidate.similar}:\n“{said}”\n\nAccepting keeps the older words "
                "as a version of this memory (its History) and moves that one to the trash; "
                "rejecting keeps both, and this is not proposed again."
            )
        if candidate is not None and candidate.source:
            when = f", {candidate.said_at[:10]}" if candidate.said_at else ""
            lines.append(f"From {candidate.agent}: {candidate.source}{when}")
        self.same_file.setEnabled(candidate is not None and bool(candidate.source))
        if candidate is not None and candidate.similar and not replacing:
            lines.append(f"Close to a memory you have ({candidate.similar}): accepting keeps both")
        self.said.setText("\n".join(lines))

    def _selected_ids(self) -> list[str]:
        return [item.data(Qt.UserRole) for item in self.list.selectedItems()]

    def select_same_file(self) -> None:
        """Select every candidate from the current one's file (an import's), and say how many."""
        row = self.list.currentRow()
        if not 0 <= row < len(self.candidates) or not self.candidates[row].source:
            return
        source = self.candidates[row].source
        for n, candidate in enumerate(self.candidates):
            self.list.item(n).setSelected(candidate.source == source)
        count = sum(c.source == source for c in self.candidates)
        self.status.setText(f"{count} selected from {_file(source)}: accept or reject them")

    # ---- acting ------------------------------------------------------------------------
    def accept_selected(self) -> None:
        ids = self._selected_ids()
        if not ids:
            return
        current = self.list.currentRow()
        text = None
        if len(ids) == 1 and 0 <= current < len(self.candidates):
            edited = self.text.toPlainText().strip()
            if self.candidates[current].id == ids[0] and edited != self.candidates[current].text:
                text = edited
        failed: list[str] = []  # (a stale proposal among them waits on, said)
        self.worker.call(
            lambda e: e.accept(ids, text, failed),
            lambda done: self._did("; ".join(filter(None, [accepted_message(done), *failed]))),
            self._failed,
            INTERACTIVE,
            writes=True,
        )

    def reject_selected(self) -> None:
        ids = self._selected_ids()
        if not ids:
            return
        self.worker.call(
            lambda e: e.reject(ids),
            lambda n: self._did(f"Rejected {n}; the same words are not proposed again"),
            self._failed,
            INTERACTIVE,
            writes=Change("inbox", tuple(ids)),
        )

    def _did(self, message: str) -> None:
        self.status.setText(message)
        self._done = message
        self.load()

    def _failed(self, message: str) -> None:
        self.status.setText(message)
        self.load()


def _file(source: str) -> str:
    """A file's name with its folder, short enough for a list's line."""
    parts = source.replace("\\", "/").split("/")
    return "/".join(parts[-2:])
