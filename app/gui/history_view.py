"""The manager's History tab (issue 44, ADR 0023): the versions of the selected memory's
words, newest first, with when each was written, by whom and why it was replaced; the
selected one's words; *Restore this version*; and for a merge, what it joined and *Unmerge*.
Read and written through the worker only; read when the tab is shown."""

from __future__ import annotations

from app.core import origin as origins
from app.core.display import age, isolated, word_changes
from app.core.memory import Memory
from app.core.version import History, Version
from app.gui.qt import Qt, QtWidgets, Signal
from app.gui.worker import INTERACTIVE, Worker

MANAGER = origins.person("manager")
SHOWN_CHARS = 100_000  # of a version's text in the pane


def _when(stamp: str) -> str:
    return f"{age(stamp)} ({stamp[:16].replace('T', ' ')} UTC)" if stamp else "at a time unknown"


class HistoryView(QtWidgets.QWidget):
    """The History tab of one manager window."""

    restored = Signal(str, str)  # memory id, what was done (for the status bar)
    unmerge_asked = Signal(str)  # a merge's id: the manager undoes it (`Removals.unmerge`)

    def __init__(self, worker: Worker, parent=None):
        super().__init__(parent, objectName="historyView")
        self.worker = worker
        self.memory_id: str | None = None
        self.history: History | None = None
        self._stale = True  # read again when next shown
        layout = QtWidgets.QVBoxLayout(self)
        self.heading = QtWidgets.QLabel(objectName="historyHeading", wordWrap=True)
        self.entries = QtWidgets.QListWidget(objectName="historyList", wordWrap=True)
        self.entries.setTextElideMode(Qt.ElideRight)
        self.entries.setSpacing(3)
        self.entries.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.entries.currentRowChanged.connect(self._show_entry)
        self.words = QtWidgets.QPlainTextEdit(objectName="historyText", readOnly=True)
        self.restore_button = QtWidgets.QPushButton(
            "Restore this version", objectName="restoreVersion"
        )
        self.restore_button.setToolTip(
            "The memory says these words again; what it says now is kept as a version."
        )
        self.restore_button.clicked.connect(self.restore_selected)
        self.unmerge_button = QtWidgets.QPushButton("Unmerge", objectName="unmergeHistory")
        self.unmerge_button.setToolTip(
            "Bring back the memories this one was merged from, as they were; this one goes "
            "to the trash."
        )
        self.unmerge_button.clicked.connect(self._unmerge)
        buttons = QtWidgets.QHBoxLayout()
        buttons.addWidget(self.restore_button)
        buttons.addWidget(self.unmerge_button)
        buttons.addStretch(1)
        for widget in (self.heading, self.entries):
            layout.addWidget(widget)
        layout.addWidget(self.words, 1)
        layout.addLayout(buttons)
        self._fill(None)

    # ---- which memory ----------------------------------------------------------------
    def show_memory(self, memory: Memory | None) -> None:
        """Follow the manager's selection (read now if the tab is shown, else when it is)."""
        self.memory_id = memory.id if memory is not None else None
        self.reload()

    def reload(self) -> None:
        """Read the history again (after a write), now if shown, else when shown."""
        self._stale = True
        if self.isVisible():
            self._read()

    def showEvent(self, event) -> None:  # noqa: N802 - Qt API
        super().showEvent(event)
        if self._stale:
            self._read()

    def _read(self) -> None:
        self._stale = False
        memory_id = self.memory_id
        if memory_id is None:
            self._fill(None)
            return
        self.worker.call(
            lambda e: e.history(memory_id),
            lambda found: self._fill(found) if found.memory.id == self.memory_id else None,
            lambda message: self.heading.setText(f"History not read: {message}"),
            INTERACTIVE,
            channel="manager-history",
        )

    # ---- showing ---------------------------------------------------------------------
    def _fill(self, history: History | None) -> None:
        self.history = history
        self.entries.clear()
        self.words.clear()
        self.unmerge_button.setVisible(bool(history and history.merged_from))
        self.restore_button.setEnabled(False)
        if history is None:
            self.heading.setText("Select a memory to see the versions of its words.")
            return
        m = history.memory
        count = len(history.versions)
        said = f"{count} earlier version{'s' if count != 1 else ''}" if count else "no earlier"
        if not count:
            said += " versions: its words have not changed here"
        trash = " It is in the trash: restore it before a version." if m.deleted_at else ""
        self.heading.setText(f"“{isolated(m.display_title)}”: {said}.{trash}")
        verb = "changed" if history.versions else "written"
        now = self._item(f"Now — {verb} {_when(m.updated_at)}", f"by {history.now_by()}")
        now.setData(Qt.UserRole, m)
        for version in history.versions:
            by = f" by {version.replaced_by.describe()}" if version.replaced_by else ""
            item = self._item(
                f"Version {version.number} — written {_when(version.written_at)}",
                f"by {history.written_by(version)}; {version.reason} "
                f"{age(version.replaced_at)}{by}",
            )
            item.setData(Qt.UserRole, version)
        for source in history.merged_from:
            item = self._item(
                f"Merged from {source.id} — {source.display_title}",
                f"written {_when(source.updated_at)} by {origins.summary(source.origins)}",
            )
            item.setData(Qt.UserRole, source)
        self.entries.setCurrentRow(1 if history.versions else 0)

    def _item(self, first: str, second: str) -> QtWidgets.QListWidgetItem:
        """An entry of two lines: what and when; by whom (and why it was replaced)."""
        item = QtWidgets.QListWidgetItem(f"{isolated(first)}\n{isolated(second)}", self.entries)
        item.setToolTip(f"{first}\n{second}")
        return item

    def _show_entry(self, row: int) -> None:
        item = self.entries.item(row) if row >= 0 else None
        entry = item.data(Qt.UserRole) if item is not None else None
        if entry is None or self.history is None:
            self.words.clear()
            self.restore_button.setEnabled(False)
            return
        text = entry.text[:SHOWN_CHARS]
        if entry.reasoning:
            text += f"\n\nReasoning: {entry.reasoning}"
        if isinstance(entry, Version):
            newer = self._newer_than(entry)
            changes = word_changes(entry.text, newer)
            if changes:
                text += "\n\nThen changed: " + "; ".join(changes)
        self.words.setPlainText(text)
        restorable = isinstance(entry, Version) and not self.history.memory.deleted_at
        self.restore_button.setEnabled(restorable and not entry.same_words(self.history.memory))

    def _newer_than(self, version: Version) -> str:
        """The words that replaced `version` (the next version's, or the memory's now)."""
        newer = [v for v in self.history.versions if v.number > version.number]
        return min(newer, key=lambda v: v.number).text if newer else self.history.memory.text

    def selected_version(self) -> Version | None:
        """The version selected in the list (None: the memory now, or a merge's source)."""
        item = self.entries.currentItem()
        entry = item.data(Qt.UserRole) if item is not None else None
        return entry if isinstance(entry, Version) else None

    # ---- acting ----------------------------------------------------------------------
    def restore_selected(self) -> None:
        """Make the memory say the selected version's words again (kept: what it says now)."""
        version = self.selected_version()
        if version is None:
            return
        memory_id, seq, number = version.memory_id, version.seq, version.number
        self.restore_button.setEnabled(False)
        self.worker.call(
            lambda e: e.restore_version(memory_id, seq, origin=MANAGER, embed=False),
            lambda memory: self.restored.emit(
                memory.id,
                f"Restored version {number} of “{memory.display_title}”; what it said until "
                "now is the newest version in its History.",
            ),
            self._failed,
            INTERACTIVE,
            writes=True,
        )

    def _unmerge(self) -> None:
        if self.history is not None and self.history.merged_from:
            self.unmerge_asked.emit(self.history.memory.id)

    def _failed(self, message: str) -> None:
        self.heading.setText(f"Not restored: {message}")
        self.restore_button.setEnabled(self.selected_version() is not None)
