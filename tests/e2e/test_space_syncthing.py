"""A team space's membership over real Syncthing (issue 45): three devices on loopback, each
with its own Syncthing home and ports and its own Mnemo home, the space's folder inside the
folder Syncthing shares. Alice makes the space on her laptop and invites Bob's laptop and
her own desktop; each joins through its own copy of the folder once Syncthing brought it;
all three come to list the same members; an invitation sealed to Bob admits not Alice's
desktop; Alice removes Bob and every device comes to see it, the key moved on."""

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


def mnemo(home: Path, *args: str):
    return run_cli(*args, env={"MNEMO_HOME": str(home)})


def ok(home: Path, *args: str) -> str:
    done = mnemo(home, *args)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


def members(home: Path) -> dict:
    return json.loads(ok(home, "space", "members", "team", "--json"))


def who(home: Path) -> dict[str, list[str]]:
    """Person -> device ids, as this device sees the space now."""
    return {p["person"]: sorted(d["id"] for d in p["devices"]) for p in members(home)["persons"]}


@pytest.fixture
def three(tmp_path):
    syncs = syncthing.cluster(tmp_path, ["alice-laptop", "bob-laptop", "alice-desktop"])
    homes = [tmp_path / s.home.parent.name / "home" for s in syncs]
    folders = [s.home.parent / "folder" / "team" for s in syncs]
    yield homes, folders, syncs
    for sync in syncs:
        sync.stop()
    shutil.rmtree(tmp_path, ignore_errors=True)


def test_three_devices_of_two_people_agree_on_a_space_over_syncthing(three):
    (alice, bob, desk), (alice_folder, bob_folder, desk_folder), syncs = three
    ids = {home: ok(home, "space", "id").strip() for home in (alice, bob, desk)}
    ok(alice, "space", "create", "team", str(alice_folder), "--person", "alice")
    to_bob = ok(alice, "space", "invite", "team", ids[bob], "--person", "bob").strip()
    to_desk = ok(alice, "space", "invite", "team", ids[desk], "--person", "alice").strip()

    # Bob's invitation opened on Alice's desktop: refused, nothing written there
    wait(lambda: (desk_folder / "mnemo-space.json").exists(), 120, "the folder on the desktop")
    refused = mnemo(desk, "space", "join", to_bob, str(desk_folder))
    assert refused.returncode == 1 and "not for this device" in refused.stderr.decode()
    assert json.loads(ok(desk, "space", "list", "--json")) == []

    # each joins through its own copy of the folder, once Syncthing brought the invitations'
    # admissions (a join before them waits for the folder, and says so)
    wait(lambda: (bob_folder / "mnemo-space.json").exists(), 120, "the folder at Bob's")
    ok(bob, "space", "join", to_bob, str(bob_folder))
    ok(desk, "space", "join", to_desk, str(desk_folder))
    everyone = {"alice": sorted([ids[alice], ids[desk]]), "bob": [ids[bob]]}
    wait(
        lambda: all(who(h) == everyone and members(h)["member"] for h in (alice, bob, desk)),
        180,
        "the three devices to list the same members",
    )
    epoch = members(alice)["epoch"]
    assert members(bob)["epoch"] == members(desk)["epoch"] == epoch

    # Alice removes Bob: every device comes to see it, with the key moved on
    said = ok(alice, "space", "remove", "team", "bob")
    assert "nothing written after" in said
    wait(
        lambda: all(members(h)["epoch"] != epoch for h in (alice, bob, desk))
        and not members(bob)["member"],
        180,
        "the removal to reach every device",
    )
    moved = members(alice)["epoch"]
    assert members(desk)["epoch"] == members(bob)["epoch"] == moved
    assert members(desk)["member"] and members(alice)["member"]
    assert [r["person"] for r in members(desk)["removed"]] == ["bob"]
