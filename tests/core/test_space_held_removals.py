"""A team space holds one member's removals en masse for a person, as device sync does
(issue 45; ADR 0015's rule and threshold, `sync.holding.massive`): when the author of many
shared memories trashes them all at once, no member's copies go to the trash until that
member says so (`mnemo space removals NAME apply|keep MEMBER`)."""

from __future__ import annotations

import pytest

from app.core.engine import Engine
from app.core.sync.holding import HOLD_MIN

WORDS = "amber birch cedar delta ember fjord garnet harbor indigo juniper kelp lotus".split()


@pytest.fixture
def homes(tmp_path, word_model):
    made: list[Engine] = []

    def engine(name: str) -> Engine:
        eng = Engine(database=tmp_path / f"{name}.db", embedder=word_model)
        made.append(eng)
        return eng

    yield engine
    for eng in made:
        eng.close()


def team(homes, tmp_path, count: int) -> tuple[Engine, Engine, list[str]]:
    """Alice shares `count` memories in the space `team`; Bob took them all."""
    alice, bob = homes("alice"), homes("bob")
    folder = tmp_path / "shared" / "team"
    alice.spaces.create("team", folder, "alice")
    invitation, _ = alice.spaces.invite("team", bob.spaces.id(), "bob")
    bob.spaces.join(invitation, folder)
    ids = []
    for n in range(count):
        words = f"{WORDS[n % 12]} {WORDS[n // 12 % 12]} note number {n}"
        memory = alice.remember(f"The {words} is kept on shelf {n}", force=True).memory
        ids.append(memory.id)
    for memory_id in ids:
        alice.spaces.share(memory_id, "team")
    assert bob.spaces.sync("team")["applied"] == count
    return alice, bob, ids


def trashed(engine: Engine, ids: list[str]) -> list[str]:
    return [i for i in ids if engine.get(i).deleted_at is not None]


def test_a_members_trash_en_masse_is_held_until_a_person_applies_it(homes, tmp_path):
    alice, bob, ids = team(homes, tmp_path, HOLD_MIN + 1)
    # WHEN Alice trashes them all
    alice.forget(ids)
    assert alice.spaces.sync("team")["sent"] == len(ids)
    report = bob.spaces.sync("team")
    # THEN Bob's pass holds every one (none in his trash) and says so, once
    assert trashed(bob, ids) == []
    assert report["held_removals"] == {"alice": len(ids)}
    assert report["withdrawn"] == 0
    assert bob.spaces.sync("team")["held_removals"] == {}
    assert bob.spaces.shared(ids) == dict.fromkeys(ids, "team")
    held = bob.spaces.removals("team")
    assert [(h["member"], h["memories"]) for h in held] == [("alice", len(ids))]
    # AND applied, they go to Bob's trash
    bob.spaces.apply_removals("team", "alice")
    assert sorted(trashed(bob, ids)) == sorted(ids)
    assert bob.spaces.removals("team") == []
    assert bob.spaces.sync("team")["held_removals"] == {}


def test_kept_they_stay_here_no_longer_shared(homes, tmp_path):
    alice, bob, ids = team(homes, tmp_path, HOLD_MIN + 1)
    alice.forget(ids)
    alice.spaces.sync("team")
    assert bob.spaces.sync("team")["held_removals"] == {"alice": len(ids)}
    assert bob.spaces.keep_removals("team", "alice") == len(ids)
    assert trashed(bob, ids) == []
    assert bob.spaces.shared(ids) == {}
    assert bob.spaces.removals("team") == []
    # (later passes leave them alone, and send nothing of them)
    report = bob.spaces.sync("team")
    assert report["held_removals"] == {} and report["sent"] == 0
    assert trashed(bob, ids) == []


def test_a_new_memory_from_the_same_member_still_arrives(homes, tmp_path):
    alice, bob, ids = team(homes, tmp_path, HOLD_MIN + 1)
    alice.forget(ids)
    extra = alice.remember("The spare projector sits in room nine", force=True).memory
    alice.spaces.share(extra.id, "team")
    report = bob.spaces.sync("team")
    assert report["held_removals"] == {"alice": len(ids)}
    assert report["applied"] == 1 and bob.get(extra.id).deleted_at is None


def test_fewer_than_the_threshold_apply_at_once(homes, tmp_path):
    alice, bob, ids = team(homes, tmp_path, HOLD_MIN)
    alice.forget(ids)
    alice.spaces.sync("team")
    report = bob.spaces.sync("team")
    assert report["held_removals"] == {}
    assert sorted(trashed(bob, ids)) == sorted(ids)


def test_a_members_withdrawal_en_masse_is_held_too(homes, tmp_path):
    alice, bob, ids = team(homes, tmp_path, HOLD_MIN + 1)
    for memory_id in ids:
        alice.spaces.unshare(memory_id)
    report = bob.spaces.sync("team")
    assert report["held_removals"] == {"alice": len(ids)} and report["withdrawn"] == 0
    assert trashed(bob, ids) == []
    assert bob.spaces.apply_removals("team", "alice")["withdrawn"] == len(ids)
    assert sorted(trashed(bob, ids)) == sorted(ids)


def test_while_some_wait_that_members_next_removal_joins_them(homes, tmp_path):
    alice, bob, ids = team(homes, tmp_path, HOLD_MIN + 2)
    alice.forget(ids[:-1])
    alice.spaces.sync("team")
    assert bob.spaces.sync("team")["held_removals"] == {"alice": len(ids) - 1}
    alice.forget(ids[-1:])
    alice.spaces.sync("team")
    assert bob.spaces.sync("team")["held_removals"] == {"alice": len(ids)}  # (said again)
    assert trashed(bob, ids) == []
