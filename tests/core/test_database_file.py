"""The database file itself: made whole on first start, an empty one refused, purged text gone
from every file SQLite writes (issue 21, low findings)."""

from __future__ import annotations

import pytest

from app.core import paths
from app.core.engine import Engine
from app.core.errors import StoreError
from app.core.storage.db import Database
from tests.conftest import run_cli

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
    done = run_cli("remember", "a note")
    err = done.stderr.decode()
    assert done.returncode == 1, done
    assert err.count("\n") == 1 and "empty" in err and "Traceback" not in err, err
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


def _damage_an_index(db_path, created_at: str) -> None:
    """Change one key in the index on created_at, as a bad sector or a stray write would:
    the row is no longer found through the index ("row N missing from index")."""
    import apsw

    conn = apsw.Connection(str(db_path))
    root = conn.execute(
        "SELECT rootpage FROM sqlite_schema WHERE name = 'memories_created'"
    ).fetchall()[0][0]
    size = conn.execute("PRAGMA page_size").fetchall()[0][0]
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    raw = bytearray(db_path.read_bytes())
    page = slice((root - 1) * size, root * size)
    at = bytes(raw[page]).index(created_at.encode())
    start = (root - 1) * size + at
    raw[start : start + 4] = b"1999"  # the year of one key
    db_path.write_bytes(bytes(raw))


def test_a_database_failing_its_integrity_check_is_not_written_until_repaired(engine):
    kept = engine.remember("The boiler code is F22 and the pressure should be 1.5 bar")
    engine.close()
    _damage_an_index(paths.database_path(), kept.memory.created_at)
    checked = run_cli("doctor")
    assert checked.returncode == 1 and b"missing from index" in checked.stdout
    assert b"fix: mnemo doctor --repair" in checked.stdout
    # A write into it is refused with one line saying what to do; nothing is written
    refused = run_cli("remember", "a new note that must wait")
    err = refused.stderr.decode()
    assert refused.returncode == 1 and err.count("\n") == 1, err
    assert "integrity" in err and "mnemo doctor --repair" in err and "nothing was written" in err
    import apsw

    raw = apsw.Connection(str(paths.database_path()), flags=apsw.SQLITE_OPEN_READONLY)
    assert raw.execute("SELECT count(*) FROM memories").fetchall() == [(1,)]
    raw.close()
    # Reading still works, and the repair mends it and lets writes in again
    assert b"boiler" in run_cli("recall", "boiler pressure", "--mode", "keyword").stdout
    repaired = run_cli("doctor", "--repair")
    assert repaired.returncode == 0, repaired.stdout.decode()
    assert b"ok    database integrity: ok" in repaired.stdout
    assert run_cli("remember", "a new note that must wait").returncode == 0
