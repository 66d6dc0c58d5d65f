"""What a member is told of where it stands in a team space (issue 45, a new user's and a
red team's findings): an edit by a removed member is not called shared, a second space of
a name already used joins under another, a folder mistyped or moved is said and can be
pointed at, who only was invited is told apart from who joined, and the CLI shows which
memories are shared."""

from __future__ import annotations

import json

from tests.cli.test_space_cli import device_id, members, ok, one_line_error, team
from tests.cli.test_space_cli import mnemo as run


def test_a_removed_members_edit_is_not_called_shared(tmp_path):
    # GIVEN Bob holds a memory Alice shared, then Alice removes him
    alice, bob, folder = team(tmp_path)
    shared = json.loads(ok(alice, "remember", "--space", "team", "The VPN is vpn2", "--json"))
    ok(bob, "space", "sync", "team")
    ok(alice, "space", "remove", "team", "bob")
    before = sorted(p.name for p in (folder / "lines").iterdir())
    sizes = {p.name: p.stat().st_size for p in (folder / "lines").iterdir()}
    # WHEN Bob edits it
    out = ok(bob, "edit", shared["id"], "--tags", "x")
    # THEN he is told it stays on his device, and why; nothing goes to the folder
    assert "Shared" not in out
    assert "not a member of the space 'team' any more (alice removed it)" in out
    assert "stays on this device only" in out
    assert sorted(p.name for p in (folder / "lines").iterdir()) == before
    assert {p.name: p.stat().st_size for p in (folder / "lines").iterdir()} == sizes
    assert f"removed by alice: bob {device_id(bob)} (this device)" in ok(
        bob, "space", "members", "team"
    )
    got = json.loads(ok(bob, "edit", shared["id"], "--tags", "y", "--json"))
    assert "alice removed it" in got["notice"]
    # AND sharing anew is refused up front, naming why, nothing stored
    err = one_line_error(run(bob, "remember", "--space", "team", "Lunch is at noon"))
    assert "alice removed it" in err
    assert "Lunch is at noon" not in ok(bob, "list")


def test_a_second_space_of_a_name_already_used_joins_under_another(tmp_path):
    # GIVEN Dave is in a space `team`, and Xavier invites him to his own `team`
    alice, dave, _ = team(tmp_path)
    xavier = tmp_path / "xavier"
    ours = tmp_path / "xshared" / "team"
    ok(xavier, "space", "create", "team", str(ours), "--person", "xavier")
    invitation = ok(xavier, "space", "invite", "team", device_id(dave), "--person", "dave").strip()
    # WHEN Dave joins as the invitation names it THEN the refusal names the way out
    err = one_line_error(run(dave, "space", "join", invitation, str(ours)))
    assert "already here" in err and "--as" in err and "name NEW" in err
    # AND he joins it under a name of his own; Xavier's name for it is his own
    ok(dave, "space", "join", invitation, str(ours), "--as", "xteam")
    assert members(dave, "xteam")["persons"][0]["person"] == "xavier"
    assert members(xavier, "team")["member"] is True
    # AND a space is renamed here; the old name is free again, the new one taken
    ok(dave, "space", "set", "team", "name", "alices")
    assert sorted(s["name"] for s in json.loads(ok(dave, "space", "list", "--json"))) == [
        "alices",
        "xteam",
    ]
    err = one_line_error(run(dave, "space", "set", "alices", "name", "xteam"))
    assert "already here" in err
    ok(dave, "remember", "--space", "alices", "The coffee machine is fixed")
    assert "took 1" in ok(alice, "space", "sync", "team")


def test_a_mistyped_folder_is_refused_and_a_moved_one_is_pointed_at(tmp_path):
    alice = tmp_path / "alice"
    bob = tmp_path / "bob"
    shared = tmp_path / "shared" / "team"
    ok(alice, "space", "create", "team", str(shared), "--person", "alice")
    invitation = ok(alice, "space", "invite", "team", device_id(bob), "--person", "bob").strip()
    # WHEN Bob mistypes the folder THEN he is told it holds nothing of the space; nothing kept
    typo = tmp_path / "shraed" / "team"
    err = one_line_error(run(bob, "space", "join", invitation, str(typo)))
    assert "holds nothing of the space yet" in err and "--wait" in err
    assert not typo.exists() and json.loads(ok(bob, "space", "list", "--json")) == []
    empty = tmp_path / "empty"
    empty.mkdir()
    err = one_line_error(run(bob, "space", "join", invitation, str(empty)))
    assert "is empty" in err
    # AND with the right folder he joins; joining again names where and how to move it
    ok(bob, "space", "join", invitation, str(shared))
    err = one_line_error(run(bob, "space", "join", invitation, str(shared)))
    assert "already in the space 'team'" in err and "set team folder PATH" in err
    # WHEN the folder moves THEN every command says so, and `set folder` points at it
    moved = tmp_path / "moved" / "team"
    moved.parent.mkdir()
    shared.rename(moved)
    assert "missing" in one_line_error(run(bob, "space", "members", "team"))
    err = one_line_error(run(bob, "space", "set", "team", "folder", str(tmp_path / "nope")))
    assert "no folder" in err
    ok(alice, "space", "set", "team", "folder", str(moved))
    said = ok(bob, "space", "set", "team", "folder", str(moved))
    assert str(moved) in said
    assert members(bob)["member"] is True
    ok(alice, "remember", "--space", "team", "The printer is on floor two")
    assert "took 1" in ok(bob, "space", "sync", "team")
    # AND a folder of another space is refused
    other = tmp_path / "other"
    ok(alice, "space", "create", "other", str(other), "--person", "alice")
    err = one_line_error(run(bob, "space", "set", "team", "folder", str(other)))
    assert "already holds" in err


def test_a_join_with_wait_waits_for_the_folder(tmp_path):
    alice, bob = tmp_path / "alice", tmp_path / "bob"
    ok(alice, "space", "create", "team", str(tmp_path / "shared"), "--person", "alice")
    invitation = ok(alice, "space", "invite", "team", device_id(bob), "--person", "bob").strip()
    said = ok(bob, "space", "join", invitation, str(tmp_path / "later"), "--wait")
    assert "have not arrived" in said
    assert "waiting for the folder" in ok(bob, "space", "members", "team")


def test_members_tell_who_joined_from_who_was_only_invited(tmp_path):
    # GIVEN Alice and Bob in a space, and Carol's device invited but not joined
    alice, bob, _ = team(tmp_path)
    carol = tmp_path / "carol"
    ok(alice, "space", "invite", "team", device_id(carol), "--person", "carol")
    # THEN the list says Carol's device is invited, not joined, and the count says so
    text = ok(alice, "space", "members", "team")
    assert f"{device_id(carol)}  (invited, not joined yet)" in text
    assert f"{device_id(bob)}  (" not in text
    assert "3 people (3 devices, 1 invited)" in text
    state = members(alice)
    joined = {d["id"]: d["joined"] for p in state["persons"] for d in p["devices"]}
    assert joined == {device_id(alice): True, device_id(bob): True, device_id(carol): False}
    assert state["count"] == {"persons": 3, "devices": 3, "invited": 1}


def test_a_join_is_told_when_the_device_joins_not_when_invited(tmp_path):
    alice, bob, folder = team(tmp_path)
    ok(alice, "space", "sync", "team")
    ok(bob, "space", "sync", "team")
    # GIVEN Alice invites Erin, who never joins, and Carol, who joins
    erin, carol = tmp_path / "erin", tmp_path / "carol"
    ok(alice, "space", "invite", "team", device_id(erin), "--person", "erin")
    to_carol = ok(alice, "space", "invite", "team", device_id(carol), "--person", "carol")
    # THEN nobody is told of Erin; nor of Carol before she joins
    assert "is now in the space" not in ok(bob, "space", "sync", "team")
    assert "is now in the space" not in ok(alice, "space", "sync", "team")
    ok(carol, "space", "join", to_carol.strip(), str(folder))
    # WHEN Carol joined THEN Bob is told once; Alice, who invited her, is not
    said = ok(bob, "space", "sync", "team")
    assert "carol is now in the space" in said and "erin" not in said
    assert "is now in the space" not in ok(bob, "space", "sync", "team")
    assert "is now in the space" not in ok(alice, "space", "sync", "team")
    # AND a removed member is told of nobody
    ok(alice, "space", "remove", "team", "bob")
    dave = tmp_path / "dave"
    to_dave = ok(alice, "space", "invite", "team", device_id(dave), "--person", "dave")
    ok(dave, "space", "join", to_dave.strip(), str(folder))
    for _ in range(2):
        assert "is now in the space" not in ok(bob, "space", "sync", "team")


def test_show_and_list_say_which_memories_are_shared(tmp_path):
    alice, bob, _ = team(tmp_path)
    shared = json.loads(ok(alice, "remember", "--space", "team", "The wiki moved", "--json"))
    mine = json.loads(ok(alice, "remember", "My bike lock code is easy", "--json"))
    assert "shared in team, by you" in ok(alice, "show", shared["id"])
    assert "shared in" not in ok(alice, "show", mine["id"])
    assert json.loads(ok(alice, "show", shared["id"], "--json"))["space"] == "team"
    assert json.loads(ok(alice, "show", mine["id"], "--json"))["space"] is None
    ok(bob, "space", "sync", "team")
    assert "shared in team, by alice" in ok(bob, "show", shared["id"])
    listed = ok(alice, "list")
    assert f"{shared['id']}" in listed and "[team]" in listed
    only = ok(alice, "list", "--space", "team")
    assert shared["id"] in only and mine["id"] not in only
    none = json.loads(ok(alice, "list", "--space", "", "--json"))
    assert [m["id"] for m in none] == [mine["id"]] and none[0]["space"] is None
    assert "no space named" in one_line_error(run(alice, "list", "--space", "nope"))


def test_inviting_this_devices_own_id_says_so(tmp_path):
    alice, _, _ = team(tmp_path)
    err = one_line_error(run(alice, "space", "invite", "team", device_id(alice)))
    assert "this device's own id" in err and "remove" not in err


def test_create_says_the_name_teammates_see(tmp_path):
    said = ok(tmp_path / "me", "space", "create", "team", str(tmp_path / "s"))
    assert "Your teammates see you as" in said and "--person NAME" in said
