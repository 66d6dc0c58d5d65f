"""`mnemo space removals NAME [apply|keep MEMBER]` and the line `mnemo space sync` says
when one member's removals en masse wait for a person (issue 45; device sync's rule and
threshold). Alice works in this process (sharing many memories through the CLI would take
a process each); Bob types the commands."""

from __future__ import annotations

import json

from app.core.engine import Engine
from app.core.sync.holding import HOLD_MIN
from tests.cli.test_space_cli import device_id, ok, one_line_error
from tests.cli.test_space_cli import mnemo as run


def alice_trashes_many(tmp_path, word_model) -> tuple[Engine, list[str]]:
    """Alice shares HOLD_MIN + 1 memories, Bob takes them, Alice trashes them all."""
    bob, folder = tmp_path / "bob", tmp_path / "shared" / "team"
    alice = Engine(database=tmp_path / "alice.db", embedder=word_model)
    alice.spaces.create("team", folder, "alice")
    invitation, _ = alice.spaces.invite("team", device_id(bob), "bob")
    ok(bob, "space", "join", invitation, str(folder))
    ids = []
    for n in range(HOLD_MIN + 1):
        memory = alice.remember(f"Shelf {n} keeps the box of note {n}", force=True).memory
        alice.spaces.share(memory.id, "team")
        ids.append(memory.id)
    assert f"took {len(ids)}" in ok(bob, "space", "sync", "team")
    alice.forget(ids)
    alice.spaces.sync("team")
    return alice, ids


def bobs(tmp_path, memory_id: str) -> dict:
    return json.loads(ok(tmp_path / "bob", "show", memory_id, "--json"))


def test_sync_says_the_held_removals_once_and_apply_trashes_them(tmp_path, word_model):
    alice, ids = alice_trashes_many(tmp_path, word_model)
    bob = tmp_path / "bob"
    said = ok(bob, "space", "sync", "team")
    count = len(ids)
    assert f"alice would withdraw or trash {count} memories here at once: held" in said
    assert "mnemo space removals team apply alice" in said and "keep alice" in said
    assert "would withdraw or trash" not in ok(bob, "space", "sync", "team")  # (once)
    assert bobs(tmp_path, ids[0])["deleted_at"] is None
    listed = ok(bob, "space", "removals", "team")
    assert f"alice: {count} memories" in listed and "Shelf" in listed
    as_json = json.loads(ok(bob, "space", "removals", "team", "--json"))
    assert [(h["member"], h["memories"]) for h in as_json] == [("alice", count)]
    out = ok(bob, "space", "removals", "team", "apply", "alice")
    assert f"{count} memories" in out and "trash" in out
    assert all(bobs(tmp_path, i)["deleted_at"] for i in ids)
    assert "Nothing waits" in ok(bob, "space", "removals", "team")
    alice.close()


def test_keep_leaves_them_here_unshared(tmp_path, word_model):
    alice, ids = alice_trashes_many(tmp_path, word_model)
    bob = tmp_path / "bob"
    ok(bob, "space", "sync", "team")
    out = ok(bob, "space", "removals", "team", "keep", "alice")
    assert f"Kept {len(ids)} memories" in out
    assert bobs(tmp_path, ids[0])["deleted_at"] is None
    assert "Nothing waits" in ok(bob, "space", "removals", "team")
    err = one_line_error(run(bob, "space", "removals", "team", "apply", "alice"))
    assert "no removals of 'alice'" in err
    err = one_line_error(run(bob, "space", "removals", "team", "apply"))
    assert "MEMBER" in err
    alice.close()
