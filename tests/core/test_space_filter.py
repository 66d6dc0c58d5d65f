"""The filter by team space (issue 45: the manager's Space filter): a listing, a count and a
search narrowed to one space's memories, or to those in none."""

from __future__ import annotations

from app.core.storage.store import Filters
from tests.core.test_space_sharing import shared, team


def test_a_listing_and_a_search_narrow_to_a_space_or_to_no_space(homes, tmp_path):
    alice, bob, _ = team(homes, tmp_path)
    # GIVEN Alice shares one memory in `team` and keeps one to herself
    in_team = shared(alice, "The staging database lives on port 5433")
    mine = alice.remember("The staging printer is on the third floor", force=True).memory.id
    team_id = alice.spaces.list()[0]["id"]
    # THEN the filter by the space lists only the shared one; "" only the other
    listed = alice.page(Filters(space=team_id), "updated_at DESC", 0, 10)
    assert [m.id for m, _ in listed] == [in_team]
    assert alice.count(Filters(space="")) == 1 and alice.count(Filters(space=team_id)) == 1
    found = alice.recall("staging", mode="keyword", filters=Filters(space=""), track=False)
    assert [r.memory.id for r in found.results] == [mine]
    # AND on Bob's side the memory Alice's pass brought is in the space, none his own
    bob.spaces.sync("team")
    assert bob.count(Filters(space=team_id)) == 1 and bob.count(Filters(space="")) == 0
    # AND a memory withdrawn from the space is the user's own again
    alice.spaces.unshare(in_team)
    assert alice.count(Filters(space=team_id)) == 0 and alice.count(Filters(space="")) == 2
