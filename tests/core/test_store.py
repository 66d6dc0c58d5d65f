"""Storage: schema, migrations, identity, trash, FTS sync, and database failure modes."""

from __future__ import annotations

import os
import stat

import apsw
import pytest

from app.core import paths
from app.core.errors import InputError, NotFoundError, StoreError
from app.core.memory import Memory, clean_text, content_hash
from app.core.storage import db as dbmod
from app.core.storage.db import Database
from app.core.storage.migrations import MIGRATIONS
from app.core.storage.store import Filters, Store


@pytest.fixture
def store(mnemo_home) -> Store:
    return Store(Database(paths.database_path()))


def _fts_ids(store: Store, expression: str) -> list[str]:
    hits = store.keywords.search(expression, Filters(), 10)
    found = store.by_seqs([seq for seq, _ in hits])
    return [found[seq].id for seq, _ in hits]


def test_fresh_database_is_wal_with_foreign_keys_and_all_migrations(store):
    db = store.db
    assert db.query("PRAGMA journal_mode")[0][0] == "wal"
    assert db.query("PRAGMA foreign_keys")[0][0] == 1
    names = [r[0] for r in db.query("SELECT name FROM _migrations ORDER BY name")]
    assert names == sorted(m.__name__ for m in MIGRATIONS)
    assert db.get_meta("schema_version") == str(len(MIGRATIONS))
    # Re-opening applies nothing twice.
    again = Database(db.path)
    assert again.pending_migrations() == []


def test_id_is_content_hash_of_normalized_text():
    assert content_hash("Hello   World\n") == content_hash("hello world")
    assert len(content_hash("x")) == 16
    import hashlib

    assert content_hash("A  b") == hashlib.sha256(b"a b").hexdigest()[:16]


def test_insert_then_get_by_id_and_prefix(store):
    m = store.insert(Memory(id="", text="Use ruff for linting", tags=["py"], title="Lint"))
    assert m.id == content_hash("Use ruff for linting")
    got = store.get(m.id[:6])
    assert got.text == "Use ruff for linting" and got.tags == ["py"] and got.title == "Lint"
    with pytest.raises(NotFoundError):
        store.get("ffffffffffffffff")


def test_taken_id_after_edit_gets_a_fresh_one(store):
    first = store.insert(Memory(id="", text="original text"))
    store.update(first.id, text="edited text")
    second = store.insert(Memory(id="", text="original text"))
    assert second.id != first.id
    assert store.get(first.id).text == "edited text"
    assert store.get(second.id).text == "original text"


def test_fts_follows_inserts_edits_and_purges(store):
    m = store.insert(Memory(id="", text="the zebra crossing on Elm street"))
    assert _fts_ids(store, '"zebra"') == [m.id]
    store.update(m.id, text="the giraffe crossing on Elm street")
    assert _fts_ids(store, '"zebra"') == []
    assert _fts_ids(store, '"giraffe"') == [m.id]
    store.purge([m.id])
    assert _fts_ids(store, '"giraffe"') == []
    store.db.conn.execute(
        "INSERT INTO memories_fts(memories_fts, rank) VALUES('integrity-check', 1)"
    )


def test_porter_stemming_matches_word_forms(store):
    m = store.insert(Memory(id="", text="Parsing files robustly"))
    assert _fts_ids(store, '"parse"') == [m.id]
    assert _fts_ids(store, '"parses"') == [m.id]
    assert _fts_ids(store, '"parsed"') == [m.id]


def test_trash_hides_from_search_and_restore_brings_back(store):
    m = store.insert(Memory(id="", text="walrus facts"))
    assert store.set_deleted([m.id], True) == [m.id]
    assert _fts_ids(store, '"walrus"') == []
    assert store.get(m.id).deleted_at is not None
    assert store.set_deleted([m.id], False) == [m.id]
    assert _fts_ids(store, '"walrus"') == [m.id]


def test_content_edit_drops_vectors_metadata_edit_keeps_them(store):
    import numpy as np

    m = store.insert(Memory(id="", text="vectors here"))
    store.vectors.save(m.id, "model-a", "h", np.ones((2, 4), dtype=np.float32) / 2)
    store.update(m.id, tags=["keep"], pinned=True)
    assert store.vectors.of(m.id, "model-a").shape == (2, 4)
    store.update(m.id, text="vectors changed")
    assert store.vectors.of(m.id, "model-a") is None


def test_updated_at_changes_only_on_content(store):
    m = store.insert(Memory(id="", text="stamp me"))
    after_meta = store.update(m.id, category="patterns")
    assert after_meta.updated_at == m.updated_at
    after_text = store.update(m.id, text="stamp me again")
    assert after_text.updated_at > m.updated_at


def test_filters_by_category_tags_project_source_and_dates(store):
    store.insert(
        Memory(
            id="",
            text="one",
            category="patterns",
            tags=["a", "b"],
            source_project="p1",
            source="cli",
            created_at="2026-01-05T00:00:00+00:00",
        )
    )
    store.insert(
        Memory(
            id="",
            text="two",
            category="note",
            tags=["a"],
            source_project="p2",
            source="mcp",
            created_at="2026-03-05T00:00:00+00:00",
        )
    )

    def texts(**kw):
        return sorted(m.text for m in store.listing(Filters(**kw)))

    assert texts(category="patterns") == ["one"]
    assert texts(tags=("a",)) == ["one", "two"]
    assert texts(tags=("a", "b")) == ["one"]
    assert texts(project="p2") == ["two"]
    assert texts(source="mcp") == ["two"]
    assert texts(since="2026-02-01") == ["two"]
    assert texts(until="2026-02-01") == ["one"]


def test_binary_and_oversize_text_is_refused_with_a_clear_error():
    with pytest.raises(InputError, match="binary"):
        clean_text("abc\x00def")
    with pytest.raises(InputError, match="binary"):
        clean_text("\x01\x02\x03\x04" * 100)
    with pytest.raises(InputError, match="limit"):
        clean_text("x" * 2_000_001)
    assert clean_text("  tab\there  ") == "tab\there"


def test_locked_database_gives_a_clear_error_and_writes_nothing(store, monkeypatch):
    monkeypatch.setattr(dbmod, "BUSY_TIMEOUT_MS", 200)
    blocker = apsw.Connection(str(store.db.path))
    blocker.execute("BEGIN IMMEDIATE")
    try:
        waiting = Store(Database(store.db.path))
        with pytest.raises(StoreError, match="locked"):
            waiting.insert(Memory(id="", text="blocked write"))
    finally:
        blocker.execute("ROLLBACK")
    assert store.counts()["memories"] == 0


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root ignores file permissions")
def test_read_only_database_reads_but_refuses_writes(store):  # pragma: no cover - non-root
    store.insert(Memory(id="", text="readable"))
    store.db.close()
    path = store.db.path
    os.chmod(path, stat.S_IRUSR)
    ro = Store(Database(path))
    assert ro.counts()["memories"] == 1
    with pytest.raises(StoreError, match="read-only"):
        ro.insert(Memory(id="", text="nope"))


def test_read_only_connection_refuses_writes_with_clear_error(store):
    # Root ignores file modes, so open the file read-only at the SQLite level instead.
    store.insert(Memory(id="", text="readable"))
    ro = Database(store.db.path, read_only=True)
    assert ro.read_only
    ro_store = Store(ro)
    assert ro_store.counts()["memories"] == 1
    with pytest.raises(StoreError, match="read-only"):
        ro_store.insert(Memory(id="", text="nope"))
    assert store.counts()["memories"] == 1


def test_not_a_database_file_gives_a_clear_error(mnemo_home):
    path = paths.database_path()
    path.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(StoreError, match="damaged or not a Mnemo database"):
        Database(path)


def test_the_largest_observation_count_comes_from_an_index_not_a_scan(store):
    # Every ranking reads it; a full scan cost 52-78 ms per recall at 100k memories.
    for i in range(3):
        store.insert(Memory(id="", text=f"note {i}", observation_count=i + 1))
    forgotten = store.insert(Memory(id="", text="trashed note", observation_count=50))
    store.set_deleted([forgotten.id], True)
    assert store.max_observations() == 3  # the trash does not count
    sql = "SELECT coalesce(max(observation_count), 1) FROM memories WHERE deleted_at IS NULL"
    plan = " ".join(str(row) for row in store.db.query("EXPLAIN QUERY PLAN " + sql))
    assert "memories_live_observations" in plan and "SCAN memories" not in plan, plan


def test_vectors_are_stored_once_as_float16_and_read_back_as_float32(store):
    # Issue 24: 2 bytes a number (the database held float32 and a copy beside it did too)
    import numpy as np

    from app.core.storage.vector_rows import decode_vector

    m = store.insert(Memory(id="", text="half the bytes"))
    vectors = np.random.default_rng(1).normal(size=(2, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    store.vectors.save(m.id, "model-a", "h", vectors)
    sizes = store.db.query("SELECT length(vector) FROM embeddings WHERE memory_id = ?", (m.id,))
    assert [s[0] for s in sizes] == [768, 768]
    back = store.vectors.of(m.id, "model-a", 384)
    assert back.dtype == np.float32 and np.abs(back - vectors).max() < 1e-3
    assert np.array_equal(back, vectors.astype(np.float16).astype(np.float32))
    # AND rows read by rowid, as rescoring does, are the same numbers
    rowids = np.array([r[0] for r in store.db.query("SELECT rowid FROM embeddings")])
    out = np.empty((2, 384), dtype=np.float32)
    assert store.vectors.read_into(rowids, out) and np.array_equal(out, back)
    assert not store.vectors.read_into(np.array([rowids.max() + 1]), out[:1])  # a row gone
    assert not store.vectors.read_into(rowids, np.empty((2, 100), np.float32))  # another size
    # AND a float32 row (written before m013) is still read by its length
    assert np.array_equal(decode_vector(vectors[0].tobytes(), 384), vectors[0])
    with pytest.raises(ValueError):
        decode_vector(b"\0" * 100, 384)


def test_a_number_float16_cannot_hold_is_refused_and_nothing_is_stored(store):
    import numpy as np

    from app.core.errors import ModelError

    m = store.insert(Memory(id="", text="too large"))
    with pytest.raises(ModelError):
        store.vectors.save(m.id, "model-a", "h", np.full((1, 4), 1e6, dtype=np.float32))
    assert store.vectors.of(m.id, "model-a") is None


def test_the_migration_halves_float32_rows_and_tells_readers_to_reload(store):
    import numpy as np

    m = store.insert(Memory(id="", text="written by the version before"))
    vector = np.linspace(-0.1, 0.1, 384, dtype=np.float32)
    with store.db.write() as conn:  # as every row was stored before m013
        conn.execute(
            "INSERT INTO embeddings(memory_id, chunk, model_id, content_hash, vector) "
            "VALUES (?, 0, 'model-a', 'h', ?)",
            (m.id, vector.astype("<f4").tobytes()),
        )
        conn.execute("DELETE FROM _migrations WHERE name = 'm013_float16_vectors'")
    generation = store.db.get_meta("vector_generation")
    store.db.close()
    again = Database(paths.database_path())  # the next start applies it
    assert again.query("SELECT length(vector) FROM embeddings")[0][0] == 768
    assert np.array_equal(
        Store(again).vectors.of(m.id, "model-a", 384)[0],
        vector.astype(np.float16).astype(np.float32),
    )
    assert again.get_meta("vector_generation") != generation
