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

import numpy as np

from app.core import fts
from app.core.meaning import Meaning
from app.core.memory import Memory, public_dict
from app.core.ranking import combine_arrays, prominence_array, weights_from
from app.core.settings import Settings
from app.core.store import Filters, Store

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
            "entries": [public_dict(m, score=s) for m, s in self.memories],
        }


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
    store: Store,
    meaning: Meaning,
    settings: Settings,
    query: str | None = None,
    limit: int = 20,
    cwd: Path | None = None,
    feature: Path | None = None,
    project: str | None = None,
) -> ContextBlock:
    """Score every live memory against the session's context and pick the block.

    `meaning` is `NO_MEANING` when the model should not be used; the ranking is
    `ranking.combine_arrays`, the same formula as recall's.
    """
    if query is None:
        query = signals(cwd or Path.cwd(), feature, project)
    rows = store.rank_rows()
    block = ContextBlock(memories=[], total=len(rows), query=query)
    use_meaning = bool(query) and meaning.available
    if use_meaning:
        block.model = meaning.model_name
    elif not query:
        block.semantic_problem = "no context signals"
    else:
        block.semantic_problem = meaning.problem or "model not used"
    if not rows:
        return block
    seqs = np.array([r[0] for r in rows], dtype=np.int64)
    max_obs = max((r[1] for r in rows), default=1)
    prominence = prominence_array(
        [r[1] for r in rows],
        [r[2] for r in rows],
        [r[3] for r in rows],
        [bool(r[4]) for r in rows],
        [r[5] for r in rows],
        max_obs,
        datetime.now(UTC),
    )
    vector = np.zeros(len(rows))
    keyword = np.zeros(len(rows))
    if use_meaning:
        mem_seqs, best = meaning.index.scores(meaning.embedder.embed_query(query))
        pos = np.searchsorted(mem_seqs, seqs)
        found = (pos < len(mem_seqs)) & (mem_seqs[np.minimum(pos, len(mem_seqs) - 1)] == seqs)
        vector[found] = best[pos[found]]
        block.vector_matches = int((vector >= settings["min_similarity"]).sum())
    if query:
        expression = fts.build(query)
        if expression:
            hits = dict(store.keyword_search(expression, Filters(), 10_000))
            keyword = np.array([hits.get(int(s), 0.0) for s in seqs])
            block.keyword_matches = len(hits)
    combined = combine_arrays(vector, keyword, prominence, weights_from(settings))
    block.weights = (combined.weights.vector, combined.weights.keyword, combined.weights.prominence)
    score = combined.score
    order = [int(i) for i in np.lexsort((seqs, -score))]
    picked = balanced(order, [r[6] for r in rows], limit)
    memories = store.by_seqs(int(seqs[i]) for i in picked)
    block.memories = [
        (memories[int(seqs[i])], float(score[i])) for i in picked if int(seqs[i]) in memories
    ]
    return block
