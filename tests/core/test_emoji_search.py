"""Emoji and pictographic symbols are searchable as themselves (issue 46, item 6): `🎂`
finds the memory holding 🎂 first, by keyword, where it used to find a hotel note."""

from __future__ import annotations

import pytest

MEMORIES = [
    "Hotel booked in Lisbon for the conference, check-in after 3pm",
    "Mia's birthday 🎂 is on 12 May",
    "Deploy checklist: tests ✅ migrations ✅ changelog pending",
    "Rated the new ramen place ★★★★ out of five",
    "Dinner with Tom and Sara at the Italian place on Friday",
    "Remember to water the plants while the neighbours are away",
]


@pytest.fixture
def remembered(engine):
    for text in MEMORIES:
        engine.remember(text, force=True)
    return engine


@pytest.mark.parametrize(
    ("query", "memory"),
    [
        ("🎂", "Mia's birthday"),
        ("🎂 party", "Mia's birthday"),
        ("✅", "Deploy checklist"),
        ("★★★★", "Rated the new ramen"),
    ],
)
def test_an_emoji_finds_the_memory_holding_it_first(remembered, query, memory):
    # hybrid (CLI, MCP), keyword mode, and as the popup asks while the query is typed
    for mode, prefix in ((None, False), ("keyword", False), (None, True)):
        result = remembered.recall(query, mode=mode, prefix=prefix, track=False)
        texts = [r.memory.text for r in result.results]
        assert texts and texts[0].startswith(memory), (mode, prefix, texts)
        assert result.results[0].keyword_norm > 0, (mode, prefix, "found by its keyword")


def test_a_database_made_before_emoji_were_indexed_finds_them_once_opened(mnemo_home, word_model):
    import apsw

    from app.core import paths
    from app.core.engine import Engine
    from app.core.storage.migrations import MIGRATIONS, RECORD, unexpected

    # GIVEN a database whose index was made by the migrations up to m015 (emoji not words)
    path = paths.database_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = apsw.Connection(str(path))
    conn.execute(RECORD)
    older = [m for m in MIGRATIONS if m.__name__ <= "m015"]
    for migration in older:
        migration(conn)
        conn.execute("INSERT INTO _migrations VALUES (?, 'then')", (migration.__name__,))
    stamp = "2026-01-01T00:00:00+00:00"
    for i, text in enumerate(MEMORIES):
        conn.execute(
            "INSERT INTO memories(id, content_hash, text, created_at, updated_at) "
            "VALUES (?, 'h', ?, ?, ?)",
            (f"old{i}", text, stamp, stamp),
        )
    before = conn.execute("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'hotel'")
    assert before.fetchall()[0][0] == 1
    conn.close()
    # WHEN Mnemo opens it
    engine = Engine(embedder=word_model)
    try:
        # THEN every memory is kept and the emoji memory is found by its emoji
        assert len(engine.recent(limit=100)) == len(MEMORIES)
        result = engine.recall("🎂", mode="keyword", track=False)
        assert [r.memory.id for r in result.results][:1] == ["old1"]
        # AND the index is the one a new database gets (deleted words still purged)
        check = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
        assert unexpected(check) == []
        secure = "SELECT v FROM memories_fts_config WHERE k = 'secure-delete'"
        assert check.execute(secure).fetchall() == [(1,)]
        check.close()
    finally:
        engine.close()


def _unicode61(text: str) -> list[str]:
    """The words FTS5's tokenizer (as the index has it, before stemming) reads in `text`."""
    import apsw

    from app.core.storage import fts

    tokenize = apsw.Connection(":memory:").fts5_tokenizer(fts.TOKENIZER[1][0], fts.TOKENIZER[1][1:])
    data = text.encode()
    return [
        data[start:end].decode()
        for start, end, *_ in tokenize(data, apsw.FTS5_TOKENIZE_DOCUMENT, None)
    ]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("Mia's birthday 🎂 is on", ["Mia", "s", "birthday", "🎂", "is", "on"]),
        ("tests ✅, docs ❌!", ["tests", "✅", "docs", "❌"]),
        ("❤️ and ★★★★", ["❤", "and", "★★★★"]),  # U+FE0F is no part of a word
        ("👍🏽 from Ana", ["👍", "from", "Ana"]),  # a skin tone is no part of a word
        ("👨\u200d👩\u200d👧 family", ["👨", "👩", "👧", "family"]),  # nor the joiner
        ("🇫🇮 trip", ["🇫🇮", "trip"]),
        ("birthday🎂 🎉🎂", ["birthday🎂", "🎉🎂"]),  # a run is one word, as in FTS5
        ("25°C in Mnemo™ ©2024 №5", ["25", "C", "in", "Mnemo", "2024", "5"]),
        ("€5 or $5 or ₿1", ["5", "or", "5", "or", "1"]),
        ("a+b=c x<y → z | w ~ q ^ `r` …—", ["a", "b", "c", "x", "y", "z", "w", "q", "r"]),
        ("config.yaml E0502 naïve 東京", ["config", "yaml", "E0502", "naïve", "東京"]),
    ],
)
def test_python_splits_words_where_the_index_does(text, words):
    from app.core.storage import fts

    assert _unicode61(text) == words
    assert fts.words(text) == words


def test_every_symbol_is_a_word_character_exactly_when_the_index_says_so():
    import unicodedata

    from app.core.storage import fts

    kinds = ("So", "Sc", "Sk", "Sm", "Co")
    symbols = [
        chr(c)
        for c in range(0xA0, 0x110000)
        if not 0xD800 <= c < 0xE000
        and (unicodedata.category(chr(c)) in kinds or 0x1F000 <= c <= 0x1FBFF)
    ]
    kept: set[str] = set()
    for start in range(0, len(symbols), 5_000):
        kept.update("".join(_unicode61(" ".join(symbols[start : start + 5_000]))))
    python = {ch for ch in symbols if fts._WORD.fullmatch(ch)}
    # on a mismatch SQLite's or Python's Unicode tables moved: measure symbols.RANGES again
    assert sorted(python - kept) == [] and sorted(kept - python) == []


def test_the_index_and_the_query_planner_use_one_tokenizer(store):
    from app.core.storage import symbols

    sql = store.db.query("SELECT sql FROM sqlite_master WHERE name = 'memories_fts'")[0][0]
    assert f"categories '{symbols.CATEGORIES}' separators '{symbols.SEPARATORS}'" in sql


def test_an_emoji_is_highlighted_and_makes_a_statement_differ():
    from app.core.display import match_spans
    from app.core.writer import says_nothing_new

    text = "Mia's birthday 🎂 is on 12 May"
    assert [text[a:b] for a, b in match_spans(text, "🎂")] == ["🎂"]
    assert [text[a:b] for a, b in match_spans(text, "birthdays")] == ["birthday"]
    assert not says_nothing_new("Deploy tests ❌", "Deploy tests ✅")
