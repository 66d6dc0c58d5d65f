"""The "Find duplicates" view: near-duplicate pairs, each with Merge and Not duplicates, and
both memories shown side by side for the selected pair."""

from __future__ import annotations

from app.core.engine import NearPair
from app.gui.qt import Qt, QtWidgets
from app.gui.worker import INTERACTIVE, Worker

PREVIEW_CHARS = 4000  # of each memory, in the panes under the list


def similarity_text(pair: NearPair) -> str:
    """ "0.93", or for a short memory that is a part of a long one "1.00, a part (1%)": the
    closest chunks are that close, but they cover only that share of the two."""
    score = f"{pair.similarity:.2f}"
    return f"{score}, a part ({max(1, round(pair.share * 100))}%)" if pair.partial else score


class DuplicatesDialog(QtWidgets.QDialog):
    """Lists pairs (similarity, one title, the other) with Merge and Not duplicates per row;
    the selected pair's two texts are shown below."""

    def __init__(self, pairs: list[NearPair], worker: Worker, parent=None):
        super().__init__(parent)
        self.setObjectName("duplicatesDialog")
        self.setWindowTitle(f"Near-duplicates ({len(pairs)})")
        self.resize(900, 620)
        self.worker = worker
        self.pairs = pairs
        self.table = QtWidgets.QTableWidget(len(pairs), 5, objectName="duplicatesTable")
        self.table.setHorizontalHeaderLabels(["Similarity", "Memory", "Near-duplicate", "", ""])
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(1, QtWidgets.QHeaderView.Stretch)
        header.setSectionResizeMode(2, QtWidgets.QHeaderView.Stretch)
        self.table.verticalHeader().setVisible(False)
        self.table.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectRows)
        self.table.setSelectionMode(QtWidgets.QAbstractItemView.SingleSelection)
        self.table.setEditTriggers(QtWidgets.QAbstractItemView.NoEditTriggers)
        for row, pair in enumerate(pairs):
            score = QtWidgets.QTableWidgetItem(similarity_text(pair))
            if pair.partial:
                score.setToolTip(
                    "Their closest parts are this close, but they cover only this share of "
                    "the two: one memory holds the other, or a part of it."
                )
            self.table.setItem(row, 0, score)
            self.table.setItem(row, 1, QtWidgets.QTableWidgetItem(pair.a.display_title))
            self.table.setItem(row, 2, QtWidgets.QTableWidgetItem(pair.b.display_title))
            merge = QtWidgets.QPushButton("Merge", objectName=f"mergePair{row}")
            merge.clicked.connect(lambda _=False, row=row: self._merge(row))
            self.table.setCellWidget(row, 3, merge)
            keep = QtWidgets.QPushButton("Not duplicates", objectName=f"dismissPair{row}")
            keep.setToolTip("Keep both as they are; this pair is not listed again")
            keep.clicked.connect(lambda _=False, row=row: self._dismiss(row))
            self.table.setCellWidget(row, 4, keep)
        self.table.resizeColumnToContents(0)
        intro = QtWidgets.QLabel(
            "No near-duplicates: every memory is distinct."
            if not pairs
            else "Merging makes one memory that keeps every statement of both and unites "
            "their tags; the two originals go to the trash (`mnemo unmerge` brings them back)."
            " Not duplicates keeps both and lists the pair no more."
        )
        intro.setWordWrap(True)
        self.left, self.right = QtWidgets.QPlainTextEdit(), QtWidgets.QPlainTextEdit()
        for pane, name in ((self.left, "duplicateLeft"), (self.right, "duplicateRight")):
            pane.setObjectName(name)
            pane.setReadOnly(True)
        panes = QtWidgets.QHBoxLayout()
        panes.addWidget(self.left)
        panes.addWidget(self.right)
        split = QtWidgets.QSplitter(Qt.Vertical)
        split.addWidget(self.table)
        below = QtWidgets.QWidget()
        below.setLayout(panes)
        panes.setContentsMargins(0, 0, 0, 0)
        split.addWidget(below)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(split)
        self.table.itemSelectionChanged.connect(self._show_pair)
        if pairs:
            self.table.selectRow(0)

    def _show_pair(self) -> None:
        rows = self.table.selectionModel().selectedRows()
        if not rows:
            return
        pair = self.pairs[rows[0].row()]
        for pane, memory in ((self.left, pair.a), (self.right, pair.b)):
            text = memory.text
            if len(text) > PREVIEW_CHARS:
                rest = len(text) - PREVIEW_CHARS
                text = f"{text[:PREVIEW_CHARS]}\n\n… and {rest:,} more characters"
            pane.setPlainText(f"{memory.display_title}\n{len(memory.text):,} characters\n\n{text}")

    def _done(self, row: int, said: str) -> None:
        for column in (3, 4):
            button = self.table.cellWidget(row, column)
            button.setEnabled(False)
        self.table.cellWidget(row, 4 if said == "Kept both" else 3).setText(said)

    def _merge(self, row: int) -> None:
        pair = self.pairs[row]
        self._done(row, "Merged")
        self.worker.call(
            lambda e: e.merge([pair.a.id, pair.b.id]),
            lambda merged: self._undoable(row, merged.id),
            priority=INTERACTIVE,
            writes=True,
        )

    def _undoable(self, row: int, merged_id: str) -> None:
        """The row's merge done: its button undoes it (the two come back as they were)."""
        button = self.table.cellWidget(row, 3)
        button.setText("Undo merge")
        button.setEnabled(True)
        button.clicked.disconnect()
        button.clicked.connect(lambda _=False: self._unmerge(row, merged_id))

    def _unmerge(self, row: int, merged_id: str) -> None:
        self._done(row, "Merge undone")
        self.worker.call(lambda e: e.unmerge(merged_id), priority=INTERACTIVE, writes=True)

    def _dismiss(self, row: int) -> None:
        pair = self.pairs[row]
        self._done(row, "Kept both")
        self.worker.call(
            lambda e: e.not_duplicates(pair.a.id, pair.b.id), priority=INTERACTIVE, writes=True
        )
