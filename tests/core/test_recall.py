"""Recall with the real bundled model: meaning, keywords, filters, tracking, hostile input."""

from __future__ import annotations

import pytest

from app.core.errors import InputError
from app.core.storage.store import Filters
from tests.core.test_fts import HOSTILE

PARSER = [
    "Read real file samples before writing a parser; synthetic fixtures hide edge cases",
    "A recursive descent parser should report the line and column of every syntax error",
    "When parsing CSV, handle quoted fields that contain commas and newlines",
    "Parser error recovery: skip to the next statement terminator instead of aborting",
    "Validate the file header before parsing the body so bad inputs fail fast",
    "Tokenize first, then parse: a separate lexer keeps the grammar code small",
    "Parsing JSON from untrusted sources needs a depth limit against stack overflow",
    "Wrap low-level parse exceptions in a ParseError that carries the file name",
    "Use a streaming parser for multi-gigabyte XML files instead of loading the DOM",
    "Fuzz the parser with malformed inputs; it found three crashes in the date parser",
    "Return partial results plus a list of errors when a config file has bad lines",
    "Byte order marks at the start of a file break naive parsers; strip them first",
    "Normalize line endings before parsing text files from Windows users",
    "A parser combinator library made the query language grammar readable",
    "Error messages from the parser should quote the offending token",
    "Parse dates with an explicit format string; guessing formats caused silent bugs",
    "Test the parser against a corpus of real-world files collected from users",
    "Incremental parsing lets the editor re-parse only the changed region of a file",
    "When a binary file format has a version field, branch the parser on it early",
    "Parsing YAML: disable arbitrary object construction and reject duplicate keys",
]
DEPLOY = [
    "Blue-green deployments let us switch traffic back instantly when a release fails",
    "Pin container image digests in the Kubernetes manifests, not mutable tags",
    "Run database migrations as a separate job before rolling out the new pods",
    "Helm chart values for staging and production live in separate files",
    "Canary releases: send five percent of traffic to the new version first",
    "The deploy pipeline waits for health checks before shifting the load balancer",
    "Keep secrets in the cloud secret manager, never in the deployment repository",
    "Terraform state is locked in a remote backend to avoid concurrent applies",
    "Roll back a bad release with kubectl rollout undo on the deployment",
    "Zero-downtime deploys need the app to handle SIGTERM and drain connections",
    "Set resource requests and limits on every container to avoid noisy neighbours",
    "Feature flags decouple deploying code from releasing features to users",
    "Tag every release in git and record the commit SHA in the container labels",
    "Autoscaling on CPU alone missed our memory-bound workers; scale on queue length",
    "Use readiness probes so pods only receive traffic after warming their caches",
    "Production deploys happen only from the main branch after CI is green",
    "Store infrastructure as code and review changes like application pull requests",
    "Ansible playbooks provision the bare-metal hosts before Kubernetes joins them",
    "CDN cache invalidation is part of the frontend release checklist",
    "Deploy freezes before holidays reduced weekend incidents noticeably",
]
TESTING = [
    "Property-based tests found an off-by-one bug in pagination",
    "Keep unit tests fast; slow integration tests run in a separate CI stage",
    "Use pytest fixtures for temporary directories instead of hand-made cleanup",
    "Snapshot tests need careful review or they freeze bugs in place",
    "Mutation testing showed our assertions were too weak in the billing module",
    "Flaky tests get quarantined and fixed within a week",
    "Test doubles only for slow or external services; use the real database",
    "Coverage reports are a guide, not a target",
    "Each bug fix starts with a failing regression test",
    "Contract tests check the API against the client's expectations",
]


@pytest.fixture
def corpus(engine):
    for text in PARSER:
        engine.remember(text, category="parser", force=True)
    for text in DEPLOY:
        engine.remember(text, category="deployment", force=True)
    for text in TESTING:
        engine.remember(text, category="testing", force=True)
    assert engine.stats()["memories"] == 50
    return engine


def test_acceptance_1_parser_query_ranks_parser_memories_first(corpus):
    # GIVEN 50 memories of equal prominence WHEN the parser query is asked for 25
    result = corpus.recall("building a file parser with error handling", limit=25, track=False)
    categories = [r.memory.category for r in result.results]
    # THEN it answers with up to 25 (those that share more than noise with it), at least 15
    # of the 20 parser notes among them (the seed's criterion 1), the parser notes first;
    # what is not about parsers is marked weak
    assert 15 <= len(result.results) <= 25
    assert categories.count("parser") >= 15, [r.memory.text for r in result.results]
    assert set(categories[:10]) == {"parser"}
    assert all(r.band == "weak" for r in result.results if r.memory.category != "parser")
    assert result.mode == "hybrid" and result.notice is None


def test_acceptance_1_context_selects_the_parser_entries(corpus):
    # The seed's criterion 1, as written: `mnemo context --query "building a file parser
    # with error handling" --limit 25` selects at least 15 of the 20 parser entries. The
    # relevance floor used to leave out all but 9 (issue 20).
    block = corpus.context(query="building a file parser with error handling", limit=25)
    categories = [m.category for m, _ in block.memories]
    assert categories.count("parser") >= 15, categories
    assert len(block.memories) <= 25 and categories[:5] == ["parser"] * 5
    assert " | matches: " in block.diagnostic()
    # The parser notes are at least partly about it (strong needs meaning and keywords to
    # agree on a note, issue 41: a long task description shares few of its words with each)
    parser_bands = [block.bands[m.id] for m, _ in block.memories if m.category == "parser"]
    assert all(b in ("strong", "partial") for b in parser_bands[:10]), parser_bands


@pytest.mark.parametrize(
    ("stored", "query", "found"),
    [
        ("k8s pod restart debugging", "kubernetes troubleshooting", True),
        # Cosine 0.18 with MiniLM: as close as unrelated questions come, so it may be left
        # out, but it must never be answered with another memory.
        ("I prefer local-first architecture", "should we use cloud services?", False),
    ],
)
def test_paraphrases_are_found_by_meaning(engine, stored, query, found):
    engine.remember(stored)
    for text in (
        "Buy oat milk and bread",
        "The quarterly report is due on Friday",
        "Alice's birthday is in May",
        "Use ruff to lint Python code",
    ):
        engine.remember(text)
    for mode in ("semantic", "hybrid"):
        result = engine.recall(query, mode=mode, track=False)
        assert [r.memory.text for r in result.results][:1] in ([stored], [] if not found else None)
        if result.results:
            assert result.results[0].keyword is None  # no shared word: found by meaning alone


def test_exact_identifiers_are_found_by_keyword(engine):
    engine.remember("Upload fails with E_CONN_RESET when the proxy times out after 30 s")
    engine.remember("The nightly export writes to reports/2026-q3_summary.xlsx")
    engine.remember("Network errors in general are retried three times")
    for query, expected in (
        ("E_CONN_RESET", "E_CONN_RESET"),
        ("2026-q3_summary.xlsx", "summary.xlsx"),
    ):
        result = engine.recall(query, mode="keyword", track=False)
        assert len(result.results) == 1 and expected in result.results[0].memory.text
        hybrid = engine.recall(query, track=False)
        assert expected in hybrid.results[0].memory.text


def test_unrelated_query_returns_nothing_rather_than_the_least_bad(corpus):
    for query in (
        "chocolate cake recipe with raspberries",
        "quantum physics lecture",
        "my cat likes tuna",
        "zxqv blorft wibble",
        "asdfgh jkl",
    ):
        for mode in ("hybrid", "semantic", "keyword"):
            assert corpus.recall(query, mode=mode, track=False).results == [], (query, mode)
    # "likes" matches "like" in a deployment memory, but one common word of four is no
    # answer, even in keyword mode (before issue 9 it came back with a full score).


@pytest.mark.parametrize("mode", ["hybrid", "semantic", "keyword"])
def test_hostile_queries_never_crash(corpus, mode):
    for query in HOSTILE:
        if not query.strip():
            continue
        result = corpus.recall(query, mode=mode, limit=5, track=False, prefix=True)
        assert result.mode == mode
    with pytest.raises(InputError, match="empty"):
        corpus.recall("   ", mode=mode)


def test_filters_narrow_every_mode(corpus):
    for mode in ("hybrid", "semantic", "keyword"):
        result = corpus.recall(
            "parser errors", mode=mode, limit=50, track=False, filters=Filters(category="testing")
        )
        assert all(r.memory.category == "testing" for r in result.results)


def test_recall_counts_uses_unless_told_not_to(engine):
    memory = engine.remember("The staging database password rotates monthly").memory
    engine.recall("staging database", track=False)
    assert engine.get(memory.id).recall_count == 0
    engine.recall("staging database")
    engine.recall("staging database")
    after = engine.get(memory.id)
    assert after.recall_count == 2 and after.last_recalled_at is not None


def test_trashed_memories_are_not_recalled_until_restored(engine):
    memory = engine.remember("Grandma's lasagne uses nutmeg in the bechamel").memory
    engine.forget([memory.id])
    assert engine.recall("lasagne recipe", track=False).results == []
    engine.restore([memory.id])
    assert engine.recall("lasagne recipe", track=False).results[0].memory.id == memory.id


def test_prefix_search_as_you_type(engine):
    engine.remember("Kubernetes pods restart when the liveness probe fails")
    result = engine.recall("kuber", mode="keyword", prefix=True, track=False)
    assert len(result.results) == 1
    assert engine.recall("kuber", mode="keyword", track=False).results == []


def test_explain_signals_are_reported(engine):
    engine.remember("Retry idempotent HTTP requests with exponential backoff")
    item = engine.recall("retry backoff", track=False).to_dict(explain=True)["results"][0]
    signals = item["signals"]
    assert signals["vector"] > 0.3 and signals["keyword"] > 0
    assert 0 < signals["vector_norm"] < 1 and 0 < signals["keyword_norm"] < 1
    # relevance = 1 − (1 − meaning)(1 − keywords); the score adds prominence's 10 % share
    both = 1 - (1 - signals["vector_norm"]) * (1 - signals["keyword_norm"])
    assert signals["relevance"] == pytest.approx(both)
    assert 0.9 * both <= item["score"] <= both


def test_read_only_database_still_searches_without_tracking(engine):
    from app.core.storage.db import Database
    from app.core.storage.store import Store

    memory = engine.remember("Backups run nightly at two in the morning").memory
    engine._db = Database(engine._db.path, read_only=True)
    engine._store = Store(engine._db)
    result = engine.recall("when do backups run")
    assert result.results[0].memory.id == memory.id
    assert engine.get(memory.id).recall_count == 0


def test_the_query_is_embedded_while_the_keyword_search_runs(corpus, monkeypatch):
    # Each takes about 4 ms at 100k memories; one after the other they were half a recall.
    import threading

    keywords_started = threading.Event()
    seen: dict[str, object] = {}
    embedder = corpus.embedder
    real_embed, real_search = embedder.embed_query, corpus._store.keywords.search

    def embed(text):
        seen["embedding thread"] = threading.current_thread().name
        seen["keywords ran meanwhile"] = keywords_started.wait(5)
        return real_embed(text)

    def search(*args, **kwargs):
        keywords_started.set()
        return real_search(*args, **kwargs)

    monkeypatch.setattr(embedder, "embed_query", embed)
    monkeypatch.setattr(corpus._store.keywords, "search", search)
    monkeypatch.setattr(embedder, "spare_core", lambda: True)
    result = corpus.recall("parser error handling", track=False)
    assert result.results and seen["keywords ran meanwhile"] is True
    assert seen["embedding thread"] != threading.current_thread().name
    # AND with every other core busy, no second thread: it would only share the last core
    monkeypatch.setattr(embedder, "spare_core", lambda: False)
    keywords_started.set()
    again = corpus.recall("parser error handling", track=False)
    assert again.results and seen["embedding thread"] == threading.current_thread().name


@pytest.mark.parametrize("limit", [0, -3, True, 2.5, "5"])
def test_the_engine_refuses_a_limit_that_is_not_one(engine, limit):
    # Found in review: the check was in the CLI only; the engine took 0 for the default,
    # -3 for one result, and listing(limit=-3) became SQL's LIMIT -3: everything.
    engine.remember("Sourdough loaf: 500 g flour", force=True)
    for call in (
        lambda: engine.recall("sourdough", limit=limit, track=False),
        lambda: engine.listing(limit=limit),
        lambda: engine.context(query="sourdough", limit=limit, track=False),
    ):
        with pytest.raises(InputError, match="at least 1"):
            call()


def test_a_query_of_a_million_characters_is_searched_by_its_start(engine):
    # Red team (issue 21, finding 16): a 60 MB search held the MCP server for minutes; the
    # popup and the CLI take a pasted text the same way
    engine.remember("Wrap parse exceptions in a ParseError with the line number", force=True)
    query = "parse exceptions with the line number " + "and so on " * 100_000
    result = engine.recall(query, track=False)
    block = engine.context(query=query, track=False)
    # THEN its first million characters are searched, and the answer says so
    assert "searched the first 1,000,000 characters of a 1,000,038-character query" in (
        result.notice or ""
    )
    assert len(result.query) <= 1_000_000 and len(block.query) <= 1_000_000
    assert result.results and "ParseError" in result.results[0].memory.text
