"""The database file itself: made whole on first start, an empty one refused, purged text gone
from every file SQLite writes (issue 21, low findings)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from app.core import paths
from app.core.db import Database
from app.core.engine import Engine
from app.core.errors import StoreError
from tests.conftest import REPO

MARKER = "zorblaxquintessent"


def _bytes_on_disk() -> dict[str, bytes]:
    """Every file in the data folder (database, WAL, vector copy), by name."""
    return {
        str(p.relative_to(paths.data_dir())): p.read_bytes()
        for p in paths.data_dir().rglob("*")
        if p.is_file()
    }


def test_an_empty_database_file_is_refused_and_left_as_it_is(mnemo_home):
    db = paths.database_path()
    db.parent.mkdir(parents=True, exist_ok=True)
    db.write_bytes(b"")  # a failing disk or a sync tool cut it to nothing
    with pytest.raises(StoreError, match="empty") as caught:
        Database(db)
    assert "restore" in str(caught.value) and "move it away" in str(caught.value)
    assert db.read_bytes() == b""
    done = subprocess.run(
        [sys.executable, "-m", "app", "remember", "a note"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert done.returncode == 1, done
    assert done.stderr.count("\n") == 1 and "empty" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert db.read_bytes() == b"", "nothing may be written into it"


def test_the_first_start_makes_the_database_whole_in_one_step(mnemo_home):
    Database(paths.database_path()).conn.close()
    assert paths.database_path().stat().st_size > 0
    left = [p.name for p in paths.data_dir().iterdir() if p.name.startswith(".")]
    assert left == [], f"temporary files left behind: {left}"
    again = Database(paths.database_path())  # opens what was made, does not refuse it
    assert again.pending_migrations() == []


def test_purged_text_is_gone_from_every_file(engine):
    memory = engine.remember(
        f"The {MARKER} deploy key lives in the vault", title=f"{MARKER} key note"
    )
    engine.remember("A note that stays, about the garden shed")
    assert any(MARKER.encode() in b for b in _bytes_on_disk().values())
    engine.forget([memory.memory.id])
    engine.purge([memory.memory.id])
    still = [name for name, b in _bytes_on_disk().items() if MARKER.encode() in b]
    assert still == [], f"purged text still readable in {still} while the app runs"
    engine.close()
    still = [name for name, b in _bytes_on_disk().items() if MARKER.encode() in b]
    assert still == [], f"purged text still readable in {still}"
    reopened = Engine(embedder=engine.embedder)
    try:
        found = reopened.recall("garden shed", mode="keyword", track=False).results
        assert [r.memory.text for r in found] == ["A note that stays, about the garden shed"]
        assert reopened.recall(MARKER, mode="keyword", track=False).results == []
    finally:
        reopened.close()
