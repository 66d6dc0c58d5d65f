"""What the parts of a sync pass share (ADR 0015): this device in the folder (its id, name
and signing key), the state of the pass under way, and where its problems go. `Syncer`
makes one of each and hands them to its parts (`Intake`, `Ledger`, `Holding`)."""

from __future__ import annotations

import json
import logging
import secrets
from dataclasses import dataclass, field

from app.core.storage.db import Database, now
from app.core.sync import trust

log = logging.getLogger(__name__)

_KEEP_PROBLEMS = 200


class Identity:
    """This device in the sync folder: its id and signing key (each made once per
    database) and the name it shows."""

    def __init__(self, db: Database, name: str):
        self._db = db
        self.name = name
        self._signer: trust.Signer | None = None

    @property
    def device(self) -> str:
        """This device's id in the folder, made once per database."""
        device = self._db.get_meta("sync_device")
        if not device:
            device = secrets.token_hex(5)
            self._db.set_meta("sync_device", device)
        return device

    @property
    def signer(self) -> trust.Signer:
        """This device's signing key, made once per database (`trust.py`)."""
        if self._signer is None:
            stored = self._db.get_meta("sync_sign_key")
            if not stored:
                stored = trust.Signer.new().hex()
                with self._db.write():
                    self._db.set_meta("sync_sign_key", stored)
                    # what this device wrote before it had a key stays readable unsigned
                    device = self._db.get_meta("sync_device")
                    if device:
                        top = self._db.query(
                            "SELECT COALESCE(MAX(seq), 0) FROM sync_ops WHERE device = ?",
                            (device,),
                        )[0][0]
                        self._db.set_meta("sync_signed_from", json.dumps({device: top + 1}))
            self._signer = trust.Signer(bytes.fromhex(stored))
        return self._signer

    @property
    def seed(self) -> bytes:
        """The seed of this device's signing key (made first if missing): a team space's
        device key is the same key (ADR 0026), so one device has one id."""
        _ = self.signer
        return bytes.fromhex(self._db.get_meta("sync_sign_key"))

    def forget_signer(self) -> None:
        """Read the signing key again (a restored or copied database has one of its own)."""
        self._signer = None

    def signed_from(self, device: str) -> int:
        """This device's first signed operation (under `device`, its id)."""
        return int(json.loads(self._db.get_meta("sync_signed_from", "{}")).get(device, 1))


@dataclass
class PassState:
    """The state one pass (or a person's decision) builds and its parts read."""

    floor: dict[str, int] = field(default_factory=dict)  # per device: what the snapshot
    # this device started from held
    rebuilding: bool = False  # taking the folder's history again (`restart.py`)
    keep: set[str] = field(default_factory=set)  # memories a rebuild leaves as they are here
    removed_by: dict[str, int] = field(default_factory=dict)  # live memories each device
    # removed, this pass
    live_at_start: int = 0
    let_through: set[str] = field(default_factory=set)  # devices whose held removals a
    # person applied
    keys: dict[str, str | None] = field(default_factory=dict)  # the trusted devices' keys
    signed_from: dict[str, int] = field(default_factory=dict)  # each one's first signed op
    approved_here: bool = False  # another device trusts this one

    def read_floor(self, db: Database) -> dict[str, int]:
        self.floor = json.loads(db.get_meta("sync_floor", "{}"))
        return self.floor

    def begin(self, db: Database) -> None:
        """A pass starts: what it counts removals against."""
        self.removed_by = {}
        self.count_live(db)

    def count_live(self, db: Database) -> None:
        """The floor and the live memories now (what a mass removal is measured against)."""
        self.read_floor(db)
        live = db.query("SELECT COUNT(*) FROM memories WHERE deleted_at IS NULL")
        self.live_at_start = live[0][0]

    def covered(self, rev: str) -> bool:
        """Whether an operation not held here was folded into the snapshot this device
        started from (then what was made from it is not waiting for it)."""
        device, _, seq = rev.rpartition(".")
        return seq.isdigit() and 0 < int(seq) <= self.floor.get(device, 0)


@dataclass
class Pass:
    """What one pass did."""

    written: int = 0  # operations this device wrote
    read: int = 0  # operations read from other devices
    applied: int = 0  # memories changed here
    conflicts: int = 0  # memories edited apart on two devices, merged
    problems: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)  # each problem's kind ("conflict", …)
    new_devices: list[str] = field(default_factory=list)  # seen first: wait for a person
    held: dict[str, int] = field(default_factory=dict)  # device → removals held for a person
    conflicted: list[str] = field(default_factory=list)  # memories edited apart, this pass

    def summary(self, problem: str = "") -> dict:
        """What a front end is told of it (`Listener.synced`; `duties.py` records it for the
        other processes): plain numbers and names, no memory text."""
        return {
            "written": self.written,
            "read": self.read,
            "applied": self.applied,
            "conflicts": self.conflicts,
            "problem": problem,
            # for a person, said once each: a device that waits for approval, removals held
            "new_devices": list(self.new_devices),
            "held": dict(self.held),
        }


def problem(db: Database, result: Pass, kind: str, what: str) -> None:
    """A problem of a pass: told in its result, logged (a line's text never: it may hold
    what the line held), kept for `mnemo sync status` (the latest few hundred)."""
    result.problems.append(what)
    result.kinds.append(kind)
    log.warning("sync: %s", what if kind != "line" else what.split(":")[0])
    db.conn.execute(
        "INSERT INTO sync_problems(at, kind, what) VALUES (?, ?, ?)", (now(), kind, what)
    )
    db.conn.execute(
        "DELETE FROM sync_problems WHERE seq <= (SELECT MAX(seq) FROM sync_problems) - ?",
        (_KEEP_PROBLEMS,),
    )
