"""The memory-mapped copy of a large collection's int8 rows beside the database: used at the
next start, never trusted blindly (generation, the last row's vector, sampled rows, rows
added since), private, optional. QUANTIZE_ABOVE is lowered so a few notes have one."""

from __future__ import annotations

import shutil
import stat

import numpy as np
import pytest

from app.core.engine import Engine

NOTES = [
    "Kubernetes pods restart when the liveness probe times out",
    "Grandma's lasagne uses nutmeg in the bechamel sauce",
    "Parse dates with an explicit format string, never guess",
    "The boiler pressure should sit between 1 and 1.5 bar",
]


@pytest.fixture(autouse=True)
def _quantized(monkeypatch):
    from app.core.search import vectors

    monkeypatch.setattr(vectors, "QUANTIZE_ABOVE", 0)


def _scores(engine: Engine, query: str) -> dict[int, float]:
    index = engine.vector_index()
    seqs, best = index.scores(engine.embedder.embed_query(query))
    return dict(zip(seqs.tolist(), best.tolist(), strict=True))


def _fresh(embedder) -> Engine:
    return Engine(embedder=embedder)


def test_the_next_start_maps_the_copy_and_scores_the_same(embedder, mnemo_home):
    first = _fresh(embedder)
    for note in NOTES:
        first.remember(note, force=True)
    assert first.vector_index().loaded_from == "database"
    expected = _scores(first, "container keeps rebooting")
    first.close()
    copies = list((mnemo_home / "data" / "mnemo.db.vectors").iterdir())
    assert copies and all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in copies)

    second = _fresh(embedder)
    try:
        index = second.vector_index()
        assert index.loaded_from == "cache"
        assert index.mapped  # mapped, not read into memory
        assert _scores(second, "container keeps rebooting") == expected
    finally:
        second.close()


def test_rows_added_since_the_copy_are_read_from_the_database(embedder):
    first = _fresh(embedder)
    for note in NOTES[:2]:
        first.remember(note, force=True)
    first.vector_index()
    first.close()
    # another process (the CLI, an agent) adds a memory and never writes the copy
    other = _fresh(embedder)
    other.model.forget_index()
    added = other.remember(NOTES[3], force=True).memory
    other._db.close()

    later = _fresh(embedder)
    try:
        index = later.vector_index()
        assert index.loaded_from == "cache"
        hits, _ = index.top(later.embedder.embed_query("boiler pressure in bar"), 1)
        assert later._store.by_seqs([hits[0][0]], _live()).popitem()[1].id == added.id
    finally:
        later.close()


def _live():
    from app.core.storage.store import Filters

    return Filters()


def test_a_trash_or_a_changed_row_makes_the_copy_unusable(embedder):
    first = _fresh(embedder)
    ids = [first.remember(note, force=True).memory.id for note in NOTES]
    first.vector_index()
    first.close()

    # a memory trashed elsewhere bumps the generation: the copy no longer describes it
    other = _fresh(embedder)
    other.forget([ids[0]])
    other._db.close()
    reopened = _fresh(embedder)
    assert reopened.vector_index().loaded_from == "database"
    reopened.close()  # writes a copy for this generation

    # the same generation and top row, but the last row holds another vector (a database
    # file swapped for a diverged copy of itself)
    conn = _fresh(embedder)
    top = conn._db.query("SELECT max(rowid) FROM embeddings")[0][0]
    with conn._db.write() as c:
        c.execute("UPDATE embeddings SET vector = zeroblob(length(vector)) WHERE rowid = ?", (top,))
    conn._db.close()
    swapped = _fresh(embedder)
    try:
        assert swapped.vector_index().loaded_from == "database"
    finally:
        swapped.close()


def test_a_damaged_copy_is_ignored_and_replaced(embedder, mnemo_home):
    first = _fresh(embedder)
    for note in NOTES:
        first.remember(note, force=True)
    expected = _scores(first, "italian cooking")
    first.close()
    folder = mnemo_home / "data" / "mnemo.db.vectors"
    (matrix,) = folder.glob("*.q8.npy")
    matrix.write_bytes(matrix.read_bytes()[:200])  # truncated by a crash or a full disk
    second = _fresh(embedder)
    try:
        assert second.vector_index().loaded_from == "database"
        assert _scores(second, "italian cooking") == expected
    finally:
        second.close()
    assert len(list(folder.glob("*.npy"))) == 4  # the damaged files are gone
    third = _fresh(embedder)
    try:
        assert third.vector_index().loaded_from == "cache"  # written again, whole
    finally:
        third.close()


def test_a_few_new_rows_do_not_rewrite_a_large_copy_many_do(embedder, mnemo_home, monkeypatch):
    from app.core.search import vectors

    # a "large" copy, and a share of 1 in 2 (the real ones: 10,000 rows, 1 in 20)
    monkeypatch.setattr(vectors, "REWRITE_ABOVE", 0)
    monkeypatch.setattr(vectors, "REWRITE_SHARE", 2)
    first = _fresh(embedder)
    for note in NOTES[:2]:
        first.remember(note, force=True)
    first.vector_index()
    first.close()
    folder = mnemo_home / "data" / "mnemo.db.vectors"
    written = sorted(p.name for p in folder.iterdir())

    # GIVEN a start that mapped the copy, WHEN one memory is added (a `mnemo remember`)
    one = _fresh(embedder)
    assert one.vector_index().loaded_from == "cache"
    one.remember(NOTES[2], force=True)
    one.close()
    # THEN the copy is left as it was (the next start reads that row from the database)
    assert sorted(p.name for p in folder.iterdir()) == written
    later = _fresh(embedder)
    index = later.vector_index()
    assert index.loaded_from == "cache" and len(index) == 3
    # WHEN half the rows were added since the copy
    later.remember(NOTES[3], force=True)
    later.vector_index()  # a search saw it
    later.close()
    # THEN the next start maps a copy holding all of them
    assert sorted(p.name for p in folder.iterdir()) != written
    fourth = _fresh(embedder)
    try:
        index = fourth.vector_index()
        assert index.loaded_from == "cache" and index._saved_rows == 4 and len(index) == 4
    finally:
        fourth.close()


def test_the_first_load_ends_mapped_and_new_rows_never_copy_the_matrix(embedder):
    # At 1M memories the matrix is 1.5 GB: read from the database, it stayed in memory, and
    # the next memory added copied all of it into a buffer half as large again.
    first = _fresh(embedder)
    for note in NOTES[:3]:
        first.remember(note, force=True)
    first.close()
    shutil.rmtree(first._db.path.parent / "mnemo.db.vectors")  # as after an upgrade
    engine = _fresh(embedder)
    try:
        index = engine.vector_index()
        assert index.loaded_from == "database"
        assert index.mapped and index.rows_mapped == 3  # read back mapped
        base = index._q8_base
        added = engine.remember(NOTES[3], force=True).memory
        index = engine.vector_index()
        assert index._q8_base is base and index.rows_held == 4  # THEN the new row went to the tail
        hits, _ = index.top(engine.embedder.embed_query("boiler pressure in bar"), 1)
        assert engine._store.by_seqs([hits[0][0]], _live()).popitem()[1].id == added.id
    finally:
        engine.close()


def test_a_float32_copy_a_version_before_wrote_is_deleted_and_made_again_as_int8(
    embedder, mnemo_home
):
    # Issue 24: before, the copy held float32 rows, a second copy of every vector (1.5 KB a
    # memory). The next start must not leave it on the disk.
    import json

    first = _fresh(embedder)
    for note in NOTES:
        first.remember(note, force=True)
    first.close()
    folder = mnemo_home / "data" / "mnemo.db.vectors"
    meta_path = next(folder.glob("*.json"))
    meta = json.loads(meta_path.read_text())
    old = folder / f"{meta_path.stem}.1-abcd.f32.npy"
    np.save(old, np.ones((4, embedder.info.dimension), dtype=np.float32))
    meta_path.write_text(json.dumps({**meta, "format": 1, "matrix": old.name}))
    second = _fresh(embedder)
    try:
        assert second.vector_index().loaded_from == "database"
        assert not old.exists()  # THEN the float32 rows are gone
        assert json.loads(meta_path.read_text())["format"] == 2
    finally:
        second.close()
    assert not list(folder.glob("*.f32.npy"))


def test_the_database_is_read_in_batches_that_skip_trashed_memories(embedder, monkeypatch):
    from app.core.search import vectors

    monkeypatch.setattr(vectors, "READ_BATCH", 2)
    first = _fresh(embedder)
    ids = [first.remember(note, force=True).memory.id for note in NOTES]
    first.forget([ids[1]])
    # a memory of three chunks: its rows straddle two batches of 2
    long = first.remember("Trim the roses in late winter, above an outward bud. " * 70).memory
    chunks = len(first._store.vectors.of(long.id, first.model_id))
    assert chunks >= 3
    first.remember("The newest note is trashed", force=True)
    first.forget([first.recall("newest note trashed", mode="keyword").results[0].memory.id])
    first.close()
    shutil.rmtree(first._db.path.parent / "mnemo.db.vectors")
    engine = _fresh(embedder)
    try:
        index = engine.vector_index()
        assert index.loaded_from == "database" and len(index) == 4
        assert (
            index.rows_held == 3 + chunks and (index._owner[: index.rows_held] >= 0).all()
        )  # every chunk
        hits, _ = index.top(engine.embedder.embed_query("pruning rose bushes"), 1)
        assert engine._store.by_seqs([hits[0][0]], _live()).popitem()[1].id == long.id
        # AND with nothing new, a search reads nothing again (the newest row is trashed)
        reads = []
        real = engine._store.vectors.rows
        monkeypatch.setattr(
            engine._store.vectors, "rows", lambda *a, **k: reads.append(a) or real(*a, **k)
        )
        engine.vector_index()
        assert reads == []
    finally:
        engine.close()


def _damaged_copy(embedder, mnemo_home, damage) -> Engine:
    """Four notes, their copy written at close, then `damage(folder, meta)` done to it."""
    import json

    first = _fresh(embedder)
    for note in NOTES:
        first.remember(note, force=True)
    first.vector_index()
    first.close()
    folder = mnemo_home / "data" / "mnemo.db.vectors"
    meta_path = next(folder.glob("*.json"))
    damage(folder, json.loads(meta_path.read_text()), meta_path)
    return _fresh(embedder)


def _flip(folder, meta, _meta_path):
    path = folder / meta["q8"]
    data = bytearray(path.read_bytes())
    for i in range(200, len(data), 97):  # bytes flipped all over the rows
        data[i] ^= 0x5A
    path.write_bytes(bytes(data))


def _nan(folder, meta, _meta_path):
    scale = np.load(folder / meta["scale"], mmap_mode="r+")
    scale[1] = np.nan
    scale.flush()


def _reorder(folder, meta, _meta_path):
    seqs = np.load(folder / meta["seqs"])
    np.save(folder / meta["seqs"], seqs[::-1].copy())


def _header(folder, meta, _meta_path):
    path = folder / meta["q8"]
    data = bytearray(path.read_bytes())
    data[20:40] = b"(((((((((((((((((((("
    path.write_bytes(bytes(data))


def _fifo(folder, meta, _meta_path):
    import os

    (folder / meta["seqs"]).unlink()
    os.mkfifo(folder / meta["seqs"])


@pytest.mark.parametrize("damage", [_flip, _nan, _reorder, _header, _fifo])
def test_a_damaged_copy_is_not_trusted_and_doctor_repairs_it(embedder, mnemo_home, damage):
    # The red team (issue 21): flipped bytes scored unrelated memories 0.967 with doctor
    # saying "ok"; NaN rows made hybrid answer nothing; reordered seqs put scores on the
    # wrong memories; a mangled header raised a traceback; a FIFO in its place hung
    engine = _damaged_copy(embedder, mnemo_home, damage)
    try:
        said = [text for _, text in engine.health() if "vector copy" in text]
        assert said and "damaged" in said[0], said  # never "fine"
        index = engine.vector_index()
        assert index.loaded_from == "database"  # not trusted: read from the database
        hits = engine.recall("container keeps rebooting", track=False).results
        assert hits and hits[0].memory.text == NOTES[0]
        assert all(np.isfinite(h.vector) for h in hits if h.vector is not None)
        engine.repair()
        assert not [text for ok, text in engine.health() if not ok and "vector copy" in text]
    finally:
        engine.close()
    again = _fresh(embedder)
    try:
        assert again.vector_index().loaded_from == "cache"  # written anew, and sound
        assert not [t for ok, t in again.health() if not ok and "vector copy" in t]
    finally:
        again.close()
