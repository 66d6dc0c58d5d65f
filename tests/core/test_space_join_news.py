"""Who joined a team space reaches the app however the pass that saw it ran (issue 45: "a
notification when a member joins"): the app's own pass, an MCP server's or a stand-in's
as the process doing the background work, or `mnemo space sync`. The news is read from
the database, told once, and not again by an app started later."""

from __future__ import annotations

import threading

from app.core.duties import Duties
from app.core.engine import Engine
from app.core.runner import Listener, Runner
from tests.conftest import wait


class Heard(Listener):
    """What a runner told: each call of `members_joined`, as (space, person)."""

    def __init__(self) -> None:
        self.joined: list[list[tuple]] = []
        self.lock = threading.Lock()

    def members_joined(self, joined) -> None:
        with self.lock:
            self.joined.append([(j["space"], j["person"]) for j in joined])

    def told(self) -> list[list[tuple]]:
        with self.lock:
            return list(self.joined)


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


def test_a_join_seen_by_another_processs_pass_is_told_by_the_app_once(
    homes,
    tmp_path,
    word_model,
):
    # GIVEN Alice and Bob in a space; Bob's app is not doing the background work
    alice, bob = homes("alice"), homes("bob")
    folder = tmp_path / "shared" / "team"
    alice.spaces.create("team", folder, "alice")
    bob.spaces.join(alice.spaces.invite("team", bob.spaces.id(), "bob")[0], folder)
    assert bob.spaces.sync("team")["joined"] == []  # (the first pass starts from here)
    claim = Duties(tmp_path / "bob.db", "cli")
    assert claim.held()
    heard = Heard()
    runner = _runner(tmp_path / "bob.db", word_model, heard)
    try:
        # WHEN Carol joins and a pass outside the app (`mnemo space sync`) sees it
        carol = homes("carol")
        carol.spaces.join(alice.spaces.invite("team", carol.spaces.id(), "carol")[0], folder)
        joined = bob.spaces.sync("team")["joined"]
        assert [j["person"] for j in joined] == ["carol"]
        # THEN Bob's app tells it, once
        wait(heard.told, 30, "the news of Carol's join")
        assert heard.told() == [[("team", "carol")]]
        assert bob.spaces.sync("team")["joined"] == []
        # AND an app started afterwards tells only what came after it: Dave, not Carol
        runner.stop(30)
        later = Heard()
        runner = _runner(tmp_path / "bob.db", word_model, later)
        dave = homes("dave")
        dave.spaces.join(alice.spaces.invite("team", dave.spaces.id(), "dave")[0], folder)
        assert [j["person"] for j in bob.spaces.sync("team")["joined"]] == ["dave"]
        wait(later.told, 30, "the news of Dave's join")
        assert later.told() == [[("team", "dave")]]
    finally:
        runner.stop(30)
        claim.let_go()
