"""Hybrid ranking arithmetic: w_v·vector + w_k·keyword + w_p·prominence (design 004, D3)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from app.core.memory import Memory

CONFIDENCE_VALUE = {"low": 1 / 3, "medium": 2 / 3, "high": 1.0}
RECENCY_HALF_LIFE_DAYS = 30.0


@dataclass(frozen=True)
class Weights:
    """How much each signal counts; they need not sum to 1 (they are rescaled).

    Shipped defaults: design 004's 0.5/0.2/0.3 tuned on SciFact (docs/adr/0003-ranking.md).
    """

    vector: float = 0.4
    keyword: float = 0.3
    prominence: float = 0.3


@dataclass
class Scored:
    """A candidate with its raw and normalized signals and final score."""

    memory: Memory
    seq: int
    vector: float | None = None  # cosine similarity, None when the memory has no vectors
    keyword: float | None = None  # BM25 (higher is better), None when no keyword matched
    prominence: float = 0.0
    vector_norm: float = 0.0
    keyword_norm: float = 0.0
    prominence_norm: float = 0.0
    score: float = 0.0


def _days_since(stamp: str, now: datetime) -> float:
    try:
        then = datetime.fromisoformat(stamp)
    except (TypeError, ValueError):
        return 0.0
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    return max((now - then).total_seconds() / 86400.0, 0.0)


def prominence(memory: Memory, max_observations: int, now: datetime | None = None) -> float:
    """Mean of observations (vs the most observed), confidence, recency and recall use."""
    now = now or datetime.now(UTC)
    observed = min(memory.observation_count / max(max_observations, 1), 1.0)
    confidence = CONFIDENCE_VALUE.get(memory.confidence, 2 / 3)
    if memory.pinned:
        recency = 1.0  # pinned memories don't decay
    else:
        recency = 1.0 / (1.0 + _days_since(memory.updated_at, now) / RECENCY_HALF_LIFE_DAYS)
    recalled = min(memory.recall_count / 10.0, 1.0)
    return (observed + confidence + recency + recalled) / 4.0


def combine(candidates: list[Scored], weights: Weights) -> list[Scored]:
    """Normalize each signal by its maximum over the candidates, weight, sort best first.

    A signal no candidate has (no vectors, no keyword match) gives its weight to the others
    in proportion; a signal equal for every candidate normalizes to 1.0 for all.
    """
    if not candidates:
        return []
    max_v = max((max(c.vector or 0.0, 0.0) for c in candidates), default=0.0)
    max_k = max((c.keyword or 0.0 for c in candidates), default=0.0)
    max_p = max((c.prominence for c in candidates), default=0.0)
    active = {
        "vector": weights.vector if max_v > 0 else 0.0,
        "keyword": weights.keyword if max_k > 0 else 0.0,
        "prominence": weights.prominence if max_p > 0 else 0.0,
    }
    total = sum(active.values()) or 1.0
    w_v, w_k, w_p = (active[k] / total for k in ("vector", "keyword", "prominence"))
    for c in candidates:
        c.vector_norm = max(c.vector or 0.0, 0.0) / max_v if max_v > 0 else 0.0
        c.keyword_norm = (c.keyword or 0.0) / max_k if max_k > 0 else 0.0
        c.prominence_norm = c.prominence / max_p if max_p > 0 else 0.0
        c.score = w_v * c.vector_norm + w_k * c.keyword_norm + w_p * c.prominence_norm
    return sorted(candidates, key=lambda c: (-c.score, c.seq))
