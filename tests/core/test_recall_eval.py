"""Recall you can trust, measured on the personal evaluation set with the real model.

The set (tests/core/data/recall_eval/, see its README) was written before any tuning and is
never edited to fit. Goals from issue 9: hit@1 ≥ 0.95 and hit@3 = 1.0 on the real queries,
≥ 90 % of the nothing-queries answered with nothing; issue 20 keeps them and adds that no
keyboard mash or gibberish is ever answered. bench/personal.py prints the misses.
"""

from __future__ import annotations

import pytest

from bench.personal import evaluate, fill


@pytest.fixture(scope="module")
def scored(embedder, tmp_path_factory):
    import os

    from app.core.engine import Engine

    home = tmp_path_factory.mktemp("personal")
    old = os.environ.get("MNEMO_HOME")
    os.environ["MNEMO_HOME"] = str(home)
    try:
        engine = Engine(embedder=embedder)
        score = evaluate(engine, fill(engine))
        engine.close()
    finally:
        if old is not None:
            os.environ["MNEMO_HOME"] = old
    return score


@pytest.mark.slow
def test_real_queries_find_their_answer_first(scored):
    assert scored.real >= 40
    assert scored.hit1 >= 0.95, "\n".join(scored.misses)


@pytest.mark.slow
def test_real_queries_find_their_answer_in_the_top_three(scored):
    # Goal 1.0, met since issue 20: "what did we agree for next quarter" shares little with
    # "Q3 planning: agreed to migrate…", but a question about the user's own things is
    # answered with its weak matches instead of cut at a floor.
    assert scored.hit3 == 1.0, "\n".join(scored.misses)


@pytest.mark.slow
def test_queries_about_nothing_get_nothing(scored):
    assert scored.nothing >= 30
    # Goal 0.90; measured 38 of 41 since issue 20 (39 when weak matches were cut one by
    # one, at the cost of a quarter of real questions elsewhere answered with nothing)
    assert scored.abstained >= 0.90, "\n".join(scored.misses)
    # No keyboard mash or random word string is ever answered
    assert not [m for m in scored.misses if m.startswith(("nothing (gibberish)", "nothing (mash)"))]


@pytest.mark.slow
def test_a_query_sharing_only_a_labelled_word_is_not_an_answer(engine):
    # The labels repeat a memory's salient words: counted at full weight next to the text,
    # "beef wellington recipe" matched the sourdough note by "recipe" twice over and showed
    # it as an answer. A memory found by its labels alone keeps their full weight
    # (test_agent_memory.py::test_labels_are_searchable_and_editable).
    ids = fill(engine)
    loaf = engine.get(ids["sourdough-loaf"])
    assert any("recipe" in label for label in loaf.keywords or [])
    # At most a weak match (issue 20: shown marked weak, not hidden), never an answer
    weak = engine.recall("beef wellington recipe", track=False).results
    assert all(r.band == "weak" for r in weak), [(r.memory.title, r.score) for r in weak]
    hits = engine.recall("sourdough bread recipe", track=False).results
    assert hits and hits[0].memory.id == loaf.id


@pytest.mark.slow
def test_one_rare_word_of_a_memory_finds_it_by_default(engine):
    # Found by a tester: hybrid search dropped keyword hits whose cosine was under 0.05, so
    # one exact word held by a single memory ("allkeys", "opaque") came back empty in the
    # default mode while keyword mode found it: 97 of 627 such words. Calibrated keyword
    # relevance already tells one common word of four from an answer.
    ids = fill(engine)
    for word, answer in (
        ("allkeys", "redis-session-eviction"),
        ("opaque", "api-pagination-decision"),
        ("builder", "docker-disk-cleanup"),
    ):
        hits = engine.recall(word, track=False).results
        assert hits and hits[0].memory.id == ids[answer], word
        # the session-start context asked about it finds it too
        block = engine.context(query=word, track=False, cwd=None)
        assert ids[answer] in [m.id for m, _ in block.memories][:1], word


@pytest.mark.slow
def test_a_keyword_given_to_a_memory_finds_it_by_default(engine):
    # A project codename as a label has no meaning in common with the text: found only in
    # keyword mode before.
    ids = fill(engine)
    engine.edit(ids["flat-tenancy"], keywords="orion, gemini")
    for word in ("orion", "gemini"):
        hits = engine.recall(word, track=False).results
        assert [h.memory.id for h in hits][:1] == [ids["flat-tenancy"]], word


@pytest.mark.slow
def test_a_mash_gets_nothing_beside_hundreds_of_near_identical_notes(engine):
    # Found on a screenshot: with 400 meeting notes from one template the query's crowd of
    # cosines is raised and tight, and "zxqv blorft wibble" listed eight of them as weak
    # matches. A raised crowd now needs a memory that stands out of it.
    fill(engine)
    for i in range(400):
        engine.remember(
            f"Meeting note {i}: agreed next steps for the quarterly plan, owner {i % 7}",
            force=True,
        )
    for mash in ("zxqv blorft wibble", "asdfgh jkl", "florp minthax quibbly"):
        assert engine.recall(mash, track=False).results == [], mash
    hits = engine.recall("quarterly plan owner", track=False).results
    assert hits and hits[0].memory.text.startswith("Meeting note")
