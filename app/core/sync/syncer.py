"""One sync pass: write this device's changes, read the others', fold, apply (ADR 0015).

A pass runs in write transactions of the database, in this order, so a local change is
never overwritten by one that arrived: (1) this device's own logs are read (operations a
crash left written but not recorded), (2) what changed here since the last pass (the
journal) is written as operations to this device's log (fsynced before the commit), (3) the
other devices' logs are read from where the last pass stopped, a batch at a time, and (4)
each memory they touch is folded from every operation about it and written.
"""

from __future__ import annotations

import contextlib
import json
import socket
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from app.core.errors import InputError
from app.core.storage.db import Database, now
from app.core.storage.store import Store
from app.core.sync import oplog, restart, snapshot, trust
from app.core.sync.folder import Folder
from app.core.sync.holding import Holding
from app.core.sync.intake import Intake
from app.core.sync.ledger import Ledger
from app.core.sync.state import Identity, Pass, PassState, problem

COMPACT_OPS = 50_000  # operations held since the last snapshot that make a new one due
SEEN_EVERY_S = 60  # how often device.json's "seen" is refreshed while nothing else changes


class Syncer:
    """Sync of one database with one folder, as one device: the pass, compaction, status.
    Its parts share one `PassState` and `Identity` (`state.py`): `Intake` reads the
    folder, `Ledger` folds what was read and writes this device's changes, `Holding` keeps
    what waits for a person."""

    def __init__(self, db: Database, store: Store, folder: str, name: str, model_id: str = ""):
        self._db = db
        self._store = store
        self._root = Path(folder) if folder else None
        self._model_id = model_id
        stored = db.get_meta("sync_key")
        self._sealer = trust.Sealer(bytes.fromhex(stored)) if stored else None
        self._identity = Identity(db, name or socket.gethostname())
        self._state = PassState()
        self._holding = Holding(db, self._state, self._identity)
        self._ledger = Ledger(db, store, self._sealer, self._state, self._identity, self._holding)
        self._intake = Intake(db, self._sealer, self._state, self._ledger)

    @property
    def device(self) -> str:
        """This device's id in the folder, made once per database."""
        return self._identity.device

    @property
    def signer(self) -> trust.Signer:
        """This device's signing key, made once per database (`trust.py`)."""
        return self._identity.signer

    def _trust(self, folder: Folder, result: Pass | None) -> None:
        """Who may write now (`trust.settle`): the folder's reads are limited to them; a
        device seen for the first time is said once (it waits for a person)."""
        signer = self.signer
        infos = {d: folder.device_info(d) for d in folder.all_devices() if d != folder.device}
        joining = self._db.get_meta("sync_joining") == "1"
        seen = json.loads(self._db.get_meta("sync_founder", "null"))
        settled = trust.settle(
            trust.Devices(self._db),
            folder.device,
            signer,
            self._identity.name,
            infos,
            folder.mark_read,
            joining,
            founder_seen=seen,
            record_new=result is not None,
        )
        if settled.founder and not seen:  # whom it trusted as it joined: a later mark
            self._db.set_meta("sync_founder", json.dumps(settled.founder))  # naming another is said
        folder.trusted = settled.trusted
        self._state.keys = settled.trusted
        self._state.signed_from = {
            **settled.signed_from,
            folder.device: self._identity.signed_from(folder.device),
        }
        self._state.approved_here = settled.approved_here
        if result is None:
            return
        for device in settled.new:
            result.new_devices.append(device.id)
            problem(
                self._db,
                result,
                "device",
                f"a new device wants to sync: {device.name or 'unnamed'} ({device.id}, key "
                f"{trust.fingerprint(device.key)}); its changes wait until you approve it "
                f"(mnemo sync devices approve {device.id}), or refuse it",
            )
        for what in settled.problems:
            if not self._db.query("SELECT 1 FROM sync_problems WHERE what = ?", (what,)):
                problem(self._db, result, "device", what)

    def _folder(self) -> Folder:
        if self._root is None:
            raise InputError("sync is not set up: mnemo sync init FOLDER")
        if not self._root.is_dir():
            raise InputError(
                f"the sync folder {self._root} is missing (not mounted?); nothing was changed"
            )
        mark = Folder.read_mark(self._root)
        sealed = (mark or {}).get("sealed")
        kid = self._db.get_meta("sync_key_id")
        if sealed and sealed != kid:
            raise InputError(
                f"the files in {self._root} are encrypted and this device does not have "
                "their key: mnemo sync init FOLDER --key KEY (`mnemo sync key` shows it on a "
                "device that syncs); nothing was changed"
            )
        if mark is not None and not sealed and kid:
            raise InputError(
                f"the files in {self._root} are not encrypted but this device encrypts them: "
                "sync through a new folder, or `mnemo sync off` and init again; nothing was "
                "changed"
            )
        return Folder(self._root, self.device, mark)

    # ---- a pass --------------------------------------------------------------------
    def run(self, progress: Callable[[int, int], None] | None = None) -> Pass:
        """Write what changed here, apply what arrived; `progress(done, total)` in bytes read.
        A database restored from a snapshot (or copied to another machine) first takes the
        folder's whole history again, its own logs included (`restart.py`)."""
        state = self._state
        state.rebuilding = restart.begin(self._db, self._identity.name)
        if state.rebuilding:
            self._identity.forget_signer()  # (a copy has a key of its own now)
        state.keep = restart.keep(self._db) if state.rebuilding else set()
        folder = self._folder()
        folder.prepare(self._db.get_meta("sync_key_id"), (folder.device, self.signer))
        result = Pass()
        state.begin(self._db)
        with self._db.write():
            self._trust(folder, result)
        intake, ledger = self._intake, self._ledger
        more = not state.rebuilding
        while more:  # what a crash left written to this device's logs, not recorded
            with self._db.write():
                more = intake.read(folder, result, own=True)
        start = intake.starting_snapshot(folder)
        total = self._unread(folder) + (start[0].stat().st_size - start[1] if start else 0)
        done = 0
        while start is not None:  # a new device: from a snapshot, a batch a transaction
            with self._db.write():
                start = intake.start_from_snapshot(folder, *start, result)
                at = start[1] if start else total - self._unread(folder)
            if progress is not None:
                progress(min(at, total), total)
            done = at
        more = state.rebuilding
        while more:  # a rebuild reads this device's own history like the others'
            with self._db.write():
                more = intake.read(folder, result, own=True)
        while True:
            with self._db.write():
                # This device's changes first: what arrives is folded with them, never over them
                if not state.rebuilding:
                    ledger.export(folder, result)
                before = sum(oplog.offsets(self._db).values())
                more = intake.read(folder, result, own=False)
                done += sum(oplog.offsets(self._db).values()) - before
                self._db.set_meta("sync_journal", str(oplog.journal_head(self._db)))
            if progress is not None:
                progress(min(done, total), total)
            if not more:
                break
        if state.rebuilding:  # every log read again: what differs here is written now
            restart.finish(self._db)
            state.rebuilding = False
            with self._db.write():
                ledger.export(folder, result)
                self._db.set_meta("sync_journal", str(oplog.journal_head(self._db)))
        self._write_device(folder)
        if self._db.get_meta("sync_joining"):
            self._db.conn.execute("DELETE FROM _metadata WHERE key = 'sync_joining'")
        if result.written or result.read:  # (the log grew: a snapshot may be due)
            held = self._db.query("SELECT COUNT(*) FROM sync_ops")[0][0]
            if held - int(self._db.get_meta("sync_held_at_snapshot", "0")) > COMPACT_OPS:
                self.compact(folder)
        self._prune(folder)
        return result

    # ---- compaction (snapshot.py) --------------------------------------------------
    def compact(self, folder: Folder | None = None) -> Path:
        """Write this device's snapshot (so new devices start from it, and every device can
        delete the logs all snapshots cover); returns its path."""
        if folder is None:
            self._rebuild_first()
        folder = folder or self._folder()
        removed = set(json.loads(self._db.get_meta("sync_removed", "[]")))
        with self._db.write():
            if folder.trusted is None:  # (by itself: only trusted devices' files count)
                self._trust(folder, None)
            floor = self._state.read_floor(self._db)
            stable = snapshot.stable_floor(folder, removed, snapshot.applied(self._db, floor))
            lines, covers = snapshot.lines(
                self._db,
                folder.device,
                lambda memory_id, covers: oplog.operations(self._db, memory_id, covers),
                floor,
                stable,
                self._state.covered,
            )
            number = covers.get(folder.device, 0)
            if self._sealer is not None:  # the header too: what it covers decides what a
                # new device skips; each line is bound to its file and place in it
                lines = [
                    self._sealer.seal(line, snapshot.aad(folder.device, number, i))
                    for i, line in enumerate(lines)
                ]
            signer = self.signer  # signed, each line in its place (as sealed)
            lines = [
                signer.line(line, trust.snapshot_domain(folder.device, number, i))
                for i, line in enumerate(lines)
            ]
            path = folder.write_snapshot(lines, number)
            held = self._db.query("SELECT COUNT(*) FROM sync_ops")[0][0]
            self._db.set_meta("sync_held_at_snapshot", str(held))
        self._prune(folder)
        return path

    def _prune(self, folder: Folder) -> None:
        """Delete this device's logs every snapshot covers; looked at again only when the
        snapshots in the folder changed (each pass would read their headers)."""
        removed = set(json.loads(self._db.get_meta("sync_removed", "[]")))
        seen = json.dumps([sorted(removed), *sorted(str(p) for p in folder.snapshots().values())])
        if self._db.get_meta("sync_pruned_for") == seen:
            return
        for path in snapshot.prunable(folder, removed, self._sealer):
            path.unlink(missing_ok=True)
        self._db.set_meta("sync_pruned_for", seen)

    def mark(self) -> tuple:
        """What a pass would start from: how far the journal moved since the last pass and
        every other device's log and device file sizes and times (a few stat calls; a
        device file says whom it approved); a pass is due when it moved."""
        folder = self._folder()
        # only trusted devices' files move it (one more device's folder does, once): a
        # device nobody approved cannot make passes run by writing
        folder.trusted = {
            d: None
            for (d,) in self._db.query(
                "SELECT id FROM sync_devices WHERE state IN ('self', 'approved')"
            )
        }
        logs = []
        for log_file in folder.logs():
            if log_file.device != folder.device:
                try:
                    stat = log_file.path.stat()
                except OSError:
                    continue
                logs.append((log_file.path.name, stat.st_size, stat.st_mtime_ns))
        for device in folder.devices():
            if device == folder.device:  # (written by this device's own passes)
                continue
            with contextlib.suppress(OSError):
                stat = (folder.root / "devices" / device / "device.json").stat()
                logs.append((device, stat.st_size, stat.st_mtime_ns))
        # what waits to be written here: the journal moved past where the last pass left it
        # (saved in the pass's own transaction; a pass applying what arrived moves both)
        waiting = max(0, oplog.journal_head(self._db) - int(self._db.get_meta("sync_journal", "0")))
        return waiting, tuple(logs), tuple(folder.all_devices())

    @staticmethod
    def settled(mark: tuple) -> tuple:
        """`mark` as a pass that started from it leaves things: nothing here waits to be
        written (the folder's part stays as it was, so what grew during the pass is due)."""
        return (0, *mark[1:])

    def _unread(self, folder: Folder) -> int:
        offsets = oplog.offsets(self._db)
        total = 0
        for log_file in folder.logs():
            if log_file.device != folder.device:
                try:
                    size = log_file.path.stat().st_size
                except OSError:
                    continue
                total += max(0, size - offsets.get(str(log_file.path.relative_to(folder.root)), 0))
        return total

    # ---- the device file, status, problems -----------------------------------------
    def _write_device(self, folder: Folder) -> None:
        applied = snapshot.applied(self._db, json.loads(self._db.get_meta("sync_floor", "{}")))
        removed = json.loads(self._db.get_meta("sync_removed", "[]"))
        known = trust.Devices(self._db).all()
        info = {
            "id": folder.device,
            "name": self._identity.name,
            "model": self._model_id,
            "applied": applied,
            "removed": removed,
            # whom this device trusts and refuses, signed: a device that trusts it
            # follows (one approval by a person is enough for all of them)
            "key": self.signer.public,
            "signed_from": self._identity.signed_from(folder.device),
            # (only what a person decided here: a device trusted by itself, as the founder
            # or from before keys, is nobody's word to pass on)
            "trusts": {
                d.id: d.key
                for d in known.values()
                if d.state == "approved" and d.key and d.by == "you"
            },
            "refuses": {
                d.id: d.key for d in known.values() if d.state == "refused" and d.by == "you"
            },
        }
        old = folder.device_info(folder.device)
        stale = time.time() - _epoch(old.get("seen")) > SEEN_EVERY_S
        if stale or {k: old.get(k) for k in info} != info or not old.get("sig"):
            folder.write_device(self.signer.sign({**info, "seen": now()}, trust.DEVICE))

    def status(self) -> dict:
        """Where sync stands: the folder, the devices, what waits, the latest problems."""
        folder = self._folder()
        self._state.read_floor(self._db)
        if not self._db.read_only and self._db.damage() is None:  # (else: read as it is)
            with self._db.write():
                self._trust(folder, None)
        known = trust.Devices(self._db).all()
        behind = self._intake.behind(folder)
        cursor = self._db.get_meta("sync_journal")
        if cursor is None or not oplog.journal_reaches(self._db, int(cursor)):
            pending = len(self._db.query("SELECT id FROM memories"))
        else:
            changed = self._db.query(
                "SELECT DISTINCT memory_id FROM changes WHERE seq > ? AND kind != 'inbox' "
                "LIMIT 5001",
                (int(cursor),),
            )
            # what a pass would write: not keyword labels or vectors made here meanwhile
            pending = sum(self._ledger.differs(memory_id) for (memory_id,) in changed[:5000])
            pending += len(changed) > 5000
        removed = set(json.loads(self._db.get_meta("sync_removed", "[]")))
        counts = dict(self._db.query("SELECT device, COUNT(*) FROM sync_ops GROUP BY device"))
        devices = []
        for device in folder.all_devices():
            info = folder.device_info(device)
            entry = known.get(device)
            devices.append(
                {
                    "id": device,
                    "name": str(info.get("name", "?"))[:100],
                    "seen": info.get("seen") if isinstance(info.get("seen"), str) else None,
                    "model": str(info.get("model", ""))[:200],
                    "operations": counts.get(device, 0),  # received from it
                    "this": device == folder.device,
                    "removed": device in removed,
                    # its logs were compacted past what this device holds: waiting for a
                    # snapshot to start from (or for the folder to finish syncing)
                    "behind": device in behind,
                    # self | approved | pending | refused, and who decided
                    "state": entry.state if entry else "pending",
                    "by": entry.by if entry else "",
                    # (the key it showed when first seen: what an approval approves)
                    "key": trust.fingerprint(entry.key if entry else trust._valid(info)),
                }
            )
        problems = self._db.query(
            "SELECT at, kind, what FROM sync_problems ORDER BY seq DESC LIMIT 20"
        )
        return {
            "folder": str(folder.root),
            "device": folder.device,
            "name": self._identity.name,
            "key": trust.fingerprint(self.signer.public),
            # another device trusts this one (else what it writes waits there for a person)
            "approved": self._state.approved_here
            or not [d for d in devices if not d["this"] and d["state"] != "refused"],
            "sealed": self._sealer is not None,  # the folder's files are encrypted
            "devices": devices,
            "pending": pending,
            "waiting_bytes": self._unread(folder),
            "waiting_operations": self._db.query(
                "SELECT COALESCE(SUM(operations), 0) FROM sync_waiting"
            )[0][0],
            "conflicts": len(self._holding.conflicts()),  # memories edited apart, not resolved yet
            "problems": [{"at": a, "kind": k, "what": w} for a, k, w in problems],
            # started from another device's snapshot (its logs were compacted)
            "from_snapshot": self._db.get_meta("sync_floor") not in (None, "{}"),
            # restored from a snapshot (or copied from another machine): the next pass
            # takes the folder's history again (`restart.py`)
            "rebuilding": self._db.get_meta("sync_rebuild") is not None,
            # removals held for a person (a device removing many at once; `Holding`)
            "held": self._holding.held(),
        }

    def start_over_if_moved(self, folder_id: str) -> bool:
        """Forget what was synced through another folder (its operations, what was read,
        what was last written of each memory) when this device now syncs through the
        folder `folder_id`, and take the device id it had there (a new one for a folder it
        never synced through: its numbers start again and must never meet ones it wrote).
        Back in a folder it knew, its own logs there give it its history again, so only
        what changed meanwhile is written. Whether it started over."""
        was = self._db.get_meta("sync_folder_id")
        if was == folder_id:
            return False
        known = json.loads(self._db.get_meta("sync_device_by_folder", "{}"))
        if was is not None and self._db.get_meta("sync_device"):
            known[was] = self._db.get_meta("sync_device")
        with self._db.write() as conn:
            if was is not None:
                for table in (
                    "sync_ops",
                    "sync_memories",
                    "sync_files",
                    "sync_problems",
                    "sync_waiting",
                ):  # (not sync_devices: whom a person approved is kept, by device id)
                    conn.execute(f"DELETE FROM {table}")
                conn.execute(
                    "DELETE FROM _metadata WHERE key IN ('sync_journal', 'sync_floor', "
                    "'sync_start', 'sync_held_at_snapshot', 'sync_removed', 'sync_device', "
                    "'sync_skipping', 'sync_founder')"
                )
                if folder_id in known:
                    self._db.set_meta("sync_device", known[folder_id])
            self._db.set_meta("sync_device_by_folder", json.dumps(known))
            self._db.set_meta("sync_folder_id", folder_id)
        return was is not None

    def _rebuild_first(self) -> None:
        """A restored (or copied) database takes the folder's history before anything else
        is decided or written here (its numbers would meet those it wrote before)."""
        if restart.due(self._db):
            self.run()

    def decide(self, device: str, state: str, key_shown: str | None = None) -> None:
        """A person's decision on a device: approved (under the key it showed when it was
        first seen here, which is what the person compared; or, with `key_shown`, the key
        whose fingerprint that is, when its device file shows a new one) or refused;
        written to this device's file for the others to follow."""
        self._rebuild_first()
        folder = self._folder()
        if device == self.device:
            raise InputError("that is this device")
        with self._db.write():
            self._trust(folder, None)
            known = trust.Devices(self._db).all()
            if device not in known and device not in folder.all_devices():
                raise InputError(f"no device {device!r} in {folder.root} (mnemo sync devices)")
            info = folder.device_info(device)
            now_shown = trust._valid(info)
            entry = known.get(device)
            key = entry.key if entry and entry.key else now_shown
            if state == "approved" and key_shown is not None:
                wanted = _fingerprint_text(key_shown)
                key = next(
                    (k for k in (now_shown, key) if k and trust.fingerprint(k) == wanted), None
                )
                if key is None:
                    raise InputError(
                        f"device {device} shows no key with the fingerprint {key_shown} "
                        f"(it shows {trust.fingerprint(now_shown)}); nothing was changed"
                    )
            elif state == "approved" and key and now_shown and now_shown != key:
                raise InputError(
                    f"device {device} now shows another key ({trust.fingerprint(now_shown)}) "
                    f"than when it was first seen ({trust.fingerprint(key)}): compare it again "
                    f"on that device, then `mnemo sync devices approve {device} --key "
                    "FINGERPRINT` with the one it shows there; nothing was changed"
                )
            name = str(info.get("name", "")) or (entry.name if entry else "")
            trust.Devices(self._db).put(trust.Device(device, key, state, name, by="you"))
            self._trust(folder, None)
        self._write_device(folder)

    def decide_held(self, device: str, apply: bool) -> Pass:
        """A person's decision on removals held for them (`Holding`): another device's
        applied here (`apply`) or refused (the memories stay, and are written back for
        every device: made from the removal, so they win everywhere); this device's own
        (removed not through Mnemo) sent, or taken back from the folder."""
        self._rebuild_first()
        folder = self._folder()
        result = Pass()
        state, ledger = self._state, self._ledger
        state.count_live(self._db)  # (the removals the last pass counted still count)
        with self._db.write():
            self._trust(folder, None)
            if device in (folder.device, "here"):
                here = self._holding.held_here()
                if not here:
                    raise InputError("no removal made here waits for you")
                self._db.conn.execute("DELETE FROM _metadata WHERE key = 'sync_held_here'")
                if apply:  # said by a person now: sent
                    self._store._said(sorted(here))
                    ledger.export(folder, result, also=frozenset(here))
                else:
                    ledger.apply(here, result, write_rows=True)
                return result
            ids = {
                r[0]
                for r in self._db.query(
                    "SELECT DISTINCT memory_id FROM sync_ops WHERE device = ? AND held = 1",
                    (device,),
                )
            }
            if not ids:
                raise InputError(f"no removal from device {device!r} waits (mnemo sync held)")
            self._db.conn.execute(
                "UPDATE sync_ops SET held = 0 WHERE device = ? AND held = 1", (device,)
            )
            state.let_through = {device}  # (a person decided: not held again)
            try:
                if apply:
                    ledger.apply(ids, result, write_rows=True)
                else:
                    state.keep = ids
                    ledger.apply(ids, result, write_rows=True)
                    state.keep = set()
                    ledger.export(folder, result, also=frozenset(ids))
            finally:
                state.let_through, state.keep = set(), set()
        return result

    def held(self) -> list[dict]:
        """What waits for a person: removals held, per device (`Holding.held`)."""
        return self._holding.held()

    def conflicts(self) -> list[dict]:
        """Memories edited on two devices apart whose versions wait (`Holding.conflicts`)."""
        return self._holding.conflicts()

    def key_text(self) -> str | None:
        """The folder's sync key as a person copies it (None: its files are plain)."""
        stored = self._db.get_meta("sync_key")
        return trust.key_text(bytes.fromhex(stored)) if stored else None

    def remove(self, device: str) -> None:
        """Stop counting a device as one of ours (a lost or retired machine). Its
        operations stay applied; its files stay in the folder (other devices' history)."""
        self._rebuild_first()
        folder = self._folder()
        if device == folder.device:
            raise InputError("that is this device; to stop syncing here: mnemo sync off")
        if device not in folder.devices():
            raise InputError(f"no device {device!r} in {folder.root} (mnemo sync status)")
        removed = set(json.loads(self._db.get_meta("sync_removed", "[]")))
        removed.add(device)
        self._db.set_meta("sync_removed", json.dumps(sorted(removed)))
        self._write_device(folder)


def _epoch(stamp) -> float:
    try:
        return datetime.fromisoformat(stamp).timestamp()
    except (TypeError, ValueError):
        return 0.0


def _fingerprint_text(text: str) -> str:
    """A fingerprint as typed (any case, with or without its dashes) as `trust.fingerprint`
    writes it."""
    letters = "".join(ch for ch in text.upper() if ch.isalnum())
    return "-".join(letters[i : i + 4] for i in range(0, len(letters), 4))
