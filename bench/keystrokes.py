"""The keyword stage while a query is typed (issue 24, item 2), against an older revision.

    .venv/bin/python -m bench.keystrokes [--sizes 100000 1000000] [--before REV]

The popup searches at every keystroke: `KeywordIndex.plan(text, prefix=True)` and the
keyword searches a hybrid recall makes of it (the word being typed as a prefix, and as
itself). bench.speed's 12 queries are typed a letter at a time on bench.keywords' tiers;
the answers a keystroke leaves are kept for the next (as in the app), forgotten before
each query. CPU ms of the child process per keystroke (mean and p95 over all keystrokes,
best of 3 rounds), quiet and with one core busy; `--before` runs the same with the code of
an older revision (a temporary git worktree, registered in this repository's .git until the
bench ends), in the same run.
"""

from __future__ import annotations

import argparse
import contextlib
import json

from bench.keywords import _home
from bench.report import busy_core, code_sides, record, run_child
from bench.speed import QUERIES

CHILD = r"""
import json, sys, time
from app.core import paths
from app.core.storage.db import Database
from app.core.storage.store import Filters, Store

queries = json.loads(sys.argv[1])
store = Store(Database(paths.database_path()))


def keystroke(text):
    plan = store.keywords.plan(text, prefix=True)
    if plan.expression:
        store.keywords.search(plan.expression, Filters(), 50, common_only=plan.common_only,
                             parts=plan.parts)
    if plan.exact_expression:
        store.keywords.search(plan.exact_expression, Filters(), 50, parts=plan.exact_parts)


for q in queries:  # the pages read once
    for i in range(1, len(q) + 1):
        keystroke(q[:i])
best = None
for _ in range(3):
    times = []
    for q in queries:
        store.keywords._keyword_version = None  # a query typed afresh: nothing kept
        store.keywords.lexicon._docs_at = None
        for i in range(1, len(q) + 1):
            started = time.process_time()
            keystroke(q[:i])
            times.append((time.process_time() - started) * 1000)
    if best is None or sum(times) < sum(best):
        best = times
print(json.dumps(best))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--before", default=None, help="a git revision to compare with")
    args = parser.parse_args()
    rows = []
    with code_sides(args.before) as sides:
        for n in args.sizes:
            home, _ = _home(n)
            for load in ("quiet", "one core busy"):
                with busy_core() if load != "quiet" else contextlib.nullcontext():
                    for label, code in sides:
                        times = sorted(run_child(code, home, CHILD, json.dumps(QUERIES)))
                        mean = sum(times) / len(times)
                        p95 = times[int(len(times) * 0.95)]
                        rows.append((f"{n:,}", load, label, f"{mean:.1f}", f"{p95:.1f}"))
                        print(" | ".join(rows[-1]), flush=True)
    record(
        "Keyword stage: typing a query",
        ["memories", "load", "code", "CPU ms a keystroke, mean", "p95"],
        rows,
        note=f"bench.speed's {len(QUERIES)} queries typed a letter at a time on bench.keywords' "
        "tiers: at each keystroke the keyword plan and the keyword searches of a hybrid "
        "recall (the word being typed as a prefix and as itself), the answers of one "
        "keystroke kept for the next as in the app; best of 3 rounds. Since this table's "
        "first run a word being typed that no memory holds as itself is left out of the "
        "search for it as itself, which was the same at every keystroke otherwise and "
        "ranked every memory holding the other words again.",
    )


if __name__ == "__main__":
    main()
