"""Names two persons carry in a team space say who admitted each one (issue 45, red team):
a member can admit a new person under any name, so "alice" alone does not tell the real
alice from one a member made up; every place a name is shown goes through one naming."""

from __future__ import annotations

from app.core.space import keys
from app.core.space.folder import SpaceFolder
from tests.core.test_space_names import ALICE, CAROL, SPACE, team


def test_a_person_a_member_admitted_under_an_existing_name_says_who_added_them(
    homes,
    tmp_path,
):
    alice, bob, carol, folder = team(homes, tmp_path)
    bob.spaces.sync(SPACE)
    # GIVEN Carol's device, with its real key, admits Eve's device as a new "Alicia Medlar"
    # and gives it an invitation by hand (the command refuses the name)
    eve = homes("eve")
    record = carol.spaces.record(SPACE)
    record.admit(carol.spaces.device, eve.spaces.id(), ALICE)
    mine = [e for e in record.events.values() if e["author"] == carol.spaces.id()]
    SpaceFolder(folder).write_own(carol.spaces.id(), mine)
    state = record.fold()
    invitation = keys.make_invitation(
        carol.spaces.device,
        eve.spaces.id(),
        {"id": record.space, "name": SPACE, "root": record.root},
        state.epoch,
        carol.spaces.epoch_key(SPACE, state.epoch),
        record.heads(),
    )
    eve.spaces.join(invitation, folder)
    # WHEN Eve shares a memory and Bob's pass takes it
    memory = eve.remember("The release branch is frozen on Fridays").memory
    eve.spaces.share(memory.id, SPACE)
    report = bob.spaces.sync(SPACE)
    # THEN Bob is told who added her, in the join, the members and the memory's origin
    fake = f"{ALICE} (added by {CAROL})"
    assert [j["person"] for j in report["joined"]] == [fake]
    assert sorted(p["person"] for p in bob.spaces.members(SPACE)["persons"])[:2] == [ALICE, fake]
    got = bob.get(memory.id)
    assert [o.name for o in got.origins if o.kind == "space"] == [fake]
