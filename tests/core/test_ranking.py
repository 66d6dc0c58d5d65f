"""Ranking arithmetic with hand-made vectors (the one place a fake embedder is allowed)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from app.core.engine import Engine
from app.core.memory import Memory
from app.core.model.embedder import ModelInfo
from app.core.search.ranking import (
    PARTIAL,
    Band,
    Evidence,
    Scored,
    Weights,
    about_something,
    band_among,
    band_of,
    chance_cosine,
    combine,
    cosine_crowd,
    holds_question,
    keyword_relevance,
    personal,
    prominence,
    rare_name,
    vector_relevance,
)

DIM = 16
NOW = datetime(2026, 6, 1, tzinfo=UTC)


class HandMadeEmbedder:
    """Returns a fixed query vector; documents get vectors stored by the test."""

    def __init__(self, query: np.ndarray):
        self.info = ModelInfo(
            path=Path("hand-made.gguf"),
            name="hand-made",
            architecture="test",
            dimension=DIM,
            trained_context=512,
            window=256,
            sha256="0" * 64,
            query_prefix="",
            document_prefix="",
        )
        self.query = query

    def embed_query(self, text: str) -> np.ndarray:
        return self.query

    def spare_core(self) -> bool:
        return False

    def embed_documents(self, texts):
        return [None for _ in texts]

    def close(self):
        pass


def _unit_with_cosine(axis: np.ndarray, cosine: float, rng) -> np.ndarray:
    noise = rng.normal(size=DIM).astype(np.float32)
    noise -= (noise @ axis) * axis
    noise /= np.linalg.norm(noise)
    return (cosine * axis + np.sqrt(1 - cosine**2) * noise).astype(np.float32)


def test_acceptance_1b_ranking_with_hand_made_vectors(mnemo_home, store):
    rng = np.random.default_rng(7)
    query = np.zeros(DIM, dtype=np.float32)
    query[0] = 1.0
    engine = Engine(embedder=HandMadeEmbedder(query))
    engine.settings.set("min_similarity", 0.0)
    model_id = engine.embedder.info.model_id
    stamp = datetime.now(UTC).isoformat()
    for i in range(50):
        parser = i < 20
        cosine = rng.uniform(0.81, 0.95) if parser else rng.uniform(0.0, 0.29)
        memory = store.insert(
            Memory(
                id="",
                text=f"{'parser' if parser else 'other'} memory number {i}",
                category="parser" if parser else "other",
                created_at=stamp,
                updated_at=stamp,
            )
        )
        store.vectors.save(memory.id, model_id, "h", _unit_with_cosine(query, cosine, rng)[None, :])
    result = engine.recall("unrelated words", limit=25, track=False)
    top = [r.memory.category for r in result.results]
    assert top.count("parser") >= 18
    assert top[:20] == ["parser"] * 20


def _scored(seq, v=0.0, k=0.0, prominence=0.5):
    """A candidate with calibrated signals (relevance by meaning v, by keywords k)."""
    return Scored(
        memory=Memory(id=str(seq), text="t"),
        seq=seq,
        vector_norm=v,
        keyword_norm=k,
        prominence=prominence,
    )


def test_vector_relevance_is_zero_in_the_querys_crowd_and_rises_in_its_spread():
    mean, std = 0.05, 0.1  # the crowd's edge: 0.05 + 2 × 0.1 = 0.25; a unit of 6 σ = 0.6
    v = vector_relevance(np.array([-0.3, 0.1, 0.25, 0.55, 0.85]), mean, std)
    assert v.tolist() == pytest.approx([0, 0, 0, np.tanh(0.5), np.tanh(1.0)])
    # The same standing in another model's scale (cosines crowded near 0.6) means the same
    assert vector_relevance(np.array([0.725]), 0.6, 0.025)[0] == pytest.approx(np.tanh(0.5))
    # A crowd widened by many relevant memories counts σ at most 0.1
    assert vector_relevance(np.array([0.85]), 0.05, 0.3)[0] == pytest.approx(np.tanh(1.0))


def test_the_crowd_of_a_small_collection_leans_on_the_prior():
    # One memory, its cosine 0.5: its own cosine is not the crowd, the prior is.
    assert cosine_crowd(np.array([0.5])) == pytest.approx((0.05, 0.09))
    mean, std = cosine_crowd(np.full(5, 0.5))  # four others at 0.5 pull it only part way
    assert 0.15 < mean < 0.25 and std > 0.1
    big = np.random.default_rng(1).normal(0.3, 0.12, 100_000)
    assert cosine_crowd(big) == pytest.approx((0.3, 0.12), abs=0.002)
    # A crowd much tighter than unrelated texts' spread (near-identical notes) counts 0.075:
    # a note a little closer than 400 copies of one template does not stand out of them
    tight = np.random.default_rng(1).normal(0.3, 0.03, 100_000)
    assert cosine_crowd(tight) == pytest.approx((0.3, 0.075), abs=0.002)
    assert vector_relevance(np.array([0.45]), *cosine_crowd(tight))[0] < 0.01


def test_a_collection_mostly_about_the_query_does_not_raise_its_own_bar():
    # 40 % of the memories at 0.8, the rest at 0.1: the median, not the mean, is the centre
    cosines = np.array([0.8] * 40 + [0.1] * 60)
    mean, std = cosine_crowd(cosines)
    assert mean == pytest.approx(0.1, abs=0.01)
    assert vector_relevance(np.array([0.8]), mean, std)[0] > 0.5


def test_keyword_relevance_is_bm25_over_the_querys_ideal_saturating():
    k = keyword_relevance(np.array([0.0, 2.0, 4.0, 40.0]), 4.0)
    assert k.tolist() == pytest.approx([0, 0.85 * np.tanh(1.0), 0.85 * np.tanh(2.0), 0.85])
    assert keyword_relevance(np.array([3.0]), 0.0).tolist() == [0]


def test_either_signal_alone_makes_a_memory_relevant_and_agreement_adds():
    ranked = combine(
        [_scored(1, v=0.8), _scored(2, k=0.8), _scored(3, v=0.6, k=0.6)], Weights(1, 1, 0)
    )
    by_seq = {c.seq: c.relevance for c in ranked}
    assert by_seq == pytest.approx({1: 0.8, 2: 0.8, 3: 1 - 0.4 * 0.4})
    # Weights scale the two signals so the larger is 1: keyword counting half of meaning
    halved = {c.seq: c.relevance for c in combine([_scored(1, k=0.8)], Weights(0.6, 0.3, 0))}
    assert halved[1] == pytest.approx(0.4)


def test_scores_are_absolute_not_relative_to_the_best_candidate():
    # The old max-normalization gave the best of a weak lot 1.00 (a full bar for nonsense).
    weak = combine([_scored(1, v=0.1), _scored(2, v=0.05)], Weights(1, 0, 0))
    assert weak[0].score < 0.15 and weak[0].score < PARTIAL
    assert band_of(weak[0].score) is Band.WEAK


def test_bands_name_what_a_score_says():
    assert [band_of(s) for s in (0.9, 0.6, 0.59, 0.38, 0.37, 0.0)] == [
        Band.STRONG, Band.STRONG, Band.PARTIAL, Band.PARTIAL, Band.WEAK, Band.WEAK,
    ]  # fmt: skip


def test_a_query_is_answered_when_anything_speaks_for_it():
    # Keywords alone (no meaning): a memory at least partly about it
    assert about_something(Evidence(best=0.4))
    # Nothing partly about it, and nothing else speaks for it: a query about nothing
    nothing = Evidence(best=0.2, best_cosine=0.2, crowd_centre=0.03, collection=60)
    assert not about_something(nothing)
    # A collection all about the query's subject (one life, one project): its crowd is high,
    # and a memory still stands out of it; a keyboard mash against 400 near-identical notes
    # raises the crowd too, but nothing stands out
    assert about_something(Evidence(best=0.1, best_cosine=0.4, crowd_centre=0.2, collection=60))
    mash = Evidence(best=0.0, best_cosine=0.244, crowd_centre=0.149, collection=456)
    assert not about_something(mash)
    # A cosine beyond what chance gives the best of N unrelated memories; that bar rises
    # with N (the best of 100,000 unrelated texts comes closer than the best of 50)
    assert about_something(Evidence(best=0.2, best_cosine=0.36, crowd_centre=0.0, collection=60))
    big = Evidence(best=0.2, best_cosine=0.36, crowd_centre=0.0, collection=100_000)
    assert not about_something(big)
    assert chance_cosine(60) < chance_cosine(1_000) < chance_cosine(100_000)
    # The user's own things: a weak match is enough ("what did we agree for next quarter",
    # its answer among 56 notes: cosine 0.21, and nothing else near it)
    assert about_something(Evidence(best=0.21, best_cosine=0.212, crowd_centre=0.05,
                                    collection=56, personal=True, standout=0.212))  # fmt: skip
    assert not about_something(Evidence(best=0.1, personal=True))


def test_two_weak_witnesses_of_different_memories_are_no_answer_at_size():
    # Issue 41: among 5,000 memories, "how to remove red wine stains from a carpet" met a
    # memory 0.49 'partly' about it (a weak cosine and a weak keyword combined) and was
    # answered; so was any word held by five memories ("cat" found `cat --help`)
    stains = Evidence(best=0.49, best_cosine=0.28, crowd_centre=0.0, collection=5_000,
                      standout=0.05, agreement=0.15, keyword_best=0.28)  # fmt: skip
    assert not about_something(stains)
    cat = Evidence(best=0.3, best_cosine=0.25, crowd_centre=0.0, collection=5_000,
                   rare_word=True, standout=0.04, agreement=0.1, keyword_best=0.45)  # fmt: skip
    assert not about_something(cat)
    # The same evidence among 60 memories is a fair answer: chance gives the best of 60 less
    assert about_something(Evidence(best=0.49, best_cosine=0.28, crowd_centre=0.0,
                                    collection=60, standout=0.2, agreement=0.15))  # fmt: skip
    # Meaning and keywords agreeing on one memory answer at any size
    agreed = Evidence(best=0.7, best_cosine=0.38, crowd_centre=0.0, collection=5_000,
                      standout=0.15, agreement=0.45, keyword_best=0.5)  # fmt: skip
    assert about_something(agreed)
    # So do words that clearly say so (a rare word of a memory, a codename it was given),
    # of a memory holding every word asked
    words = Evidence(best=0.64, best_cosine=0.1, crowd_centre=0.0, collection=5_000,
                     keyword_best=0.64, words_held=True)  # fmt: skip
    assert about_something(words)


def test_words_say_so_alone_only_from_a_memory_holding_every_word_asked():
    # Issue 41: "one decision at least as strict as each of its parts". Among 5,000 mixed
    # memories "who invented the telephone" met a memory holding 'telephone' (keyword
    # relevance 0.55) and was answered whatever meaning said (best cosine 0.27)
    telephone = Evidence(best=0.55, best_cosine=0.27, crowd_centre=0.0, collection=5_000,
                         standout=0.08, keyword_best=0.55, rare_word=True)  # fmt: skip
    assert not about_something(telephone)
    # A memory holding every word asked (a codename given as a label): answered as before
    assert about_something(replace(telephone, words_held=True))
    # Words saying so of a part of the query still count, with evidence beyond chance
    assert about_something(replace(telephone, best_cosine=0.38, agreement=0.2))


def test_two_weak_witnesses_must_beat_chance_by_a_margin():
    # "how to remove red wine stains from a carpet" among 5,000 memories: a weak cosine and
    # a weak keyword match agreeing on one memory lifted it 0.008 past chance: answered
    chance = chance_cosine(5_000)
    wine = Evidence(best=0.49, best_cosine=0.28, crowd_centre=0.0, collection=5_000,
                    standout=0.09, agreement=0.28, keyword_best=0.34)  # fmt: skip
    lifted = 0.28 + 0.22 * 0.09 + 0.55 * 0.28
    assert chance < lifted < chance + 0.015 and not about_something(wine)
    assert about_something(replace(wine, agreement=0.32))  # 0.03 past it: answered


def test_personal_questions_speak_of_the_user():
    assert personal("what did we agree for next quarter")
    assert personal("my laptop drive is full again") and personal("how do I fix the heating")
    assert not personal("how do volcanoes form") and not personal("kubernetes iptables")


def test_prominence_breaks_near_ties_but_never_lifts_the_irrelevant():
    weights = Weights(0.4, 0.3, 0.3)
    # A clearly better match stays first against a pinned, much-recalled, high-confidence one.
    ranked = combine(
        [_scored(1, v=0.7, prominence=0.0), _scored(2, v=0.6, prominence=1.0)], weights
    )
    assert [c.seq for c in ranked] == [1, 2]
    # A near-tie goes to the more prominent memory.
    ranked = combine(
        [_scored(1, v=0.62, prominence=0.0), _scored(2, v=0.6, prominence=1.0)], weights
    )
    assert [c.seq for c in ranked] == [2, 1]
    # An irrelevant memory stays at 0 however prominent it is.
    ranked = combine([_scored(1, prominence=1.0)], weights)
    assert ranked[0].score == 0.0
    assert all(0 <= c.score <= 1 for c in combine([_scored(1, 1, 1, 1)], weights))


def _memory(days_old: float, **kw) -> Memory:
    stamp = (NOW - timedelta(days=days_old)).isoformat()
    return Memory(id="x", text="t", updated_at=stamp, created_at=stamp, **kw)


def test_prominence_components():
    fresh = prominence(_memory(0), max_observations=1, now=NOW)
    assert fresh == pytest.approx((1 + 2 / 3 + 1 + 0) / 4)
    month = prominence(_memory(30), max_observations=1, now=NOW)
    assert month == pytest.approx((1 + 2 / 3 + 0.5 + 0) / 4)
    busy = prominence(
        _memory(90, observation_count=2, confidence="high", recall_count=25),
        max_observations=4,
        now=NOW,
    )
    assert busy == pytest.approx((0.5 + 1 + 0.25 + 1) / 4)


def test_pinned_memories_do_not_decay():
    assert prominence(_memory(365, pinned=True), 1, NOW) == prominence(_memory(0), 1, NOW)
    assert prominence(_memory(365), 1, NOW) < prominence(_memory(0), 1, NOW)


def test_a_keyword_match_far_from_meaning_needs_clear_words():
    from app.core.search.ranking import unsupported

    cos = np.array([0.01, 0.01, 0.2, np.nan])
    kw = np.array([0.35, 0.64, 0.1, 0.1])
    # far and weak: dropped; far but clear (one rare word, a label): kept; near: kept;
    # no vectors yet (NaN): kept, found by keywords
    assert unsupported(cos, kw, 0.15).tolist() == [True, False, False, False]


def test_strong_means_meaning_and_keywords_agree_on_the_best():
    # Issue 41: "what's the capital of Australia?" got 'human capital in Australia' banded
    # strong (0.76): a shared topic and shared words, little shared meaning
    assert band_among(0.76, vector=0.35, keyword=0.63, best=0.76) is Band.PARTIAL
    # Both witnesses agree, and it is the best: strong
    assert band_among(0.8, vector=0.55, keyword=0.6, best=0.8) is Band.STRONG
    # Meaning alone saying so clearly is enough, and so are words holding nearly all asked
    assert band_among(0.75, vector=0.75, keyword=0.0, best=0.75) is Band.STRONG
    assert band_among(0.8, vector=0.1, keyword=0.8, best=0.8) is Band.STRONG
    # A strong score well below the best answer is partial; weak and partial stay as they are
    assert band_among(0.7, vector=0.6, keyword=0.6, best=0.9) is Band.PARTIAL
    assert band_among(0.5, vector=0.1, keyword=0.6, best=0.9) is Band.PARTIAL
    assert band_among(0.2, vector=0.1, keyword=0.1, best=0.9) is Band.WEAK


def test_strong_holds_what_the_question_asks_not_only_its_topic():
    # Issue 41: "what's the excess on our contents insurance?" beside the contents insurance
    # note (no excess in it) was strong, 0.88: both witnesses agreed on a shared topic. Strong
    # now needs most of the question's words held (80 %), or many (60 %) and a cosine of 0.65+
    assert not holds_question(held=2 / 3, cosine=0.56)
    assert band_among(0.88, 0.72, 0.7, 0.88, holds=holds_question(2 / 3, 0.56)) is Band.PARTIAL
    assert holds_question(held=1.0, cosine=0.3)  # every word held ("boilr pressure", 'F22')
    assert holds_question(held=0.6, cosine=0.7)  # a paraphrase very close in meaning
    assert not holds_question(held=0.5, cosine=0.7)
    # A query with no words to hold (all stop words): its meaning alone, very close
    assert holds_question(held=None, cosine=0.7) and not holds_question(held=None, cosine=0.5)
    # Strong is the best agreed answer or within 0.02 of it (0.05 before: second and third
    # results 0.03-0.05 below the answer were other commands and other abstracts)
    assert band_among(0.85, vector=0.7, keyword=0.7, best=0.88) is Band.PARTIAL
    assert band_among(0.87, vector=0.7, keyword=0.7, best=0.88) is Band.STRONG


def test_a_rare_name_or_code_is_a_clue_a_rare_plain_word_is_not():
    from app.core.storage.fts import Phrase

    def phrases(*held):
        return [Phrase(words=[w], stems=[w], docs=n) for w, n in held]

    # SciFact's "CCL19 is absent within dLNs." among 5,183 abstracts: CCL19 names a thing
    assert rare_name("CCL19 is absent within dLNs.", phrases(("ccl19", 3), ("absent", 90)), 5183)
    assert rare_name("0-dimensional biomaterials", [Phrase(["0", "dimensional"], [], 2)], 5183)
    # "cat" among shell notes is as rare, but a plain word
    assert not rare_name("my cat's kidney test", phrases(("cat", 3), ("kidney", 40)), 5183)
    # a name held by many memories, or by none, is no clue
    assert not rare_name("BRCA1 mutations", phrases(("brca1", 60)), 5183)
    assert not rare_name("XJ9 robot", phrases(("xj9", 0)), 5183)


def test_what_a_query_asks_is_read_sentence_by_sentence_without_how_it_asks():
    from app.core.search.recall import asked
    from app.core.storage.fts import Phrase, terms

    def plan(text):
        return [Phrase(words=w, stems=w, docs=1) for w in terms(text)]

    # "note" and "did" say how it asks; the boiler is what it asks about
    text = "what did I note about the boiler"
    assert [[plan(text)[i].words for i in g] for g in asked(text, plan(text))] == [[["boiler"]]]
    # A prompt asking two things: a memory holding one sentence's words holds what was asked
    text = "From now on, write scripts in TypeScript. How many layers of béchamel are there?"
    groups = [[plan(text)[i].words[0] for i in g] for g in asked(text, plan(text))]
    assert groups == [["scripts", "typescript"], ["many", "layers", "béchamel"]]
