"""Capture by meaning (issue 42): fit the classifier of `app/agents/meaning.py`, and measure
capture with the rules alone and with it.

    .venv/bin/python -m bench.capture fit      # writes resources/models/capture-*.json
    .venv/bin/python -m bench.capture          # the table, on the prompts that may be read
    .venv/bin/python -m bench.capture --check  # and on check6/check7.jsonl (never read)

Fitted on the sentences of tune.jsonl, plain.jsonl's odd ids, more*.jsonl and check.jsonl
to check5.jsonl (thirteen writers; tests/cli/data/capture; each check file was held out
until later writers took its place: check4 and check5 on 2026-11-30, when check6 and check7
were written): a sentence is lasting when a proposal of it would count as a labelled
statement (the corpus test's measure); one that holds a labelled statement and more is not
fitted on, but is judged out of fold as the app would judge it. The regularization and the
threshold are chosen by cross-validation with each writer left out in turn (what a new
person's prompts get): the pair that comes nearest to both of issue 42's goals over all the
writers, the smaller of precise / 90 % and kept / 85 %. plain.jsonl's even ids,
check6.jsonl and check7.jsonl are never fitted on.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from pathlib import Path

import numpy as np

from app.agents import meaning, rules
from app.agents.events import own_words
from app.core import paths
from app.core.model.embedder import Embedder

DATA = Path(__file__).resolve().parent.parent / "tests" / "cli" / "data" / "capture"
LAMBDAS = (0.01, 0.03, 0.1, 0.3)
THRESHOLDS = (0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9)
FITTED = (
    "tune", "plain-tune", "more", "more2", "more3", "more4", "more5", "more6", "check", "check2",
    "check3", "check4", "check5",
)  # fmt: skip
HELD_OUT = ("check6", "check7")  # (and plain-check): never fitted on, never read
GOAL = (0.90, 0.85)  # issue 42: this share of proposals right, this share of statements kept
# Words a rule adds when it tidies a statement (as tests/cli/test_capture_corpus.py)
_RULE_WORDS = {"remember", "that", "note", "from", "now", "on", "keep", "in", "mind", "please",
               "always", "never", "instead", "of", "it", "is"}  # fmt: skip


def corpus(name: str) -> list[dict]:
    """A corpus by name: tune, plain-tune (odd ids), plain-check (even ids), check."""
    file = "plain" if name.startswith("plain") else name
    rows = [json.loads(line) for line in (DATA / f"{file}.jsonl").open(encoding="utf-8")]
    if name == "plain-tune":
        return [r for r in rows if int(r["id"][1:]) % 2 == 1]
    if name == "plain-check":
        return [r for r in rows if int(r["id"][1:]) % 2 == 0]
    return rows


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def same(found: str, said: str) -> bool:
    """A proposal is the labelled statement when most of its own words are in it."""
    own = _words(found) - _RULE_WORDS
    return bool(own) and len(own & _words(said)) / len(own) >= 0.7


def measure(rows: list[dict], propose, with_id: bool = False) -> tuple[int, int, int, int]:
    """(proposals meant to last, proposals, statements proposed, statements meant to last);
    `propose(prompt)`, or `propose(prompt, row id)` `with_id`."""
    right = proposed = kept = labelled = 0
    for row in rows:
        prompt = own_words(row["prompt"])
        found = [s.text for s in (propose(prompt, row["id"]) if with_id else propose(prompt))]
        proposed += len(found)
        labelled += len(row["lasting"])
        right += sum(any(same(f, said) for said in row["lasting"]) for f in found)
        kept += sum(any(same(f, said) for f in found) for said in row["lasting"])
    return right, proposed, kept, labelled


def _sentences(rows: list[dict], tag: str) -> list[dict]:
    out = []
    for row in rows:
        said = rules.sentences(own_words(row["prompt"]))
        texts = []
        for part in (part for sentence in said for part in meaning.parts(sentence)):
            texts += [part, *(meaning.so_apart(part) or ())]
        for s in dict.fromkeys(texts):
            lasting = any(same(s, said) for said in row["lasting"])
            holds = not lasting and any(said in s for said in row["lasting"])
            out.append({"prompt": f"{tag}:{row['id']}", "text": s, "y": lasting, "holds": holds})
    return out


def fit_logistic(x: np.ndarray, y: np.ndarray, lam: float) -> tuple[np.ndarray, float]:
    """L2-regularized logistic regression (the bias not regularized), by Newton's method."""
    n, d = x.shape
    xa = np.hstack([x, np.ones((n, 1))]).astype(np.float64)
    w = np.zeros(d + 1)
    ridge = lam * np.eye(d + 1)
    ridge[d, d] = 1e-6
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(xa @ w)))
        grad = xa.T @ (p - y) + ridge @ w
        hess = (xa.T * (p * (1 - p))) @ xa + ridge
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w[:d], float(w[d])


def _judged(rows: list[dict], tag: str, chance: dict, threshold: float):
    """Measure (as `measure`) with out-of-fold chances (`chance[(prompt, text)]`)."""

    def propose(prompt: str, row_id: str) -> list[rules.Statement]:
        def of(text: str) -> float:
            return chance.get((f"{tag}:{row_id}", text), 0.0)

        return meaning.chosen(prompt, rules.statements(prompt), of, threshold)

    return measure(rows, propose, with_id=True)


def fit(model: Embedder, out: Path) -> None:
    """Choose by cross-validation, fit on all the tuning sentences, write the weights."""
    halves = {name: corpus(name) for name in FITTED}
    every = [s for tag, rows in halves.items() for s in _sentences(rows, tag)]
    x_all = model.decode([model.query_sequence(s["text"]) for s in every], interactive=True)[0]
    # (a text holding a labelled statement and more is not fitted on, but judged out of fold
    # as the app would judge it)
    fitted = np.array([not s["holds"] for s in every])
    said = [s for s in every if not s["holds"]]
    x = x_all[fitted]
    y = np.array([s["y"] for s in said], dtype=np.float64)
    writer = np.array([FITTED.index(s["prompt"].split(":")[0]) for s in every])  # the folds
    folds = writer[fitted]
    best = None
    for lam in LAMBDAS:
        chances = np.zeros(len(every))
        for k in range(len(FITTED)):
            w, b = fit_logistic(x[folds != k], y[folds != k], lam)
            chances[writer == k] = 1.0 / (1.0 + np.exp(-(x_all[writer == k] @ w + b)))
        chance = {(s["prompt"], s["text"]): c for s, c in zip(every, chances, strict=True)}
        for threshold in THRESHOLDS:
            scores = [_judged(rows, tag, chance, threshold) for tag, rows in halves.items()]
            line = "  ".join(f"{r}/{p} {k}/{n}" for r, p, k, n in scores)
            r, p, k, n = (sum(col) for col in zip(*scores, strict=True))
            near = min(r / max(p, 1) / GOAL[0], k / n / GOAL[1])  # the nearer to both goals
            pooled = f"all {100 * r / p:.1f} % ({r}/{p}) / {100 * k / n:.1f} % ({k}/{n})"
            print(f"lambda {lam:<5} threshold {threshold}: {pooled} ({near:.3f})  {line}")
            if best is None or near > best[0]:
                best = (near, lam, threshold)
    if best is None:
        raise SystemExit("nothing to choose from")
    _, lam, threshold = best
    w, b = fit_logistic(x, y, lam)
    out.write_text(
        json.dumps(
            {
                "model_id": model.info.model_id,
                "fitted_by": "bench/capture.py fit",
                "fitted_on": "tests/cli/data/capture: tune.jsonl, plain.jsonl odd ids, "
                f"more*.jsonl, check.jsonl to check5.jsonl ({len(said)} "
                f"sentences, {int(y.sum())} lasting)",
                "lambda": lam,
                "threshold": threshold,
                "bias": round(b, 6),
                "weights": [round(float(v), 6) for v in w],
            }
        )
        + "\n",
        encoding="utf-8",
    )
    print(f"chose lambda {lam}, threshold {threshold}; wrote {out}")


def table(model: Embedder, names: list[str]) -> None:
    """Precise and kept per corpus, with the rules alone and with meaning; ms per prompt."""
    judge = meaning.Classifier.load()

    def with_meaning(prompt: str):
        return meaning.statements(prompt, model, judge)

    print("| corpus | rules alone: precise / kept | with meaning: precise / kept |")
    print("| --- | --- | --- |")
    for name in names:
        rows = corpus(name)
        cells = []
        for propose in (rules.statements, with_meaning):
            r, p, k, n = measure(rows, propose)
            cells.append(f"{100 * r / max(p, 1):.1f} % ({r}/{p}) / {100 * k / n:.1f} % ({k}/{n})")
        print(f"| {name} | {cells[0]} | {cells[1]} |")
    prompts = [own_words(r["prompt"]) for n in names if n not in HELD_OUT for r in corpus(n)]
    for prompt in prompts[:20]:  # warm
        with_meaning(prompt)
    costs, embedded = [], []
    for prompt in prompts:
        start = time.perf_counter()
        with_meaning(prompt)
        costs.append(1000 * (time.perf_counter() - start))
        if len(rules.statements(prompt)) < rules.MOST_PER_PROMPT and meaning.judged(prompt):
            embedded.append(costs[-1])  # (a prompt with a part left to judge: one batch)
    for what, ms in (("every prompt", costs), ("prompts that embed", embedded)):
        ms.sort()
        print(
            f"ms per prompt, rules and meaning, {what} ({len(ms)}): "
            f"median {statistics.median(ms):.1f}, p95 {ms[int(0.95 * len(ms))]:.1f}, "
            f"max {ms[-1]:.1f}"
        )
    alone = 1000 * _timed(rules.statements, prompts) / len(prompts)
    print(f"ms per prompt, rules alone: {alone:.2f} mean")


def _timed(fn, prompts: list[str]) -> float:
    start = time.perf_counter()
    for prompt in prompts:
        fn(prompt)
    return time.perf_counter() - start


def main() -> None:
    """Fit, or print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", nargs="?", choices=["fit", "table"], default="table")
    parser.add_argument("--check", action="store_true", help="also measure check6, check7")
    args = parser.parse_args()
    model = Embedder.load(paths.DEFAULT_MODEL)
    if args.what == "fit":
        fit(model, meaning.WEIGHTS)
        return
    names = [*FITTED, "plain-check"]
    names += list(HELD_OUT) if args.check else []
    table(model, names)


if __name__ == "__main__":
    main()
