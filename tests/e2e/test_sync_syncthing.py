"""Sync over real Syncthing instances (issue 27): two and three devices on loopback, each
with its own Syncthing home and ports and its own Mnemo home, configured through
Syncthing's REST API; changes made on every device arrive everywhere, and one memory
edited on two devices while they are apart (the folder paused) is kept both ways."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests import syncthing
from tests.conftest import run_cli, wait


@pytest.fixture(autouse=True)
def _syncthing_installed():
    why = syncthing.available()
    if why is not None:
        pytest.fail(f"{why}: run the README's test command")


def mnemo(home: Path, *args: str) -> str:
    done = run_cli(*args, env={"MNEMO_HOME": str(home)})
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


def memories(home: Path) -> dict[str, dict]:
    """Every memory (trash too) as the user exports it, minus what each device makes for
    itself (keyword labels) and says from where it stands (which device an origin was
    written on: none for its own, ADR 0022)."""
    out = {}
    for line in mnemo(home, "export", "--include-trash").splitlines():
        record = json.loads(line)
        record.pop("keywords", None)
        for made in [*record.get("origins", []), record.get("origin") or {}]:
            made.pop("device", None)
        out[record["id"]] = record
    return out


def converged(homes: list[Path], syncs: list[syncthing.Syncthing]):
    """Each device applies what arrived and writes what it has; true once Syncthing has
    nothing left to move and every device holds the same memories."""
    for home in homes:
        mnemo(home, "sync", "now")
    if not all(s.in_sync_with([o for o in syncs if o is not s]) for s in syncs):
        return False
    states = [memories(home) for home in homes]
    return states if all(s == states[0] for s in states) else False


@pytest.fixture
def devices(tmp_path):
    started: list[syncthing.Syncthing] = []

    def make(*names: str) -> tuple[list[Path], list[syncthing.Syncthing]]:
        syncs = syncthing.cluster(tmp_path, list(names))
        started.extend(syncs)
        homes = []
        for name, sync in zip(names, syncs, strict=True):
            home = tmp_path / name / "home"
            folder = sync.home.parent / "folder"
            if homes:  # as the README says: the folder the first device made, shared
                wait(lambda f=folder: (f / "mnemo-sync.json").exists(), 120, "the folder")
            mnemo(home, "sync", "init", str(folder), "--name", name)
            homes.append(home)
        # a person approves each new device on the first one; the others follow it
        for home in homes[1:]:
            device = json.loads(mnemo(home, "sync", "status", "--json"))["device"]
            wait(lambda d=device: d in mnemo(homes[0], "sync", "devices"), 120, "the new device")
            mnemo(homes[0], "sync", "devices", "approve", device)
        return homes, syncs

    yield make
    for sync in started:
        sync.stop()
    shutil.rmtree(tmp_path, ignore_errors=True)


def test_two_devices_converge_and_keep_both_sides_of_an_edit_made_apart(devices):
    (laptop, desktop), syncs = devices("laptop", "desktop")
    mnemo(laptop, "remember", "The staging server is at 10.0.0.5 and runs Debian.")
    mnemo(laptop, "remember", "Alice prefers morning meetings.")
    mnemo(desktop, "remember", "The invoice for March was paid by bank transfer.")
    states = wait(lambda: converged([laptop, desktop], syncs), 180, "both devices to agree")
    texts = {m["text"] for m in states[0].values()}
    assert "The invoice for March was paid by bank transfer." in texts
    assert "Alice prefers morning meetings." in texts
    server = next(i for i, m in states[0].items() if m["text"].startswith("The staging"))

    # Apart: the folder paused on both; each edits the same memory its own way
    for sync in syncs:
        sync.pause(True)
    mnemo(laptop, "edit", server, "--text", "The staging server is at 10.0.0.9 and runs Debian.")
    mnemo(desktop, "edit", server, "--text", "The staging server runs Debian. It reboots Sundays.")
    mnemo(desktop, "forget", next(i for i, m in states[0].items() if "Alice" in m["text"]))
    for home in (laptop, desktop):
        mnemo(home, "sync", "now")
    for sync in syncs:
        sync.pause(False)
    states = wait(lambda: converged([laptop, desktop], syncs), 180, "both to agree again")
    merged = states[0][server]
    assert "10.0.0.9" in merged["text"] and "reboots Sundays" in merged["text"]
    versions = [m for m in states[0].values() if m.get("merged_into") == server]
    assert len(versions) == 2 and all(m["deleted_at"] for m in versions)
    alice = next(m for m in states[0].values() if "Alice" in m["text"])
    assert alice["deleted_at"]  # the trash travelled, and nothing came back by itself
    status = mnemo(laptop, "sync", "status")
    assert "desktop" in status and "Edited on two devices apart" in status

    # unmerge on one device splits the two versions everywhere
    mnemo(desktop, "unmerge", server)
    states = wait(lambda: converged([laptop, desktop], syncs), 180, "the unmerge to travel")
    assert states[0][server]["deleted_at"]
    assert all(
        not m["deleted_at"] for m in states[0].values() if m["id"] in {v["id"] for v in versions}
    )


def test_three_devices_converge(devices):
    homes, syncs = devices("laptop", "desktop", "devbox")
    notes = iter(
        [
            "The garden needs water every second evening in July.",
            "Piano lessons moved to Thursday at five.",
            "The car insurance renews in October.",
            "Bob's birthday is on the 14th of February.",
            "The router admin page is at 192.168.1.1.",
            "Sourdough starter wants feeding twice a day.",
            "The dentist is Dr. Keller on Main Street.",
            "Passport expires in 2031.",
            "The heating oil tank holds 3,000 litres.",
        ]
    )
    for home in homes:
        for _ in range(3):
            mnemo(home, "remember", next(notes))
    states = wait(lambda: converged(homes, syncs), 240, "three devices to agree")
    assert len(states[0]) == 9
    # one memory used on every device: the counts add up
    target = next(iter(states[0]))
    for home in homes:
        mnemo(home, "remember", states[0][target]["text"])
    states = wait(
        lambda: (s := converged(homes, syncs)) and s[0][target]["observation_count"] == 4 and s,
        240,
        "the observations to add up",
    )
    assert all(s == states[0] for s in states)
    status = json.loads(mnemo(homes[0], "sync", "status", "--json"))
    assert {d["name"] for d in status["devices"]} == {"laptop", "desktop", "devbox"}
    assert status["pending"] == 0 and status["waiting_bytes"] == 0
