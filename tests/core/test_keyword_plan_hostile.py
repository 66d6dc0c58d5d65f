"""Hostile and unusual input for the keyword plan (`fts.Lexicon`, issue 9).

Real SQLite files, the real FTS5 index and tokenizer, the real bundled model where meaning
is involved. The first group are regressions found by attacking the first version of the
plan (each failed on it); the rest are properties worth keeping.
"""

from __future__ import annotations

import json
import math
import random
import time
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.core.memory import Memory
from app.core.storage import fts
from app.core.storage.db import Database
from app.core.storage.store import Filters, Store
from tests.conftest import run_cli
from tests.core.test_fts import HOSTILE

TEXTS = [
    "Kubernetes staging deploy: bump image.tag in values-staging.yaml, then helm upgrade",
    "Upload fails with E_CONN_RESET when the proxy times out after 30 s",
    "Running the test suite with pytest takes four minutes",
    "Generalization error of the model on the held-out set",
    "Responsibilities of the on-call engineer during an incident",
    "Polling the queue every second wastes battery",
    "The pole in the garden is tall",
    "The widget is positioned at the top of the window",
    "A portion of cake for the party",
    "A naïve approach to caching: memoize everything",
    "Grüße aus der Straße in München",
    "Москва зимой холодная",
    "東京都庁舎に行く予定",
    "Ελληνικά γράμματα",
    "مرحبا بالعالم and שלום עולם",
    "O'Reilly books about rock'n'roll",
    "Shell scripts for the nightly build",
    "Docker compose file for staging",
    "Overflow of the job queue at midnight",
]

MORE_HOSTILE = HOSTILE + [
    "nai\u0308ve",  # NFD
    "İstanbul ıstanbul",  # Turkish dotted/dotless i
    "straße STRASSE",
    "东京都庁舎に行く予定です東京都庁舎に行く予定です",  # CJK, no spaces
    "e\u0301\u0301\u0301\u0301\u0301",  # stacked combining marks
    "a\u200db\u200cc\u2060d",  # zero-width joiner / non-joiner / word joiner
    "👩\u200d👩\u200d👧\u200d👦 family",
    "1234567890 000000 ٣٤٥ ½ x²",
    "don't won't O'Reilly l'été ''' ``",
    "\"\"\"\" '''' NEAR(a b) a:b {a b}: ^a -b +c a* *a",
    "\ue000private\ue001use",
    "\U0010fffd\U000e0001tag",
    "x" * 10_000,
    "kuberntes " * 300,
    " ".join(["AND", "OR", "NOT", "NEAR"] * 100),
]


def _add(store: Store, texts: list[str]) -> None:
    store.insert_many([Memory(id="", text=t) for t in texts])


def _texts_of(store: Store, hits: list[tuple[int, float]]) -> list[str]:
    found = store.by_seqs([seq for seq, _ in hits])
    return [found[seq].text for seq, _ in hits if seq in found]


def _search(store: Store, query: str, prefix: bool = False) -> list[str]:
    plan = store.keywords.plan(query, prefix=prefix)
    if plan.expression is None:
        return []
    return _texts_of(store, store.keywords.search(plan.expression, Filters(), 10))


@pytest.fixture
def store(store) -> Store:
    _add(store, TEXTS)
    return store


# ---- bugs ----------------------------------------------------------------------------


def test_an_index_out_of_sync_does_not_crash_the_plan(engine, store):
    # GIVEN a keyword index holding more rows than the memories table (what `mnemo doctor`
    # reports as "keyword index out of sync"; also what a plan sees when another process
    # inserts between its count(*) and its fts5vocab lookup)
    _add(store, ["zebra crossing rules"])
    for rowid in (998, 999):
        store.db.conn.execute(
            "INSERT INTO memories_fts(rowid, title, text) VALUES (?, '', 'zebra stripes')", (rowid,)
        )
    # THEN searching still works: idf() is not asked for log of a negative number
    plan = store.keywords.plan("zebra")  # ValueError: math domain error
    assert math.isfinite(plan.ideal)
    result = engine.recall("zebra", mode="keyword", track=False)
    assert [r.memory.text for r in result.results] == ["zebra crossing rules"]


@pytest.mark.parametrize("nested", [False, True])
def test_the_vocabulary_table_survives_a_rolled_back_transaction(store, nested):
    # GIVEN the first keyword plan of a Store made inside a write transaction that fails
    _add(store, ["Kubernetes staging deploy"])
    with pytest.raises(RuntimeError), store.db.write():
        if nested:
            with store.db.write():
                assert store.keywords.plan("kubernetes").expression
                raise RuntimeError("inner failure")
        assert store.keywords.plan("kubernetes").expression
        raise RuntimeError("failure")
    # THEN the rollback took temp.mnemo_vocab with it, but later plans still work
    # (today: apsw.SQLError "no such table: temp.mnemo_vocab" for the Engine's life)
    assert store.keywords.plan("kubernetes").expression == '"kubernetes"'


@pytest.mark.parametrize(
    ("word", "memory"),
    [
        ("running", "Running the test suite"),  # "runn", "runni" find nothing
        ("generalization", "Generalization error"),  # "generaliz" … "generalizatio"
        ("responsibilities", "Responsibilities of"),  # "responsibil" … "responsibilitie"
        ("polling", "Polling the queue"),  # "polli" is "corrected" to "pole"
        ("positioned", "The widget is positioned"),  # "positione" becomes "portion"
    ],
)
def test_typing_a_word_keeps_finding_its_memory_at_every_keystroke(store, word, memory):
    # Search as you type: every prefix of a word the collection holds finds that memory,
    # and is never "corrected" to another word of the collection.
    lost = []
    for end in range(4, len(word) + 1):
        typed = word[:end]
        if not any(t.startswith(memory) for t in _search(store, typed, prefix=True)):
            lost.append((typed, store.keywords.plan(typed, prefix=True).expression))
    assert lost == []


@pytest.mark.parametrize(("typed", "memory"), [("she", "Shell"), ("over", "Overflow")])
def test_typing_a_stop_word_that_starts_a_word_finds_it(store, typed, memory):
    # "she" on the way to "shell", "over" on the way to "overflow": the last, unfinished
    # word is a prefix, not a stop word (once a space follows, it is one again)
    assert any(t.startswith(memory) for t in _search(store, typed, prefix=True))
    assert store.keywords.plan(typed + " ", prefix=True).expression is None


@pytest.mark.parametrize(
    ("composed", "memory"),
    [("naïve", "A naïve approach"), ("München", "Grüße aus"), ("Ελληνικά", "Ελληνικά")],
)
def test_a_decomposed_query_matches_like_a_composed_one(store, composed, memory):
    # Memories are stored NFC; a query pasted from a macOS file name or a web page in NFD
    # ("nai" + U+0308 + "ve") is split by Python's \w at the combining mark ("nai ve"),
    # where FTS5's unicode61 keeps one token ("naiv"), so it matches nothing.
    decomposed = unicodedata.normalize("NFD", composed)
    assert decomposed != composed
    assert any(t.startswith(memory) for t in _search(store, composed))
    assert any(t.startswith(memory) for t in _search(store, decomposed))


def test_no_correction_is_announced_from_the_trash(engine):
    # GIVEN the only memory holding "kubernetes" is in the trash (trashed rows stay in
    # memories_fts, so fts5vocab still counts their words)
    trashed = engine.remember("Kubernetes staging deploy with helm upgrade").memory
    engine.remember("Deploy the tomato watering robot to the greenhouse", force=True)
    engine.forget([trashed.id])
    result = engine.recall("kuberntes deploy", mode="keyword", track=False)
    assert [r.memory.text[:6] for r in result.results] == ["Deploy"]
    # THEN the notice neither claims a match no result holds nor shows a trashed word
    # (today: 'matched “kuberntes” as “kubernet…”')
    assert "kubernet" not in (result.notice or "")


def test_a_correction_left_out_of_a_long_query_is_not_announced(store):
    # GIVEN a common word (in every memory) misspelt in a query of 41 phrases: a paragraph
    # is not proofread (bounded cost), so nothing is corrected or announced
    _add(store, [f"kubernetes note about subject{i}" for i in range(40)])
    query = "kuberntes " + " ".join(f"subject{i}" for i in range(40))
    plan = store.keywords.plan(query)
    assert plan.left_out == 8 and plan.corrections == {}
    # THEN it is not reported as matched: only corrections that were searched are
    for typed, stem in plan.corrections.items():
        assert f'"{stem}"' in plan.expression, f"{typed} → {stem} was not searched"


def test_a_correction_is_found_after_an_edit_that_keeps_the_count(engine, store):
    # The Lexicon caches corrections per word until the number of memories changes: an
    # edit (or an insert and a purge by another process) leaves it stale.
    _add(store, ["Kubernetes staging deploy", "horses in the field"])
    assert store.keywords.plan("zebrra").corrections == {}  # nothing near: cached
    horses = engine.recall("horses", mode="keyword", track=False).results[0].memory
    engine.edit(horses.id, text="zebras in the field")
    assert store.keywords.plan("zebra").expression == '"zebra"'
    assert store.keywords.plan("zebrra").corrections == {"zebrra": "zebra"}


def test_a_pasted_page_of_unknown_words_plans_quickly(store):
    # A page in another language, or of typos, pasted into the search: every 5-30 letter
    # word no memory holds costs ~4-25 ms of fts5vocab lookups (hundreds of edit variants
    # each), with no bound on how many: 300 such words take ~1.2 s on 2 cores today
    # (README.md pasted into a 5,000-memory collection: 0.5 s; 1,000 words: 7 s). The
    # correction cache only helps the next keystroke, not the first search.
    _add(store, TEXTS)
    store.keywords.plan("warm up")
    rng = random.Random(0)
    page = " ".join(
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(6, 12)))
        for _ in range(300)
    )
    started = time.perf_counter()
    store.keywords.plan(page)
    assert time.perf_counter() - started < 0.3


@pytest.mark.parametrize("others", [0, 3])
def test_one_unknown_word_does_not_hide_a_memory_holding_the_rest(engine, others):
    # A new user's first memories, keywords only (as when the model is unavailable): a
    # phrase no memory holds counts idf(0, N), the largest of all, in the query's ideal,
    # while words of a tiny collection sit at FTS5's floor of 1e-6; "tips" alone pushes
    # the memory holding "kubernetes" and "helm" below the relevance floor.
    texts = ["Kubernetes staging deploy with helm upgrade"]
    texts += ["Water the tomatoes", "Feed the sourdough", "Dentist at ten"][:others]
    for text in texts:
        engine.remember(text, force=True)
    assert engine.recall("kubernetes helm", mode="keyword", track=False).results
    result = engine.recall("kubernetes helm tips", track=False)
    assert [r.memory.text[:10] for r in result.results] == ["Kubernetes"]
    if others == 0:  # keywords alone: two of three words held (with 3 others: just under)
        alone = engine.recall("kubernetes helm tips", mode="keyword", track=False)
        assert [r.memory.text[:10] for r in alone.results] == ["Kubernetes"]


# ---- properties that hold ------------------------------------------------------------

ALPHABET = st.sampled_from(
    list("abcdefghijklmnopqrstuvwxyz ABCXYZ0123456789_-.:'\"*^()+{}")
    + list("éèüßıİçñøåæœ")
    + list("дмитрийΑΒΓαβγ東京都ع ש")
    + ["\u0301", "\u0308", "\u200d", "\u200b", "\ue000", "🙂", "\t", "\n", "\u3000"]
)
HOSTILE_TEXT = st.one_of(
    st.text(max_size=200),
    st.text(alphabet=ALPHABET, max_size=120),
    st.lists(st.sampled_from([w for t in TEXTS for w in t.split()]), max_size=12).map(" ".join),
)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=HOSTILE_TEXT, prefix=st.booleans())
def test_any_text_plans_to_a_valid_match_expression(store, text, prefix):
    plan = store.keywords.plan(text, prefix=prefix)
    if plan.expression is not None:
        store.db.conn.execute(
            "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?", (plan.expression,)
        ).fetchall()
        store.keywords.search(plan.expression, Filters(), 5)
    assert math.isfinite(plan.ideal) and plan.ideal >= 0
    assert plan.left_out >= 0
    typed = {w.lower() for w in fts.words(text)}
    known = store.keywords.lexicon.docs(
        [s for w in plan.corrections for s in store.keywords.lexicon.stems(w)]
    )
    for word in plan.corrections:
        assert word in typed  # a correction is of a word the user typed …
        assert not known  # … that no memory holds


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    words=st.lists(
        st.sampled_from(sorted({w.lower() for t in TEXTS for w in fts.words(t)})),
        min_size=1,
        max_size=6,
    )
)
def test_words_the_collection_holds_are_never_corrected(store, words):
    assert store.keywords.plan(" ".join(words)).corrections == {}
    assert store.keywords.plan(" ".join(words) + " ", prefix=True).corrections == {}


@pytest.mark.parametrize(
    "query", ["E0501", "E_CONN_RESETT", "abc123def", "values-stagin.yaml", "12345", "x2y"]
)
def test_identifiers_are_never_corrected(store, query):
    assert store.keywords.plan(query).corrections == {}
    assert store.keywords.plan(query, prefix=True).corrections == {}


def test_huge_queries_and_words_plan_quickly(store):
    for query in ["lorem " * 20_000, "a" * 100_000, '"' * 100_000, "x" * 10_000, "é" * 50_000]:
        started = time.perf_counter()
        plan = store.keywords.plan(query, prefix=True)
        assert time.perf_counter() - started < 1.0, query[:20]
        if plan.expression:
            store.keywords.search(plan.expression, Filters(), 5)


def _check(result) -> None:
    for r in result.results:
        for value in (r.score, r.relevance, r.keyword_norm, r.vector_norm, r.prominence_norm):
            assert 0.0 <= value <= 1.0 and not math.isnan(value)
    assert result.notice is None or ("\n" not in result.notice and len(result.notice) < 2_000)
    json.dumps(result.to_dict(explain=True))


@pytest.mark.parametrize("collection", ["empty", "one", "trashed only"])
def test_hostile_queries_on_small_collections(engine, collection):
    if collection != "empty":
        memory = engine.remember("Kubernetes staging deploy with helm upgrade").memory
    if collection == "trashed only":
        engine.forget([memory.id])
    for query in MORE_HOSTILE + ["kuberntes", "kube", "k"]:
        if not query.strip():
            continue
        for prefix in (False, True):
            _check(engine.recall(query, mode="keyword", track=False, prefix=prefix))


def test_hostile_queries_score_within_0_and_1_with_meaning(store, engine):
    for query in MORE_HOSTILE[::3] + ["kuberntes deploy", "E_CONN_RESET", "naïve caching"]:
        if query.strip():
            _check(engine.recall(query[:2_000], track=False, prefix=True))


def test_a_read_only_database_plans_and_corrects(store, engine):
    ro = Store(Database(store.db.path, read_only=True))
    assert ro.db.read_only
    plan = ro.keywords.plan("kuberntes")
    assert plan.corrections == {"kuberntes": "kubernet"}
    assert _texts_of(ro, ro.keywords.search(plan.expression, Filters(), 5))[0].startswith("Kube")
    assert ro.keywords.plan("kube", prefix=True).expression == '"kube" *'
    ro.db.close()


def test_the_plan_sees_what_another_connection_wrote(store, engine):
    assert store.keywords.plan("zebra").expression is None  # the vocab table exists now
    other = Store(Database(store.db.path))
    _add(other, ["zebra crossing rules"])
    other.db.close()
    assert store.keywords.plan("zebra").expression == '"zebra"'
    assert store.keywords.plan("zebrra").corrections == {"zebrra": "zebra"}


def test_cli_recall_with_hostile_queries(engine):
    engine.remember("Kubernetes staging deploy with helm upgrade")
    engine.close()
    query = '"kuberntes" AND (deploy*) ^helm: 🙂 \u200d \''  # a typo in FTS5 syntax
    result = run_cli("recall", "--mode", "keyword", "--json", "--no-track", query)
    assert result.returncode == 0, result.stderr.decode()
    out = json.loads(result.stdout)
    assert out["results"][0]["text"].startswith("Kubernetes")
    assert "kubernetes" in out["notice"]


# Found by a tester on the personal set: real words the collection lacks were "corrected"
# into other words, and the answers were confident and wrong ("floor tiles" gave the
# pancake recipe through flour and the school run through times; "Stripe" the editor
# settings through strip; "userId" a note about users).
@pytest.mark.parametrize(
    ("query", "held"),
    [
        ("floor tiles", "Pancakes: more flour next time, fewer times stirred"),
        ("police station", "The policies of the car insurance"),
        ("Stripe", "Strip trailing whitespace on save"),
        ("monster trucks", "Monstera care: water weekly"),
        ("computers", "Commuting by train"),
        ("userId", "Users logged out on staging"),
        ("EACCES", "Each deploy bumps the tag"),
        ("getUserName", "The username field is required"),
    ],
)
def test_real_words_and_cased_identifiers_are_never_corrected(store, query, held):
    _add(store, [held, "Something else entirely about gardening"])
    assert store.keywords.plan(query).corrections == {}
    assert store.keywords.plan(query + " ", prefix=True).corrections == {}
    if query[1:] != query[1:].lower():
        # an identifier being typed is not shortened to a stem either (found in review:
        # the popup searched `userId` as `user*`); a word being typed is, on purpose
        # (test_typing_a_word_keeps_finding_its_memory_at_every_keystroke)
        typed = store.keywords.plan(query, prefix=True)
        last = typed.phrases[-1]
        assert last.prefix and last.corrected is None and typed.corrections == {}


def test_misspelt_words_are_still_corrected(store):
    _add(store, ["Kubernetes staging deploy", "Postgres pool", "Receive webhooks"])
    for typo in ("kuberntes", "postgress", "recieve", "webhok"):
        assert typo in store.keywords.plan(typo).corrections, typo


def test_without_the_bundled_model_typos_are_still_corrected_and_it_is_said_once(
    store, monkeypatch, tmp_path, caplog
):
    from app.core import paths

    monkeypatch.setattr(fts, "_DICTIONARY", None)
    monkeypatch.setattr(fts, "_WARNED", False)
    monkeypatch.setattr(paths, "DEFAULT_MODEL", tmp_path / "missing.gguf")
    _add(store, ["Kubernetes staging deploy"])
    with caplog.at_level("WARNING"):
        for _ in range(3):
            assert "kuberntes" in store.keywords.plan("kuberntes").corrections
    assert sum("English word list" in r.getMessage() for r in caplog.records) == 1
    assert fts._DICTIONARY is None  # not cached empty: the model may come back
