"""What an agent waits for when it runs Mnemo's hooks: a whole hook process, as the agent
starts it, fed the agent's documented event on standard input.

    .venv/bin/python -m bench.agents [--memories 2000] [--runs 20]

- the session-start hook (`mnemo context --hook claude` / `--hook gemini`), cold: a new
  process each time, as the agents run it today, quiet and with one core busy;
- `mnemo mcp` until it answers `initialize` (what `claude mcp list` waits for).

Issue 25's goals are for the per-prompt hook still to come (p95 ≤ 50 ms warm, ≤ 400 ms cold);
this measures the cold path every hook has now, as the baseline.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.report import busy_core, record

MNEMO = Path(sys.executable).parent / "mnemo"


def _pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def _seed(env: dict, count: int) -> None:
    lines = [
        json.dumps({"text": f"Note {i}: the csv importer keeps quoted newlines in field {i}"})
        for i in range(count)
    ]
    path = Path(env["MNEMO_HOME"]) / "seed.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    subprocess.run([str(MNEMO), "import", str(path)], env=env, check=True, capture_output=True)


def _hook_ms(env: dict, args: list[str], event: dict, runs: int) -> tuple[list[float], int]:
    times, size = [], 0
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run(
            [str(MNEMO), *args], input=json.dumps(event), env=env, capture_output=True,
            text=True, timeout=120,
        )  # fmt: skip
        times.append((time.perf_counter() - started) * 1000)
        size = len(done.stdout)
    return times, size


def _mcp_ms(env: dict, runs: int) -> list[float]:
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"}}}  # fmt: skip
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        proc = subprocess.Popen(
            [str(MNEMO), "mcp"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        proc.stdin.write(json.dumps(hello) + "\n")
        proc.stdin.flush()
        proc.stdout.readline()
        times.append((time.perf_counter() - started) * 1000)
        proc.stdin.close()
        proc.wait(30)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="mnemo-bench-agents-"))
    env = {**os.environ, "MNEMO_HOME": str(work / "home")}
    _seed(env, args.memories)
    project = work / "csv-importer"
    project.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    event = {
        "session_id": "b",
        "transcript_path": str(work / "t.jsonl"),
        "cwd": str(project),
        "hook_event_name": "SessionStart",
        "source": "startup",
        "trigger": "startup",
    }
    rows = []
    for load in ("quiet", "one core busy"):
        with busy_core() if load != "quiet" else contextlib.nullcontext():
            for agent in ("claude", "gemini"):
                times, size = _hook_ms(env, ["context", "--hook", agent], event, args.runs)
                rows.append((f"session-start hook, {agent}, cold process", load,
                             f"{_pct(times, 50):.0f}", f"{_pct(times, 95):.0f}",
                             f"{size:,} characters"))  # fmt: skip
                print(" | ".join(rows[-1]))
            times = _mcp_ms(env, max(5, args.runs // 4))
            rows.append(("`mnemo mcp` start to its answer to initialize", load,
                         f"{_pct(times, 50):.0f}", f"{_pct(times, 95):.0f}", ""))  # fmt: skip
            print(" | ".join(rows[-1]))
    record(
        "Agents: what a hook costs",
        ["measure", "load", "p50 ms", "p95 ms", "output"],
        rows,
        note=f"A whole hook process as the agent starts it (`{MNEMO.name}` of the venv), fed the "
        f"agent's documented SessionStart event on standard input, {args.runs} runs, "
        f"{args.memories:,} memories. The per-prompt hook through a warm process (issue 25: "
        "p95 ≤ 50 ms warm, ≤ 400 ms cold) is not built yet; this is the cold path.",
    )


if __name__ == "__main__":
    main()
