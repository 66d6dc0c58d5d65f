"""The vector stage of a large collection: an int8 scan (NumKong) whose best candidates are
rescored exactly from the database's own rows, so hits and their cosines are those of an
exact scan of what the database holds (issues 10 and 24).

QUANTIZE_ABOVE is lowered so the real model's vectors of a few hundred texts take that path.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from app.core import paths
from app.core.engine import Engine
from app.core.memory import Memory
from app.core.search import vectors
from app.core.storage.db import Database
from app.core.storage.store import Store
from app.core.storage.vector_rows import VectorRows, decode_vector, encode_vector

SCIFACT = Path(__file__).parents[3] / "shared" / "data" / "scifact"
QUERIES = [
    "container keeps rebooting",
    "how do vaccines train the immune system",
    "gene expression in tumour cells",
    "pasta sauce with nutmeg",
    "E_CONN_RESET",
]


def _texts(n: int) -> list[str]:
    """Real text: SciFact abstracts when the data is there, else varied sentences."""
    if (SCIFACT / "corpus.jsonl").exists():
        with (SCIFACT / "corpus.jsonl").open() as f:
            return [json.loads(line)["text"][:600] for _, line in zip(range(n), f, strict=False)]
    topics = ["deploy", "parser", "garden", "invoice", "boiler", "vaccine", "tumour", "pasta"]
    return [f"Note {i} about the {topics[i % 8]} and the {topics[(i * 5) % 8]}" for i in range(n)]


@pytest.fixture(scope="module")
def home(embedder, tmp_path_factory):
    """A database of 300 real memories (two of them long: several chunks each), embedded
    once for the module; each test works on a copy."""
    import os

    folder = tmp_path_factory.mktemp("vector-search")
    os.environ["MNEMO_HOME"] = str(folder)
    engine = Engine(embedder=embedder)
    texts = _texts(300)
    texts[7] = texts[7] + " Kubernetes pods restart when the liveness probe fails. " * 60
    texts[8] = "Long notes. " + texts[8] * 8
    Store(Database(paths.database_path())).insert_many([Memory(id="", text=t) for t in texts])
    engine.backfill()
    engine.close()
    return folder


@pytest.fixture
def collection(home, mnemo_home, embedder, monkeypatch):
    import shutil

    shutil.copytree(home, mnemo_home, dirs_exist_ok=True)
    engine = Engine(embedder=embedder)
    monkeypatch.setattr(vectors, "QUANTIZE_ABOVE", 100)
    monkeypatch.setattr(vectors, "RESCORE", 16)  # most memories rely on their int8 score
    yield engine
    engine.close()


def _same(hits, expected) -> bool:
    return [s for s, _ in hits] == [s for s, _ in expected] and np.allclose(
        [c for _, c in hits], [c for _, c in expected], atol=1e-6
    )


def _db_scores(engine, query):
    """(seqs, best-chunk cosine) of every memory from the database's own rows, one by one:
    the reference the index must agree with."""
    best: dict[int, float] = {}
    for _, seq, blob in Store(Database(engine.database_path)).vectors.rows(engine.model_id):
        if seq is not None:
            best[seq] = max(best.get(seq, -2.0), float(decode_vector(blob) @ query))
    seqs = np.array(sorted(best), dtype=np.int64)
    return seqs, np.array([best[s] for s in seqs.tolist()], dtype=np.float32)


def _exact_top(engine, query, k):
    seqs, best = _db_scores(engine, query)
    order = np.argsort(-best, kind="stable")[:k]
    return [(int(seqs[i]), float(best[i])) for i in order]


def test_the_int8_scan_finds_the_exact_scans_hits_with_exact_cosines(collection, embedder):
    index = collection.vector_index()
    assert vectors.numkong is not None and index.quantized and index.rows_held > 100
    assert index.quantized  # THEN no float row is held: only int8 ones
    for text in QUERIES:
        query = embedder.embed_query(text)
        hits, lookup = index.top(query, 4)
        expected = _exact_top(collection, query, 4)
        assert [s for s, _ in hits] == [s for s, _ in expected]
        assert np.allclose([c for _, c in hits], [c for _, c in expected], atol=1e-6)
        # AND a memory outside the rescored ones gets its exact cosine too (keyword hits)
        seqs, best = _db_scores(collection, query)
        worst = int(np.argmin(best))
        assert lookup.get(int(seqs[worst])) == pytest.approx(float(best[worst]), abs=1e-6)
        # AND the crowd is the exact scan's (within the int8 rounding)
        exact_crowd = vectors.cosine_crowd(best)
        assert lookup.crowd == pytest.approx(exact_crowd, abs=2e-3)


def test_a_long_memory_scores_by_its_best_chunk_through_the_int8_scan(collection, embedder):
    index = collection.vector_index()
    assert len(index) == 300 and not index.one_row_each  # two memories: several chunks
    query = embedder.embed_query("liveness probe fails and the pod restarts")
    hits, _ = index.top(query, 5)
    assert _same(hits, _exact_top(collection, query, 5))


def test_memories_added_after_the_scan_began_are_found(collection, embedder):
    index = collection.vector_index()
    query = embedder.embed_query("boiler pressure between one and one and a half bar")
    index.top(query, 5)
    held = index.rows_held
    stored = collection.remember("The boiler pressure should sit between 1 and 1.5 bar").memory
    index = collection.vector_index()
    hits, _ = index.top(query, 5)
    assert index.rows_held > held and index.rows_mapped == held  # THEN it went to the int8 tail
    rows = Store(Database(collection.database_path)).by_seqs([hits[0][0]])
    assert rows[hits[0][0]].id == stored.id


def test_the_int8_scan_scores_every_row_alike_in_blocks_of_any_size(
    collection, embedder, monkeypatch
):
    index = collection.vector_index()
    index.top(embedder.embed_query("warm up"), 1)
    # rows added after the load, in batches: a tail of several parts beside the mapped rows
    rng = np.random.default_rng(21)
    rowid, seq = index._top_rowid, int(index._mem_seqs[-1])
    for _ in range(12):
        vecs = rng.standard_normal((250, index.dim)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        index.append([(rowid + i + 1, seq + i + 1, encode_vector(v)) for i, v in enumerate(vecs)])
        rowid, seq = rowid + 250, seq + 250
    query = embedder.embed_query("boiler pressure")
    index._update_mapping()
    assert 0 < index.rows_mapped < index.rows_held and len(index._q8_tail._parts) >= 3
    # the reference: each int8 row's dot product with the int8 query, in integers, scaled
    q_scale = float(np.abs(query).max()) / 127
    q8 = np.rint(query / q_scale).astype(np.int64)
    rows = index._q8_block(0, index.rows_held)
    reference = (rows.astype(np.int64) @ q8) * index.scales() * q_scale
    answers = []
    for block in (7, 333, 10**9):  # blocks that split every part, and one block a part
        monkeypatch.setattr(vectors, "SCAN_BLOCK", block)
        seqs, best = index._approximate(query)
        answers.append(best.copy())
    # THEN every row is scored, whatever the blocks, as its int8 row says
    for best in answers:
        assert np.array_equal(best, answers[-1])
    best_by_row = np.full(len(answers[-1]), -np.inf, dtype=np.float32)
    np.maximum.at(best_by_row, index._row_mem, reference)
    assert np.allclose(answers[-1], best_by_row, atol=1e-5)
    # AND a row read back by number is the row, in whichever part it lies
    picks = rng.permutation(index.rows_held)[:500]
    want = rows[picks] * index.scales()[picks, None]
    assert np.array_equal(index._dequantized(picks), want)
    # AND the duplicate finder's products, a part at a time, are those of one array
    sims = index._block_sims(index._row_parts(), index.scales(), 100, 164)
    whole = vectors.numkong.cdist(rows[100:164], rows, metric="dot", out_dtype="float32")
    whole = np.asarray(whole) * index.scales()[100:164, None] * index.scales()[None, :]
    assert np.array_equal(sims, whole.astype(np.float32))


def test_a_failure_halfway_through_quantizing_leaves_an_index_read_again(monkeypatch):
    # Float32 rows turn int8 part by part, each part let go: if that fails halfway (out of
    # memory), the rows let go are gone; the index must not keep counting them
    monkeypatch.setattr(vectors, "QUANTIZE_ABOVE", 1_000)
    monkeypatch.setattr(vectors, "DECODE_BLOCK", 300)
    index = vectors.VectorIndex("m", 16)
    index._generation = 1
    vecs = np.random.default_rng(22).standard_normal((1_200, 16)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    rows = [(i + 1, i + 1, encode_vector(v)) for i, v in enumerate(vecs)]
    index.append(rows[:900])
    calls, real = [], vectors.quantize

    def failing(block):
        calls.append(len(block))
        if len(calls) == 2:
            raise MemoryError
        return real(block)

    monkeypatch.setattr(vectors, "quantize", failing)
    with pytest.raises(MemoryError):
        index.append(rows[900:])
    # THEN it holds nothing and the next refresh reads every row again
    assert index.rows_held == 0 and len(index) == 0 and index._generation is None
    monkeypatch.setattr(vectors, "quantize", real)
    index.append(rows)
    seqs, best = index.scores(vecs[5])
    assert index.quantized and len(seqs) == 1_200 and np.all(np.abs(best) <= 1.01)


def test_rows_are_never_put_past_the_rows_written():
    from app.core.search.rows import Rows

    rows = Rows(4, np.int8)
    rows.put(0, np.ones((3, 4), dtype=np.int8), np.ones(3, dtype=np.float32))
    with pytest.raises(ValueError):
        rows.put(5, np.ones((1, 4), dtype=np.int8))  # rows 3 and 4 never written
    rows.put(3, np.full((2000, 4), 2, dtype=np.int8), np.ones(2000, dtype=np.float32))
    assert rows.filled == 2003 and len(rows._parts) == 2
    assert np.array_equal(rows.rows(0, 2003)[:, 0], np.r_[[1] * 3, [2] * 2000])


def test_a_filter_keeps_to_the_allowed_memories(collection, embedder):
    index = collection.vector_index()
    query = embedder.embed_query(QUERIES[1])
    everything = _exact_top(collection, query, 300)
    allowed = np.array(sorted(s for s, _ in everything[150:]), dtype=np.int64)
    hits, _ = index.top(query, 10, allowed)
    assert _same(hits, everything[150:160])


def test_recall_gives_the_same_answers_either_way(collection, monkeypatch):
    def answers():
        return [
            [(r.memory.id, r.score) for r in collection.recall(q, track=False).results]
            for q in QUERIES
        ]

    with_int8 = answers()
    assert collection.vector_index().quantized
    monkeypatch.setattr(vectors, "QUANTIZE_ABOVE", 10**9)
    collection.vector_index().drop_copy()
    collection.model.forget_index()  # read again from the database: float32 rows this time
    exact = answers()
    assert not collection.vector_index().quantized
    assert any(with_int8)
    for fast, slow in zip(with_int8, exact, strict=True):
        # the same memories in the same order; the crowd the scores are measured against
        # comes from int8 cosines, so a score may move by a thousandth
        assert [i for i, _ in fast] == [i for i, _ in slow]
        assert np.allclose([s for _, s in fast], [s for _, s in slow], atol=2e-3)


def test_appending_new_memories_extends_the_mapping_as_a_rebuild_would():
    # A `remember` at 1M memories sorted every row again (np.unique): 60-100 ms. New
    # memories' rows now extend the mapping; it must equal the one built from scratch.
    rng = np.random.default_rng(3)
    dim, index, rowid, seq, everything, batches = 8, vectors.VectorIndex("m", 8), 0, 0, [], []
    extended, real_extend = [], index._extend_mapping
    index._extend_mapping = lambda: extended.append(real_extend()) or extended[-1]
    for step in range(40):
        rows = []
        for _ in range(int(rng.integers(1, 4))):
            seq += int(rng.integers(1, 5))
            for _ in range(int(rng.integers(1, 4)) if step % 3 else 1):  # chunks
                rowid += 1
                rows.append((rowid, seq, rng.normal(size=dim).astype("<f4").tobytes()))
        if step == 25:  # a re-embed of an older memory: rows superseded, built anew
            rowid += 1
            rows.append((rowid, everything[3][1], rng.normal(size=dim).astype("<f4").tobytes()))
        index.append(rows)
        everything += rows
        batches.append(rows)
        query = rng.normal(size=dim).astype(np.float32)
        seqs, best = index.scores(query)
        fresh = vectors.VectorIndex("m", 8)
        for batch in batches:  # the same appends, mapped once at the end
            fresh.append(batch)
        fresh._mapped_rows = 0
        fresh_seqs, fresh_best = fresh.scores(query)
        assert np.array_equal(seqs, fresh_seqs) and np.allclose(best, fresh_best)
        assert index.one_row_each == fresh.one_row_each
        positions = np.arange(len(seqs))
        assert np.allclose(index.exact(query, positions), fresh_best, atol=1e-6)
    assert extended == [True] * 38  # all but the first and the re-embed (step 25) extended


@pytest.mark.parametrize("size", [0, 5, 300, 20_000, 300_000])
@pytest.mark.parametrize("n", [1, 10, 256, 1024])
@pytest.mark.parametrize("shape", ["spread", "ties", "one-high-tail", "sorted"])
def test_the_largest_scores_are_those_of_a_full_sort(size, n, shape):
    # `top` takes the best candidates without partitioning every score (3 ms at 300k):
    # whatever the scores look like, the n it takes are the n largest
    rng = np.random.default_rng(size + n)
    if shape == "spread":
        values = rng.standard_normal(size).astype(np.float32) * 0.1 + 0.2
    elif shape == "ties":  # few distinct values: many tie at the cut
        values = rng.integers(0, 5, size).astype(np.float32) / 5
    elif shape == "one-high-tail":  # the sample sees none of the few high ones
        values = np.zeros(size, dtype=np.float32)
        values[rng.choice(size, min(size, n // 2 + 1), replace=False)] = 0.9
    else:
        values = np.linspace(-1, 1, size, dtype=np.float32)
    picked = vectors.largest(values, n)
    assert len(picked) == min(n, size) and len(set(picked.tolist())) == len(picked)
    expected = np.sort(values)[::-1][: min(n, size)]
    assert np.array_equal(np.sort(values[picked])[::-1], expected)


def test_rescoring_reads_the_databases_rows_and_the_copy_holds_no_float_rows(
    home, mnemo_home, embedder, monkeypatch
):
    # Issue 24: the vectors were stored twice (float32 in the database and in the copy the
    # next start maps): 4.6 KB a memory at 100k. Now the database holds them once, as
    # float16, and the copy only int8 rows, their scales, seqs and rowids.
    import shutil

    shutil.copytree(home, mnemo_home, dirs_exist_ok=True)
    monkeypatch.setattr(vectors, "QUANTIZE_ABOVE", 100)
    monkeypatch.setattr(vectors, "RESCORE", 16)
    first = Engine(embedder=embedder)
    first.vector_index()  # the first start writes the copy
    first.close()
    engine = Engine(embedder=embedder)
    try:
        index = engine.vector_index()
        assert index.loaded_from == "cache" and index.mapped
        rows, dim = index.rows_held, embedder.info.dimension
        blobs = Database(engine.database_path).query("SELECT length(vector) FROM embeddings")
        assert {b[0] for b in blobs} == {2 * dim}  # float16, once
        folder = mnemo_home / "data" / "mnemo.db.vectors"
        data = sum(p.stat().st_size for p in folder.glob("*.npy"))
        assert data <= rows * (dim + 4 + 16) + 4 * 256  # int8, a scale, a seq, a rowid a row
        reads = []
        real = VectorRows.read_into
        monkeypatch.setattr(
            VectorRows, "read_into", lambda s, r, out: reads.append(len(r)) or real(s, r, out)
        )
        for text in QUERIES:
            query = embedder.embed_query(text)
            hits, _ = index.top(query, 4)
            assert _same(hits, _exact_top(engine, query, 4))
        assert reads and all(n >= 16 for n in reads)  # THEN rescored from the database
    finally:
        engine.close()


def test_rescoring_a_row_another_process_replaced_uses_its_new_vector(collection, embedder):
    # The copy maps rowids; a re-embed elsewhere deletes the old rows (the generation
    # moves), so the next search reloads and never reads a rowid that is gone.
    index = collection.vector_index()
    query = embedder.embed_query("container keeps rebooting")
    first = index.top(query, 1)[0][0]
    other = Store(Database(collection.database_path))  # another process's connection
    memory = other.by_seqs([first[0]])[first[0]]
    other.vectors.save(memory.id, collection.model_id, "re-embedded", -query[None, :])
    other.db.close()
    hits, lookup = collection.vector_index().top(query, 300)
    assert first[0] not in [seq for seq, _ in hits[:290]]
    assert lookup.get(first[0]) == pytest.approx(-1.0, abs=1e-3)  # its new vector


def test_the_duplicate_finder_finds_the_same_pairs_through_the_int8_rows(
    collection, embedder, monkeypatch
):
    # A large collection holds no float row: candidates come from int8 products and the
    # database's rows decide, so the pairs and their cosines are the exact scan's.
    index = collection.vector_index()
    assert index.quantized
    monkeypatch.setattr(vectors, "QUANTIZE_ABOVE", 10**9)
    exact = vectors.VectorIndex(collection.model_id, embedder.info.dimension)
    exact.refresh(Store(Database(collection.database_path)))
    assert not exact.quantized
    for threshold in (0.5, 0.7):  # every pair (no limit): near ties may be in any order
        fast, slow = index.near_pairs(threshold, 10**6), exact.near_pairs(threshold, 10**6)
        assert len(slow) > 3
        # float32 sums in another order (BLAS against one row at a time) differ by 1e-6
        found = {(a, b): (c, share) for a, b, c, share in fast}
        wanted = {(a, b): (c, share) for a, b, c, share in slow}
        for pair in found.keys() ^ wanted.keys():  # only a pair at the threshold itself
            assert abs((found.get(pair) or wanted[pair])[0] - threshold) < 1e-5
        both = found.keys() & wanted.keys()
        assert len(both) > 3
        for pair in both:
            assert found[pair][0] == pytest.approx(wanted[pair][0], abs=1e-5)
        # the share counts chunk pairs past the threshold: one at it may count on one side
        other_share = [p for p in both if found[p][1] != wanted[p][1]]
        assert len(other_share) <= max(1, len(both) // 50)
        assert [c for _, _, c, _ in fast] == sorted((c for _, _, c, _ in fast), reverse=True)


def test_rows_added_a_batch_at_a_time_are_never_held_twice(monkeypatch):
    # A model switch re-embeds every memory and the index reads the new rows as they come,
    # a batch at a time. Growing one array by half at a time copied every row held into
    # the bigger one, old and new held at once: at a million memories 0.8 GB above what
    # the index needs once the switch is done. The rows held are now never copied.
    import tracemalloc

    monkeypatch.setattr(vectors, "QUANTIZE_ABOVE", 2_000)
    dim, batch, batches = 384, 500, 160  # 80,000 rows: 31 MB as int8 rows and scales
    index = vectors.VectorIndex("m", dim)
    rng = np.random.default_rng(5)
    vecs = rng.standard_normal((batch, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    blobs = [encode_vector(v) for v in vecs]
    tracemalloc.start()
    try:
        worst = 0
        for b in range(batches):
            rows = [(b * batch + i + 1, b * batch + i + 1, blobs[i]) for i in range(batch)]
            int8 = index.quantized  # (the one change from float32 rows is not growing)
            tracemalloc.reset_peak()
            index.append(rows)
            held, peak = tracemalloc.get_traced_memory()
            if int8:
                worst = max(worst, peak - held)  # taken during the append and let go
    finally:
        tracemalloc.stop()
    assert index.quantized and len(index) == batch * batches
    # THEN no append took more than its own batch's working memory (a few MB: decoded
    # and quantized rows) beside what stays held; copying the rows held took 20 MB here
    row_bytes = dim + 4 + 16  # int8 row, its scale, its memory and rowid
    assert worst < 0.1 * batch * batches * row_bytes + 4 * batch * dim * 4, worst


def test_quantizing_gives_the_same_bytes_as_the_copy_on_disk_was_made_with():
    # The copy is checked by quantizing the database's rows again and comparing bytes: the
    # leaner quantize (no array of |x|, rounded in place) must give exactly the old bytes
    rng = np.random.default_rng(11)
    rows = rng.standard_normal((3000, 384)).astype(np.float32)
    rows[0] = 0.0  # a row of zeros
    rows[1] = -np.abs(rows[1])  # its largest number negative
    rows[2, 5] = -1e3
    q8, scale = vectors.quantize(rows)
    old_scale = (np.abs(rows).max(axis=1) / np.float32(127)).astype(np.float32)
    old_scale[old_scale == 0] = 1.0
    assert np.array_equal(scale, old_scale)
    assert np.array_equal(q8, np.rint(rows / old_scale[:, None]).astype(np.int8))


def test_float_rows_in_several_parts_become_the_same_int8_rows(monkeypatch):
    # A collection growing past QUANTIZE_ABOVE turns its float32 rows (held in parts) into
    # int8 ones part by part, each part let go once done
    monkeypatch.setattr(vectors, "QUANTIZE_ABOVE", 5_000)
    monkeypatch.setattr(vectors, "DECODE_BLOCK", 700)  # blocks that straddle the parts
    rng = np.random.default_rng(12)
    vecs = rng.standard_normal((6_000, 16)).astype(np.float32)
    index, parts = vectors.VectorIndex("m", 16), 0
    for start in range(0, 6_000, 300):
        rows = [(i + 1, i + 1, encode_vector(vecs[i])) for i in range(start, start + 300)]
        if not index.quantized:
            parts = len(index._float._parts)
        index.append(rows)
    assert parts >= 3 and index.quantized and index.rows_held == 6_000
    stored = np.stack([decode_vector(encode_vector(v)) for v in vecs])  # float16 round trip
    want_q8, want_scale = vectors.quantize(stored)
    assert np.array_equal(index._q8_block(0, 6_000), want_q8)
    assert np.array_equal(index.scales(), want_scale)


def test_a_refresh_when_nothing_moved_reads_no_table(store):
    # One "what moved since" check (issue 43, `Database.moved`): the index, the keyword
    # index, the trash and the live count ask the same question the same way; a refresh
    # with nothing written since asks it and reads nothing else
    store.insert(Memory(id="", text="a memory with a vector"))
    memory = store.listing()[0]
    store.vectors.save(memory.id, "m", "digest", np.ones((1, 8), dtype=np.float32))
    index = vectors.VectorIndex("m", 8)
    index.refresh(store)
    assert len(index) == 1
    seen: list[str] = []
    store.db.conn.exec_trace = lambda _cursor, sql, _bindings: seen.append(sql) or True
    try:
        index.refresh(store)
    finally:
        store.db.conn.exec_trace = None
    assert seen == ["PRAGMA data_version"]
    store.insert(Memory(id="", text="a second memory"))  # a write moves it: read again
    second = next(m for m in store.listing() if m.id != memory.id)
    store.vectors.save(second.id, "m", "digest", np.ones((1, 8), dtype=np.float32))
    index.refresh(store)
    assert len(index) == 2
