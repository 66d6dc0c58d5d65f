"""A device killed (-9) in the middle of applying what arrived resumes and ends the same as
one that was never interrupted (issue 27): every memory, every field, nothing twice, and
`mnemo doctor` clean. The real CLI in real processes, on real SQLite files."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, run_cli

WORDS = "alpha beta gamma server cache deploy garden piano invoice river coffee train".split()


def mnemo(home: Path, *args: str) -> str:
    done = run_cli(*args, env={"MNEMO_HOME": str(home)}, timeout=600)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


def exported(home: Path) -> list[dict]:
    records = [json.loads(line) for line in mnemo(home, "export", "--include-trash").splitlines()]
    for record in records:
        record.pop("keywords", None)
    return sorted(records, key=lambda r: r["id"])


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """A sync folder holding one device's 6,000 memories (some edited, trashed, used)."""
    root = tmp_path_factory.mktemp("sync-crash")
    rng = random.Random(7)
    source = root / "source.jsonl"
    with open(source, "w", encoding="utf-8") as f:
        for i in range(6_000):
            words = " ".join(rng.choice(WORDS) for _ in range(10))
            f.write(json.dumps({"text": f"Note {i}: {words}.", "tags": [rng.choice(WORDS)]}))
            f.write("\n")
    home = root / "origin"
    mnemo(home, "import", str(source), "--no-embed")
    mnemo(home, "sync", "init", str(root / "folder"), "--name", "origin", "--no-embed")
    ids = [r["id"] for r in exported(home)]
    mnemo(home, "forget", *ids[:20])
    mnemo(home, "edit", ids[30], "--text", "An edited note about the river.")
    mnemo(home, "sync", "now", "--no-embed")
    return root / "folder"


@pytest.mark.parametrize("start", ["logs", "snapshot"])
def test_a_device_killed_mid_apply_resumes_to_the_same_state(folder, tmp_path, start):
    if start == "snapshot":  # the new device starts from the origin's snapshot instead
        mnemo(folder.parent / "origin", "sync", "compact")
    reference = tmp_path / "reference"
    started = time.monotonic()
    mnemo(reference, "sync", "init", str(folder), "--name", "reference", "--no-embed")
    whole = time.monotonic() - started  # an uninterrupted join, start to end
    expected = exported(reference)
    assert len(expected) == 6_000

    victim = tmp_path / "victim"
    env = {**os.environ, "MNEMO_HOME": str(victim)}
    rng = random.Random(11)
    kills = 0
    for round_ in range(12):
        args = ["sync", "init", str(folder), "--name", "victim"] if round_ == 0 else ["sync", "now"]
        args.append("--no-embed")  # the pass itself is what is interrupted
        process = subprocess.Popen(
            [sys.executable, "-m", "app", *args],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        # a random moment within a pass (its start-up is about a second of it)
        time.sleep(rng.uniform(0.2, max(0.6, 0.6 * whole)))
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            kills += 1
        process.wait()
        if process.returncode == 0:
            break  # it finished: nothing left to interrupt
    assert kills >= 2  # the kills did land mid-pass
    mnemo(victim, "sync", "now", "--no-embed")
    assert exported(victim) == expected
    # doctor: everything whole (vectors are left to the backfill here: --no-embed)
    doctor = run_cli("doctor", env={"MNEMO_HOME": str(victim)}).stdout.decode()
    failing = [line for line in doctor.splitlines() if line.startswith("FAIL")]
    assert [line.split(":")[0] for line in failing] == ["FAIL  vectors"], doctor
    status = json.loads(mnemo(victim, "sync", "status", "--json"))
    assert status["pending"] == 0 and status["waiting_bytes"] == 0
    assert "victim" in {d["name"] for d in status["devices"]}
    assert status["from_snapshot"] == (start == "snapshot")
    # AND the edited note's history is the origin's: its one version, once (issue 44)
    edited = next(r["id"] for r in expected if r["text"] == "An edited note about the river.")
    versions = [
        json.loads(mnemo(home, "history", edited, "--json"))["versions"]
        for home in (folder.parent / "origin", victim)
    ]
    assert [(v["text"][:5], v["why"], v["replaced_at"]) for v in versions[1]] == [
        (v["text"][:5], "edit", v["replaced_at"]) for v in versions[0]
    ]
    assert len(versions[1]) == 1
