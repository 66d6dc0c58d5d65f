"""Sync carries each memory's origins (issue 44): what another device wrote says who wrote
it and on which device; a line from a device older than origins is still taken, and says
the device, or the origin of the version it was made from."""

from __future__ import annotations

import json

from app.core import origin
from app.core.engine import Engine
from app.core.settings import Settings
from app.core.storage.db import Database
from app.core.storage.store import Filters
from tests.sync_devices import STAMP, approve_waiting, plant
from tests.sync_devices import put as old_put


def device(tmp_path, name, word_model) -> Engine:
    return Engine(Settings(tmp_path / f"{name}.json"), tmp_path / f"{name}.db", word_model)


def _kinds(memory) -> list[tuple[str, str, str]]:
    return [(o.kind, o.name, o.device) for o in memory.origins]


def test_an_agents_memory_keeps_its_origin_on_the_other_device_and_says_where(tmp_path, word_model):
    folder = tmp_path / "shared"
    laptop = device(tmp_path, "laptop", word_model)
    desktop = device(tmp_path, "desktop", word_model)
    try:
        # GIVEN a memory an agent stored on the laptop, synced to the desktop
        memory = laptop.remember(
            "The staging database listens on port 5432.",
            embed=False,
            origin=origin.agent("claude-code", "s1"),
        ).memory
        laptop.sync.init(str(folder), "laptop")
        desktop.sync.init(str(folder), "desktop", key=laptop.sync.key())
        approve_waiting(laptop, desktop)
        laptop.sync.now()
        desktop.sync.now()
        # THEN on the desktop it is the agent's, in its session, written on the laptop
        there = desktop.get(memory.id)
        assert _kinds(there) == [("agent", "claude-code", "laptop")]
        assert there.origin.session == "s1" and there.origin.at == memory.origin.at
        assert [m.id for m in desktop.listing(Filters(origin="device:laptop"))] == [memory.id]
        assert [m.id for m in desktop.listing(Filters(origin="agent:claude-code"))] == [memory.id]
        # WHEN the desktop edits it and the edit comes back
        desktop.edit(memory.id, text="The staging database listens on port 6543.")
        desktop.sync.now()
        laptop.sync.now()
        # THEN the laptop still has it as the agent's, written here (no device named)
        here = laptop.get(memory.id)
        assert here.text.endswith("6543.") and _kinds(here) == [("agent", "claude-code", "")]
        assert _kinds(desktop.get(memory.id)) == [("agent", "claude-code", "laptop")]
        # AND a person's memory written on the desktop says so on the laptop
        mine = desktop.remember(
            "Lunch with Ana on Friday.", embed=False, origin=origin.person("cli")
        ).memory
        desktop.sync.now()
        laptop.sync.now()
        assert _kinds(laptop.get(mine.id)) == [("person", "cli", "desktop")]
        assert _kinds(desktop.get(mine.id)) == [("person", "cli", "")]
    finally:
        laptop.close()
        desktop.close()


def test_a_line_from_a_device_older_than_origins_is_taken_and_says_its_device(tmp_path, word_model):
    folder = tmp_path / "shared"
    laptop = device(tmp_path, "laptop", word_model)
    try:
        kept = laptop.remember(
            "Backups run at 02:00.", embed=False, origin=origin.person("cli")
        ).memory
        laptop.sync.init(str(folder), "laptop")
        laptop.sync.now()
        ours = next(folder.glob("devices/*/ops-*.jsonl"))
        written = [json.loads(line) for line in ours.read_text().splitlines()]
        rev = next(op["rev"] for op in written if op.get("id") == kept.id and op["op"] == "put")
        # GIVEN an older Mnemo's lines: a new memory, and an edit of the laptop's memory
        plant(
            folder,
            "old001",
            old_put("old001", 1, "oldmemory1", "The printer is on floor 2.", lc=5),
            old_put("old001", 2, kept.id, "Backups run at 03:00.", lc=6, base=[rev]),
        )
        laptop.sync.now()
        approve_waiting(laptop)
        laptop.sync.now()
        # THEN both are taken: the new memory is the device's, the edit keeps the origin
        # of the version it was made from
        assert laptop.get("oldmemory1").text == "The printer is on floor 2."
        assert _kinds(laptop.get("oldmemory1")) == [("device", "old001", "old001")]
        edited = laptop.get(kept.id)
        assert edited.text == "Backups run at 03:00." and _kinds(edited) == [("person", "cli", "")]
    finally:
        laptop.close()


def test_a_memory_synced_before_origins_keeps_the_origin_it_has_when_folded_again(
    tmp_path, word_model
):
    # Found by review: puts written before the upgrade carry no origins; when such a
    # memory was folded again (a count from the other device, an older peer's edit, the
    # rebuild after a restore), its origin became "device <writer>", also on the device
    # that wrote it, and nothing sent the right one again
    folder = tmp_path / "shared"
    laptop = device(tmp_path, "laptop", word_model)
    desktop = device(tmp_path, "desktop", word_model)
    try:
        kept = laptop.remember(
            "Backups run at 02:00 every night.",
            embed=False,
            origin=origin.agent("claude-code", "s1"),
        ).memory
        laptop.sync.init(str(folder), "laptop")
        desktop.sync.init(str(folder), "desktop", key=laptop.sync.key())
        approve_waiting(laptop, desktop)
        laptop.sync.now()
        desktop.sync.now()
        for engine in (laptop, desktop):  # as if its put was written before the upgrade
            db = Database(engine.database_path)  # (the file as another program sees it)
            for rev, body in db.query(
                "SELECT rev, body FROM sync_ops WHERE memory_id = ? AND kind = 'put'", (kept.id,)
            ):
                op = json.loads(body)
                op["rec"].pop("origins", None)
                with db.write():
                    db.conn.execute(
                        "UPDATE sync_ops SET body = ? WHERE rev = ?", (json.dumps(op), rev)
                    )
            db.close()
        desktop.remember("Backups run at 02:00 every night.", embed=False)  # seen again
        desktop.sync.now()
        laptop.sync.now()
        assert laptop.get(kept.id).observation_count == 2  # (the count was folded)
        assert _kinds(laptop.get(kept.id)) == [("agent", "claude-code", "")]
        assert _kinds(desktop.get(kept.id)) == [("agent", "claude-code", "laptop")]
        assert [m.id for m in laptop.listing(filters=Filters(origin="agent:claude-code"))] == [
            kept.id
        ]
    finally:
        laptop.close()
        desktop.close()


def test_a_device_cannot_make_its_lines_look_written_here(tmp_path, word_model):
    # Found by review: received origins were taken as they came, and one naming this
    # device (or none) showed as written here: a planted memory looked like the person's
    folder = tmp_path / "shared"
    laptop = device(tmp_path, "laptop", word_model)
    try:
        laptop.remember("Backups run at 02:00.", embed=False, origin=origin.person("cli"))
        laptop.sync.init(str(folder), "laptop")
        laptop.sync.now()
        claims = ({"device": "laptop"}, {})  # this device's name, and no device at all
        lines = []
        for seq, claim in enumerate(claims, start=1):
            op = old_put("dev002", seq, f"forged0000000{seq}", f"Planted note {seq}.", lc=8 + seq)
            op["rec"]["origins"] = [{"kind": "person", "name": "cli", "at": STAMP, **claim}]
            lines.append(op)
        plant(folder, "dev002", *lines)
        laptop.sync.now()
        approve_waiting(laptop)
        laptop.sync.now()
        for seq in (1, 2):
            assert _kinds(laptop.get(f"forged0000000{seq}")) == [("person", "cli", "dev002")]
        taken_back = laptop.listing(filters=Filters(origin="device:dev002"))
        assert sorted(m.id for m in taken_back) == ["forged00000001", "forged00000002"]
    finally:
        laptop.close()
