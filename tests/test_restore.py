"""A snapshot is data, not code (issue 40, items 2, 7 and 8): `restore` takes only the
schema Mnemo's migrations make, checks every page and index, and reads key files without
hanging or tracebacks. Real snapshot files, changed the way an attacker or a failing disk
would, through the CLI in real processes."""

from __future__ import annotations

import json
import os
import shutil

import apsw
import pytest

from app.core import paths
from app.core.engine import Engine
from app.core.errors import InputError
from app.core.storage.migrations import MIGRATIONS
from tests.conftest import run_cli


@pytest.fixture
def snap(word_engine):
    """A snapshot of a database of 40 memories (plain), and the engine."""
    for n in range(40):
        word_engine.remember(f"note {n} about the amber harbor and the cedar fjord", embed=False)
    return word_engine.vault.backup().path


def _edit(path, *sql: str) -> None:
    conn = apsw.Connection(str(path))
    try:
        for statement in sql:
            conn.execute(statement)
    finally:
        conn.close()


def _refused(path, words: str) -> None:
    done = run_cli("restore", str(path))
    assert done.returncode == 1, done.stdout + done.stderr
    err = done.stderr.decode()
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert words in err, err
    assert "not restored" in err


def test_a_trigger_planted_in_a_snapshot_is_refused_and_never_runs(snap, word_engine, tmp_path):
    """Before: "is whole … Restored 40 memories", and the next remember left 1 memory."""
    word_engine.close()
    _edit(
        snap,
        "CREATE TRIGGER wipe AFTER INSERT ON memories BEGIN "
        "DELETE FROM memories WHERE seq != new.seq; END",
    )
    _refused(snap, "trigger wipe")
    with Engine(embedder=word_engine.embedder) as engine:
        engine.remember("one more note", embed=False)
        assert engine.count() == 41  # nothing was replaced, nothing wiped


@pytest.mark.parametrize(
    "sql, words",
    [
        (("CREATE VIEW everything AS SELECT * FROM memories",), "view everything"),
        (("CREATE INDEX sneaky ON memories(text)",), "index sneaky"),
        (("DROP TRIGGER memories_ai",), "no trigger memories_ai"),
        (("CREATE TABLE notes(x)",), "table notes"),
        (
            (
                "ALTER TABLE memories RENAME TO old_memories",
                "CREATE VIEW memories AS SELECT * FROM old_memories",
            ),
            "view memories",
        ),
        (("INSERT INTO _migrations VALUES ('m999_future', '2030-01-01')",), "m999_future"),
        (  # a name SQLite's own CREATE refuses, written into the schema by hand (review)
            (
                "PRAGMA writable_schema = ON",
                "INSERT INTO sqlite_master(type, name, tbl_name, rootpage, sql) VALUES "
                "('trigger', 'sqlite_wipe', 'memories', 0, 'CREATE TRIGGER sqlite_wipe AFTER "
                "INSERT ON memories BEGIN DELETE FROM memories WHERE seq != new.seq; END')",
            ),
            "trigger sqlite_wipe",
        ),
        (  # a keyword index's own table with a constraint that fails every later write
            (
                "PRAGMA writable_schema = ON",
                "UPDATE sqlite_master SET sql = replace(sql, 'sz BLOB', "
                "'sz BLOB CHECK (id <= 45)') WHERE name = 'memories_fts_docsize'",
            ),
            "table memories_fts_docsize changed",
        ),
    ],
)
def test_anything_beyond_the_schema_mnemo_makes_is_refused(snap, word_engine, sql, words):
    _edit(snap, "PRAGMA legacy_alter_table = ON", *sql)
    with pytest.raises(InputError, match="not restored"):
        word_engine.vault.check_backup(snap)
    _refused(snap, words)


def test_a_snapshot_from_an_older_schema_restores_and_is_brought_up_to_date(word_engine, tmp_path):
    """Only the migrations the file says ran are expected of it."""
    old = tmp_path / "old.db"
    conn = apsw.Connection(str(old))
    conn.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    for migration in MIGRATIONS[:11]:
        migration(conn)
        conn.execute("INSERT INTO _migrations VALUES (?, 'then')", (migration.__name__,))
    stamp = "2026-01-01T00:00:00+00:00"
    conn.execute(
        "INSERT INTO memories(id, content_hash, text, created_at, updated_at) "
        "VALUES ('old1', 'h', 'written by an older Mnemo', ?, ?)",
        (stamp, stamp),
    )
    conn.close()
    checked = word_engine.vault.check_backup(old)
    assert checked.counts == {"memories": 1, "trashed": 0}
    word_engine.vault.restore_backup(checked)
    assert word_engine.get("old1").text == "written by an older Mnemo"


def test_a_damaged_index_that_quick_check_misses_is_refused(snap, word_engine):
    """Item 7: `restore` ran quick_check, so a snapshot whose index disagrees with its
    table passed, and the store was then refused until `doctor --repair`."""
    real = "CREATE INDEX memories_updated ON memories(updated_at)"
    # the index is kept by another column for a moment, then named as it was: its entries
    # no longer match what it says it indexes (the schema reads exactly as Mnemo's)
    _edit(
        snap,
        "PRAGMA writable_schema = ON",
        "UPDATE sqlite_master SET sql = 'CREATE INDEX memories_updated ON memories(created_at)'"
        " WHERE name = 'memories_updated'",
    )
    _edit(snap, "UPDATE memories SET created_at = '1999-01-01T00:00:00+00:00'")
    _edit(
        snap,
        "PRAGMA writable_schema = ON",
        f"UPDATE sqlite_master SET sql = '{real}' WHERE name = 'memories_updated'",
    )
    conn = apsw.Connection(str(snap))
    assert conn.execute("PRAGMA quick_check").fetchall() == [("ok",)]  # what let it in
    conn.close()
    _refused(snap, "damaged")


@pytest.mark.parametrize("what", ["fifo", "deep", "huge"])
def test_a_bad_key_file_beside_a_snapshot_or_the_database_is_one_line(snap, word_engine, what):
    """Item 8: deep JSON was a RecursionError traceback in `restore` and `stats`; a named
    pipe made every command wait forever."""
    word_engine.close()

    def plant(key_file):
        key_file.unlink(missing_ok=True)
        if what == "fifo":
            os.mkfifo(key_file)
        elif what == "deep":
            key_file.write_text("[" * 100_000 + "]" * 100_000)
        else:
            key_file.write_text(json.dumps({"note": "x" * 200_000}))

    plant(snap.with_name(snap.name + ".key"))
    done = run_cli("restore", str(snap), timeout=60)
    assert done.returncode == 1 and "Traceback" not in done.stderr.decode(), done.stderr
    assert len(done.stderr.decode().strip().splitlines()) == 1, done.stderr
    db = paths.database_path()
    plant(db.with_name(db.name + ".key"))
    for command in (("stats",), ("recall", "amber")):
        done = run_cli(*command, timeout=60)
        assert done.returncode == 1, done.stdout
        err = done.stderr.decode()
        assert "key file" in err and "Traceback" not in err, err
        assert len(err.strip().splitlines()) == 1, err


def test_a_whole_snapshot_still_restores_every_memory(snap, word_engine, tmp_path):
    copy = tmp_path / "copy.db"
    shutil.copy(snap, copy)
    word_engine.remember("written after the snapshot", embed=False)
    checked = word_engine.vault.check_backup(copy)
    assert checked.counts == {"memories": 40, "trashed": 0}
    _, found = word_engine.vault.restore_backup(checked)
    assert found == {"memories": 40, "trashed": 0}
    assert word_engine.count() == 40


def test_a_snapshot_whose_keyword_index_is_damaged_is_refused(snap, word_engine):
    """A row in the keyword index that no memory has: found searching for words no memory
    holds. The file passes integrity_check (FTS5's own check is a write: made on the copy
    before it is put in place)."""
    _edit(
        snap,
        "INSERT INTO memories_fts(rowid, title, text, reasoning, tags) "
        "VALUES (99999, 'ghost', 'ghost text', '', '[]')",
    )
    word_engine.remember("written after the snapshot", embed=False)
    checked = word_engine.vault.check_backup(snap)
    with pytest.raises(InputError, match="keyword index"):
        word_engine.vault.restore_backup(checked)
    assert word_engine.count() == 41  # nothing was replaced
    assert not list(paths.database_path().parent.glob("*.before-restore-*"))
