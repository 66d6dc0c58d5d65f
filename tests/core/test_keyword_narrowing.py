"""The keyword stage on a query matching much of a large collection (issue 24, item 2).

FTS5 scores every row a query matches; past `fts.SCORE_ALL` postings only the rows holding
a rare phrase or two common ones are ranked (`fts.narrowing`). Real SQLite files; the
thresholds are lowered so a few hundred memories stand for a million.
"""

from __future__ import annotations

import apsw
import pytest

from app.core import paths
from app.core.memory import Memory
from app.core.storage import fts
from app.core.storage.db import Database
from app.core.storage.store import Filters, Store


def test_narrowing_is_none_while_ranking_everything_is_cheap():
    assert fts.narrowing([('"a"', 9_000), ('"b"', 9_000)], 1_000_000, 250) is None


def test_narrowing_keeps_rare_phrases_and_pairs_of_common_ones():
    parts = [('"c"', 30_000), ('"r"', 800), ('"a"', 20_000), ('"b"', 25_000)]
    assert fts.narrowing(parts, 1_000_000, 250) == [
        '"r"',  # rare: every memory holding it
        '"r" AND ("a" OR "b" OR "c")',  # its holders with another phrase, scored in full
        '"a" AND ("b" OR "c")',  # the common ones in pairs, from the rarest
        '"b" AND "c"',
    ]


def test_narrowing_only_the_rarest_common_phrases_start_a_pair():
    parts = [(f'"w{i}"', 40_000 + i) for i in range(6)]
    narrow = fts.narrowing(parts, 1_000_000, 250)
    assert narrow == [
        '"w0" AND ("w1" OR "w2" OR "w3" OR "w4" OR "w5")',
        '"w1" AND ("w2" OR "w3" OR "w4" OR "w5")',
        '"w2" AND ("w3" OR "w4" OR "w5")',
    ]


def test_narrowing_is_none_when_it_would_leave_too_few_rows():
    # Two words in 2% of 300k memories: about 120 hold both, fewer than twice 250.
    assert fts.narrowing([('"a"', 6_000), ('"b"', 6_000)], 300_000, 250) is None
    assert fts.narrowing([('"a"', 25_000)], 1_000_000, 250) is None  # one common word


@pytest.fixture
def store(mnemo_home, monkeypatch) -> Store:
    monkeypatch.setattr(fts, "SCORE_ALL", 40)
    s = Store(Database(paths.database_path()))
    texts = []
    for i in range(600):
        words = []
        if i % 4 == 0:
            words.append("alpha")  # 150 memories
        if i % 5 == 0:
            words.append("bravo")  # 120, 30 of them with alpha
        if i % 4 == 1:
            words.append("charlie")  # 150, never with delta
        if i % 4 == 3:
            words.append("delta")  # 150
        if i % 100 == 7:
            words.append("zircon")  # rare: 6 memories, all with delta
        filler = " ".join(f"filler{i}x{j}" for j in range(i % 9))
        texts.append(f"note {i} {' '.join(words)} {filler}")
    for text in texts:
        s.insert(Memory(id="", text=text))
    return s


def _statements(store: Store) -> list[tuple[str, tuple]]:
    seen: list[tuple[str, tuple]] = []

    def trace(cursor: apsw.Cursor, sql: str, bindings) -> bool:
        seen.append((sql, tuple(bindings or ())))
        return True

    store.db.conn.exec_trace = trace
    return seen


def _ranked(statements: list[tuple[str, tuple]]) -> list[str]:
    """The FTS5 expressions a search ranked, in order."""
    return [bindings[0] for sql, bindings in statements if "bm25" in sql]


def test_a_narrowed_search_ranks_as_the_full_ranking_does(store):
    plan = store.keywords.plan("alpha bravo delta zircon")
    assert sum(docs for _, docs in plan.parts) > fts.SCORE_ALL
    seen = _statements(store)
    narrowed = store.keywords.search(plan.expression, Filters(), 3, parts=plan.parts)
    store.db.conn.exec_trace = None
    assert _ranked(seen) == fts.narrowing(plan.parts, plan.total, 15)
    assert len(_ranked(seen)) == 4  # zircon; with the others; bravo, then alpha with others
    whole = store.keywords.search(plan.expression, Filters(), 3, parts=None)
    assert narrowed == whole
    texts = store.by_seqs([seq for seq, _ in narrowed])
    assert all("zircon" in texts[seq].text for seq, _ in narrowed)


def test_a_narrowed_search_with_filters_ranks_as_the_full_ranking_does(store):
    plan = store.keywords.plan("alpha bravo")
    filters = Filters(include_deleted=True)
    seen = _statements(store)
    narrowed = store.keywords.search(plan.expression, filters, 3, parts=plan.parts)
    store.db.conn.exec_trace = None
    assert _ranked(seen) == ['"bravo" AND "alpha"']
    whole = store.keywords.search(plan.expression, filters, 3, parts=None)
    assert narrowed == whole
    texts = store.by_seqs([seq for seq, _ in narrowed], filters)
    assert all("alpha" in texts[s].text and "bravo" in texts[s].text for s, _ in narrowed)


def test_too_few_narrowed_rows_ranks_every_match(store):
    # charlie and delta are never together (the estimate takes them for independent), so
    # the narrowed rows are zircon's 6, fewer than the pool: every match is ranked.
    plan = store.keywords.plan("charlie delta zircon")
    assert fts.narrowing(plan.parts, plan.total, 15) is not None
    seen = _statements(store)
    hits = store.keywords.search(plan.expression, Filters(), 3, parts=plan.parts)
    store.db.conn.exec_trace = None
    narrow = fts.narrowing(plan.parts, plan.total, 15)
    assert _ranked(seen) == [*narrow, plan.expression]
    assert len(hits) == 3
    assert hits == store.keywords.search(plan.expression, Filters(), 3, parts=None)


def test_recall_at_scale_finds_the_memory_holding_every_word(store, monkeypatch):
    from app.core.engine import Engine

    engine = Engine(embedder=None)
    try:
        result = engine.recall("alpha bravo delta zircon", mode="keyword", limit=3, track=False)
        assert result.results, result
        assert all("zircon" in r.memory.text for r in result.results)
    finally:
        engine.close()


def test_trash_seen_between_searches_and_from_another_connection(store):
    plan = store.keywords.plan("zircon")
    first = store.keywords.search(plan.expression, Filters(), 10)
    assert len(first) == 6
    victim = store.by_seqs([first[0][0]])[first[0][0]]
    store.set_deleted([victim.id], True)
    after = store.keywords.search(plan.expression, Filters(), 10)
    assert first[0][0] not in dict(after) and len(after) == 5
    other = Store(Database(paths.database_path()))  # another process's connection
    second = store.by_seqs([after[0][0]])[after[0][0]]
    other.set_deleted([second.id], True)
    other.db.close()
    assert after[0][0] not in dict(store.keywords.search(plan.expression, Filters(), 10))


def test_word_counts_follow_writes_from_another_connection(store):
    assert store.keywords.plan("quokka").phrases[0].docs == 0
    other = Store(Database(paths.database_path()))
    other.insert(Memory(id="", text="a quokka in the garden"))
    other.db.close()
    assert store.keywords.plan("quokka").phrases[0].docs == 1


@pytest.mark.parametrize("own", [True, False])
def test_common_words_score_as_fts5_bm25_without_counting_their_memories(
    mnemo_home, monkeypatch, own
):
    # Every memory holds both words (each in half the memories or more): in a large
    # collection they are ranked by Mnemo's own scorer, which must give FTS5's bm25() to
    # the last digit, labels apart; in a small one by bm25() itself.
    from app.core.storage import keywords as keywords_module

    monkeypatch.setattr(keywords_module, "OWN_SCORER_ABOVE", 0 if own else 10**9)
    s = Store(Database(paths.database_path()))
    seen = _statements(s)
    for i in range(30):
        body = "common word " * (1 + i % 4) + " ".join(f"w{i}x{j}" for j in range(i % 7))
        s.insert(Memory(id="", text=body, title="common" if i % 3 else "", tags=["word"]))
    s.set_keywords(s.by_seqs([3])[3].id, ["common"])
    plan = s.keywords.plan("common word")
    assert plan.common_only
    hits = s.keywords.search(plan.expression, Filters(), 30, common_only=True, parts=plan.parts)
    assert any(fts.SCORER in sql for sql, _ in seen) == own
    s.db.conn.exec_trace = None
    expected = s.db.query(
        "SELECT rowid, -bm25(memories_fts, 2.0, 1.0, 1.0, 1.0, 1.0), "
        "-bm25(memories_fts, 2.0, 1.0, 1.0, 1.0, 0.0) FROM memories_fts "
        "WHERE memories_fts MATCH ?",
        (plan.expression,),
    )
    want = {seq: text + 0.25 * (full - text) if text > 0 else full for seq, full, text in expected}
    assert len(hits) == 30
    for seq, score in hits:
        assert score == pytest.approx(want[seq], rel=1e-12, abs=1e-18)
    assert [s for s, _ in hits] == sorted(want, key=lambda q: (-want[q], q))


def test_very_common_words_are_counted_from_a_sample_in_a_large_collection(store, monkeypatch):
    monkeypatch.setattr(fts, "SAMPLED_ABOVE", 100)
    monkeypatch.setattr(fts, "SAMPLE_WIDTH", 40)
    seen = _statements(store)
    plan = store.keywords.plan("note zircon alpha")
    store.db.conn.exec_trace = None
    docs = {p.words[0]: p.docs for p in plan.phrases}
    assert docs["zircon"] == 6  # rare in the sample: counted exactly
    assert docs["alpha"] == 150  # a quarter of the sample (every fourth memory)
    assert docs["note"] == 600  # every memory: estimated, never read whole
    counted = {term for sql, b in seen if "mnemo_vocab" in sql and "term IN" in sql for term in b}
    assert "zircon" in counted and not counted & {"note", "alpha"}
    assert "note" not in plan.expression  # common: left out of the search, as before


def test_short_prefixes_are_words_in_a_large_collection(store, monkeypatch):
    assert [fts.shortest_prefix(n) for n in (5_000, 50_000, 1_000_000)] == [1, 2, 3]
    assert store.keywords.plan("zi", prefix=True).expression == '"zi" *'  # 600 memories
    monkeypatch.setattr(fts, "shortest_prefix", lambda total: 3)
    assert store.keywords.plan("zi", prefix=True).expression is None  # no word `zi`
    assert store.keywords.plan("zir", prefix=True).expression == '"zir" *'
    assert store.keywords.plan("a", prefix=True).expression is None  # a stop word, dropped


def test_phrases_about_as_common_are_treated_alike():
    # a fits the budget of rare phrases and b just misses it: a memory holding only b must
    # not be left out while one holding only a is kept, so a is paired too.
    parts = [('"a"', 9_000), ('"b"', 11_000), ('"c"', 30_000)]
    assert fts.narrowing(parts, 1_000_000, 250) == ['"a" AND ("b" OR "c")', '"b" AND "c"']


def test_own_scorer_only_for_single_words_that_hold_the_idf_floor():
    from app.core.storage.keywords import _own_scorer

    assert _own_scorer([('"common"', 900_000), ('"word"', 800_000)], 1_000_000)
    assert not _own_scorer([('"common"', 900_000)], 10_000)  # small: FTS5's bm25() is cheaper
    assert not _own_scorer([('"word common"', 900_000)], 1_000_000)  # count is an upper bound
    assert not _own_scorer([('"comm" *', 900_000)], 1_000_000)  # a prefix: so is its count
    assert not _own_scorer([('"common"', 520_000)], 1_000_000)  # near half: maybe not floored


def test_a_prefix_is_as_long_as_its_stem(store, monkeypatch):
    store.insert(Memory(id="", text="water the plants"))
    assert store.keywords.plan("was", prefix=True).expression == '"was" *'  # `wa*`: water
    monkeypatch.setattr(fts, "shortest_prefix", lambda total: 3)
    assert store.keywords.plan("was", prefix=True).expression is None  # `wa*`: 2 letters
    assert store.keywords.plan("note", prefix=True).expression == '"note" *'


def test_nothing_read_in_a_rolled_back_write_is_kept(store):
    plan = store.keywords.plan("zircon")
    seq = store.keywords.search(plan.expression, Filters(), 10)[0][0]
    victim = store.by_seqs([seq])[seq]
    with pytest.raises(RuntimeError), store.db.write():
        store.set_deleted([victim.id], True)
        store.insert(Memory(id="", text="a quokka in the garden"))
        assert seq not in dict(store.keywords.search(plan.expression, Filters(), 10))
        assert store.keywords.plan("quokka").phrases[0].docs == 1
        raise RuntimeError("rolled back")
    assert seq in dict(store.keywords.search(plan.expression, Filters(), 10))
    assert store.keywords.plan("quokka").phrases[0].docs == 0


def test_a_word_common_in_one_period_only_is_counted_exactly(store, monkeypatch):
    monkeypatch.setattr(fts, "SAMPLED_ABOVE", 100)
    monkeypatch.setattr(fts, "SAMPLE_WIDTH", 40)
    for i in range(100):  # the latest 100 memories, all about one thing
        store.insert(Memory(id="", text=f"burst {i} of the launch week"))
    docs = {p.words[0]: p.docs for p in store.keywords.plan("burst charlie").phrases}
    assert docs["burst"] == 100  # in every memory of the last span, in none before
    assert abs(docs["charlie"] - 150) <= 15  # a quarter of every span: estimated


def test_the_word_being_typed_as_itself_has_its_own_count(store):
    for i in range(30):
        store.insert(Memory(id="", text=f"zirconium sample {i}"))
    plan = store.keywords.plan("alpha zircon", prefix=True)
    assert dict(plan.parts)['"zircon" *'] == 36  # zircon and zirconium
    assert dict(plan.exact_parts)['"zircon"'] == 6  # zircon alone


def test_planning_a_query_never_reads_every_memory(store, monkeypatch):
    # `SELECT min(seq), max(seq)` read every row (min and max in one SELECT are not looked
    # up at the ends of the tree): 62 ms at 100k memories with a cold cache, again after
    # every write; and BM25's N was a count of every memory. Each statement a plan runs is
    # checked with EXPLAIN QUERY PLAN: none may scan the memories table or one of its indexes.
    monkeypatch.setattr(fts, "SAMPLED_ABOVE", 100)
    monkeypatch.setattr(fts, "SAMPLE_WIDTH", 40)
    seen = _statements(store)
    store.keywords.plan("note zircon alpha")
    store.insert(Memory(id="", text="note written after the first plan"))
    seen.clear()
    store.keywords.plan("note zircon alpha bravo")  # after a write: counted again
    store.db.conn.exec_trace = None
    scans = []
    for sql, bindings in seen:
        if not sql.lstrip().upper().startswith("SELECT"):
            continue
        for row in store.db.query("EXPLAIN QUERY PLAN " + sql, bindings):
            if row[-1] == "SCAN memories" or row[-1].startswith("SCAN memories USING"):
                scans.append((sql, row[-1]))
    assert seen and scans == []
