"""Secret detection on the corpus in tests/core/data/secrets: scan, CLI, MCP, detect-secrets.

    .venv/bin/python -m bench.secrets [--cli 40] [--no-mcp] [--no-record]

Every text goes through `app.core.secrets.scan`; `--cli N` secrets and N benign texts
through `python -m app remember -` in a temporary MNEMO_HOME (refused = caught, stored =
not flagged); every text through the MCP server in-process (`store_memory`: caught when the
stored memory no longer holds the secret, flagged when a benign text came back redacted).
detect-secrets runs on the same corpus as a peer if it is installed (`pip install
detect-secrets`; it is not a dependency of Mnemo). Writes "Secret detection" into
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.report import record

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "core" / "data" / "secrets"
# The corpus files: main (the rules were written against it), then sets each written by someone
# who had not seen the rules of the day, measured once before any change (FIRST_RUNS).
SETS = [
    ("main corpus", "secrets.jsonl", "benign.jsonl"),
    ("holdout", "holdout_secrets.jsonl", "holdout_benign.jsonl"),
    ("fresh corpus", "fresh_secrets.jsonl", "fresh_benign.jsonl"),
    ("second holdout", "holdout2_secrets.jsonl", "holdout2_benign.jsonl"),
    ("third holdout", "holdout3_secrets.jsonl", "holdout3_benign.jsonl"),
    ("fourth holdout, tuning half", "holdout4_tune_secrets.jsonl", "holdout4_tune_benign.jsonl"),
    ("fourth holdout, check half", "holdout4_check_secrets.jsonl", "holdout4_check_benign.jsonl"),
    ("fifth holdout, tuning half", "holdout5_tune_secrets.jsonl", "holdout5_tune_benign.jsonl"),
    ("fifth holdout, check half", "holdout5_check_secrets.jsonl", "holdout5_check_benign.jsonl"),
]
# Measured once each: the detector before issue 8 (dabf90d) on the main corpus; the issue-8 rules
# on the holdout and on the fresh corpus (issue 21, 2c3297e), and the rules extended against it
# on the second holdout (ecd29e2) and the third (14fedb5), each before its misses were fixed;
# the fourth (issue 40) against the rules of c9d03ba and the fifth against those of 9518333, their
# tuning halves worked on, their check halves not.
FIRST_RUNS = [
    ("before issue 8, 2026-11-23", "main corpus", "63.9 % (108/169)", "17.7 % (60/339)"),
    ("2026-11-23", "holdout", "90.2 % (37/41)", "1.2 % (1/81)"),
    ("2026-11-25", "fresh corpus", "74.9 % (393/525)", "1.7 % (6/357)"),
    ("2026-11-25", "second holdout", "91.6 % (295/322)", "1.2 % (3/248)"),
    ("2026-11-25", "third holdout", "92.3 % (216/234)", "3.3 % (6/180)"),
    ("2026-11-28", "fourth holdout, tuning half", "55.9 % (147/263)", "2.2 % (5/226)"),
    ("2026-11-28", "fourth holdout, check half", "57.4 % (151/263)", "1.3 % (3/226)"),
    ("2026-11-28", "fifth holdout, tuning half", "73.9 % (289/391)", "0.7 % (2/274)"),
    ("2026-11-28", "fifth holdout, check half", "69.3 % (271/391)", "0.7 % (2/273)"),
]


def load(*names: str) -> list[dict]:
    """Rows of the corpus files `names`; a check half's rows are marked `check` (`judge` counts
    them but never prints them: the rules must not be tuned to them case by case)."""
    return [
        {**json.loads(line), **({"check": True} if "_check_" in name else {})}
        for name in names
        for line in (DATA / name).open(encoding="utf-8")
    ]


def rate(hits: int, total: int) -> str:
    return f"{100 * hits / total:.1f} % ({hits}/{total})" if total else "–"


def subset(rows: list[dict], n: int) -> list[dict]:
    """`n` rows spread evenly over `rows` (every kind of text, not just the first ones)."""
    if n >= len(rows):
        return rows
    return [rows[i * len(rows) // n] for i in range(n)]


def judge(
    name: str, detect: Callable[[dict], bool], secrets: list[dict], benign: list[dict]
) -> tuple[int, int, float]:
    """Caught secrets and flagged benign texts by `detect`; prints misses and false alarms,
    but not those of a check half."""
    start = time.perf_counter()
    missed = [s for s in secrets if not detect(s)]
    flagged = [b for b in benign if detect(b)]
    seconds = time.perf_counter() - start
    caught = len(secrets) - len(missed)
    print(f"{name}: caught {rate(caught, len(secrets))}, flagged {rate(len(flagged), len(benign))}")
    for s in missed:
        if not s.get("check"):
            print(f"    missed  {s['kind']}: {s['text'][:90]!r}")
    for b in flagged:
        if not b.get("check"):
            print(f"    flagged {b['why']}: {b['text'][:90]!r}")
    return caught, len(flagged), seconds


def by_scan(row: dict) -> bool:
    from app.core.secrets import scan

    return bool(scan(row["text"]))


def by_cli(home: Path) -> Callable[[dict], bool]:
    """True when `mnemo remember` refuses the text for holding a secret."""

    def detect(row: dict) -> bool:
        done = subprocess.run(
            [sys.executable, "-m", "app", "remember", "-", "--force"],
            input=row["text"].encode(),
            capture_output=True,
            env={**os.environ, "MNEMO_HOME": str(home)},
            cwd=REPO,
            timeout=120,
        )
        refused = done.returncode == 1 and b"secret" in done.stderr
        if done.returncode not in (0, 1) or (done.returncode == 1 and not refused):
            print(f"    CLI error {done.returncode}: {done.stderr.decode()[-200:]}")
        return refused

    return detect


def by_mcp(home: Path, rows: list[dict]) -> dict[int, bool]:
    """Each row stored through the MCP server's store_memory; True when it was redacted."""
    os.environ["MNEMO_HOME"] = str(home)
    from app.core.engine import Engine
    from app.mcp_server import build_server

    engine = Engine()
    server = build_server(engine)

    def payload(result) -> dict:
        if getattr(result, "structured_content", None):
            return result.structured_content
        return json.loads(result.content[0].text)

    async def store_all() -> dict[int, bool]:
        out = {}
        for i, row in enumerate(rows):
            stored = payload(
                await server.call_tool(
                    "store_memory",
                    {
                        "name": f"corpus text {i}",
                        "description": row["text"],
                        "reasoning": "secret-detection benchmark",
                        "category": "note",
                    },
                )
            )
            again = payload(await server.call_tool("get_memory", {"id": stored["id"]}))
            if "secret" in row:
                out[i] = row["secret"] not in json.dumps([stored, again], ensure_ascii=False)
            else:
                out[i] = "[REDACTED" in again["text"]
        return out

    try:
        return asyncio.run(store_all())
    finally:
        engine.close()


def by_detect_secrets() -> Callable[[dict], bool] | None:
    """detect-secrets 1.x with its default plugins and filters, one temporary file per text."""
    try:
        from detect_secrets import SecretsCollection
        from detect_secrets.settings import default_settings
    except ImportError:
        return None
    folder = Path(tempfile.mkdtemp(prefix="mnemo-ds-"))

    def detect(row: dict) -> bool:
        path = folder / "note.txt"
        path.write_text(row["text"], encoding="utf-8")
        found = SecretsCollection()
        with default_settings():
            found.scan_file(str(path))
        return any(True for f in found.files for _ in found[f])

    return detect


HOSTILE = {  # a megabyte each: what a paste of garbage, a log or minified code can hold
    "`token=` repeated": "token=" * 170_000,
    "`secret=a1;` repeated": "secret=a1;" * 100_000,
    "`password: ` repeated": "password: " * 100_000,
    "`wifi: a / ` repeated": "wifi: a / " * 100_000,
    "random base64": None,  # made in `hostile`, from a fixed seed
    "English prose about passwords": "The password policy says passwords need 12 characters. "
    * 18_000,
}


def hostile() -> list[tuple[str, str, str]]:
    """Seconds `scan` takes on a megabyte of hostile text (the rules must stay linear: a
    rescan inside each failed value once took 200 s on `secret=a1;` repeated)."""
    import random
    import string

    from app.core.secrets import scan

    rows = []
    for name, text in HOSTILE.items():
        if text is None:
            pick = random.Random(7).choice
            text = "".join(pick(string.ascii_letters + string.digits + "+/") for _ in range(10**6))
        start = time.perf_counter()
        scan(text)
        seconds = time.perf_counter() - start
        print(f"hostile: {name}: {len(text) / 1e6:.2f} MB in {seconds:.2f} s")
        rows.append((name, f"{len(text) / 1e6:.2f}", f"{seconds:.2f}"))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cli", type=int, default=40, help="secrets and benign texts via CLI")
    parser.add_argument("--no-mcp", action="store_true", help="skip the MCP server")
    parser.add_argument("--no-record", action="store_true", help="do not write the docs")
    args = parser.parse_args()

    sets = [(name, (load(s), load(b))) for name, s, b in SETS if (DATA / s).exists()]
    all_secrets = [s for _, (secrets, _) in sets for s in secrets]
    all_benign = [b for _, (_, benign) in sets for b in benign]
    kinds = len({s["kind"] for s in all_secrets})
    print(f"corpus: {len(all_secrets)} secrets of {kinds} kinds, {len(all_benign)} benign texts")
    rows: list[tuple] = [
        (f"Mnemo, first run (measured once, {when})", f"`scan`, {name}", caught, flagged, "–")
        for when, name, caught, flagged in FIRST_RUNS
    ]

    def add(detector: str, path: str, result: tuple[int, int, float], n_s: int, n_b: int):
        caught, flagged, seconds = result
        per_text = f"{1000 * seconds / (n_s + n_b):.1f}"
        rows.append((detector, path, rate(caught, n_s), rate(flagged, n_b), per_text))

    for name, (secrets, benign) in sets:
        result = judge(f"scan, {name}", by_scan, secrets, benign)
        add("Mnemo", f"`scan`, {name}", result, len(secrets), len(benign))
    with tempfile.TemporaryDirectory(prefix="mnemo-bench-secrets-") as tmp:
        if args.cli:
            some_s, some_b = subset(all_secrets, args.cli), subset(all_benign, args.cli)
            result = judge("CLI remember", by_cli(Path(tmp) / "cli"), some_s, some_b)
            add("Mnemo", "CLI `mnemo remember` (even subset)", result, len(some_s), len(some_b))
        if not args.no_mcp:
            start = time.perf_counter()
            redacted = by_mcp(Path(tmp) / "mcp", all_secrets + all_benign)
            seconds = time.perf_counter() - start
            print(f"MCP: {len(redacted)} store_memory + get_memory calls in {seconds:.1f} s")
            verdict = {id(r): redacted[i] for i, r in enumerate(all_secrets + all_benign)}
            caught, flagged, _ = judge(
                "MCP store_memory", lambda r: verdict[id(r)], all_secrets, all_benign
            )
            add(
                "Mnemo",
                "MCP `store_memory` (stored text checked)",
                (caught, flagged, seconds),
                len(all_secrets),
                len(all_benign),
            )
    peer = by_detect_secrets()
    if peer is None:
        print("detect-secrets is not installed: `.venv/bin/pip install detect-secrets` to compare")
    else:
        from importlib.metadata import version

        name = f"detect-secrets {version('detect-secrets')}"
        for corpus, (secrets, benign) in sets:
            result = judge(f"{name}, {corpus}", peer, secrets, benign)
            add(name, f"default plugins, {corpus}", result, len(secrets), len(benign))
    slow = hostile()
    if not args.no_record:
        record(
            "Secret detection on hostile text",
            ["input", "MB", "seconds"],
            slow,
            note="`scan` alone, one process; every field of every write goes through it.",
        )
        record(
            "Secret detection",
            ["detector", "path", "secrets caught", "benign texts flagged", "ms/text"],
            rows,
            note=(
                f"Corpus: tests/core/data/secrets ({len(all_secrets)} fake secrets of {kinds} "
                f"kinds, {len(all_benign)} risky-looking benign texts; documented vendor "
                "examples such as AKIAIOSFODNN7EXAMPLE count as benign). Goal: ≥ 97 % caught, "
                "≤ 1 % flagged. Each set after the main corpus was written by someone who had "
                "not seen the rules of the day; its first run is kept as the honest estimate, "
                "its misses were fixed afterwards. CLI: a refusal "
                "counts as caught; MCP redacts instead of refusing, so a secret "
                "counts as caught when the stored memory no longer holds it."
            ),
        )


if __name__ == "__main__":
    main()
