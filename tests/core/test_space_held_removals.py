"""A team space holds one member's removals en masse for a person, as device sync does
(issue 45; ADR 0015's rule and threshold, `sync.holding.massive`): when the author of many
shared memories trashes them all at once, no member's copies go to the trash until that
member says so (`mnemo space removals NAME apply|keep MEMBER`)."""

from __future__ import annotations

import threading

from app.core.duties import Duties
from app.core.engine import Engine
from app.core.errors import NotFoundError
from app.core.runner import Listener, Runner
from app.core.sync.holding import HOLD_MIN
from tests.conftest import wait

WORDS = "amber birch cedar delta ember fjord garnet harbor indigo juniper kelp lotus".split()


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


# ---- the news of a hold, for the app (issue 45: a notification when a removal is held) --
class Heard(Listener):
    """What a runner told: each call of `removals_held`, as (space, member, count)."""

    def __init__(self) -> None:
        self.held: list[list[tuple]] = []
        self.lock = threading.Lock()

    def removals_held(self, held) -> None:
        with self.lock:
            self.held.append([(h["space"], h["member"], h["memories"]) for h in held])

    def told(self) -> list[list[tuple]]:
        with self.lock:
            return list(self.held)


def _runner(database, word_model, heard: Heard) -> Runner:
    runner = Runner(
        lambda: Engine(database=database, embedder=word_model),
        listener=heard,
        load_model=False,
        kind="app",
    )
    runner.poll_s = 0.1
    runner.start()
    return runner


def _text(runner: Runner, memory_id: str) -> str | None:
    def read(e: Engine) -> str | None:
        try:
            return e.get(memory_id).text
        except NotFoundError:
            return None

    return runner.submit(read).result(10)


def test_a_hold_made_by_the_apps_own_pass_is_told_once_then_again_when_it_grows(
    homes, tmp_path, word_model
):
    alice, _, ids = team(homes, tmp_path, HOLD_MIN + 1)
    heard = Heard()
    runner = _runner(tmp_path / "bob.db", word_model, heard)  # (Bob's app: the owner)
    try:
        # WHEN Alice trashes them all; Bob's app makes the pass that holds them
        alice.forget(ids)
        alice.spaces.sync("team")
        wait(heard.told, 30, "the news of the hold")
        # THEN it is told once, with the member and the count
        assert heard.told() == [[("team", "alice", len(ids))]]
        # AND a later pass (a new memory of Alice's arrives) does not tell it again
        extra = alice.remember("The spare projector sits in room nine", force=True).memory
        alice.spaces.share(extra.id, "team")
        wait(lambda: _text(runner, extra.id), 30, "Alice's new memory at Bob's")
        assert heard.told() == [[("team", "alice", len(ids))]]
        # AND once it grows (her next removal joins the hold), it is told again
        alice.forget([extra.id])
        alice.spaces.sync("team")
        wait(lambda: len(heard.told()) == 2, 30, "the news of the hold grown")
        assert heard.told()[1] == [("team", "alice", len(ids) + 1)]
    finally:
        runner.stop(30)


def test_a_hold_made_by_another_process_is_told_too(homes, tmp_path, word_model):
    # GIVEN Bob's app is not the process doing the background work (a command holds it)
    alice, bob, ids = team(homes, tmp_path, HOLD_MIN + 1)
    claim = Duties(tmp_path / "bob.db", "cli")
    assert claim.held()
    heard = Heard()
    runner = _runner(tmp_path / "bob.db", word_model, heard)
    try:
        # WHEN Alice trashes them all and `mnemo space sync` on Bob's device holds them
        alice.forget(ids)
        alice.spaces.sync("team")
        assert bob.spaces.sync("team")["held_removals"] == {"alice": len(ids)}
        # THEN Bob's app learns it from the database, once
        wait(heard.told, 30, "the news of the hold")
        assert heard.told() == [[("team", "alice", len(ids))]]
        # AND decided (kept) and held again later, the new hold is told
        bob.spaces.keep_removals("team", "alice")
        assert runner.submit(lambda e: e.spaces.held_now()).result(10) == []
        more = [
            alice.remember(f"Crate {n} holds spare cables", force=True).memory.id
            for n in range(HOLD_MIN + 1)
        ]
        for memory_id in more:
            alice.spaces.share(memory_id, "team")
        bob.spaces.sync("team")
        alice.forget(more)
        alice.spaces.sync("team")
        assert bob.spaces.sync("team")["held_removals"] == {"alice": len(more)}
        wait(lambda: len(heard.told()) == 2, 30, "the news of the new hold")
    finally:
        runner.stop(30)
        claim.let_go()
