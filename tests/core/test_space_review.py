"""What a red-team review of team spaces found (issue 45, ADR 0026 "Found in review"):
each test here failed on the code before its fix. Real signatures and sealed keys."""

from __future__ import annotations

import pytest

from app.core.errors import InputError
from app.core.space import keys
from app.core.space.membership import EVENT, MAX_PARENTS, Record, event_hash

ALICE, BOB, CAROL, MALLORY = (keys.DeviceKey.new() for _ in range(4))


def copy(record: Record) -> Record:
    other = Record(record.space, record.root)
    for event in record.events.values():
        other.add(event)
    return other


def stranger_event(record: Record, device: keys.DeviceKey, parents: list[str], **fields) -> dict:
    event = {
        "v": 1,
        "space": record.space,
        "kind": "rotate",
        "author": device.public,
        "parents": parents,
        "at": "2026-11-29T10:00:00+00:00",
        "keys": {},
        **fields,
    }
    return device.sign(event, EVENT)


@pytest.fixture
def space() -> Record:
    record, _ = Record.create(ALICE, "team", "alice")
    record.admit(ALICE, BOB.public, "bob")
    record.admit(ALICE, CAROL.public, "carol")
    return record


def test_a_strangers_event_naming_a_missing_parent_holds_no_removal_back(space):
    # GIVEN a stranger's signed event waiting for a parent that will never arrive
    planted = space.add(stranger_event(space, MALLORY, ["0" * 64]))
    assert planted == event_hash(space.events[planted])
    # WHEN Alice removes Bob
    removal = space.remove(ALICE, [BOB.public], {})
    # THEN it took effect: the stranger's event is not among its parents
    state = space.fold()
    assert removal in state.applied and BOB.public not in state.members
    assert planted not in space.events[removal]["parents"]
    assert set(space.heads()) == {removal}


def test_an_event_that_would_not_take_effect_is_not_kept_and_said(space):
    bobs = copy(space)
    space.remove(ALICE, [BOB.public], {})
    for event in space.events.values():
        bobs.add(event)
    before = set(bobs.events)
    with pytest.raises(InputError, match="would not take effect"):
        bobs.rotate(BOB)
    assert set(bobs.events) == before


def test_heads_never_pass_the_cap_and_changes_go_on(space):
    # GIVEN more members than an event may name parents, each leaving apart from the others
    many = [keys.DeviceKey.new() for _ in range(MAX_PARENTS + 2)]
    for device in many:
        space.admit(ALICE, device.public, "member")
    copies = [copy(space) for _ in many]
    for device, record in zip(many, copies, strict=True):
        record.leave(device, 0)
        for event in record.events.values():
            space.add(event)
    # THEN the heads are capped, and Alice still changes the space
    assert len(space.heads()) == MAX_PARENTS
    rotation = space.rotate(ALICE)
    state = space.fold()
    assert rotation in state.applied and state.epoch == rotation
    assert set(state.members) == {ALICE.public, BOB.public, CAROL.public}
