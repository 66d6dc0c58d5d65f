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
        lambda: (
            all(members(h)["epoch"] != epoch for h in (alice, bob, desk))
            and not members(bob)["member"]
        ),
        180,
        "the removal to reach every device",
    )
    moved = members(alice)["epoch"]
    assert members(desk)["epoch"] == members(bob)["epoch"] == moved
    assert members(desk)["member"] and members(alice)["member"]
    assert [r["person"] for r in members(desk)["removed"]] == ["bob"]


def recalled(home: Path, query: str) -> list[dict]:
    return json.loads(ok(home, "recall", query, "--mode", "keyword", "--json"))["results"]


def test_memories_shared_over_syncthing_reach_the_members_and_nothing_else_does(three):
    (alice, bob, desk), (alice_folder, bob_folder, desk_folder), syncs = three
    ids = {home: ok(home, "space", "id").strip() for home in (alice, bob, desk)}
    ok(alice, "space", "create", "team", str(alice_folder), "--person", "alice")
    to_bob = ok(alice, "space", "invite", "team", ids[bob], "--person", "bob").strip()
    to_desk = ok(alice, "space", "invite", "team", ids[desk], "--person", "alice").strip()
    for home, folder, invitation in ((bob, bob_folder, to_bob), (desk, desk_folder, to_desk)):
        wait(lambda f=folder: (f / "mnemo-space.json").exists(), 120, "the folder")
        ok(home, "space", "join", invitation, str(folder))
    # WHEN Alice shares one memory and keeps one to herself, and Bob shares one
    ok(alice, "remember", "--space", "team", "The release train leaves every second Tuesday")
    ok(alice, "remember", "My own dentist appointment is on the ninth")
    ok(bob, "remember", "--space", "team", "The staging cluster is named fernhill")

    def arrived(home: Path, query: str) -> bool:
        ok(home, "space", "sync", "team")
        return bool(recalled(home, query))

    # THEN each member finds what the others shared, with its author
    wait(lambda: arrived(bob, "release train Tuesday"), 180, "Alice's memory at Bob's")
    wait(lambda: arrived(desk, "staging cluster fernhill"), 180, "Bob's memory at the desktop")
    wait(lambda: arrived(alice, "staging cluster fernhill"), 180, "Bob's memory at Alice's")
    got = recalled(bob, "release train Tuesday")[0]
    assert got["space"] == "team" and got["author"]["person"] == "alice"
    # AND what Alice kept to herself reached no one, and no folder holds text in the clear
    for home in (bob, desk):
        ok(home, "space", "sync", "team")
        assert recalled(home, "dentist appointment ninth") == []
    for folder in (alice_folder, bob_folder, desk_folder):
        data = b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())
        for words in (b"release train", b"fernhill", b"dentist"):
            assert words not in data

    # WHEN Alice removes Bob and shares a new memory
    ok(alice, "space", "remove", "team", "bob")
    ok(alice, "remember", "--space", "team", "The new VPN gateway is vpn2.example.net")
    wait(lambda: arrived(desk, "VPN gateway vpn2"), 180, "the new memory at the desktop")

    # THEN Bob's device, whose copy of the folder has it sealed, cannot read it
    def same_lines() -> bool:
        mine = {p.name: p.read_bytes() for p in (alice_folder / "lines").glob("*.jsonl")}
        his = {p.name: p.read_bytes() for p in (bob_folder / "lines").glob("*.jsonl")}
        return all(his.get(name) == data for name, data in mine.items())

    wait(same_lines, 180, "Alice's lines in Bob's copy of the folder")
    ok(bob, "space", "sync", "team")
    assert recalled(bob, "VPN gateway vpn2") == []
    # (and what he had stays his)
    assert recalled(bob, "release train Tuesday")
