"""Fixtures of the core tests shared by several files."""

from __future__ import annotations

import pytest

from app.core.engine import Engine


@pytest.fixture
def homes(tmp_path, word_model):
    """Mnemo homes on real database files, each made by name (a team's devices); closed
    at the end."""
    made: list[Engine] = []

    def engine(name: str) -> Engine:
        eng = Engine(database=tmp_path / f"{name}.db", embedder=word_model)
        made.append(eng)
        return eng

    yield engine
    for eng in made:
        eng.close()
