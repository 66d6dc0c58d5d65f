"""The membership record of a team space (ADR 0026): signed events folded to the same
members and epoch on every device, whatever order they arrive in. Real signatures and
real sealed keys throughout; each device holds its own copy of the record."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.core.errors import InputError
from app.core.space import keys
from app.core.space.membership import EVENT, Record

DEVICES = [keys.DeviceKey.new() for _ in range(6)]
ALICE, BOB, CAROL, DAVE, ERIN, MALLORY = DEVICES


def copy(record: Record) -> Record:
    """Another device's copy of the record, holding the same events."""
    other = Record(record.space, record.root)
    sync(other, record)
    return other


def sync(to: Record, frm: Record) -> None:
    for event in frm.events.values():
        to.add(event)


@pytest.fixture
def space():
    """Alice's space with Bob and Carol admitted; each device's copy."""
    record, _ = Record.create(ALICE, "team", "alice")
    record.admit(ALICE, BOB.public, "bob")
    record.admit(ALICE, CAROL.public, "carol")
    return {"alice": record, "bob": copy(record), "carol": copy(record)}


def test_a_space_starts_with_its_creator_and_an_epoch_only_she_holds():
    record, key = Record.create(ALICE, "team", "alice")
    state = record.fold()
    assert state.members == {ALICE.public: record.root}  # (a person is the event that
    # introduced them, the create for its creator: never a name)
    assert record.names(ALICE, state) == {record.root: "alice"}
    assert state.epoch == record.root and state.epochs == [record.root]
    assert not state.needs_rotation
    assert record.keys_for(ALICE) == {record.root: key}
    assert record.keys_for(BOB) == {}


def test_an_admitted_device_receives_the_current_key(space):
    state = space["bob"].fold()
    names = space["bob"].names(BOB, state)
    assert {names[p]: ds for p, ds in state.persons().items()} == {
        "alice": [ALICE.public],
        "bob": [BOB.public],
        "carol": [CAROL.public],
    }
    assert space["bob"].keys_for(BOB) == space["alice"].keys_for(ALICE)
    assert not state.needs_rotation


def test_a_removed_member_reads_what_came_before_but_nothing_after(space):
    # GIVEN a line Alice sealed before Bob's removal
    record = space["alice"]
    first = record.fold().epoch
    before = keys.seal_line(record.keys_for(ALICE)[first], record.space, first, ALICE, 1, '"old"')
    # WHEN Alice removes Bob, and seals a line in the new epoch
    record.remove(ALICE, [BOB.public], {BOB.public: 3})
    state = record.fold()
    assert state.epoch != first and BOB.public not in state.members
    after = keys.seal_line(
        record.keys_for(ALICE)[state.epoch], record.space, state.epoch, ALICE, 2, '"new"'
    )
    # THEN Bob, holding the whole record, still has the old key and opens the old line
    sync(space["bob"], record)
    held = space["bob"].keys_for(BOB)
    assert keys.open_line(held[first], before) == '"old"'
    # AND no key he holds opens the new one
    assert state.epoch not in held
    for key in held.values():
        with pytest.raises(InputError):
            keys.open_line(key, after)
    # AND Carol, who stays, opens both
    sync(space["carol"], record)
    carols = space["carol"].keys_for(CAROL)
    assert keys.open_line(carols[state.epoch], after) == '"new"'
    assert keys.open_line(carols[first], before) == '"old"'


def test_a_member_admitted_later_reads_the_history_through_the_current_key(space):
    record = space["alice"]
    first = record.fold().epoch
    record.remove(ALICE, [BOB.public], {})
    record.rotate(ALICE)
    record.admit(ALICE, DAVE.public, "dave")
    state = record.fold()
    assert len(state.epochs) == 3
    assert set(record.keys_for(DAVE)) == set(state.epochs)
    assert record.keys_for(DAVE)[first] == record.keys_for(ALICE)[first]


def test_an_unsigned_or_changed_event_is_refused_at_the_door(space):
    record = space["alice"]
    event = dict(next(iter(record.events.values())))
    with pytest.raises(InputError, match="not signed"):
        record.add({k: v for k, v in event.items() if k != "sig"})
    with pytest.raises(InputError, match="not signed"):
        record.add(event | {"keys": {}})
    with pytest.raises(InputError, match="another space"):
        record.add(event | {"space": "0" * 32})
    forged = MALLORY.sign(
        {"v": 1, "space": record.space, "kind": "nuke", "author": MALLORY.public, "parents": []},
        EVENT,
    )
    with pytest.raises(InputError, match="unknown kind"):
        record.add(forged)


def test_an_event_signed_by_a_device_that_never_was_a_member_is_refused(space):
    # GIVEN Mallory, who can write the folder, adds herself and removes Alice
    mallorys = copy(space["alice"])
    admit = mallorys.append(
        MALLORY, "admit", device=MALLORY.public, new=True, epoch=mallorys.root, key="x"
    )
    removal = mallorys.append(MALLORY, "remove", devices=[ALICE.public], upto={}, keys={})
    # WHEN those events reach Carol
    sync(space["carol"], mallorys)
    state = space["carol"].fold()
    # THEN both are refused and the members are as before
    assert state.refused[admit] == "written by a device that is not a member"
    assert state.refused[removal] == "written by a device that is not a member"
    assert set(state.members) == {ALICE.public, BOB.public, CAROL.public}


@pytest.mark.parametrize(
    "kind,fields",
    [
        ("admit", {"device": ["x"], "new": True, "epoch": "e", "key": "k"}),
        ("admit", {"device": "x", "new": True, "epoch": ["e"], "key": "k"}),
        ("remove", {"devices": [["x"]], "upto": {}, "keys": {}}),
        ("remove", {"devices": "x", "upto": [], "keys": {}}),
        ("rotate", {"keys": [], "prev": {}}),
        ("remove", {"devices": [BOB.public], "upto": {}, "keys": {"x": 1}}),
        ("rotate", {"keys": {"x": 1}, "prev": "junk"}),
        ("leave", {"upto": {"x": "many"}}),
    ],
)
def test_a_members_malformed_event_breaks_no_fold_and_no_key(space, kind, fields):
    # GIVEN Carol, a member, writes an event with fields of the wrong shape: it is refused
    # at the door (review of issue 45: every kind's fields are checked there)
    with pytest.raises(InputError):
        space["carol"].append(CAROL, kind, **fields)
    sync(space["alice"], space["carol"])
    # THEN Alice's fold goes on, and she still holds every key she had
    state = space["alice"].fold()
    assert ALICE.public in state.members and BOB.public in state.members
    assert state.epoch in space["alice"].keys_for(ALICE, state)


def test_keys_sealed_wrong_by_a_member_leave_the_others_readable(space):
    # GIVEN Carol rotates, sealing garbage to Alice and wrapping garbage for the first epoch
    first = space["alice"].fold().epoch
    space["carol"].append(
        CAROL,
        "rotate",
        keys={ALICE.public: keys.b64(b"x" * 80), BOB.public: "!!", CAROL.public: keys.b64(b"y")},
        prev={first: keys.b64(b"z" * 60)},
    )
    sync(space["alice"], space["carol"])
    # THEN Alice's keys are what she could open: the first epoch's, not the garbage
    held = space["alice"].keys_for(ALICE)
    assert set(held) == {first}
    assert space["alice"].fold().epoch not in held


def test_a_second_create_of_the_same_space_is_not_the_space(space):
    forged = MALLORY.sign(
        {
            "v": 1,
            "space": space["alice"].space,
            "kind": "create",
            "author": MALLORY.public,
            "parents": [],
            "name": "team",
            "person": "m",
            "keys": {},
        },
        EVENT,
    )
    name = space["carol"].add(forged)
    state = space["carol"].fold()
    assert state.refused[name] == "a create that is not this space's"
    assert MALLORY.public not in state.members


def test_a_removed_device_that_saw_its_removal_writes_nothing_that_counts(space):
    space["alice"].remove(ALICE, [BOB.public], {})
    sync(space["bob"], space["alice"])
    late = space["bob"].append(
        BOB, "admit", device=MALLORY.public, new=True, epoch=space["bob"].root, key="x"
    )
    sync(space["carol"], space["bob"])
    state = space["carol"].fold()
    assert state.refused[late] == "written by a device removed before it"
    assert MALLORY.public not in state.members


def test_a_removed_device_dating_an_event_back_is_refused(space):
    # GIVEN Bob's copy from before his removal, kept aside
    old = copy(space["bob"])
    space["alice"].remove(ALICE, [BOB.public], {})
    # WHEN Bob, removed, writes as if he had not seen it (parents before the removal)
    backdated = old.append(BOB, "admit", device=MALLORY.public, new=True, epoch=old.root, key="x")
    sync(space["carol"], space["alice"])
    sync(space["carol"], old)
    state = space["carol"].fold()
    # THEN it is refused everywhere, and Mallory is no member
    assert state.refused[backdated] == "written by a device whose removal it had not seen"
    assert MALLORY.public not in state.members and BOB.public not in state.members


def test_lines_of_a_removed_device_count_up_to_what_its_removal_accepted(space):
    first = space["alice"].fold().epoch
    space["alice"].remove(ALICE, [BOB.public], {BOB.public: 7})
    state = space["alice"].fold()
    assert state.may_write(BOB.public, first, 7)
    assert not state.may_write(BOB.public, first, 8)  # past what the removal had seen
    assert not state.may_write(BOB.public, state.epoch, 1)  # an epoch he never held
    assert state.may_write(CAROL.public, state.epoch, 10**6)
    assert state.may_write(CAROL.public, first, 1)
    assert not state.may_write(MALLORY.public, first, 1)


def test_two_members_removing_each_other_apart_the_senior_one_stays(space):
    # GIVEN Alice (who made the space) and Bob remove each other, each on their own copy
    space["alice"].remove(ALICE, [BOB.public], {})
    bobs = space["bob"].remove(BOB, [ALICE.public], {})
    # WHEN the copies meet, in either direction
    sync(space["alice"], space["bob"])
    sync(space["bob"], space["alice"])
    a, b = space["alice"].fold(), space["bob"].fold()
    # THEN both see Alice stay and Bob go, Bob's removal refused
    assert a == b
    assert ALICE.public in a.members and BOB.public not in a.members
    assert a.refused[bobs] == "written by a device whose removal it had not seen"


@pytest.mark.parametrize("first", ["bob", "carol"])
def test_between_two_admitted_members_removing_each_other_the_one_admitted_first_stays(first):
    # GIVEN Bob and Carol admitted in either order
    record, _ = Record.create(ALICE, "team", "alice")
    order = [BOB, CAROL] if first == "bob" else [CAROL, BOB]
    for device in order:
        record.admit(ALICE, device.public, "x")
    bobs, carols = copy(record), copy(record)
    # WHEN they remove each other apart
    bobs.remove(BOB, [CAROL.public], {})
    carols.remove(CAROL, [BOB.public], {})
    sync(bobs, carols)
    sync(carols, bobs)
    state = bobs.fold()
    # THEN the senior one stays (not whichever event's hash is smaller)
    assert state == carols.fold()
    senior, junior = order
    assert senior.public in state.members and junior.public not in state.members


def test_a_removal_and_an_invitation_made_apart_both_take_effect_then_a_rotation_is_due(space):
    # GIVEN Alice removes Bob while Carol, apart, admits Dave
    space["alice"].remove(ALICE, [BOB.public], {})
    space["carol"].admit(CAROL, DAVE.public, "dave")
    sync(space["alice"], space["carol"])
    sync(space["carol"], space["alice"])
    state = space["alice"].fold()
    assert state == space["carol"].fold()
    # THEN Dave is in, Bob out; Dave lacks the new epoch's key, so a rotation is due
    assert DAVE.public in state.members and BOB.public not in state.members
    assert state.needs_rotation
    assert state.epoch not in space["alice"].keys_for(DAVE)
    # WHEN Carol rotates
    space["carol"].rotate(CAROL)
    state = space["carol"].fold()
    # THEN the current key reaches Dave, not Bob, and nothing is due
    assert not state.needs_rotation
    assert state.epoch in space["carol"].keys_for(DAVE)
    assert state.epoch not in space["carol"].keys_for(BOB)


def test_an_invitation_by_a_member_removed_apart_from_it_admits_nobody(space):
    space["alice"].remove(ALICE, [BOB.public], {})
    admit = space["bob"].admit(BOB, DAVE.public, "dave")
    sync(space["alice"], space["bob"])
    state = space["alice"].fold()
    assert DAVE.public not in state.members
    assert state.refused[admit] == "written by a device whose removal it had not seen"


def test_an_epoch_started_apart_is_wrapped_by_the_next_rotation_of_a_member_holding_it(space):
    # GIVEN Alice and Bob each rotate apart, and Alice seals a line in her epoch
    space["alice"].rotate(ALICE)
    space["bob"].rotate(BOB)
    sync(space["alice"], space["bob"])
    sync(space["bob"], space["alice"])
    state = space["alice"].fold()
    assert state == space["bob"].fold() and len(state.unreached) == 1
    (sibling,) = state.unreached
    key = space["alice"].keys_for(ALICE)[sibling]
    line = keys.seal_line(key, space["alice"].space, sibling, ALICE, 1, '"apart"')
    # WHEN Dave is admitted: the current key does not reach the sibling epoch
    space["alice"].admit(ALICE, DAVE.public, "dave")
    assert sibling not in space["alice"].keys_for(DAVE)
    state = space["alice"].fold()
    assert state.rotation_due(ALICE.public) and state.rotation_due(BOB.public)
    assert not state.rotation_due(DAVE.public)  # he holds no key a rotation of his would wrap
    assert not state.rotation_due(MALLORY.public)
    # WHEN Alice rotates (she holds both keys)
    space["alice"].rotate(ALICE)
    state = space["alice"].fold()
    # THEN every epoch is reached again and Dave reads the line made apart
    assert state.unreached == set() and not state.rotation_due(ALICE.public)
    assert keys.open_line(space["alice"].keys_for(DAVE)[sibling], line) == '"apart"'


def test_a_leave_takes_the_device_out_and_the_next_rotation_leaves_it_behind(space):
    space["bob"].leave(BOB, 4)
    sync(space["alice"], space["bob"])
    state = space["alice"].fold()
    assert BOB.public not in state.members and state.gone[BOB.public] == 4
    assert state.needs_rotation  # Bob still holds the current key
    space["alice"].rotate(ALICE)
    state = space["alice"].fold()
    assert not state.needs_rotation
    assert state.epoch not in space["alice"].keys_for(BOB)


def test_an_event_whose_parents_have_not_arrived_waits(space):
    record = space["alice"]
    admit = record.admit(ALICE, DAVE.public, "dave")
    removal = record.remove(ALICE, [DAVE.public], {})
    partial = Record(record.space, record.root)
    for name, event in record.events.items():
        if name != admit:
            partial.add(event)
    state = partial.fold()
    assert state.waiting == {removal}
    assert DAVE.public not in state.members and removal not in state.applied
    partial.add(record.events[admit])
    assert partial.fold() == record.fold()


# -- any order of arrival


def _history(seed: int) -> Record:
    """A history with concurrency: five devices each keep a copy, act on what they see
    (admit, remove, rotate, leave), and now and then take another's events."""
    rng = random.Random(seed)
    people = DEVICES[:5]
    first, _ = Record.create(ALICE, "team", "alice")
    copies = {ALICE.public: first}
    by_id = {d.public: d for d in people}
    for _ in range(rng.randint(6, 18)):
        device = by_id[rng.choice(sorted(copies))]
        record = copies[device.public]
        if rng.random() < 0.3:
            sync(record, copies[rng.choice(sorted(copies))])
            continue
        state = record.fold()
        if device.public not in state.members:
            continue
        others = [d for d in people if d is not device]
        held = record.keys_for(device, state)
        roll = rng.random()
        if state.rotation_due(device.public) or state.epoch not in held:
            if state.epoch in held or roll < 0.5:
                record.rotate(device)
        elif roll < 0.45:
            newcomer = rng.choice([d for d in others if d.public not in state.members] or [device])
            if newcomer is not device:
                record.admit(device, newcomer.public, "p")
                copies.setdefault(newcomer.public, copy(record))
        elif roll < 0.75:
            target = rng.choice([d for d in others if d.public in state.members] or [device])
            if target is not device:
                record.remove(device, [target.public], {target.public: rng.randint(0, 9)})
        elif roll < 0.95:
            record.rotate(device)
        else:
            record.leave(device, rng.randint(0, 9))
    everything = Record(first.space, first.root)
    for record in copies.values():
        sync(everything, record)
    return everything


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), shuffle=st.randoms(use_true_random=False))
def test_any_order_of_arrival_folds_to_the_same_space(seed, shuffle):
    # GIVEN the events of a history made apart on five devices
    everything = _history(seed)
    expected = everything.fold()
    events = list(everything.events.values())
    # WHEN another device takes them in any order, folding as they come
    shuffle.shuffle(events)
    arriving = Record(everything.space, everything.root)
    for event in events:
        arriving.add(event)
        arriving.fold()
    # THEN it folds to the same members, epoch, refusals and order
    assert arriving.fold() == expected
    # AND a fold depends on nothing else: the same events reversed, the same again
    again = Record(everything.space, everything.root)
    for event in reversed(events):
        again.add(event)
    assert again.fold() == expected


def test_histories_made_apart_exercise_removals_refusals_and_rotations():
    # the property test above is only as good as its histories: they hold what matters
    folds = [_history(seed).fold() for seed in range(60)]
    assert sum(bool(f.removals) for f in folds) >= 30
    assert sum(bool(f.refused) for f in folds) >= 15
    assert sum(len(f.epochs) > 2 for f in folds) >= 20
    assert sum(len(f.members) > 2 for f in folds) >= 15
    unseen = "written by a device whose removal it had not seen"
    assert sum(unseen in f.refused.values() for f in folds) >= 3
