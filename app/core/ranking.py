"""Hybrid ranking arithmetic: w_v·vector + w_k·keyword + w_p·prominence (design 004, D3)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np

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


def weights_from(settings) -> Weights:
    """The hybrid weights of a Settings object."""
    return Weights(
        settings["weight_vector"], settings["weight_keyword"], settings["weight_prominence"]
    )


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


def _days_array(stamps: Sequence[str], now: datetime) -> np.ndarray:
    """Days since each ISO stamp (0 for unreadable ones), vectorized for our own stamps."""
    if all(isinstance(s, str) and len(s) == 32 and s.endswith("+00:00") for s in stamps):
        then = np.array([s[:26] for s in stamps], dtype="datetime64[us]")
        days = (np.datetime64(now.astimezone(UTC).replace(tzinfo=None), "us") - then) / (
            np.timedelta64(1, "D")
        )
        return np.maximum(days.astype(np.float64), 0.0)
    return np.array([_days_since(s, now) for s in stamps], dtype=np.float64)


def prominence_array(
    observations: Sequence[int],
    confidences: Sequence[str],
    updated_at: Sequence[str],
    pinned: Sequence[bool],
    recalls: Sequence[int],
    max_observations: int,
    now: datetime | None = None,
) -> np.ndarray:
    """Prominence of many memories: the mean of observations (vs the most observed),
    confidence, recency (pinned memories don't decay) and recall use, each in [0, 1]."""
    now = now or datetime.now(UTC)
    observed = np.minimum(
        np.asarray(observations, dtype=np.float64) / max(max_observations, 1), 1.0
    )
    confidence = np.array([CONFIDENCE_VALUE.get(c, 2 / 3) for c in confidences])
    recency = np.where(
        np.asarray(pinned, dtype=bool),
        1.0,
        1.0 / (1.0 + _days_array(updated_at, now) / RECENCY_HALF_LIFE_DAYS),
    )
    recalled = np.minimum(np.asarray(recalls, dtype=np.float64) / 10.0, 1.0)
    return (observed + confidence + recency + recalled) / 4.0


def prominence_of(
    memories: Sequence[Memory], max_observations: int, now: datetime | None = None
) -> np.ndarray:
    """`prominence_array` over Memory objects."""
    return prominence_array(
        [m.observation_count for m in memories],
        [m.confidence for m in memories],
        [m.updated_at for m in memories],
        [m.pinned for m in memories],
        [m.recall_count for m in memories],
        max_observations,
        now,
    )


def prominence(memory: Memory, max_observations: int, now: datetime | None = None) -> float:
    """The prominence of one memory (see `prominence_array`)."""
    return float(prominence_of([memory], max_observations, now)[0])


@dataclass
class Combined:
    """Each signal normalized by its maximum, the weights in effect, and the final scores."""

    vector_norm: np.ndarray
    keyword_norm: np.ndarray
    prominence_norm: np.ndarray
    weights: Weights
    score: np.ndarray


def _normalized(values: np.ndarray) -> tuple[np.ndarray, bool]:
    top = float(values.max()) if len(values) else 0.0
    if top > 0:
        return values / top, True
    return np.zeros_like(values), False


def combine_arrays(
    vector: np.ndarray, keyword: np.ndarray, prominence: np.ndarray, weights: Weights
) -> Combined:
    """The hybrid score of every candidate: w_v·vector + w_k·keyword + w_p·prominence.

    Each signal is divided by its maximum over the candidates (negative cosines count as
    0; a missing signal is 0). A signal no candidate has (no vectors, no keyword match)
    gives its weight to the others in proportion; a signal equal for every candidate
    normalizes to 1.0 for all.
    """
    v, has_v = _normalized(np.maximum(np.asarray(vector, dtype=np.float64), 0.0))
    k, has_k = _normalized(np.maximum(np.asarray(keyword, dtype=np.float64), 0.0))
    p, has_p = _normalized(np.asarray(prominence, dtype=np.float64))
    active = (
        weights.vector if has_v else 0.0,
        weights.keyword if has_k else 0.0,
        weights.prominence if has_p else 0.0,
    )
    total = sum(active) or 1.0
    used = Weights(*(w / total for w in active))
    score = used.vector * v + used.keyword * k + used.prominence * p
    return Combined(v, k, p, used, score)


def combine(candidates: list[Scored], weights: Weights) -> list[Scored]:
    """Score candidates with `combine_arrays` and sort them best first (ties by seq)."""
    if not candidates:
        return []
    combined = combine_arrays(
        np.array([c.vector if c.vector is not None else 0.0 for c in candidates]),
        np.array([c.keyword if c.keyword is not None else 0.0 for c in candidates]),
        np.array([c.prominence for c in candidates]),
        weights,
    )
    for i, c in enumerate(candidates):
        c.vector_norm = float(combined.vector_norm[i])
        c.keyword_norm = float(combined.keyword_norm[i])
        c.prominence_norm = float(combined.prominence_norm[i])
        c.score = float(combined.score[i])
    return sorted(candidates, key=lambda c: (-c.score, c.seq))
