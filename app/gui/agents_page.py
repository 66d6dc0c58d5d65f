"""The Agents page of the settings: what `mnemo agents status` says, and its install and
uninstall, one agent or several at a time.

`app.agents.wiring` does the work on a thread of its own (starting the MCP server to check
it takes seconds: never on the GUI thread, nor on the engine's, where searches wait); the
answer comes back as JSON through a signal, and only the GUI thread touches the widgets.
"""

from __future__ import annotations

import json
import logging
import threading

from app.agents import wiring
from app.agents.hooks import said
from app.core.errors import MnemoError
from app.gui.contrast import make_quiet
from app.gui.qt import Qt, QtWidgets, Signal

log = logging.getLogger(__name__)

COLUMNS = ("Agent", "On this computer", "Mnemo's server", "Hooks", "Config file")


class AgentsPage(QtWidgets.QWidget):
    """A row per agent; Wire / Take out act on the selected rows."""

    answered = Signal(str, str)  # what was asked ("status" | "done"), its answer as JSON

    def __init__(self, parent=None):
        super().__init__(parent, objectName="agentsPage")
        self.rows: list[dict] = []
        self._acted = ""  # what the last Wire / Take out did, for the status line
        self.answered.connect(self._answered)
        intro = QtWidgets.QLabel(
            "Mnemo can be the memory of your AI coding agents: wiring adds its MCP server (and, "
            "where the agent runs hooks, memory at session start and at each prompt, and "
            "capture for your review) to the agent's own config, keeping everything else in "
            "it and a backup beside it. Take out puts it back.",
            wordWrap=True,
        )
        make_quiet(intro)
        self.table = QtWidgets.QTableWidget(0, len(COLUMNS), objectName="agentsTable")
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectRows)
        self.table.setEditTriggers(QtWidgets.QAbstractItemView.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.wire = QtWidgets.QPushButton("Wire selected", objectName="agentsWire")
        self.unwire = QtWidgets.QPushButton("Take out selected", objectName="agentsUnwire")
        self.check = QtWidgets.QPushButton("Check the connection", objectName="agentsCheck")
        self.wire.clicked.connect(lambda: self._act(wiring.install, "Wired"))
        self.unwire.clicked.connect(lambda: self._act(wiring.uninstall, "Taken out"))
        self.check.clicked.connect(lambda: self.refresh(check=True))
        buttons = QtWidgets.QHBoxLayout()
        for button in (self.wire, self.unwire, self.check):
            buttons.addWidget(button)
        buttons.addStretch(1)
        self.status = QtWidgets.QLabel(objectName="agentsStatus", wordWrap=True)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(self.table, 1)
        layout.addLayout(buttons)
        layout.addWidget(self.status)
        self.refresh()

    def refresh(self, check: bool = False) -> None:
        """Read every agent's config again (and start the server once, with `check`)."""
        if check:
            self.status.setText("Starting Mnemo's server as the agents would…")
        self._off_thread("status", lambda: wiring.status(check=check))

    def _off_thread(self, kind: str, work) -> None:
        def run() -> None:
            try:
                answer = json.dumps(work(), default=lambda o: getattr(o, "__dict__", str(o)))
            except MnemoError as exc:
                answer = json.dumps({"error": str(exc)})
            except Exception as exc:  # a bug: logged with its traceback, said in one line
                log.exception("agents page: %s failed", kind)
                answer = json.dumps({"error": f"{type(exc).__name__}: {exc}"})
            self.answered.emit(kind, answer)

        threading.Thread(target=run, name=f"agents-{kind}", daemon=True).start()

    def _answered(self, kind: str, answer: str) -> None:
        value = json.loads(answer)
        if isinstance(value, dict) and "error" in value:
            self.status.setText(value["error"])
        elif kind == "status":
            self._show(value)
        else:
            refused = [c for c in value if c["what"] == "refused"]
            lines = [f"{c['agent']}: {c['detail']}" for c in refused]
            self.status.setText("\n".join(lines) if refused else self._acted)
            self.refresh()

    def _show(self, rows: list[dict]) -> None:
        self.rows = rows
        self.table.setRowCount(len(rows))
        for r, row in enumerate(rows):
            server = row["server"]
            if row.get("answers") is True:
                server += ", answers"
            elif row.get("answers") is False:
                server += f", does not answer ({row['problem']})"
            cells = (
                row["name"],
                "found" if row["present"] else "not found",
                server,
                said(row) if row["hook"] is not None else "—",
                row["config"] or "",
            )
            for c, text in enumerate(cells):
                item = QtWidgets.QTableWidgetItem(text)
                item.setToolTip(row["problem"] or text)
                self.table.setItem(r, c, item)
        self.table.resizeColumnsToContents()
        if self.status.text().startswith("Starting"):
            self.status.setText("Checked.")

    def selected(self) -> list[str]:
        """The keys of the agents whose rows are selected."""
        picked = {i.row() for i in self.table.selectionModel().selectedRows()}
        return [self.rows[r]["agent"] for r in sorted(picked) if r < len(self.rows)]

    def _act(self, action, done: str) -> None:
        names = self.selected()
        if not names:
            self.status.setText("Select the agents first (Ctrl+click for several).")
            return
        self._acted = f"{done}: {', '.join(names)}."
        self._off_thread("done", lambda: action(names))

    def keyPressEvent(self, event) -> None:  # noqa: N802 - Qt API
        if event.key() == Qt.Key_F5:
            self.refresh()
        else:
            super().keyPressEvent(event)
