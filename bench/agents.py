"""What an agent waits for when it runs Mnemo's hooks: a whole hook process, as the agent
starts it, fed the agent's documented event on standard input.

    .venv/bin/python -m bench.agents [--memories 10000] [--runs 30] [--peer REF]
    .venv/bin/python -m bench.agents --mcp-after-upgrade [--runs 30] [--peer REF]

- the prompt hook (`mnemo hook prompt`): warm (the helper runs) and cold (no helper: the
  hook starts one and waits for its answer), quiet and with one core busy;
- the warm prompt hook while the helper embeds a backlog of the same size (an import
  without vectors), against the code at `--peer` (a git ref) in the same run;
- the session-start hook through the helper, and the old cold path (`mnemo context`);
- `mnemo mcp` until it answers `initialize` (what `claude mcp list` waits for); with
  `--mcp-after-upgrade` only that, after an upgrade (the answers kept an older Mnemo's);
- the helper's memory (resident set) while it serves.

Two installs: this checkout's venv (an editable install: Python's start-up imports its
finder, ~15 ms) and a wheel of this checkout installed as users install it (pip, a venv),
which reads its dependencies from this venv.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.report import busy_core, record

REPO = Path(__file__).resolve().parent.parent
DEV = Path(sys.executable).parent / "mnemo"
PROMPT = "how does the csv importer deal with quoted newlines in a field?"


def _pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def _wheel_install(work: Path) -> Path:
    """A venv with this checkout's wheel (not editable); dependencies from this venv."""
    wheels = work / "wheel"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(REPO), "-w", str(wheels)],
        check=True, capture_output=True, cwd=work,
    )  # fmt: skip
    venv = work / "wheel-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next(venv.glob("lib/python3*/site-packages"))
    ours = next(Path(sys.prefix).glob("lib/python3*/site-packages"))
    (site / "mnemo-bench-deps.pth").write_text(str(ours) + "\n")  # after the wheel's own
    wheel = next(wheels.glob("*.whl"))
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site),
         str(wheel)], check=True, capture_output=True,
    )  # fmt: skip
    script = venv / "bin" / "mnemo"
    script.write_text(f"#!{venv / 'bin' / 'python'}\nimport sys\nfrom app.cli import main\n"
                      "sys.exit(main())\n")  # fmt: skip
    script.chmod(0o755)
    return script


SCIFACT = REPO.parent / "shared" / "data" / "scifact" / "corpus.jsonl"


def _seed(mnemo: Path, env: dict, count: int) -> None:
    """`count` real texts (pieces of SciFact abstracts of 150-400 characters: the size of a
    note) without vectors, and three notes of a developer's, one of them what the prompt
    asks about."""
    docs = [json.loads(line) for line in SCIFACT.open()]
    lines: list[str] = []
    for part in range(8):
        for doc in docs:
            text = doc["text"][part * 400 : (part + 1) * 400]
            if len(lines) < count and len(text) >= 150:
                title = doc["title"] + (f" ({part + 1})" if part else "")
                lines.append(json.dumps({"title": title, "text": text}))
    lines += [json.dumps({"text": t}) for t in (
        "The CSV importer must keep quoted newlines inside a field, never split the row there",
        "We deploy the billing service with Helm on Fridays; roll back with helm rollback",
        "Grandma's lasagne needs three layers of béchamel",
    )]  # fmt: skip
    path = Path(env["MNEMO_HOME"]) / "seed.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    subprocess.run(
        [str(mnemo), "import", "--no-embed", str(path)], env=env, check=True, capture_output=True
    )


def _backfill(mnemo: Path, env: dict) -> None:
    subprocess.run([str(mnemo), "backfill"], env=env, check=True, capture_output=True)


def _missing(env: dict) -> int:
    """Memories still without vectors (asked in a process of its own)."""
    done = subprocess.run(
        [sys.executable, "-c", "import json, sys; from app.core.engine import Engine; "
         "e = Engine(); print(e.vector_status().get('missing', 0)); e.close()"],
        env=env, cwd=REPO, check=True, capture_output=True, text=True,
    )  # fmt: skip
    return int(done.stdout.split()[-1])


def _peer(work: Path, ref: str) -> Path:
    """A `mnemo` running the code at git `ref` (a worktree), on this venv's packages."""
    tree = work / "peer"
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "-q", "--detach", str(tree), ref],
                   check=True, capture_output=True)  # fmt: skip
    script = work / "peer-mnemo"
    # -P: not the current folder first on sys.path (run from the checkout, `-m app` imported
    # the checkout's code, not the peer's)
    script.write_text(f'#!/bin/sh\nPYTHONPATH={tree} exec {sys.executable} -P -m app "$@"\n')
    script.chmod(0o755)
    return script


def _during_backfill(
    mnemo: Path, env: dict, work: Path, seeded: Path, runs: int, load: str, label: str
) -> list:
    """The warm prompt hook while the helper embeds the whole backlog (a fresh copy of the
    seeded data folder, nothing embedded): one prompt about every 0.2 s, as tool calls and
    prompts come in an agent's session."""
    home = work / f"backlog-{label.split()[0]}-{load.split()[0]}"
    shutil.rmtree(home, ignore_errors=True)
    shutil.copytree(seeded, home)
    env = {**env, "MNEMO_HOME": str(home)}
    _run(mnemo, env, ["hook", "session-start"], _event(work, -1, "SessionStart"))  # starts it
    missing_at_start = _missing(env)
    times, out = [], ""
    started = time.monotonic()
    for n in range(runs):
        ms, out = _run(mnemo, env, ["hook", "prompt"], _event(work, n, "UserPromptSubmit", PROMPT))
        times.append(ms)
        time.sleep(0.2)
    took = time.monotonic() - started
    _stop(mnemo, env)
    missing = _missing(env)
    row = (f"prompt hook, claude, warm, while the helper embeds the backlog ({label})", load,
           f"{_pct(times, 50):.0f}", f"{_pct(times, 95):.0f}",
           f"{len(out):,} characters; {missing_at_start - missing} embedded in {took:.0f} s "
           f"meanwhile, {missing:,} still waiting")  # fmt: skip
    print(" | ".join(row), flush=True)
    shutil.rmtree(home, ignore_errors=True)
    return [row]


def _run(mnemo: Path, env: dict, args: list[str], event: dict) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(
        [str(mnemo), *args], input=json.dumps(event), env=env, capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip
    return (time.perf_counter() - started) * 1000, done.stdout


def _stop(mnemo: Path, env: dict) -> None:
    subprocess.run([str(mnemo), "hook", "stop"], env=env, capture_output=True, timeout=60)


def _helper_rss_mb(mnemo: Path, env: dict) -> float | None:
    done = subprocess.run(
        [str(mnemo), "hook", "status"], env=env, capture_output=True, text=True, timeout=60
    )
    words = done.stdout.replace(")", " ").split()
    if "(pid" not in words:
        return None
    pid = words[words.index("(pid") + 1]
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return None


def _event(work: Path, n: int, name: str, prompt: str | None = None) -> dict:
    event = {
        # a new session each run: no memory is held back as shown already
        "session_id": f"bench-{name}-{n}-{time.monotonic_ns()}",
        "transcript_path": str(work / "t.jsonl"),
        "cwd": str(work / "csv-importer"),
        "hook_event_name": name,
        "source": "startup",
    }
    if prompt is not None:
        event["prompt"] = prompt
    return event


def _measure(
    mnemo: Path, env: dict, work: Path, runs: int, cold: int, load: str, label: str
) -> list:
    rows = []

    def row(measure: str, times: list[float], out: str) -> None:
        rows.append((f"{measure} ({label})", load, f"{_pct(times, 50):.0f}",
                     f"{_pct(times, 95):.0f}", f"{len(out):,} characters"))  # fmt: skip
        print(" | ".join(rows[-1]), flush=True)

    _stop(mnemo, env)
    _run(mnemo, env, ["hook", "prompt"], _event(work, -1, "UserPromptSubmit", PROMPT))  # warm up
    for agent, name in (("claude", "UserPromptSubmit"), ("gemini", "BeforeAgent")):
        times, out = [], ""
        for n in range(runs):
            ms, out = _run(mnemo, env, ["hook", "prompt", "--agent", agent],
                           _event(work, n, name, PROMPT))  # fmt: skip
            times.append(ms)
        row(f"prompt hook, {agent}, warm", times, out)
    times, out = [], ""
    for n in range(runs):
        ms, out = _run(mnemo, env, ["hook", "session-start"], _event(work, n, "SessionStart"))
        times.append(ms)
    row("session-start hook, claude, warm", times, out)
    rss = _helper_rss_mb(mnemo, env)
    times, out = [], ""
    for n in range(cold):
        _stop(mnemo, env)
        ms, out = _run(mnemo, env, ["hook", "prompt"], _event(work, n, "UserPromptSubmit", PROMPT))
        times.append(ms)
    row("prompt hook, claude, cold (starts the helper)", times, out)
    _stop(mnemo, env)
    times, out = [], ""
    for n in range(cold):
        ms, out = _run(mnemo, env, ["context", "--hook", "claude"], _event(work, n, "SessionStart"))
        times.append(ms)
    row("session-start, `mnemo context` in its own process", times, out)
    if rss is not None:
        rows.append((f"the helper's resident memory ({label})", load, "", "", f"{rss:.0f} MB"))
        print(" | ".join(rows[-1]), flush=True)
    return rows


def _kept_answer(env: dict) -> Path:
    """Where `mnemo mcp` keeps its answer to initialize (app/mcp_greeting.py)."""
    from app.core import paths

    before = os.environ.get("MNEMO_HOME")
    os.environ["MNEMO_HOME"] = env["MNEMO_HOME"]
    try:
        return paths.state_dir() / "mcp-initialize.json"
    finally:
        if before is None:
            del os.environ["MNEMO_HOME"]
        else:
            os.environ["MNEMO_HOME"] = before


def _mcp_ms(mnemo: Path, env: dict, runs: int, kept: bool) -> list[float]:
    """`mnemo mcp` from its start to its answer to initialize: with the answer it gave
    before kept (`kept`), or as the first start after an install (nothing kept)."""
    times = []
    answer = _kept_answer(env)
    for n in range(runs + (1 if kept else 0)):
        if not kept:
            answer.unlink(missing_ok=True)
        took = _first_answer_ms(mnemo, env, "2025-06-18")
        if not kept or n > 0:  # (kept: the first run keeps it)
            times.append(took)
    return times


def _first_answer_ms(mnemo: Path, env: dict, protocol: str) -> float:
    """One `mnemo mcp` start to its answer to an `initialize` in `protocol`; the server
    is then closed and waited for (as an agent's session ends)."""
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": protocol, "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"}}}  # fmt: skip
    started = time.perf_counter()
    proc = subprocess.Popen(
        [str(mnemo), "mcp"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    proc.stdin.write(json.dumps(hello) + "\n")
    proc.stdin.flush()
    answer = json.loads(proc.stdout.readline())
    took = (time.perf_counter() - started) * 1000
    assert answer["result"]["protocolVersion"] == protocol, answer
    proc.stdin.close()
    proc.wait(60)
    return took


def _after_upgrade(mnemo: Path, env: dict, runs: int) -> tuple[list[float], list[float]]:
    """`mnemo mcp` after an upgrade: the answers kept are an older Mnemo's (its version in
    their keys). Each run: a first start in Claude Code's protocol version, then the next
    start in Codex's and Gemini CLI's (another agent's first start). What each waited for
    its answer to initialize."""
    kept = _kept_answer(env)
    _first_answer_ms(mnemo, env, "2025-11-25")  # (answers kept as an install leaves them)
    current = json.loads(kept.read_text())
    older = {json.dumps(["0.0.0-before-upgrade", *json.loads(k)[1:]]): v
             for k, v in current.items()}  # fmt: skip
    first, after = [], []
    for _ in range(runs):
        kept.write_text(json.dumps(older))
        first.append(_first_answer_ms(mnemo, env, "2025-11-25"))
        after.append(_first_answer_ms(mnemo, env, "2025-06-18"))
    return first, after


def _mcp_after_upgrade(args: argparse.Namespace) -> None:
    """Only `mnemo mcp` after an upgrade (`--mcp-after-upgrade`), this code and `--peer`'s,
    quiet and with one core busy; recorded in a section of its own."""
    work = Path(tempfile.mkdtemp(prefix="mnemo-bench-mcp-"))
    env = {**os.environ, "MNEMO_HOME": str(work / "home")}
    _seed(DEV, env, 0)
    _backfill(DEV, env)
    codes = [(DEV, "this code")]
    if args.peer:
        codes.append((_peer(work, args.peer), args.peer))
    rows = []
    try:
        for load in ("quiet", "one core busy"):
            with busy_core() if load != "quiet" else contextlib.nullcontext():
                for mnemo, label in codes:
                    first, after = _after_upgrade(mnemo, env, args.runs)
                    for what, times in (("first start, Claude Code's version", first),
                                        ("next start, Codex's version", after)):  # fmt: skip
                        rows.append((f"{what} ({label})", load, f"{_pct(times, 50):.0f}",
                                     f"{_pct(times, 95):.0f}"))  # fmt: skip
                        print(" | ".join(rows[-1]), flush=True)
    finally:
        if args.peer:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force",
                            str(work / "peer")], capture_output=True)  # fmt: skip
    peer = f"; the code at {args.peer} (its own worktree, this venv's packages) in the same run"
    record(
        "Agents: `mnemo mcp` after an upgrade",
        ["`mnemo mcp` start to its answer to initialize", "load", "p50 ms", "p95 ms"],
        rows,
        note=f"{args.runs} runs of: the answers kept are an older Mnemo's (the same answers "
        "with another version in their keys, as after an upgrade); `mnemo mcp` (the editable "
        "venv) starts and is asked `initialize` in 2025-11-25 (Claude Code's), closed, then "
        "started again and asked in 2025-06-18 (Codex's, Gemini CLI's); each server is "
        "waited for until it exits. 3 memories"
        + (peer if args.peer else "")
        + ". Goal (issue 42): `mnemo mcp` initialize ≤ 1 s. An older Mnemo's answer is "
        "never given. Since 2026-11-30 the first start answers from Mnemo's own copy of the "
        "SDK's answer (`mcp_greeting.builtin`, when the installed SDK is the release it was "
        "checked against) before the SDK loads, then keeps the SDK's own answers to every "
        "protocol version; before (4ab8cd2) it loaded the SDK first. The next start answers "
        "from what was kept.",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--mcp-after-upgrade", action="store_true",
        help="measure only `mnemo mcp` after an upgrade (its own section)",
    )  # fmt: skip
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--cold-runs", type=int, default=20, help="runs of each cold measure")
    parser.add_argument("--peer", default="", help="git ref of the code to compare with")
    args = parser.parse_args()
    if args.mcp_after_upgrade:
        _mcp_after_upgrade(args)
        return
    work = Path(tempfile.mkdtemp(prefix="mnemo-bench-agents-"))
    env = {**os.environ, "MNEMO_HOME": str(work / "home"), "MNEMO_HOOK_IDLE_S": "600"}
    _seed(DEV, env, args.memories)
    seeded = work / "seeded"
    shutil.copytree(work / "home", seeded)
    (work / "csv-importer").mkdir()
    subprocess.run(["git", "init", "-q"], cwd=work / "csv-importer", check=True)
    installs = [(DEV, "editable venv"), (_wheel_install(work), "wheel install")]
    backlog = [installs[1]] + ([(_peer(work, args.peer), f"{args.peer}")] if args.peer else [])
    rows = []
    try:
        for load in ("quiet", "one core busy"):
            with busy_core() if load != "quiet" else contextlib.nullcontext():
                for mnemo, label in backlog:
                    rows += _during_backfill(mnemo, env, work, seeded, args.runs * 2, load, label)
        _backfill(DEV, env)
        for load in ("quiet", "one core busy"):
            with busy_core() if load != "quiet" else contextlib.nullcontext():
                for mnemo, label in installs:
                    rows += _measure(mnemo, env, work, args.runs, args.cold_runs, load, label)
                for kept, how in ((False, "first start, nothing kept"),
                                  (True, "its answer kept from before")):  # fmt: skip
                    times = _mcp_ms(DEV, env, max(10, args.runs // 3), kept)
                    what = f"`mnemo mcp` start to its answer to initialize ({how})"
                    rows.append(
                        (what, load, f"{_pct(times, 50):.0f}", f"{_pct(times, 95):.0f}", "")
                    )
                    print(" | ".join(rows[-1]), flush=True)
    finally:
        for mnemo, _ in installs:
            _stop(mnemo, env)
        if args.peer:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force",
                            str(work / "peer")], capture_output=True)  # fmt: skip
    record(
        "Agents: what a hook costs",
        ["measure", "load", "p50 ms", "p95 ms", "output"],
        rows,
        note=f"A whole hook process as the agent starts it, fed the agent's documented event "
        f"on standard input; {args.runs} runs ({args.cold_runs} cold), "
        f"{args.memories + 3:,} memories (pieces of SciFact abstracts of 150-400 characters "
        "as notes, and the one the prompt is about), a new session id each run. Warm: the "
        "hook helper (`mnemo hook serve`) runs; cold: it was stopped before each run, so the "
        "hook starts it and waits for its answer (Python, the database and the model). While "
        f"the helper embeds the backlog: the same {args.memories:,} memories imported without "
        f"vectors, the helper started by a session-start, then {args.runs * 2} prompts about "
        "0.2 s apart"
        + (
            f", and the same with the code at {args.peer} (its own worktree, this venv's "
            "packages) in the same run"
            if args.peer
            else ""
        )
        + ". Goals (issue 42): warm p95 ≤ 60 ms quiet, ≤ 100 ms with a core busy; during "
        "the backfill p95 ≤ 150 ms; `mnemo mcp` initialize ≤ 1 s. The wheel install is how "
        "users run it; the editable venv's Python start-up imports its finder (about 15 ms "
        "more). `mnemo mcp` answers initialize before the MCP SDK loads when it answered it "
        "before; the first start after an install or an upgrade loads the SDK first.",
    )


if __name__ == "__main__":
    main()
