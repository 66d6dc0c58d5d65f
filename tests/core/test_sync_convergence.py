"""Sync converges whatever the delivery (issue 27): three devices, thousands of random
operations, their logs delivered late, cut mid-line, out of order, twice and as a sync
tool's conflict copies; in the end every device holds the same memories and no statement
anyone wrote is lost (except what was purged on purpose).

The test plays the folder sync tool: each device has its own copy of the folder, and the
test copies one device's files into another's copy when it likes. Real engines, real
SQLite files; the word model (tests/word_model.py) since meaning is not what is tested."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from app.core.engine import Engine
from app.core.errors import MnemoError
from app.core.memory import _STATEMENT_BREAK, _statement_key
from app.core.settings import Settings
from app.core.storage.store import Filters
from app.core.sync import folder as folder_module
from app.core.sync.fold import SYNCED
from tests.sync_devices import approve_waiting

ALL = Filters(include_deleted=True)

WORDS = (
    "server cache deploy nightly backup alice bob green tea python rust sqlite index "
    "vector budget meeting friday monday kernel laptop desktop garden piano invoice "
    "river mountain coffee train ticket doctor"
).split()


class Device:
    def __init__(self, root: Path, name: str, word_model, before=None):
        self.name = name
        self.folder = root / f"{name}-folder"
        self.folder.mkdir(parents=True)
        if before is not None:
            before(self.folder)
        self.engine = Engine(
            settings=Settings(root / f"{name}-settings.json"),
            database=root / f"{name}.db",
            embedder=word_model,
        )
        self.engine.sync.init(str(self.folder), name)
        self.device = self.engine.sync.status()["device"]
        self.purged: set[str] = set()

    def state(self) -> dict[str, tuple]:
        out = {}
        for m in self.engine.listing(ALL, limit=100_000):
            out[m.id] = (
                *(repr(getattr(m, f)) for f in SYNCED),
                m.observation_count,
                m.recall_count,
                m.last_recalled_at,
                # its versions as `mnemo history` lists them (issue 44: sync carries them):
                # every edit's, restore's, import's and supersede's, in one order everywhere
                # ('sync' ones are of the states a device passed through, which a late or
                # cut delivery makes differ from one device to another)
                tuple(
                    (v.key(), v.why) for v in self.engine.history(m.id).versions if v.why != "sync"
                ),
            )
        return out


def _statements(text: str) -> set[str]:
    return {_statement_key(s) for s in _STATEMENT_BREAK.split(text) if s.strip()}


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 6))).capitalize() + "."


def _act(device: Device, rng: random.Random, written: list[tuple[str, str]]) -> None:
    """One random user action on a device."""
    engine = device.engine
    memories = engine.listing(ALL, limit=100_000)
    live = [m for m in memories if not m.deleted_at]
    trashed = [m for m in memories if m.deleted_at]
    roll = rng.random()
    try:
        if roll < 0.30 or not memories:
            result = engine.remember(_sentence(rng), tags=[rng.choice(WORDS)])
            if result.memory is not None:
                written.append((result.memory.id, result.memory.text))
        elif roll < 0.50 and live:
            m = rng.choice(live)
            text = m.text + " " + _sentence(rng)
            engine.edit(m.id, text=text)
            written.append((m.id, text))
        elif roll < 0.58 and live:
            m = rng.choice(live)
            engine.edit(m.id, tags=m.tags + [rng.choice(WORDS)], pinned=rng.random() < 0.5)
        elif roll < 0.66 and live:
            m = rng.choice(live)
            engine.remember(m.text)  # observed again
        elif roll < 0.72 and live:
            engine.mark_used([rng.choice(live).id])
        elif roll < 0.80 and live:
            engine.forget([rng.choice(live).id])
        elif roll < 0.85 and trashed:
            engine.restore([rng.choice(trashed).id])
        elif roll < 0.91 and len(live) >= 2:
            engine.merge([m.id for m in rng.sample(live, 2)])
        elif roll < 0.95:
            merged = [m for m in memories if m.merged_into and m.deleted_at]
            if merged:
                target = rng.choice(merged).merged_into
                if not engine.get(target).deleted_at:
                    engine.unmerge(target)
        elif trashed:
            m = rng.choice(trashed)
            engine.purge([m.id])
            device.purged.add(m.id)
    except MnemoError:
        pass  # a refused action (a merge of something trashed meanwhile): the user's too


def _deliver(source: Device, target: Device, rng: random.Random, whole: bool = False) -> None:
    """Copy the source device's own files into the target's copy of the folder: late,
    maybe cut anywhere (mid-line), maybe as a conflict copy as well."""
    src = source.folder / "devices" / source.device
    if not src.is_dir():
        return
    dst = target.folder / "devices" / source.device
    dst.mkdir(parents=True, exist_ok=True)
    for path in sorted(src.iterdir()):
        data = path.read_bytes()
        if not whole and path.suffix == ".jsonl" and data and rng.random() < 0.3:
            data = data[: rng.randint(0, len(data))]
        existing = dst / path.name
        older = not whole and existing.exists() and len(existing.read_bytes()) > len(data)
        if older and rng.random() < 0.5:
            continue  # a newer version is there; sometimes an older one lands anyway
        existing.write_bytes(data)
        if path.suffix == ".jsonl" and rng.random() < 0.05:
            copy = dst / path.name.replace(".jsonl", ".sync-conflict-20261126-120000-ABC.jsonl")
            copy.write_bytes(data)


def _copy_folder(source: Device, target: Path) -> None:
    """What a new device finds in the folder when it joins: a copy of another's."""
    shutil.copytree(source.folder, target, dirs_exist_ok=True)


def _converge(devices: list[Device], rng: random.Random) -> None:
    for _ in range(3):
        for source in devices:
            for target in devices:
                if source is not target:
                    _deliver(source, target, rng, whole=True)
        for device in devices:
            device.engine.sync.now()
    for device in devices:  # settled: nothing more to write anywhere
        assert device.engine.sync.now().written == 0


@pytest.fixture(autouse=True)
def small_logs(monkeypatch):
    """Logs of a few operations each, so compaction has whole logs to delete."""
    monkeypatch.setattr(folder_module, "SEGMENT_BYTES", 4_000)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_three_devices_converge_whatever_the_delivery(tmp_path, word_model, seed):
    rng = random.Random(seed)
    devices = [Device(tmp_path, name, word_model) for name in ("laptop", "desktop", "devbox")]
    written: list[tuple[str, str]] = []
    try:
        # each person approves the other devices once they show up (trust.py)
        meet = random.Random(0)
        for source in devices:
            for target in devices:
                if source is not target:
                    _deliver(source, target, meet, whole=True)
        for device in devices:
            device.engine.sync.now()
            assert approve_waiting(device.engine) == 2
        for _ in range(1000):
            device = rng.choice(devices)
            if rng.random() < 0.12:
                for source in devices:
                    if source is not device and rng.random() < 0.6:
                        _deliver(source, device, rng)
                device.engine.sync.now()
            else:
                _act(device, rng, written)
        _converge(devices, rng)
        states = [d.state() for d in devices]
        assert states[0] == states[1] == states[2]
        assert len(states[0]) > 50
        # No statement lost: every text anyone wrote is in some memory (live or in the
        # trash) on every device, unless its memory was purged on purpose.
        purged = set().union(*(d.purged for d in devices))
        for device in devices:
            held = set()
            for m in device.engine.listing(ALL, limit=100_000):
                held |= _statements(m.text)
            for memory_id, text in written:
                if memory_id in purged:
                    continue
                assert _statements(text) <= held, (device.name, memory_id, text)
        conflicts = devices[0].engine.sync.status()["conflicts"]
        assert conflicts > 0  # edits made apart did happen, and were merged

        # Compaction: each device writes its snapshot and deletes the logs every snapshot
        # covers; the work goes on; a fourth device joins late, from what is left
        for device in devices:
            device.engine.sync.compact()
        for _ in range(150):
            device = rng.choice(devices)
            if rng.random() < 0.2:
                for source in devices:
                    if source is not device:
                        _deliver(source, device, rng)
                device.engine.sync.now()
            else:
                _act(device, rng, written)
        _converge(devices, rng)
        for device in devices:
            device.engine.sync.compact()
        _converge(devices, rng)
        pruned = [
            d
            for d in devices
            if not (d.folder / "devices" / d.device / "ops-0000000001.jsonl").exists()
        ]
        assert pruned  # old logs went
        late = Device(tmp_path, "late", word_model, before=lambda f: _copy_folder(devices[0], f))
        devices.append(late)
        _converge(devices, rng)
        states = [d.state() for d in devices]
        assert all(s == states[0] for s in states)
        assert late.engine.sync.status()["from_snapshot"]
    finally:
        for device in devices:
            device.engine.close()
        shutil.rmtree(tmp_path, ignore_errors=True)
