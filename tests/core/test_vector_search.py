"""The vector stage of a large collection: an int8 scan (NumKong) whose best candidates are
rescored exactly, so hits and their cosines are those of the exact float32 scan (issue 10).

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


def _exact_top(index, query, k):
    seqs, best = index.scores(query)
    order = np.argsort(-best, kind="stable")[:k]
    return [(int(seqs[i]), float(best[i])) for i in order]


def test_the_int8_scan_finds_the_exact_scans_hits_with_exact_cosines(collection, embedder):
    index = collection.vector_index()
    assert vectors.numkong is not None and index._n > vectors.QUANTIZE_ABOVE
    for text in QUERIES:
        query = embedder.embed_query(text)
        index._q8 = None
        hits, lookup = index.top(query, 4)
        assert index._q8 is not None  # THEN the int8 copy was scanned
        expected = _exact_top(index, query, 4)
        assert [s for s, _ in hits] == [s for s, _ in expected]
        assert np.allclose([c for _, c in hits], [c for _, c in expected], atol=1e-6)
        # AND a memory outside the rescored ones gets its exact cosine too (keyword hits)
        seqs, best = index.scores(query)
        worst = int(np.argmin(best))
        assert lookup.get(int(seqs[worst])) == pytest.approx(float(best[worst]), abs=1e-6)
        # AND the crowd is the exact scan's (within the int8 rounding)
        exact_crowd = vectors.cosine_crowd(best)
        assert lookup.crowd == pytest.approx(exact_crowd, abs=2e-3)


def test_a_long_memory_scores_by_its_best_chunk_through_the_int8_scan(collection, embedder):
    index = collection.vector_index()
    assert len(index) == 300 and not index._one_row_each  # two memories: several chunks
    query = embedder.embed_query("liveness probe fails and the pod restarts")
    hits, _ = index.top(query, 5)
    assert _same(hits, _exact_top(index, query, 5))


def test_memories_added_after_the_scan_began_are_found(collection, embedder):
    index = collection.vector_index()
    query = embedder.embed_query("boiler pressure between one and one and a half bar")
    index.top(query, 5)
    quantized = index._q8_rows
    stored = collection.remember("The boiler pressure should sit between 1 and 1.5 bar").memory
    index = collection.vector_index()
    hits, _ = index.top(query, 5)
    assert index._q8_rows > quantized
    rows = Store(Database(collection.database_path)).by_seqs([hits[0][0]])
    assert rows[hits[0][0]].id == stored.id


def test_a_filter_keeps_to_the_allowed_memories(collection, embedder):
    index = collection.vector_index()
    query = embedder.embed_query(QUERIES[1])
    everything = _exact_top(index, query, 300)
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
    monkeypatch.setattr(vectors, "QUANTIZE_ABOVE", 10**9)
    exact = answers()
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
        index._append(rows)
        everything += rows
        batches.append(rows)
        query = rng.normal(size=dim).astype(np.float32)
        seqs, best = index.scores(query)
        fresh = vectors.VectorIndex("m", 8)
        for batch in batches:  # the same appends, mapped once at the end
            fresh._append(batch)
        fresh._mapped_rows = 0
        fresh_seqs, fresh_best = fresh.scores(query)
        assert np.array_equal(seqs, fresh_seqs) and np.allclose(best, fresh_best)
        assert index._one_row_each == fresh._one_row_each
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


def test_rescoring_reads_the_copy_it_maps_with_preadv_even_after_a_newer_copy(
    home, mnemo_home, embedder, monkeypatch
):
    import os
    import shutil

    if not hasattr(os, "preadv"):
        pytest.skip("no preadv here: rescoring reads through the mapping")
    shutil.copytree(home, mnemo_home, dirs_exist_ok=True)
    monkeypatch.setattr(vectors, "QUANTIZE_ABOVE", 100)
    monkeypatch.setattr(vectors, "RESCORE", 16)
    first = Engine(embedder=embedder)
    first.vector_index()  # the first start writes the copy
    first.close()
    engine = Engine(embedder=embedder)
    try:
        index = engine.vector_index()
        assert index.loaded_from == "cache" and index._reader is not None
        let_go = []
        monkeypatch.setattr(vectors, "_let_go", lambda matrix: let_go.append(matrix))
        queries = [embedder.embed_query(text) for text in QUERIES]
        index.prepare()
        expected = [_exact_top(index, q, 4) for q in queries]
        let_go.clear()
        assert all(_same(index.top(q, 4)[0], e) for q, e in zip(queries, expected, strict=True))
        assert not let_go  # THEN no page of the mapping was read to rescore
        # WHEN another process renames a newer copy over the file this one maps
        matrix = Path(index._base.filename)
        newer = matrix.with_name("newer.npy")
        np.save(newer, np.zeros(index._base.shape, dtype=np.float32))
        os.replace(newer, matrix)
        # THEN rescoring still reads the file its mapping shows, not the newer one
        assert all(_same(index.top(q, 4)[0], e) for q, e in zip(queries, expected, strict=True))
    finally:
        engine.close()
