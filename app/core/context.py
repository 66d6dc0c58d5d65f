"""The memory block an AI agent injects at session start (design 004, D2, D3, D10).

Context signals (repository name, recently changed files, a feature description) form a
query; every live memory is scored (vector, keyword, prominence), a category-balanced
selection is made, the chosen memories count as recalled, and a diagnostic line closes it.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from app.core import fts
from app.core.memory import Memory
from app.core.ranking import CONFIDENCE_VALUE, RECENCY_HALF_LIFE_DAYS
from app.core.store import Filters

if TYPE_CHECKING:
    from app.core.engine import Engine

MIN_PER_CATEGORY = 3
MAX_FILES = 20
MAX_FEATURE_WORDS = 100


def _git(cwd: Path, *args: str) -> str | None:
    try:
        run = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return run.stdout.strip() if run.returncode == 0 else None


def feature_paragraph(path: Path) -> str:
    """The first paragraph of a feature description (text before the first `##`)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""
    head = text.split("\n## ", 1)[0]
    paragraphs = [p for p in head.split("\n\n") if p.strip() and not p.lstrip().startswith("#")]
    words = " ".join(paragraphs[0].split()).split() if paragraphs else []
    return " ".join(words[:MAX_FEATURE_WORDS])


def signals(cwd: Path, feature: Path | None = None, project: str | None = None) -> str | None:
    """The context query from git and a feature file, or None when there are no signals."""
    top = _git(cwd, "rev-parse", "--show-toplevel")
    name = project or (Path(top).name if top else None)
    files: list[str] = []
    if top:
        for base in ("HEAD~3", "HEAD~1"):
            changed = _git(cwd, "diff", "--name-only", f"{base}..HEAD")
            if changed is not None:
                files = [f for f in changed.splitlines() if f][:MAX_FILES]
                break
    description = feature_paragraph(feature) if feature else ""
    parts = []
    if name or description:
        parts.append(f"{name or ''}{': ' if name and description else ''}{description}".strip())
    if files:
        parts.append("Files: " + " ".join(files))
    query = ". ".join(p.rstrip(". ") for p in parts if p)
    return query or None


@dataclass
class ContextBlock:
    """The selected memories and what the diagnostic line reports."""

    memories: list[tuple[Memory, float]]
    total: int
    query: str | None
    vector_matches: int = 0
    keyword_matches: int = 0
    model: str = ""
    semantic_problem: str | None = None
    weights: tuple[float, float, float] = field(default=(0.0, 0.0, 1.0))

    def diagnostic(self) -> str:
        """`*Memory: N entries from TOTAL | semantic: … | context: "…" | model: NAME*`"""
        if self.semantic_problem:
            semantic = f"semantic: unavailable ({self.semantic_problem})"
        else:
            semantic = (
                f"semantic: active (vector={self.vector_matches}, fts5={self.keyword_matches})"
            )
        query = self.query or "none"
        shown = query if len(query) <= 80 else query[:77] + "..."
        return (
            f"*Memory: {len(self.memories)} entries from {self.total} | {semantic} | "
            f'context: "{shown}" | model: {self.model or "none"}*'
        )

    def markdown(self) -> str:
        """The block to inject: one section per memory, then the diagnostic line."""
        lines = ["## Memories from earlier sessions", ""]
        for memory, _score in self.memories:
            facts = [memory.category, f"confidence {memory.confidence}"]
            if memory.observation_count > 1:
                facts.append(f"seen {memory.observation_count}×")
            if memory.source_project:
                facts.append(f"from {memory.source_project}")
            lines.append(f"### {memory.display_title} ({', '.join(facts)})")
            lines.append(memory.text)
            if memory.reasoning:
                lines.append(f"Why: {memory.reasoning}")
            if memory.references:
                lines.append(f"References: {', '.join(memory.references)}")
            lines.append("")
        lines.append(self.diagnostic())
        return "\n".join(lines)

    def to_dict(self) -> dict:
        """JSON form for `mnemo context --json`."""
        return {
            "query": self.query,
            "total": self.total,
            "diagnostic": self.diagnostic(),
            "entries": [
                {
                    "id": m.id,
                    "title": m.display_title,
                    "text": m.text,
                    "reasoning": m.reasoning,
                    "category": m.category,
                    "references": m.references,
                    "score": round(s, 6),
                }
                for m, s in self.memories
            ],
        }


def _prominence(rows: list[tuple], now: datetime) -> np.ndarray:
    """Vectorized `ranking.prominence` over (obs, confidence, updated_at, pinned, recalls)."""
    obs = np.array([r[0] for r in rows], dtype=np.float64)
    confidence = np.array([CONFIDENCE_VALUE.get(r[1], 2 / 3) for r in rows])
    updated = np.array([r[2][:26] for r in rows], dtype="datetime64[us]")
    days = (np.datetime64(now.replace(tzinfo=None), "us") - updated) / np.timedelta64(1, "D")
    recency = np.where(
        [bool(r[3]) for r in rows], 1.0, 1.0 / (1.0 + np.maximum(days, 0) / RECENCY_HALF_LIFE_DAYS)
    )
    recalled = np.minimum(np.array([r[4] for r in rows], dtype=np.float64) / 10.0, 1.0)
    return (np.minimum(obs / max(obs.max(), 1.0), 1.0) + confidence + recency + recalled) / 4


def _normalize(values: np.ndarray) -> np.ndarray:
    top = values.max() if len(values) else 0.0
    return values / top if top > 0 else np.zeros_like(values)


def balanced(order: list[int], categories: list[str], limit: int) -> list[int]:
    """Indices (best first) with at least 3 per non-empty category when limit ≥ 9."""
    chosen: list[int] = []
    if limit >= 9:
        seen: dict[str, int] = {}
        for i in order:
            if seen.get(categories[i], 0) < MIN_PER_CATEGORY:
                seen[categories[i]] = seen.get(categories[i], 0) + 1
                chosen.append(i)
        chosen = chosen[:limit]
    taken = set(chosen)
    rest = [i for i in order if i not in taken]
    chosen += rest[: limit - len(chosen)]
    rank = {i: n for n, i in enumerate(order)}
    return sorted(chosen, key=rank.__getitem__)


def build_context(
    engine: Engine,
    query: str | None = None,
    limit: int = 20,
    cwd: Path | None = None,
    feature: Path | None = None,
    project: str | None = None,
    track: bool = True,
    use_model: bool = True,
) -> ContextBlock:
    """Score every live memory against the session's context and pick the block."""
    if query is None:
        query = signals(cwd or Path.cwd(), feature, project)
    rows = engine.db.query(
        "SELECT seq, observation_count, confidence, updated_at, pinned, recall_count, category "
        "FROM memories WHERE deleted_at IS NULL ORDER BY seq"
    )
    block = ContextBlock(memories=[], total=len(rows), query=query)
    embedder = engine.embedder if (query and use_model) else None
    if embedder is not None:
        block.model = embedder.info.name
    elif query and use_model:
        block.semantic_problem = engine.model_error
    else:
        block.semantic_problem = "no context signals" if not query else "model not used"
    if not rows:
        return block
    seqs = np.array([r[0] for r in rows], dtype=np.int64)
    prominence = _prominence([r[1:6] for r in rows], datetime.now(UTC))
    vector = np.zeros(len(rows))
    keyword = np.zeros(len(rows))
    if embedder is not None:
        index = engine.vector_index()
        mem_seqs, best = index.scores(embedder.embed_query(query))
        pos = np.searchsorted(mem_seqs, seqs)
        found = (pos < len(mem_seqs)) & (mem_seqs[np.minimum(pos, len(mem_seqs) - 1)] == seqs)
        vector[found] = best[pos[found]]
        block.vector_matches = int((vector >= engine.settings["min_similarity"]).sum())
    if query:
        expression = fts.build(query)
        if expression:
            hits = dict(engine.store.keyword_search(expression, Filters(), 10_000))
            keyword = np.array([hits.get(int(s), 0.0) for s in seqs])
            block.keyword_matches = len(hits)
    w_v, w_k, w_p = engine.weights().vector, engine.weights().keyword, engine.weights().prominence
    signals_present = [(w_v, vector.max() > 0), (w_k, keyword.max() > 0), (w_p, True)]
    total = sum(w for w, present in signals_present if present)
    w_v, w_k, w_p = (w / total if present else 0.0 for w, present in signals_present)
    block.weights = (w_v, w_k, w_p)
    score = (
        w_v * _normalize(np.maximum(vector, 0))
        + w_k * _normalize(keyword)
        + w_p * _normalize(prominence)
    )
    order = [int(i) for i in np.lexsort((seqs, -score))]
    picked = balanced(order, [r[6] for r in rows], limit)
    memories = engine.store.by_seqs(int(seqs[i]) for i in picked)
    block.memories = [
        (memories[int(seqs[i])], float(score[i])) for i in picked if int(seqs[i]) in memories
    ]
    if track and block.memories and not engine.db.read_only:
        engine.mark_used([m.id for m, _ in block.memories])
    return block
