"""The "Find duplicates" view: near-duplicate pairs, each with a merge button."""

from __future__ import annotations

from app.core.memory import Memory
from app.gui.qt import QtWidgets
from app.gui.worker import INTERACTIVE, Worker


class DuplicatesDialog(QtWidgets.QDialog):
    """Lists pairs (similarity, one title, the other) with Merge per row."""

    def __init__(self, pairs: list[tuple[Memory, Memory, float]], worker: Worker, parent=None):
        super().__init__(parent)
        self.setObjectName("duplicatesDialog")
        self.setWindowTitle(f"Near-duplicates ({len(pairs)})")
        self.resize(820, 420)
        self.worker = worker
        self.table = QtWidgets.QTableWidget(len(pairs), 4, objectName="duplicatesTable")
        self.table.setHorizontalHeaderLabels(["Similarity", "Memory", "Near-duplicate", ""])
        self.table.horizontalHeader().setSectionResizeMode(1, QtWidgets.QHeaderView.Stretch)
        self.table.horizontalHeader().setSectionResizeMode(2, QtWidgets.QHeaderView.Stretch)
        self.table.verticalHeader().setVisible(False)
        for row, (a, b, score) in enumerate(pairs):
            self.table.setItem(row, 0, QtWidgets.QTableWidgetItem(f"{score:.2f}"))
            self.table.setItem(row, 1, QtWidgets.QTableWidgetItem(a.display_title))
            self.table.setItem(row, 2, QtWidgets.QTableWidgetItem(b.display_title))
            button = QtWidgets.QPushButton("Merge", objectName=f"mergePair{row}")
            button.clicked.connect(
                lambda _=False, a=a, b=b, button=button: self._merge(a, b, button)
            )
            self.table.setCellWidget(row, 3, button)
        empty = QtWidgets.QLabel(
            "No near-duplicates: every memory is distinct."
            if not pairs
            else "Merging makes one memory that keeps every statement of both and unites "
            "their tags; the two originals go to the trash (`mnemo unmerge` brings them back)."
        )
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(empty)
        layout.addWidget(self.table)

    def _merge(self, a: Memory, b: Memory, button: QtWidgets.QPushButton) -> None:
        button.setEnabled(False)
        button.setText("Merged")
        self.worker.call(lambda e: e.merge([a.id, b.id]), priority=INTERACTIVE, writes=True)
