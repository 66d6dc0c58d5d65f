"""The shape of the house: core never imports Qt."""

from __future__ import annotations

import re
from pathlib import Path

CORE = Path(__file__).resolve().parent.parent / "app" / "core"


def test_core_never_imports_qt():
    offenders = [
        str(path)
        for path in CORE.rglob("*.py")
        if re.search(
            r"^\s*(from|import)\s+(PySide6|PyQt\d|app\.gui|shiboken6)",
            path.read_text(),
            re.MULTILINE,
        )
    ]
    assert offenders == []
