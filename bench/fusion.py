"""How far can the order of SciFact's hybrid results go with these two signals?

    .venv/bin/python -m bench.fusion [--data ../shared/data/scifact] [--splits 3]

bench/quality.py measures the shipped ranking. This asks what any fusion of the same two
signals could reach on the same candidates (a recall's 50 best by meaning and 50 by
keywords, from the cached SciFact database): the shipped calibrated score with no floor,
max-normalization half and half (the ranking before issue 9), and a logistic ranker over 11
features of the two signals, trained on half the queries and scored on the other half
(numpy only; `--splits` random halvings, each way). Prints nDCG@10; writes nothing.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from bench.quality import DEFAULT_DATA, load, ndcg_at_10, prepare


def candidates(engine, queries) -> list[dict]:
    """Each query's candidates with their raw signals, as `recall` gathers them."""
    from app.core.storage.store import Filters

    store, meaning = engine._store, engine.meaning()
    out = []
    for qid, text in queries.items():
        qvec = meaning.embedder.embed_query(text)
        hits, lookup = meaning.index.top(qvec, 50, None, engine.settings["min_similarity"])
        plan = store.keywords.plan(text)
        keyword = (
            dict(
                store.keywords.search(plan.expression, Filters(), 50, common_only=plan.common_only)
            )
            if plan.expression
            else {}
        )
        seqs = list(dict.fromkeys([s for s, _ in hits] + list(keyword)))
        if not seqs:
            continue
        docs = store.by_seqs(seqs, Filters())
        out.append(
            {
                "qid": qid,
                "refs": [docs[s].references[0] if s in docs else "" for s in seqs],
                "cosine": np.array([lookup.get(s, -1.0) for s in seqs]),
                "bm25": np.array([keyword.get(s, 0.0) for s in seqs]),
                "crowd": lookup.crowd,
                "ideal": plan.ideal,
                "phrases": len(plan.phrases),
            }
        )
    return out


def calibrated(c: dict) -> np.ndarray:
    from app.core.search.ranking import Weights, combine_arrays, keyword_relevance, vector_relevance

    v = vector_relevance(c["cosine"], *c["crowd"])
    k = keyword_relevance(c["bm25"], c["ideal"])
    return combine_arrays(v, k, np.zeros(len(v)), Weights(1.0, 1.0, 0.0)).score


def max_normalized(c: dict) -> np.ndarray:
    cos, bm25 = c["cosine"], c["bm25"]
    span = max(float(cos.max() - cos.min()), 1e-9)
    return 0.5 * (cos - cos.min()) / span + 0.5 * bm25 / max(float(bm25.max()), 1e-9)


def features(c: dict) -> np.ndarray:
    cos, bm25 = c["cosine"], c["bm25"]
    mean, std = c["crowd"]
    z = (cos - mean) / std
    held = bm25 / max(c["ideal"], 1e-9)
    of_best = bm25 / max(float(bm25.max()), 1e-9)
    has = (bm25 > 0).astype(float)
    rank_c = np.argsort(np.argsort(-cos))
    rank_b = np.argsort(np.argsort(-bm25))
    span = (cos - cos.min()) / max(float(cos.max() - cos.min()), 1e-9)
    return np.stack(
        [
            z,
            z**2,
            held,
            of_best,
            np.log1p(rank_c),
            np.log1p(rank_b) * has,
            has,
            z * held,
            span,
            cos - cos.max(),
            np.full(len(cos), c["phrases"]),
        ],
        axis=1,
    )


def train(rows: list[tuple[dict, np.ndarray, np.ndarray]], steps: int = 3000):
    """Class-balanced logistic regression by gradient descent; a scoring function."""
    x = np.concatenate([f for _, f, _ in rows])
    y = np.concatenate([t for _, _, t in rows])
    mu, sd = x.mean(0), x.std(0) + 1e-9
    x = (x - mu) / sd
    w, b = np.zeros(x.shape[1]), 0.0
    share = max(y.mean(), 1e-9)
    balance = np.where(y > 0, 0.5 / share, 0.5 / (1 - share))
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(x @ w + b)))
        g = (p - y) * balance
        w -= 0.1 * (x.T @ g / len(y) + 1e-2 * w)
        b -= 0.1 * g.mean()
    return lambda f: ((f - mu) / sd) @ w + b


def ndcg(order_of, cands: list[dict], qrels, total: int) -> float:
    scores = []
    for c in cands:
        order = np.argsort(-order_of(c), kind="stable")[:10]
        scores.append(ndcg_at_10([c["refs"][i] for i in order], qrels[c["qid"]]))
    return sum(scores) / total  # a query without candidates scores 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--splits", type=int, default=3)
    args = parser.parse_args()
    _, queries, qrels = load(args.data)
    engine = prepare(args.data)
    cands = candidates(engine, queries)
    engine.close()
    total = len(queries)
    shipped = ndcg(calibrated, cands, qrels, total)
    peer = ndcg(max_normalized, cands, qrels, total)
    print(f"shipped calibrated score, no floor: nDCG@10 {shipped:.4f}")
    print(f"max-normalized, half and half:     nDCG@10 {peer:.4f}")
    rows = [
        (c, features(c), np.array([qrels[c["qid"]].get(r, 0) > 0 for r in c["refs"]], float))
        for c in cands
    ]
    rng = np.random.default_rng(0)
    for split in range(args.splits):
        pick = rng.permutation(len(rows))
        half = len(rows) // 2
        halves = [[rows[i] for i in pick[:half]], [rows[i] for i in pick[half:]]]
        got = 0.0
        for train_on, test_on in (halves, halves[::-1]):
            model = train(train_on)
            got += ndcg(lambda c, m=model: m(features(c)), [r[0] for r in test_on], qrels, total)
        print(f"logistic ranker, split {split + 1}, trained on the other half: nDCG@10 {got:.4f}")


if __name__ == "__main__":
    main()
