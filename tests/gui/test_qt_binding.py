"""Guards against a Qt binding that corrupts reference counts (it crashed long sessions)."""

from __future__ import annotations

import sys

from app.gui.qt import QtWidgets


def test_void_qt_calls_do_not_drop_references_to_none(qapp):
    # PySide6 6.12.0 released one reference to None on every call of a method returning
    # void; after enough calls the interpreter aborts ("deallocating None").
    label = QtWidgets.QLabel()
    before = sys.getrefcount(None)
    for _ in range(20_000):
        label.setText("x")
        qapp.processEvents()
    assert sys.getrefcount(None) - before > -100
