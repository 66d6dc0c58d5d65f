"""Capture's cost per prompt, for the code on PYTHONPATH, on every fitted corpus's prompts.

    .venv/bin/python bench/capture_cost.py NAME
    PYTHONPATH=/path/to/an/older/checkout .venv/bin/python bench/capture_cost.py before

Run as a file, so that `app` comes from PYTHONPATH (an older checkout: a peer in the same
run) while the prompts come from this checkout. Each prompt goes through
`meaning.statements` with the bundled model loaded, after 20 warm-up prompts.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

# Run as a file, bench/ comes first on sys.path, and bench/secrets.py would stand in for the
# standard library's `secrets` (the model's facts cache could not be written for a new path)
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from app.agents import meaning  # noqa: E402
from app.agents.events import own_words  # noqa: E402
from app.core import paths  # noqa: E402
from app.core.model.embedder import Embedder  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / "tests" / "cli" / "data" / "capture"
NAMES = ("tune", "plain", "more", "more2", "more3", "more4", "more5", "more6", "check", "check2",
         "check3", "check4", "check5")  # fmt: skip


def main() -> None:
    """Print median, p95, max and mean ms per prompt."""
    model = Embedder.load(paths.DEFAULT_MODEL)
    judge = meaning.Classifier.load()
    prompts = [
        own_words(json.loads(line)["prompt"])
        for name in NAMES
        for line in (DATA / f"{name}.jsonl").open(encoding="utf-8")
    ]
    for prompt in prompts[:20]:
        meaning.statements(prompt, model, judge)
    ms = []
    for prompt in prompts:
        start = time.perf_counter()
        meaning.statements(prompt, model, judge)
        ms.append(1000 * (time.perf_counter() - start))
    ms.sort()
    print(
        f"{sys.argv[1] if len(sys.argv) > 1 else 'this code'}: {len(ms)} prompts, median "
        f"{statistics.median(ms):.2f}, p95 {ms[int(0.95 * len(ms))]:.1f}, max {ms[-1]:.1f}, "
        f"mean {statistics.mean(ms):.2f} ms"
    )


if __name__ == "__main__":
    main()
