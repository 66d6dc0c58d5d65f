"""One sync pass: write this device's changes, read the others', fold, apply (ADR 0015).

A pass runs in write transactions of the database, in this order, so a local change is
never overwritten by one that arrived: (1) this device's own logs are read (operations a
crash left written but not recorded), (2) what changed here since the last pass (the
journal) is written as operations to this device's log (fsynced before the commit), (3) the
other devices' logs are read from where the last pass stopped, a batch at a time, and (4)
each memory they touch is folded from every operation about it and written.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import secrets
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from app.core import paths
from app.core.errors import InputError, MnemoError, SecretError
from app.core.memory import MAX_COUNT, Memory, guard_secrets
from app.core.storage.db import Database
from app.core.storage.store import Store
from app.core.sync import fold, seal, snapshot
from app.core.sync.folder import Folder

log = logging.getLogger(__name__)

BATCH_LINES = 5_000  # operations read and applied in one transaction
COMPACT_OPS = 50_000  # operations held since the last snapshot that make a new one due
LAMPORT_LIMIT = 2**53  # a clock past this is refused; a new operation's clock stops there
MAX_LINE_BYTES = 16 * 1024 * 1024  # a longer line is skipped (a text is at most 2 MB)
SEEN_EVERY_S = 60  # how often device.json's "seen" is refreshed while nothing else changes
KINDS = ("put", "count", "purge")
_ID = re.compile(r"[A-Za-z0-9_\-]{1,64}")
_KEEP_PROBLEMS = 200


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass
class Pass:
    """What one pass did."""

    written: int = 0  # operations this device wrote
    read: int = 0  # operations read from other devices
    applied: int = 0  # memories changed here
    conflicts: int = 0  # memories edited apart on two devices, merged
    problems: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)  # each problem's kind ("conflict", …)


def record_of(memory: Memory) -> dict:
    """The synced fields of a memory."""
    return {name: getattr(memory, name) for name in fold.SYNCED}


class Syncer:
    """Sync of one database with one folder, as one device."""

    def __init__(self, db: Database, store: Store, folder: str, name: str, model_id: str = ""):
        self._db = db
        self._store = store
        self._root = Path(folder) if folder else None
        self._name = name or socket.gethostname()
        self._model_id = model_id
        self._floor: dict[str, int] = {}  # per device: what the snapshot started from held
        self._pass = Pass()  # the pass running (its problems)
        stored = db.get_meta("sync_key")
        self._sealer = seal.Sealer(bytes.fromhex(stored)) if stored else None

    # ---- identity ------------------------------------------------------------------
    @property
    def device(self) -> str:
        """This device's id in the folder, made once per database."""
        device = self._db.get_meta("sync_device")
        if not device:
            device = secrets.token_hex(5)
            self._db.set_meta("sync_device", device)
        return device

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
        return Folder(self._root, self.device)

    # ---- a pass --------------------------------------------------------------------
    def run(self, progress: Callable[[int, int], None] | None = None) -> Pass:
        """Write what changed here, apply what arrived; `progress(done, total)` in bytes read."""
        folder = self._folder()
        folder.prepare(self._db.get_meta("sync_key_id"))
        result = Pass()
        self._floor = json.loads(self._db.get_meta("sync_floor", "{}"))
        more = True
        while more:  # what a crash left written to this device's logs, not recorded
            with self._db.write():
                more = self._read(folder, result, own=True)
        start = self._starting_snapshot(folder)
        total = self._unread(folder) + (start[0].stat().st_size - start[1] if start else 0)
        done = 0
        while start is not None:  # a new device: from a snapshot, a batch a transaction
            with self._db.write():
                start = self._start_from_snapshot(folder, *start, result)
                at = start[1] if start else total - self._unread(folder)
            if progress is not None:
                progress(min(at, total), total)
            done = at
        while True:
            with self._db.write():
                # This device's changes first: what arrives is folded with them, never over them
                self._export(folder, result)
                before = sum(self._offsets().values())
                more = self._read(folder, result, own=False)
                done += sum(self._offsets().values()) - before
                self._db.set_meta("sync_journal", str(self._journal_head()))
            if progress is not None:
                progress(min(done, total), total)
            if not more:
                break
        self._write_device(folder)
        held = self._db.query("SELECT COUNT(*) FROM sync_ops")[0][0]
        if held - int(self._db.get_meta("sync_held_at_snapshot", "0")) > COMPACT_OPS:
            self.compact(folder)
        self._prune(folder)
        return result

    # ---- compaction (snapshot.py) --------------------------------------------------
    def compact(self, folder: Folder | None = None) -> Path:
        """Write this device's snapshot (so new devices start from it, and every device can
        delete the logs all snapshots cover); returns its path."""
        folder = folder or self._folder()
        removed = set(json.loads(self._db.get_meta("sync_removed", "[]")))
        with self._db.write():
            floor = json.loads(self._db.get_meta("sync_floor", "{}"))
            self._floor = floor
            stable = snapshot.stable_floor(folder, removed, snapshot.applied(self._db, floor))
            lines, covers = snapshot.lines(
                self._db, folder.device, self._operations, floor, stable, self._covered
            )
            number = covers.get(folder.device, 0)
            if self._sealer is not None:  # the header too: what it covers decides what a
                # new device skips; each line is bound to its file and place in it
                lines = [
                    self._sealer.seal(lines[0], snapshot.aad(folder.device, number, 0)),
                    *(
                        self._sealer.seal(line, snapshot.aad(folder.device, number, i))
                        for i, line in enumerate(lines[1:], 1)
                    ),
                ]
            path = folder.write_snapshot(lines, number)
            held = self._db.query("SELECT COUNT(*) FROM sync_ops")[0][0]
            self._db.set_meta("sync_held_at_snapshot", str(held))
        self._prune(folder)
        return path

    def _prune(self, folder: Folder) -> None:
        removed = set(json.loads(self._db.get_meta("sync_removed", "[]")))
        for path in snapshot.prunable(folder, removed, self._sealer):
            path.unlink(missing_ok=True)

    def _behind(self, folder: Folder) -> set[str]:
        """Devices whose logs no longer reach back to what this one holds of them (they
        were compacted): read only once a snapshot lets this device start again."""
        behind = set()
        for device in folder.devices():
            segments = folder.segments(device)
            if device == folder.device or not segments or segments[0][0] == 1:
                continue
            have = self._db.query(
                "SELECT COALESCE(MAX(seq), 0) FROM sync_ops WHERE device = ?", (device,)
            )[0][0]
            if segments[0][0] > max(have, self._floor.get(device, 0)) + 1:
                behind.add(device)
        return behind

    def _starting_snapshot(self, folder: Folder) -> tuple[Path, int, dict, int] | None:
        """Where a new device goes on starting from a snapshot (a start a kill cut short),
        or the best snapshot when it has nothing from the others yet; else None."""
        going = json.loads(self._db.get_meta("sync_start", "null"))
        if going is not None:
            path = folder.root / going["path"]
            if path.is_file():
                return path, going["offset"], going["covers"], going.get("line", 1)
            # that snapshot was replaced by a newer one: start again from the best
            with self._db.write():
                self._db.conn.execute(
                    f"DELETE FROM sync_ops WHERE {snapshot.REAL} AND device != ?", (folder.device,)
                )
                self._db.conn.execute("DELETE FROM sync_ops WHERE device = '='")
                self._db.conn.execute("DELETE FROM _metadata WHERE key = 'sync_start'")
        if self._db.query("SELECT 1 FROM sync_ops LIMIT 1"):
            return None  # only a device that holds nothing of this folder yet starts so
        chosen = snapshot.best(folder, self._sealer)
        if chosen is None:
            return None
        path, covers = chosen
        with paths.open_regular(path) as f:
            offset = len(f.readline())  # after the header
        return path, offset, covers, 1

    def _start_from_snapshot(
        self, folder: Folder, path: Path, offset: int, covers: dict, line_no: int, result: Pass
    ) -> tuple[Path, int, dict, int] | None:
        """Take the next BATCH_LINES lines of the snapshot a new device starts from (one
        transaction) and fold what they touch; where to go on, None once it is all in."""
        self._export(folder, result)  # this device's changes first, as in every batch
        affected: set[str] = set()
        device, number = path.parent.name, snapshot.number_of(path)
        with paths.open_regular(path) as f:
            f.seek(offset)
            for _ in range(BATCH_LINES):
                line = f.readline()
                if not line.endswith(b"\n"):
                    break
                offset += len(line)
                aad = snapshot.aad(device, number, line_no)
                memory_id = self._take_snapshot_line(
                    line, f"{path.name} line {line_no}", result, aad
                )
                line_no += 1
                result.read += 1
                if memory_id:
                    affected.add(memory_id)
            finished = not f.read(1)
        self._apply(affected, result, write_rows=True)
        if not finished:
            where = {
                "path": str(path.relative_to(folder.root)),
                "offset": offset,
                "covers": covers,
                "line": line_no,
            }
            self._db.set_meta("sync_start", json.dumps(where))
            return path, offset, covers, line_no
        self._floor = {d: n for d, n in covers.items() if d != folder.device}
        self._db.set_meta("sync_floor", json.dumps(self._floor))
        self._db.conn.execute("DELETE FROM _metadata WHERE key = 'sync_start'")
        return None

    def _take_snapshot_line(self, line: bytes, where: str, result: Pass, aad: str) -> str | None:
        sealed = False
        try:
            op = json.loads(line)
            if isinstance(op, dict) and "sealed" in op:
                if self._sealer is None:
                    raise InputError("it is encrypted and this device has no sync key")
                line = self._sealer.open(op, aad).encode("utf-8")
                op = json.loads(line)
                sealed = True
            elif self._sealer is not None:
                raise InputError("it is not sealed with the folder's key")
            if isinstance(op, dict) and op.get("total"):
                memory_id = op.get("id")
                if not isinstance(memory_id, str) or not _ID.fullmatch(memory_id):
                    raise InputError("a memory id must be 1-64 letters, digits, '-' or '_'")
                self._checked(
                    {**op, "op": "count", "dev": "=", "seq": 1, "lc": 1, "rev": "=.1"}, "="
                )
                self._db.conn.execute(
                    "INSERT OR REPLACE INTO sync_ops(rev, memory_id, device, seq, lamport, kind, "
                    "body) VALUES (?, ?, '=', 0, 0, 'count', ?)",
                    (f"={memory_id}", memory_id, line.decode("utf-8")),
                )
                return memory_id
            device = op.get("dev") if isinstance(op, dict) else None
            if device == "~":  # a kept version: numbered 0, named after its memory
                self._checked({**op, "dev": "~", "seq": 1, "lc": 1, "rev": "~.1"}, "~", sealed)
                rev, memory_id, kind, seq, lamport = op["rev"], op["id"], op["op"], 0, op["lc"]
            else:
                rev, memory_id, kind, seq, lamport = self._checked(op, str(device), sealed)
        except (ValueError, InputError, SecretError, KeyError, RecursionError) as exc:
            text = str(exc) if isinstance(exc, MnemoError) else "not a snapshot line"
            self._problem(result, "line", f"a line in {where} was skipped: {text}")
            return None
        self._db.conn.execute(
            "INSERT OR REPLACE INTO sync_ops(rev, memory_id, device, seq, lamport, kind, body) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (rev, memory_id, device, seq, lamport, kind, line.decode("utf-8")),
        )
        return memory_id

    def mark(self) -> tuple:
        """What a pass would start from: the journal's head and every other device's log
        sizes and times (a few stat calls); a pass is due when it moved."""
        folder = self._folder()
        logs = []
        for log_file in folder.logs():
            if log_file.device != folder.device:
                try:
                    stat = log_file.path.stat()
                except OSError:
                    continue
                logs.append((log_file.path.name, stat.st_size, stat.st_mtime_ns))
        return self._journal_head(), tuple(logs), tuple(folder.devices())

    def _unread(self, folder: Folder) -> int:
        offsets = self._offsets()
        total = 0
        for log_file in folder.logs():
            if log_file.device != folder.device:
                try:
                    size = log_file.path.stat().st_size
                except OSError:
                    continue
                total += max(0, size - offsets.get(str(log_file.path.relative_to(folder.root)), 0))
        return total

    def _offsets(self) -> dict[str, int]:
        return dict(self._db.query("SELECT path, offset FROM sync_files"))

    def _journal_head(self) -> int:
        return int(self._db.query("SELECT COALESCE(MAX(seq), 0) FROM changes")[0][0])

    # ---- reading -------------------------------------------------------------------
    def _read(self, folder: Folder, result: Pass, own: bool) -> bool:
        """Read new operations (this device's own logs, or the others'), up to
        BATCH_LINES, and fold what they touch; whether more wait."""
        offsets = self._offsets()
        affected: set[str] = set()
        budget = BATCH_LINES
        more = False
        behind = set() if own else self._behind(folder)
        for log_file in folder.logs():
            if (log_file.device == folder.device) != own or log_file.device in behind:
                continue
            key = str(log_file.path.relative_to(folder.root))
            start = offsets.get(key, 0)
            try:
                size = log_file.path.stat().st_size
                if size < start:  # replaced by a shorter file: read again (ops count once)
                    start = 0
                lines, end = Folder.read_from(log_file.path, start)
            except OSError as exc:
                self._problem(result, "read", f"cannot read {key}: {exc.strerror or exc}")
                continue
            if len(lines) > budget:
                lines = lines[:budget]
                end = start + sum(len(line) + 1 for line in lines)
                more = True
            budget -= len(lines)
            at = start
            for line in lines:
                affected.update(self._take(line, log_file.device, f"{key} at byte {at}", result))
                at += len(line) + 1
            if not own:
                result.read += len(lines)
            self._db.conn.execute(
                "INSERT INTO sync_files(path, offset) VALUES (?, ?) "
                "ON CONFLICT(path) DO UPDATE SET offset = excluded.offset",
                (key, end),
            )
            if budget <= 0:
                more = True
                break
        self._apply(affected, result, write_rows=not own)
        return more

    def _take(self, line: bytes, device: str, where: str, result: Pass) -> list[str]:
        """Store one operation line if it is new and well formed; the memories it touches.
        What is held already (read twice, or in the snapshot this device started from) is
        passed over before the checks (a join reads each record once)."""
        sealed = False
        try:
            if len(line) > MAX_LINE_BYTES:
                raise InputError(f"it is longer than {MAX_LINE_BYTES // 2**20} MB")
            op = json.loads(line)
            body = line.decode("utf-8")
            if isinstance(op, dict) and "sealed" in op:
                if self._sealer is None:
                    raise InputError("it is encrypted and this device has no sync key")
                body = self._sealer.open(op, str(op.get("rev")))
                op = json.loads(body)
                sealed = True
            elif self._sealer is not None:  # in an encrypted folder, only sealed lines count
                raise InputError("it is not sealed with the folder's key")
        except (ValueError, RecursionError):
            self._problem(result, "line", f"a line in {where} was skipped: not JSON")
            return []
        except InputError as exc:
            self._problem(result, "line", f"a line in {where} was skipped: {exc}")
            return []
        if isinstance(op, dict) and op.get("dev") == device:
            seq = op.get("seq")
            if isinstance(seq, int) and 0 < seq <= self._floor.get(device, 0):
                return []  # held already by the snapshot this device started from
            known = self._db.query("SELECT body FROM sync_ops WHERE rev = ?", (str(op.get("rev")),))
            if known and known[0][0] == body:
                return []
        try:
            rev, memory_id, kind, seq, lamport = self._checked(op, device, sealed)
        except (InputError, SecretError) as exc:
            self._problem(result, "line", f"a line in {where} was skipped: {exc}")
            return []
        known = self._db.query("SELECT body, memory_id FROM sync_ops WHERE rev = ?", (rev,))
        touched = [memory_id]
        if known:
            self._problem(result, "line", f"two different operations numbered {rev} in {where}")
            if _sha(known[0][0]) <= _sha(body):  # the same one kept on every device
                return []
            touched.append(known[0][1])  # the one it replaces is folded again without it
        self._db.conn.execute(
            "INSERT OR REPLACE INTO sync_ops(rev, memory_id, device, seq, lamport, kind, body) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (rev, memory_id, device, seq, lamport, kind, body),
        )
        return touched

    @staticmethod
    def _checked(op, device: str, sealed: bool = False) -> tuple[str, str, str, int, int]:
        """An operation's fields, type-checked like any other write (InputError/SecretError).
        A record holding a secret comes only sealed (a device writes one to an encrypted
        folder alone: it stored it by the user's choice, `--allow-secrets`)."""
        if not isinstance(op, dict) or op.get("v") != 1:
            raise InputError("not a Mnemo sync operation (version 1)")
        seq, lamport, kind, memory_id = op.get("seq"), op.get("lc"), op.get("op"), op.get("id")
        if op.get("dev") != device:
            raise InputError(f"an operation of device {op.get('dev')!r} in {device}'s folder")
        for name, value in (("seq", seq), ("lc", lamport)):
            if (
                not isinstance(value, int)
                or isinstance(value, bool)
                or not 0 < value <= LAMPORT_LIMIT
            ):
                raise InputError(f"{name} must be a positive whole number up to 2^53")
        if op.get("rev") != f"{device}.{seq}":
            raise InputError("its revision does not match its device and number")
        if kind not in KINDS:
            raise InputError(f"unknown operation {kind!r}")
        if not isinstance(memory_id, str) or not _ID.fullmatch(memory_id):
            raise InputError("a memory id must be 1-64 letters, digits, '-' or '_'")
        base = op.get("base", [])
        if not isinstance(base, list) or not all(isinstance(b, str) for b in base):
            raise InputError("base must be a list of revisions")
        if op.get("rev") in base:
            raise InputError("an operation cannot be made from itself")
        if kind == "put":
            record = op.get("rec")
            if not isinstance(record, dict):
                raise InputError("a put needs its record")
            for name in ("tags", "references"):
                value = record.get(name, [])
                if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                    raise InputError(f"{name} must be a list of texts")
            Memory.from_dict({**record, "id": memory_id})  # types, ranges, sizes
            if not sealed:
                guard_secrets(dict(record), "refuse")  # the same check as every other path
        if kind == "count":
            for name in ("obs", "recalls"):
                value = op.get(name, 0)
                if not isinstance(value, int) or isinstance(value, bool) or abs(value) > MAX_COUNT:
                    raise InputError(f"{name} must be a whole number")
            last = op.get("last")
            if last is not None and not isinstance(last, str):
                raise InputError("last must be a time")
        return op["rev"], memory_id, kind, seq, lamport

    # ---- folding -------------------------------------------------------------------
    def _apply(self, affected: set[str], result: Pass, write_rows: bool) -> None:
        """Fold each affected memory and write it here (`write_rows`), or only record it as
        synced (this device's own operations: the row already says it, or says more)."""
        pending = sorted(affected)
        while pending:
            memory_id = pending.pop()
            nodes, counts = self._operations(memory_id)
            folded = fold.fold(memory_id, nodes, self._covered)
            self._note_waiting(memory_id, folded.waiting)
            if not folded.heads:
                if write_rows and not nodes and self._store.delete_synced(memory_id):
                    result.applied += 1  # its only operation was replaced by another (above)
                    self._db.conn.execute("DELETE FROM sync_memories WHERE id = ?", (memory_id,))
                continue  # (else nothing of it has arrived in order yet)
            new = [
                original_id
                for original_id, record in folded.originals.items()
                if self._keep_original(memory_id, original_id, record)
            ]
            if new:
                result.conflicts += 1
                counted = int(self._db.get_meta("sync_conflicts", "0")) + 1
                self._db.set_meta("sync_conflicts", str(counted))
                self._problem(
                    result,
                    "conflict",
                    f"memory {memory_id} was edited on two devices apart: both kept, merged "
                    f"(the versions are in the trash; `mnemo unmerge {memory_id}` splits them)",
                )
                pending.extend(new)
            try:
                self._settle(memory_id, folded, counts, result, write_rows)
            except InputError as exc:  # the same on every device: it stays as it was here
                self._problem(result, "fold", f"memory {memory_id} was not updated: {exc}")

    def _covered(self, rev: str) -> bool:
        """Whether an operation not held here was folded into the snapshot this device
        started from (then what was made from it is not waiting for it)."""
        device, _, seq = rev.rpartition(".")
        return seq.isdigit() and 0 < int(seq) <= self._floor.get(device, 0)

    def _note_waiting(self, memory_id: str, waiting: int) -> None:
        if waiting:
            self._db.conn.execute(
                "INSERT OR REPLACE INTO sync_waiting(memory_id, operations) VALUES (?, ?)",
                (memory_id, waiting),
            )
        else:
            self._db.conn.execute("DELETE FROM sync_waiting WHERE memory_id = ?", (memory_id,))

    def _operations(
        self, memory_id: str, covers: dict[str, int] | None = None
    ) -> tuple[list[fold.Node], fold.Counts]:
        """A memory's puts and purges, and its counts (with `covers`: only the operations a
        snapshot covering that holds, and the counts as they were written)."""
        nodes: list[fold.Node] = []
        counts = fold.Counts()
        rows = self._db.query(
            "SELECT rev, device, seq, lamport, kind, body FROM sync_ops WHERE memory_id = ?",
            (memory_id,),
        )
        for rev, device, seq, lamport, kind, body in rows:
            if covers is not None and device not in "~=" and seq > covers.get(device, 0):
                continue
            op = json.loads(body)
            if kind == "count":
                counts.add(op.get("obs", 0), op.get("recalls", 0), op.get("last"))
                continue
            record = op.get("rec") if kind == "put" else None
            if device == "~" and covers is None:  # a version kept from edits made apart:
                counts.add(1, 0, None)  # observed once
            nodes.append(fold.Node(rev, (lamport, device, seq), tuple(op.get("base", [])), record))
        return nodes, counts

    def _keep_original(self, memory_id: str, original_id: str, record: dict) -> bool:
        """Record the trashed copy of a version edited apart as an operation of its own
        (the same on every device: no device writes it); whether it is new."""
        rev = f"{original_id}~"
        if self._db.query("SELECT 1 FROM sync_ops WHERE rev = ?", (rev,)):
            return False
        body = json.dumps({"rec": record, "base": []}, sort_keys=True, ensure_ascii=False)
        self._db.conn.execute(
            "INSERT INTO sync_ops(rev, memory_id, device, seq, lamport, kind, body) "
            "VALUES (?, ?, '~', 0, 0, 'put', ?)",
            (rev, original_id, body),
        )
        return True

    def _settle(
        self,
        memory_id: str,
        folded: fold.Folded,
        counts: fold.Counts,
        result: Pass,
        write_rows: bool,
    ) -> None:
        heads = json.dumps(sorted(folded.heads))
        if folded.record is None:
            if write_rows and self._store.delete_synced(memory_id):
                result.applied += 1
            self._db.conn.execute(
                "INSERT OR REPLACE INTO sync_memories(id, heads, digest) VALUES (?, ?, 'purged')",
                (memory_id, heads),
            )
            return
        memory = Memory.from_dict(
            {
                **folded.record,
                "id": memory_id,
                "observation_count": min(MAX_COUNT, max(1, counts.observations)),
                "recall_count": min(MAX_COUNT, max(0, counts.recalls)),
                "last_recalled_at": counts.last_recalled_at,
            }
        )
        synced = record_of(memory)
        if write_rows:
            rows = self._store.texts_of_ids([memory_id])
            current = self._store.get(memory_id) if rows else None
            if current is None or (
                record_of(current) != synced
                or (current.observation_count, current.recall_count, current.last_recalled_at)
                != (memory.observation_count, memory.recall_count, memory.last_recalled_at)
            ):
                self._store.put_synced(memory)
                result.applied += 1
        self._db.conn.execute(
            "INSERT OR REPLACE INTO sync_memories(id, heads, digest, observations, recalls, "
            "last_recalled_at) VALUES (?, ?, ?, ?, ?, ?)",
            (
                memory_id,
                heads,
                fold.digest(synced),
                memory.observation_count,
                memory.recall_count,
                memory.last_recalled_at,
            ),
        )

    # ---- writing this device's changes ---------------------------------------------
    def _export(self, folder: Folder, result: Pass) -> None:
        """Write every memory changed here since the last pass as operations."""
        self._pass = result
        cursor = self._db.get_meta("sync_journal")
        head = self._journal_head()
        if cursor is None or not self._journal_reaches(int(cursor)):
            ids = {r[0] for r in self._db.query("SELECT id FROM memories")}
            ids |= {r[0] for r in self._db.query("SELECT id FROM sync_memories")}
        else:
            ids = {
                r[0]
                for r in self._db.query(
                    "SELECT DISTINCT memory_id FROM changes WHERE seq > ? AND kind != 'inbox'",
                    (int(cursor),),
                )
            }
        if not ids:
            self._db.set_meta("sync_journal", str(head))
            return
        device = folder.device
        seq = int(
            self._db.query(
                "SELECT COALESCE(MAX(seq), 0) FROM sync_ops WHERE device = ?", (device,)
            )[0][0]
        )
        lamport = int(self._db.query("SELECT COALESCE(MAX(lamport), 0) FROM sync_ops")[0][0])
        lines: list[str] = []
        first = seq + 1

        def emit(kind: str, memory_id: str, **fields) -> str:
            nonlocal seq, lamport
            seq += 1
            lamport = min(lamport + 1, LAMPORT_LIMIT)
            rev = f"{device}.{seq}"
            op = {"v": 1, "rev": rev, "dev": device, "seq": seq, "lc": lamport, "op": kind}
            op.update(id=memory_id, at=_now(), **fields)
            body = json.dumps(op, sort_keys=True, ensure_ascii=False)
            lines.append(body)
            self._db.conn.execute(
                "INSERT INTO sync_ops(rev, memory_id, device, seq, lamport, kind, body) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (rev, memory_id, device, seq, lamport, kind, body),
            )
            return rev

        for memory_id in sorted(ids):
            self._export_one(memory_id, emit)
        if self._sealer is not None:
            lines = [self._sealer.seal(line, json.loads(line)["rev"]) for line in lines]
        folder.append(lines, first)  # durable before the transaction commits
        result.written += len(lines)
        self._db.set_meta("sync_journal", str(head))

    def _journal_reaches(self, cursor: int) -> bool:
        """Whether the journal still holds every change after `cursor` (it is pruned)."""
        rows = self._db.query("SELECT MIN(seq) FROM changes")
        return rows[0][0] is None or rows[0][0] <= cursor + 1

    def _export_one(self, memory_id: str, emit: Callable[..., str]) -> None:
        rows = self._db.query(
            "SELECT heads, digest, observations, recalls, last_recalled_at FROM sync_memories "
            "WHERE id = ?",
            (memory_id,),
        )
        synced = rows[0] if rows else None
        heads = json.loads(synced[0]) if synced else []
        here = self._store.texts_of_ids([memory_id])
        if not here:
            if synced and synced[1] != "purged":
                rev = emit("purge", memory_id, base=heads)
                self._db.conn.execute(
                    "UPDATE sync_memories SET heads = ?, digest = 'purged' WHERE id = ?",
                    (json.dumps([rev]), memory_id),
                )
            return
        memory = self._store.get(memory_id)
        record = record_of(memory)
        if self._sealer is None:  # a plain folder never gets a secret (`--allow-secrets`)
            try:
                guard_secrets(dict(record), "refuse")
            except SecretError:
                self._problem(
                    self._pass,
                    "secret",
                    f"memory {memory_id} holds a secret and was not written to the sync "
                    "folder, whose files are not encrypted: it stays on this device",
                )
                return
        digest = fold.digest(record)
        if synced is None or synced[1] != digest:
            heads = [emit("put", memory_id, base=heads, rec=record)]
        obs = memory.observation_count - (synced[2] if synced else 0)
        recalls = memory.recall_count - (synced[3] if synced else 0)
        last = memory.last_recalled_at
        newer = last is not None and (synced is None or last > (synced[4] or ""))
        if obs or recalls or newer:
            emit("count", memory_id, obs=obs, recalls=recalls, last=last if newer else None)
        self._db.conn.execute(
            "INSERT OR REPLACE INTO sync_memories(id, heads, digest, observations, recalls, "
            "last_recalled_at) VALUES (?, ?, ?, ?, ?, ?)",
            (
                memory_id,
                json.dumps(heads),
                digest,
                memory.observation_count,
                memory.recall_count,
                max(last or "", synced[4] or "" if synced else "") or None,
            ),
        )

    # ---- the device file, status, problems -----------------------------------------
    def _write_device(self, folder: Folder) -> None:
        applied = snapshot.applied(self._db, json.loads(self._db.get_meta("sync_floor", "{}")))
        removed = json.loads(self._db.get_meta("sync_removed", "[]"))
        info = {
            "id": folder.device,
            "name": self._name,
            "model": self._model_id,
            "applied": applied,
            "removed": removed,
        }
        old = folder.device_info(folder.device)
        stale = time.time() - _epoch(old.get("seen")) > SEEN_EVERY_S
        if stale or {k: old.get(k) for k in info} != info:
            folder.write_device({**info, "seen": _now()})

    def _problem(self, result: Pass, kind: str, what: str) -> None:
        result.problems.append(what)
        result.kinds.append(kind)
        log.warning("sync: %s", what if kind != "line" else what.split(":")[0])
        self._db.conn.execute(
            "INSERT INTO sync_problems(at, kind, what) VALUES (?, ?, ?)", (_now(), kind, what)
        )
        self._db.conn.execute(
            "DELETE FROM sync_problems WHERE seq <= (SELECT MAX(seq) FROM sync_problems) - ?",
            (_KEEP_PROBLEMS,),
        )

    def status(self) -> dict:
        """Where sync stands: the folder, the devices, what waits, the latest problems."""
        folder = self._folder()
        self._floor = json.loads(self._db.get_meta("sync_floor", "{}"))
        behind = self._behind(folder)
        cursor = self._db.get_meta("sync_journal")
        if cursor is None or not self._journal_reaches(int(cursor)):
            pending = len(self._db.query("SELECT id FROM memories"))
        else:
            changed = self._db.query(
                "SELECT DISTINCT memory_id FROM changes WHERE seq > ? AND kind != 'inbox' "
                "LIMIT 5001",
                (int(cursor),),
            )
            # what a pass would write: not keyword labels or vectors made here meanwhile
            pending = sum(self._differs(memory_id) for (memory_id,) in changed[:5000])
            pending += len(changed) > 5000
        removed = set(json.loads(self._db.get_meta("sync_removed", "[]")))
        counts = dict(self._db.query("SELECT device, COUNT(*) FROM sync_ops GROUP BY device"))
        devices = []
        for device in folder.devices():
            info = folder.device_info(device)
            devices.append(
                {
                    "id": device,
                    "name": info.get("name", "?"),
                    "seen": info.get("seen"),
                    "model": info.get("model", ""),
                    "operations": counts.get(device, 0),  # received from it
                    "this": device == folder.device,
                    "removed": device in removed,
                    # its logs were compacted past what this device holds: waiting for a
                    # snapshot to start from (or for the folder to finish syncing)
                    "behind": device in behind,
                }
            )
        problems = self._db.query(
            "SELECT at, kind, what FROM sync_problems ORDER BY seq DESC LIMIT 20"
        )
        return {
            "folder": str(folder.root),
            "device": folder.device,
            "name": self._name,
            "sealed": self._sealer is not None,  # the folder's files are encrypted
            "devices": devices,
            "pending": pending,
            "waiting_bytes": self._unread(folder),
            "waiting_operations": self._db.query(
                "SELECT COALESCE(SUM(operations), 0) FROM sync_waiting"
            )[0][0],
            "conflicts": int(self._db.get_meta("sync_conflicts", "0")),
            "problems": [{"at": a, "kind": k, "what": w} for a, k, w in problems],
            # started from another device's snapshot (its logs were compacted)
            "from_snapshot": self._db.get_meta("sync_floor") not in (None, "{}"),
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
                conn.execute("DELETE FROM _metadata WHERE key = 'sync_conflicts'")
                for table in (
                    "sync_ops",
                    "sync_memories",
                    "sync_files",
                    "sync_problems",
                    "sync_waiting",
                ):
                    conn.execute(f"DELETE FROM {table}")
                conn.execute(
                    "DELETE FROM _metadata WHERE key IN ('sync_journal', 'sync_floor', "
                    "'sync_start', 'sync_held_at_snapshot', 'sync_removed', 'sync_device')"
                )
                if folder_id in known:
                    self._db.set_meta("sync_device", known[folder_id])
            self._db.set_meta("sync_device_by_folder", json.dumps(known))
            self._db.set_meta("sync_folder_id", folder_id)
        return was is not None

    def _differs(self, memory_id: str) -> bool:
        """Whether a memory here differs from what was last synced of it (what `_export`
        would write)."""
        rows = self._db.query(
            "SELECT digest, observations, recalls FROM sync_memories WHERE id = ?", (memory_id,)
        )
        if not self._store.texts_of_ids([memory_id]):
            return bool(rows) and rows[0][0] != "purged"
        if not rows:
            return True
        memory = self._store.get(memory_id)
        return fold.digest(record_of(memory)) != rows[0][0] or (
            memory.observation_count,
            memory.recall_count,
        ) != (rows[0][1], rows[0][2])

    def key_text(self) -> str | None:
        """The folder's sync key as a person copies it (None: its files are plain)."""
        stored = self._db.get_meta("sync_key")
        return seal.key_text(bytes.fromhex(stored)) if stored else None

    def remove(self, device: str) -> None:
        """Stop counting a device as one of ours (a lost or retired machine). Its
        operations stay applied; its files stay in the folder (other devices' history)."""
        folder = self._folder()
        if device == folder.device:
            raise InputError("that is this device; to stop syncing here: mnemo sync off")
        if device not in folder.devices():
            raise InputError(f"no device {device!r} in {folder.root} (mnemo sync status)")
        removed = set(json.loads(self._db.get_meta("sync_removed", "[]")))
        removed.add(device)
        self._db.set_meta("sync_removed", json.dumps(sorted(removed)))
        self._write_device(folder)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _epoch(stamp) -> float:
    try:
        return datetime.fromisoformat(stamp).timestamp()
    except (TypeError, ValueError):
        return 0.0
