"""Window sizes, splitter positions and column widths, remembered between runs.

Not settings: nobody edits them by hand, and losing the file (`windows.json` in the state
folder) only loses sizes. A damaged or foreign file is ignored with one log line; a window
restored on a screen that is gone is moved onto one by Qt.
"""

from __future__ import annotations

import base64
import json
import logging

from app.core import paths
from app.gui.qt import QtCore, QtWidgets

log = logging.getLogger(__name__)

FILE = "windows.json"


def _read() -> dict:
    path = paths.state_dir() / FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.info("window sizes not restored: %s is unreadable (%s)", path, exc)
        return {}
    return data if isinstance(data, dict) else {}


def restore(
    name: str,
    window: QtWidgets.QWidget,
    splitter: QtWidgets.QSplitter | None = None,
    table: QtWidgets.QTableView | None = None,
) -> None:
    """Give `window` (and its splitter and table columns) the sizes saved under `name`."""
    state = _read().get(name)
    if not isinstance(state, dict):
        return
    try:
        if isinstance(state.get("geometry"), str):
            window.restoreGeometry(QtCore.QByteArray(base64.b64decode(state["geometry"])))
        if splitter is not None and isinstance(state.get("splitter"), str):
            splitter.restoreState(QtCore.QByteArray(base64.b64decode(state["splitter"])))
        widths = state.get("columns")
        if table is not None and isinstance(widths, list):
            for column, width in enumerate(widths[: table.model().columnCount()]):
                if isinstance(width, int) and 20 <= width <= 2000 and column:
                    table.setColumnWidth(column, width)  # column 0 stretches
    except (ValueError, TypeError) as exc:  # bad base64
        log.info("window sizes of %s not restored: %s", name, exc)


def save(
    name: str,
    window: QtWidgets.QWidget,
    splitter: QtWidgets.QSplitter | None = None,
    table: QtWidgets.QTableView | None = None,
) -> None:
    """Keep the sizes of `window` (and its splitter and table columns) under `name`."""
    state = {"geometry": base64.b64encode(bytes(window.saveGeometry())).decode("ascii")}
    if splitter is not None:
        state["splitter"] = base64.b64encode(bytes(splitter.saveState())).decode("ascii")
    if table is not None:
        state["columns"] = [table.columnWidth(c) for c in range(table.model().columnCount())]
    data = _read()
    data[name] = state
    path = paths.state_dir() / FILE
    try:
        paths.replace_file(path, lambda out: json.dump(data, out))
    except OSError as exc:  # a full or read-only disk: sizes are not worth an error
        log.info("window sizes not saved: %s", exc)
