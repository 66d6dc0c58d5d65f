"""Ranking arithmetic with hand-made vectors (the one place a fake embedder is allowed)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from app.core.embedder import ModelInfo
from app.core.engine import Engine
from app.core.memory import Memory
from app.core.ranking import Scored, Weights, combine, prominence

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

    def embed_documents(self, texts):
        return [None for _ in texts]

    def close(self):
        pass


def _unit_with_cosine(axis: np.ndarray, cosine: float, rng) -> np.ndarray:
    noise = rng.normal(size=DIM).astype(np.float32)
    noise -= (noise @ axis) * axis
    noise /= np.linalg.norm(noise)
    return (cosine * axis + np.sqrt(1 - cosine**2) * noise).astype(np.float32)


def test_acceptance_1b_ranking_with_hand_made_vectors(mnemo_home):
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
        memory = engine._store.insert(
            Memory(
                id="",
                text=f"{'parser' if parser else 'other'} memory number {i}",
                category="parser" if parser else "other",
                created_at=stamp,
                updated_at=stamp,
            )
        )
        engine._store.save_vectors(
            memory.id, model_id, "h", _unit_with_cosine(query, cosine, rng)[None, :]
        )
    result = engine.recall("unrelated words", limit=25, track=False)
    top = [r.memory.category for r in result.results]
    assert top.count("parser") >= 18
    assert top[:20] == ["parser"] * 20


def _scored(seq, vector=None, keyword=None, prominence=0.5):
    return Scored(
        memory=Memory(id=str(seq), text="t"),
        seq=seq,
        vector=vector,
        keyword=keyword,
        prominence=prominence,
    )


def test_signals_are_normalized_by_their_maximum_and_weighted():
    ranked = combine([_scored(1, 0.8, 4.0, 0.5), _scored(2, 0.4, 8.0, 1.0)], Weights(0.5, 0.2, 0.3))
    by_seq = {c.seq: c for c in ranked}
    assert by_seq[1].score == pytest.approx(0.5 * 1.0 + 0.2 * 0.5 + 0.3 * 0.5)
    assert by_seq[2].score == pytest.approx(0.5 * 0.5 + 0.2 * 1.0 + 0.3 * 1.0)
    assert [c.seq for c in ranked] == [1, 2]


def test_missing_signal_weight_goes_to_the_others_in_proportion():
    ranked = combine(
        [_scored(1, 0.8, None, 0.5), _scored(2, 0.4, None, 1.0)], Weights(0.5, 0.2, 0.3)
    )
    by_seq = {c.seq: c for c in ranked}
    assert by_seq[1].score == pytest.approx(0.5 / 0.8 * 1.0 + 0.3 / 0.8 * 0.5)
    assert by_seq[2].score == pytest.approx(0.5 / 0.8 * 0.5 + 0.3 / 0.8 * 1.0)


def test_identical_signal_normalizes_to_one_for_all():
    ranked = combine([_scored(1, 0.5, 2.0, 0.7), _scored(2, 0.5, 2.0, 0.7)], Weights())
    assert all(c.vector_norm == c.keyword_norm == c.prominence_norm == 1.0 for c in ranked)


def test_negative_cosine_counts_as_zero():
    ranked = combine([_scored(1, -0.3, 1.0), _scored(2, 0.6, 1.0)], Weights(1, 0, 0))
    assert {c.seq: c.vector_norm for c in ranked} == {1: 0.0, 2: 1.0}


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
