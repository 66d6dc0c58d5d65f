"""What a person does once per new device (approve it on a device that already syncs), and
devices planted in a folder by hand: signed with their own key, as a real device signs, so
that what is tested is what happens to their lines once approved (`app/core/sync/trust.py`)."""

from __future__ import annotations

import json
from pathlib import Path

from app.core.sync import trust

_KEYS: dict[str, trust.Signer] = {}


def signer(device: str) -> trust.Signer:
    """A planted device's key (one per name, for the whole run)."""
    if device not in _KEYS:
        _KEYS[device] = trust.Signer(trust.Signer.new())
    return _KEYS[device]


def approve_waiting(*engines) -> int:
    """Each engine approves the devices waiting in its folder, as a person would after
    comparing keys; how many it approved."""
    done = 0
    for engine in engines:
        for device in engine.sync.devices():
            if device["state"] == "pending":
                engine.sync.approve(device["id"])
                done += 1
    return done


def plant(folder: Path, dev: str, *ops: dict, name: str = "ops-0000000001.jsonl", sign=True):
    """Lines a hostile (or broken) device writes into the folder, signed by its key (and
    its device file), or not (`sign=False`); a line that is not a dict goes as it is."""
    path = Path(folder) / "devices" / dev
    path.mkdir(parents=True, exist_ok=True)
    key = signer(dev)
    info = {"id": dev, "name": dev, "key": key.public, "signed_from": 1, "trusts": {}}
    (path / "device.json").write_text(json.dumps(key.sign(info, trust.DEVICE)))
    lines = [
        json.dumps(key.sign(op) if sign and isinstance(op, dict) else op, sort_keys=True)
        for op in ops
    ]
    (path / name).write_text("".join(line + "\n" for line in lines))


STAMP = "2026-11-26T10:00:00+00:00"


def put(dev: str, seq: int, memory_id: str, text: str, lc: int = 1, base=()) -> dict:
    """A put operation as a device writes it, with no origins in its record (as a Mnemo
    before origins wrote it)."""
    return {
        "v": 1,
        "rev": f"{dev}.{seq}",
        "dev": dev,
        "seq": seq,
        "lc": lc,
        "op": "put",
        "id": memory_id,
        "base": list(base),
        "rec": {"text": text, "title": text, "created_at": STAMP, "updated_at": STAMP},
    }
