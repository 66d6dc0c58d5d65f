"""A team space moves in the background (issue 45): the process that does a database's
background work (the desktop app, an MCP server: `duties.py`) runs a pass over the spaces
this device is in when another member's file in a space's folder moved or a shared memory
changed here, without `mnemo space sync`. Real runners on real SQLite files, two members
sharing one space folder, real keys; the word model."""

from __future__ import annotations

import pytest

from app.core.engine import Engine
from app.core.runner import Listener, Runner
from tests.conftest import wait


class Heard(Listener):
    def __init__(self) -> None:
        self.written: list = []

    def written_elsewhere(self, changes) -> None:
        self.written.append(changes)


@pytest.fixture
def team(tmp_path, word_model):
    """Alice's and Bob's databases, Alice made the space `team`, Bob joined; a runner on
    Bob's database (the app, doing its background work)."""
    made: list[Engine] = []

    def engine(name: str) -> Engine:
        eng = Engine(database=tmp_path / f"{name}.db", embedder=word_model)
        made.append(eng)
        return eng

    alice, bob = engine("alice"), engine("bob")
    folder = tmp_path / "shared" / "team"
    alice.spaces.create("team", folder, "alice")
    invitation, _ = alice.spaces.invite("team", bob.spaces.id(), "bob")
    bob.spaces.join(invitation, folder)
    heard = Heard()
    runner = Runner(
        lambda: Engine(database=tmp_path / "bob.db", embedder=word_model),
        listener=heard,
        load_model=False,
        kind="app",
    )
    runner.poll_s = 0.1
    runner.start()
    yield alice, bob, runner, heard
    runner.stop(30)
    for eng in made:
        eng.close()


def _text(runner: Runner, memory_id: str) -> str | None:
    def read(e: Engine) -> str | None:
        try:
            return e.get(memory_id).text
        except Exception:
            return None

    return runner.submit(read).result(10)


def test_what_a_member_shares_arrives_without_a_space_sync(team):
    alice, _, runner, heard = team
    # WHEN Alice shares a memory (her pass writes its line in the folder)
    memory = alice.remember("The on-call phone is in the top drawer", force=True).memory
    alice.spaces.share(memory.id, "team")
    # THEN Bob's app brings it in by itself, and tells its windows
    wait(lambda: _text(runner, memory.id), 20, "the shared memory at Bob's")
    assert heard.written


def test_an_edit_made_here_to_a_shared_memory_goes_out_by_itself(team, tmp_path, word_model):
    alice, _, runner, _ = team
    memory = alice.remember("Releases are tagged on Fridays", force=True).memory
    alice.spaces.share(memory.id, "team")
    wait(lambda: _text(runner, memory.id), 20, "the shared memory at Bob's")
    # WHEN Bob edits it elsewhere (the CLI, an agent: another engine on his database)
    with Engine(database=tmp_path / "bob.db", embedder=word_model) as other:
        other.edit(memory.id, text="Releases are tagged on Fridays after the demo")
    # THEN his app's pass sends it, and Alice's next pass takes it

    def at_alice() -> bool:
        alice.spaces.sync("team")
        return "after the demo" in alice.get(memory.id).text

    wait(at_alice, 20, "Bob's edit at Alice's")
