"""Who is who in a team space, and what its folder shows (issue 45, ADR 0026 addendum "Names
sealed, persons by id"): a person is the event that introduced them, never a name, so a
member cannot add a device to someone else; the names and times are sealed under an
epoch's key, so the folder holds none of them in the clear. Real databases, real keys,
real files; spaces made before (version 1 events) still fold as they did."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from app.core.engine import Engine
from app.core.errors import InputError
from app.core.space import keys
from app.core.space.folder import SpaceFolder
from app.core.space.membership import EVENT, Record, event_hash

SPACE, ALICE, BOB, CAROL = "Orchard Quince", "Alicia Medlar", "Bertil Sorrel", "Carola Damson"


def team(homes, tmp_path) -> tuple[Engine, Engine, Engine, Path]:
    """Alice made the space, invited Bob and Carol as persons of their own; both joined."""
    alice, bob, carol = homes("alice"), homes("bob"), homes("carol")
    folder = tmp_path / "shared" / "orchard"
    alice.spaces.create(SPACE, folder, ALICE)
    for engine, person in ((bob, BOB), (carol, CAROL)):
        invitation, _ = alice.spaces.invite(SPACE, engine.spaces.id(), person)
        engine.spaces.join(invitation, folder)
    return alice, bob, carol, folder


def folder_bytes(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


def persons(engine: Engine) -> list[tuple[str, int]]:
    """Each person in the space as `engine` shows them: name and how many devices."""
    return sorted((p["person"], len(p["devices"])) for p in engine.spaces.members(SPACE)["persons"])


def test_the_folder_holds_no_name_and_no_time_in_the_clear(homes, tmp_path):
    alice, bob, carol, folder = team(homes, tmp_path)
    # GIVEN every change the record knows: a second device of Bob's, a removal, a shared
    # memory, a leave and the rotation it makes due
    phone = homes("bob-phone")
    invitation, person = bob.spaces.invite(SPACE, phone.spaces.id())
    assert person == BOB  # (no --person: a device of Bob's own)
    phone.spaces.join(invitation, folder)
    alice.spaces.remove(SPACE, CAROL)
    memory = alice.remember("The cider press is serviced in March", force=True).memory
    alice.spaces.share(memory.id, SPACE)
    bob.spaces.leave(SPACE)
    assert alice.spaces.members(SPACE)["rotation_due"]
    alice.spaces.sync(SPACE)
    assert not alice.spaces.members(SPACE)["needs_rotation"]
    # WHEN the whole folder is read as bytes
    data = folder_bytes(folder)
    # THEN no name, no person and no date is in it
    today = datetime.now(UTC).date().isoformat()
    for clear in (SPACE, "Orchard", ALICE, BOB, CAROL, "Medlar", today, today[:7] + "-"):
        assert clear.encode() not in data, clear
    # AND the members still see every name, and Bob's phone under Bob
    assert persons(alice) == [(ALICE, 1), (BOB, 1)]  # (Bob left; his phone stays)
    assert alice.spaces.members(SPACE)["removed"][0]["person"] in (BOB, CAROL)
    assert {d["person"] for d in alice.spaces.members(SPACE)["removed"]} == {BOB, CAROL}
    assert phone.spaces.list()[0]["name"] == SPACE  # (from its invitation, not the folder)


def test_a_member_cannot_invite_a_device_under_another_members_name(homes, tmp_path):
    alice, bob, carol, folder = team(homes, tmp_path)
    before = folder_bytes(folder)
    stranger = keys.DeviceKey.new().public
    with pytest.raises(InputError, match=f"another member is named {ALICE}; a device of {ALICE}'s"):
        carol.spaces.invite(SPACE, stranger, ALICE)
    assert folder_bytes(folder) == before  # (nothing written)
    # AND her own name, or none, admits a device of hers; a new name, a new person
    carol.spaces.invite(SPACE, stranger, CAROL)
    carol.spaces.invite(SPACE, keys.DeviceKey.new().public, "Dora Plum")
    assert persons(alice) == [(ALICE, 1), (BOB, 1), (CAROL, 2), ("Dora Plum", 1)]


def test_a_forged_admission_under_another_name_makes_a_new_person(homes, tmp_path):
    alice, bob, carol, folder = team(homes, tmp_path)
    # GIVEN Carol's device, signing with its real key, writes an admission of a device of
    # "Alicia Medlar" by hand (the record, not the command that refuses it)
    forged = keys.DeviceKey.new().public
    record = carol.spaces.record(SPACE)
    record.admit(carol.spaces.device, forged, ALICE)
    mine = [e for e in record.events.values() if e["author"] == carol.spaces.id()]
    SpaceFolder(folder).write_own(carol.spaces.id(), mine)
    # THEN the others see two persons of that name, Alice's device alone under hers
    shown = bob.spaces.members(SPACE)["persons"]
    named = [p for p in shown if p["person"].startswith(ALICE)]
    assert len(named) == 2 and sorted(len(p["devices"]) for p in named) == [1, 1]
    # AND the one a member admitted says who did, wherever names are shown (review)
    assert sorted(p["person"] for p in named) == [ALICE, f"{ALICE} (added by {CAROL})"]
    assert next(p for p in named if p["person"] == ALICE)["devices"][0]["id"] == alice.spaces.id()
    assert {d["id"] for p in named for d in p["devices"]} == {alice.spaces.id(), forged}
    # AND removing "Alicia Medlar" by name is refused, one line, nothing changed
    before = folder_bytes(folder)
    with pytest.raises(InputError, match=f"2 members are named '{ALICE}'") as refused:
        bob.spaces.remove(SPACE, ALICE)
    said = str(refused.value)
    assert len(said.splitlines()) == 1 and alice.spaces.id() in said and forged in said
    assert folder_bytes(folder) == before
    # AND the forged person goes by its id, Alice's device stays
    fake = next(p for p in named if p["devices"][0]["id"] == forged)
    removed = bob.spaces.remove(SPACE, fake["id"])
    assert [d["id"] for d in removed["devices"]] == [forged]
    assert alice.spaces.id() in {
        d["id"] for p in bob.spaces.members(SPACE)["persons"] for d in p["devices"]
    }


# ---- the record itself: version 1 still read, names a device cannot open -----------------

A, B, C, D = (keys.DeviceKey.new() for _ in range(4))


def v1(record: Record, by: keys.DeviceKey, kind: str, **fields) -> str:
    """A version 1 event (names and time in the clear), as devices wrote before."""
    event = {
        "v": 1,
        "space": record.space,
        "kind": kind,
        "author": by.public,
        "parents": record.heads(),
        "at": "2026-11-28T10:00:00+00:00",
        **fields,
    }
    return record.add(by.sign(event, EVENT))


def v1_space() -> tuple[Record, bytes]:
    key = keys.new_epoch_key()
    create = A.sign(
        {
            "v": 1,
            "space": "ab" * 16,
            "kind": "create",
            "author": A.public,
            "parents": [],
            "at": "2026-11-28T09:00:00+00:00",
            "name": "team",
            "person": "alice",
            "keys": {A.public: keys.seal_to(A.public, key)},
        },
        EVENT,
    )
    record = Record("ab" * 16, event_hash(create))
    record.add(create)
    return record, key


def test_a_version_1_record_folds_as_before_names_in_the_clear():
    record, key = v1_space()
    epoch = record.root
    admit = {"epoch": epoch, "key": keys.seal_to(B.public, key)}
    v1(record, A, "admit", device=B.public, person="bob", **admit)
    # an admission naming its author's own person: a device of that person
    v1(record, A, "admit", device=C.public, person="alice", epoch=epoch, key="x")
    # Bob's admission naming "alice": a new person (never a third member's)
    v1(record, B, "admit", device=D.public, person="alice", epoch=epoch, key="x")
    state = record.fold()
    assert state.name == "team" and not state.refused
    names = record.names(B, state)
    grouped = sorted((names[p], sorted(ds)) for p, ds in state.persons().items())
    assert grouped == sorted(
        [("alice", sorted([A.public, C.public])), ("alice", [D.public]), ("bob", [B.public])]
    )
    # AND a version 2 event follows on, sealed under the same epoch's key
    record.admit(A, keys.DeviceKey.new().public, "erin")
    assert "erin" in record.names(A).values()


def test_a_name_under_an_epoch_this_device_never_held_shows_a_placeholder():
    record, _ = Record.create(A, "team", "alice")
    record.admit(A, B.public, "bob")
    record.remove(A, [B.public], {})
    dave = record.admit(A, D.public, "dave")  # (sealed under the epoch after Bob's removal)
    # WHEN Bob, removed, holds the whole record but not that epoch's key
    state = record.fold()
    names = record.names(B, state)
    # THEN Dave shows as a placeholder, and the fold and every other name stand
    assert names[dave] == f"member {dave[:4]}…"
    assert names[record.root] == "alice" and "bob" in names.values()
    assert D.public in state.members and not state.refused
    assert record.names(A, state)[dave] == "dave"


@pytest.mark.parametrize(
    "change,why",
    [
        ({"person": "alice"}, "in the clear"),
        ({"at": "2026-11-29T10:00:00+00:00"}, "in the clear"),
        ({"sealed": "not base64!"}, "sealed names"),
        ({"sealed": "QUFB"}, "sealed names"),  # (shorter than a nonce and a tag)
        ({"sealed": "A" * 2000}, "sealed names"),
        ({"under": "e"}, "names sealed under an epoch"),
        ({"new": "yes"}, "a new person"),
        ({"new": None}, "a new person"),
    ],
)
def test_a_version_2_events_sealed_fields_are_checked_at_the_door(change, why):
    record, _ = Record.create(A, "team", "alice")
    admit = record.admit(A, B.public, "bob")
    event = {k: v for k, v in record.events[admit].items() if k != "sig"}
    fresh = Record(record.space, record.root)
    fresh.add(record.events[record.root])
    with pytest.raises(InputError, match=why):
        fresh.add(A.sign({**event, **change}, EVENT))
    for field in ("sealed", "under", "new"):
        without = {k: v for k, v in event.items() if k != field}
        with pytest.raises(InputError, match=f"without its '{field}'"):
            fresh.add(A.sign(without, EVENT))
