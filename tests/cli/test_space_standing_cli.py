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
    got = json.loads(ok(bob, "edit", shared["id"], "--tags", "y", "--json"))
    assert "alice removed it" in got["notice"]
    # AND sharing anew is refused up front, naming why, nothing stored
    err = one_line_error(run(bob, "remember", "--space", "team", "Lunch is at noon"))
    assert "alice removed it" in err
    assert "Lunch is at noon" not in ok(bob, "list")
