"""A shared memory withdrawn or trashed by its author while other members edit it, then
shared again (issue 45): every member ends with the same state, and no member's words are
lost. Found by a randomised three-member test (helper-43): members kept different texts."""

from __future__ import annotations

import random

import pytest

from app.core.storage.store import Filters
from tests.core.test_space_compaction import team
from tests.core.test_space_held_removals import HOLD_MIN
from tests.core.test_space_held_removals import team as held_team


def state(member, memory_id):
    got = member.get(memory_id)
    return got.text, bool(got.deleted_at), bool(member.spaces.shared([memory_id]))


def passes(people, rounds: int = 2) -> None:
    for _ in range(rounds):
        for member in people:
            member.spaces.sync("team")


def test_an_edit_racing_the_authors_withdrawal_is_kept_when_she_shares_it_again(
    homes,
    tmp_path,
):
    (alice, bob, carol), _ = team(homes, tmp_path, "bob", "carol")
    x = alice.remember("The build cache lives on the NAS.", force=True).memory.id
    alice.spaces.share(x, "team")
    passes([alice, bob, carol], 1)
    # Alice withdraws it while Bob, not knowing, adds a sentence
    alice.spaces.unshare(x)
    alice.spaces.sync("team")
    bob.edit(x, text="The build cache lives on the NAS. It is wiped on Mondays.")
    bob.spaces.sync("team")
    # Alice shares it again (a pass at once) and adds her own sentence to what she sees
    alice.spaces.share(x, "team")
    alice.edit(x, text=alice.get(x).text + " Ask Ops for access.")
    passes([alice, bob, carol])
    states = {state(m, x) for m in (alice, bob, carol)}
    assert len(states) == 1, states
    text, trashed, shared = states.pop()
    assert not trashed and shared
    assert "wiped on Mondays" in text and "Ask Ops for access" in text


@pytest.mark.parametrize("seed", range(1, 7))
def test_members_edit_while_the_author_withdraws_and_shares_again_and_end_alike(
    homes,
    tmp_path,
    seed,
):
    rng = random.Random(seed)
    people, _ = team(homes, tmp_path, "bob", "carol")
    alice = people[0]
    ids = []
    for n in range(3):
        ids.append(alice.remember(f"Shared fact {n} about the build.", force=True).memory.id)
        alice.spaces.share(ids[-1], "team")
    passes(people, 1)
    for step in range(40):
        member, memory_id, roll = rng.choice(people), rng.choice(ids), rng.random()
        if member is alice and roll < 0.25:
            if alice.spaces.shared([memory_id]):
                alice.spaces.unshare(memory_id)
            else:
                alice.spaces.share(memory_id, "team")
        elif roll < 0.7:
            now = member.get(memory_id)
            if now.deleted_at is None and member.spaces.shared([memory_id]):
                member.edit(memory_id, text=f"{now.text} Note {step}.")
        member.spaces.sync("team")
    for memory_id in ids:  # (the author shares every one again: all are in the space)
        if not alice.spaces.shared([memory_id]):
            alice.spaces.share(memory_id, "team")
    passes(people, 3)
    for memory_id in ids:
        states = {state(m, memory_id) for m in people}
        assert len(states) == 1, states


def test_a_member_who_kept_held_copies_and_shares_one_again_keeps_it_and_the_team_gets_it(
    homes,
    tmp_path,
):
    alice, bob, ids = held_team(homes, tmp_path, HOLD_MIN + 1)
    alice.forget(ids)
    alice.spaces.sync("team")
    assert bob.spaces.sync("team")["held_removals"] == {"alice": len(ids)}
    bob.spaces.keep_removals("team", "alice")
    one = ids[0]
    words = bob.get(one).text
    bob.spaces.share(one, "team")  # (Bob wants the team to have it after all)
    passes([bob, alice])
    assert state(bob, one) == (words, False, True)
    assert state(alice, one) == (words, False, True)  # (back from her trash: nothing lost)


def test_each_version_kept_of_an_edit_made_apart_is_credited_to_who_wrote_it(
    homes,
    tmp_path,
):
    (alice, bob), _ = team(homes, tmp_path, "bob")
    x = alice.remember("Staging is on port 5433.", force=True).memory.id
    alice.spaces.share(x, "team")
    bob.spaces.sync("team")
    alice.edit(x, text="Staging is on port 5433. Alice adds this.")
    bob.edit(x, text="Staging is on port 5433. Bob adds that.")
    passes([alice, bob])
    trash = alice.listing(Filters(only_deleted=True))
    kept = [m for m in trash if m.id.startswith(x + "-v")]
    assert len(kept) == 2
    by = sorted(("Alice adds" in m.text, [(o.kind, o.name) for o in m.origins][:1]) for m in kept)
    assert by == [(False, [("space", "bob")]), (True, [(alice.get(x).origins[0].kind, "")])]
