"""What recall's decision saw, question by question (issue 41): the evidence
(`ranking.Evidence`) of every question of bench/precision.py's mixed collection at each
size, with whether the question is answerable, off-topic or near-topic, written as JSON
lines for fitting and checking the decision "is this about anything stored" offline.

    .venv/bin/python -m bench.evidence [--sizes 300,1000,5000] [--half tune|check|all]
        [--out bench/.cache/evidence.jsonl]

Uses bench/precision.py's cached collection (built on first use).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from bench import precision
from bench.precision import collection, engine_of, subset


def evidence_of(engine, questions, size: int) -> list[dict]:
    """Each question's evidence (None where a named time decided), through the shipped
    hybrid recall."""
    from app.core.search import recall

    seen: list = []
    candidates: list = []
    real, real_combine = recall.about_something, recall.combine

    def watched(evidence):
        seen.append(evidence)
        return real(evidence)

    def combined(*args, **kwargs):
        ranked = real_combine(*args, **kwargs)
        candidates[:] = [
            {
                "id": c.memory.references[0] if c.memory.references else "",
                "cosine": c.vector,
                "vector": c.vector_norm,
                "keyword": c.keyword_norm,
                "relevance": c.relevance,
                "score": c.score,
            }
            for c in ranked[:20]
        ]
        return ranked

    recall.about_something, recall.combine = watched, combined
    rows = []
    try:
        for q in questions:
            seen.clear()
            candidates.clear()
            result = engine.recall(q.query, mode="hybrid", limit=10, track=False)
            ids = [r.memory.references[0] for r in result.results]
            rows.append(
                {
                    "size": size,
                    "query": q.query,
                    "kind": q.kind,
                    "source": q.source,
                    "half": q.half,
                    "answers": sorted(q.answers),
                    "answered": bool(ids),
                    "top5": bool(set(ids[:5]) & q.answers),
                    "evidence": dataclasses.asdict(seen[-1]) if seen else None,
                    "crowd": list(result.crowd) if result.crowd else None,
                    "candidates": list(candidates),
                }
            )
    finally:
        recall.about_something, recall.combine = real, real_combine
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default=",".join(map(str, precision.SIZES)))
    parser.add_argument("--half", choices=("tune", "check", "all"), default="all")
    parser.add_argument("--out", default=str(precision.HERE / ".cache" / "evidence.jsonl"))
    args = parser.parse_args()
    c = collection()
    questions = [q for q in c.questions if args.half in ("all", q.half)]
    out = Path(args.out)
    with out.open("w", encoding="utf-8") as f:
        for size in map(int, args.sizes.split(",")):
            engine = engine_of(c, size)
            for row in evidence_of(engine, questions, len(subset(c, size))):
                f.write(json.dumps(row) + "\n")
            engine.close()
            print(f"{size}: {len(questions)} questions", flush=True)


if __name__ == "__main__":
    main()
