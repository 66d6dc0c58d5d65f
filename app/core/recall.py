"""Recall: keyword (FTS5/BM25), semantic (cosine) and hybrid search over memories."""

from __future__ import annotations

import contextlib
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np

from app.core import fts
from app.core.errors import InputError
from app.core.meaning import Meaning
from app.core.memory import public_dict
from app.core.ranking import (
    FLOOR,
    Scored,
    Weights,
    combine,
    in_effect,
    keyword_relevance,
    prominence_of,
    unsupported,
    vector_relevance,
    weights_from,
)
from app.core.settings import Settings
from app.core.store import Filters, Store

MODES = ("hybrid", "semantic", "keyword")
# With a core to spare, the query is embedded here while the calling thread runs the keyword
# search: llama.cpp and SQLite both release the GIL, so a hybrid recall costs the longer of
# the two, not their sum (at 100k memories each takes about 4 ms: 10.1 -> 7.3 ms). With one
# core busy elsewhere the two threads would share the last one: no gain, so no thread.
# The embedder's lock keeps it one at a time.
_EMBEDDING = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mnemo-query-embedding")


@dataclass
class RecallResult:
    """What a search found, in which mode, and anything the user should know about it."""

    query: str
    mode: str
    results: list[Scored] = field(default_factory=list)
    notice: str | None = None
    # In effect: vector and keyword scaled so the larger is 1, prominence as its share of a
    # score (weight_prominence / 3): `ranking.in_effect`.
    weights: Weights | None = None
    corrections: dict[str, str] = field(default_factory=dict)  # typed word → stem matched
    crowd: tuple[float, float] | None = None  # the query's cosines: centre, σ (meaning)
    ideal: float = 0.0  # the BM25 a memory holding the whole query would approach

    def to_dict(self, explain: bool = False) -> dict:
        """The JSON shape of `mnemo recall --json`: each result is a memory's public shape."""
        out = {"query": self.query, "mode": self.mode, "results": []}
        for r in self.results:
            signals = None
            if explain:
                signals = {
                    "vector": r.vector,
                    "vector_norm": r.vector_norm,
                    "keyword": r.keyword,
                    "keyword_norm": r.keyword_norm,
                    "prominence": r.prominence,
                    "prominence_norm": r.prominence_norm,
                    "relevance": r.relevance,
                }
            out["results"].append(public_dict(r.memory, score=r.score, signals=signals))
        if self.notice:
            out["notice"] = self.notice
        return out


def recall(
    store: Store,
    meaning: Meaning,
    settings: Settings,
    query: str,
    mode: str | None = None,
    limit: int = 10,
    filters: Filters | None = None,
    prefix: bool = False,
) -> RecallResult:
    """Search memories: the relevant ones, best first, each with a calibrated score.

    Memories below the relevance floor are never returned: a query that matches nothing
    gets no results. Falls back to keywords (with a notice) when meaning is unavailable.
    """
    if mode is not None and mode not in MODES:
        raise InputError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
    if not query or not query.strip():
        raise InputError("nothing to search for: the query is empty")
    filters = filters or Filters()
    limit = max(1, min(int(limit), 1000))
    pool = max(limit * 5, 50)
    notice = None

    wanted = mode or "hybrid"
    if wanted != "keyword" and not meaning.available:
        if meaning.embedder is None:
            notice = f"semantic search unavailable ({meaning.problem}); showing keyword results"
        else:
            notice = f"{meaning.problem}; showing keyword results"
        wanted = "keyword"

    vector_hits, lookup, embedding = [], None, None
    if wanted in ("hybrid", "semantic"):
        if wanted == "hybrid" and meaning.embedder.spare_core():
            embedding = _EMBEDDING.submit(meaning.embedder.embed_query, query)
        else:
            embedding = Future()  # embedded here, on the calling thread
            embedding.set_result(meaning.embedder.embed_query(query))
    keyword_hits, plan = [], fts.KeywordPlan(expression=None)
    try:
        if wanted in ("hybrid", "keyword"):
            plan = store.keyword_plan(query, prefix=prefix)
            if plan.expression:
                keyword_hits = store.keyword_search(
                    plan.expression, filters, pool, common_only=plan.common_only
                )
    except BaseException:
        if embedding is not None:  # never left running behind an error
            with contextlib.suppress(Exception):
                embedding.result()
        raise
    qvec = embedding.result() if embedding is not None else None
    if qvec is not None:
        allowed = store.seqs_matching(filters) if filters.active else None
        vector_hits, lookup = meaning.index.top(qvec, pool, allowed, settings["min_similarity"])
    if plan.exact_identifier and keyword_hits:
        vector_hits = []  # `E_CONN_RESET`: the memories that hold it, not look-alikes

    if lookup is not None:
        lookup.fill([s for s, _ in keyword_hits])  # their cosines, read in one pass
    seqs = dict.fromkeys([s for s, _ in vector_hits] + [s for s, _ in keyword_hits])
    memories = store.by_seqs(seqs, filters)
    vector_of, keyword_of = dict(vector_hits), dict(keyword_hits)
    candidates = []
    for seq in seqs:
        memory = memories.get(seq)
        if memory is None:
            continue  # trashed or filtered out since the index was read
        vector = vector_of.get(seq)
        if vector is None and lookup is not None:
            vector = lookup.get(seq)
        candidates.append(
            Scored(memory=memory, seq=seq, vector=vector, keyword=keyword_of.get(seq))
        )
    if candidates:
        values = prominence_of(
            [c.memory for c in candidates], store.max_observations(), datetime.now(UTC)
        )
        mean, std = lookup.crowd if lookup is not None else (0.0, 1.0)
        cosines = np.array([c.vector if c.vector is not None else -1.0 for c in candidates])
        bm25 = np.array([c.keyword or 0.0 for c in candidates])
        v = vector_relevance(cosines, mean, std)
        k = keyword_relevance(bm25, plan.ideal)
        for i, c in enumerate(candidates):
            c.prominence = float(values[i])
            c.vector_norm, c.keyword_norm = float(v[i]), float(k[i])
        if wanted == "hybrid" and not plan.exact_identifier:
            cosines = np.array([np.nan if c.vector is None else c.vector for c in candidates])
            weak = unsupported(cosines, k, settings["min_similarity"])
            candidates = [c for c, w in zip(candidates, weak, strict=True) if not w]

    if wanted == "semantic":
        weights = Weights(vector=1.0, keyword=0.0, prominence=settings["weight_prominence"])
    elif wanted == "keyword":
        weights = Weights(vector=0.0, keyword=1.0, prominence=settings["weight_prominence"])
    else:
        weights = weights_from(settings)
    ranked = [r for r in combine(candidates, weights) if r.score >= FLOOR][:limit]
    notices = [notice] if notice else []
    if plan.corrections and ranked:
        texts = [
            " ".join([r.memory.title, r.memory.text, *r.memory.tags, *(r.memory.keywords or [])])
            for r in ranked[:5]
        ]
        # Said only as a shown memory spells it (a trashed memory's word is in the index too)
        spelled = {typed: store.spelled(stem, texts) for typed, stem in plan.corrections.items()}
        said = [f"“{t}” as “{w}”" for t, w in spelled.items() if w]
        if said:
            notices.append("matched " + ", ".join(said))
    if wanted != "keyword" and notice is None and meaning.missing:
        missing = meaning.missing
        notices.append(
            f"{missing} memor{'y is' if missing == 1 else 'ies are'} not embedded yet "
            "and can only be found by keywords"
        )
    return RecallResult(
        query=query,
        mode=wanted,
        results=ranked,
        notice="; ".join(notices) or None,
        weights=in_effect(weights),
        corrections=dict(plan.corrections),
        crowd=lookup.crowd if lookup is not None else None,
        ideal=plan.ideal,
    )
