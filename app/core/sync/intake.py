"""Reading the sync folder (ADR 0015): the other devices' logs and this device's own, a
snapshot a new device starts from, and the checks every incoming line goes through (the
same as any write: types, sizes, secrets; what a folder holds never hangs a pass)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from app.core import paths
from app.core.errors import InputError, MnemoError, SecretError
from app.core.memory import MAX_COUNT, Memory, guard_secrets, utc_stamp
from app.core.storage.db import Database
from app.core.sync import oplog, snapshot, trust
from app.core.sync.folder import MAX_LINE_BYTES, Folder
from app.core.sync.ledger import BATCH_LINES, LAMPORT_LIMIT, Ledger
from app.core.sync.state import Pass, PassState, problem

KINDS = ("put", "count", "purge")
_ID = re.compile(r"[A-Za-z0-9_\-]{1,64}")


class Intake:
    """What a pass reads (a part of `Syncer`; what it reads, the `Ledger` folds)."""

    def __init__(self, db: Database, sealer: trust.Sealer | None, state: PassState, ledger: Ledger):
        self._db = db
        self._sealer = sealer
        self._state = state
        self._ledger = ledger
        self._skipping: set[str] = set()  # logs read inside a line too long to take

    def behind(self, folder: Folder) -> set[str]:
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
            if segments[0][0] > max(have, self._state.floor.get(device, 0)) + 1:
                behind.add(device)
        return behind

    def starting_snapshot(self, folder: Folder) -> tuple[Path, int, dict, int] | None:
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
        chosen = snapshot.best(folder, self._sealer, own=self._state.rebuilding)
        if chosen is None:
            return None
        path, covers = chosen
        with paths.open_regular(path) as f:
            offset = len(f.readline())  # after the header
        return path, offset, covers, 1

    def start_from_snapshot(
        self, folder: Folder, path: Path, offset: int, covers: dict, line_no: int, result: Pass
    ) -> tuple[Path, int, dict, int] | None:
        """Take the next BATCH_LINES lines of the snapshot a new device starts from (one
        transaction) and fold what they touch; where to go on, None once it is all in."""
        if not self._state.rebuilding:  # this device's changes first, as in every batch
            self._ledger.export(folder, result)
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
                    line,
                    f"{path.name} line {line_no}",
                    result,
                    aad,
                    (device, trust.snapshot_domain(device, number, line_no)),
                )
                line_no += 1
                if memory_id:
                    result.read += 1
                    affected.add(memory_id)
            finished = not f.read(1)
        self._ledger.apply(affected, result, write_rows=True)
        if not finished:
            where = {
                "path": str(path.relative_to(folder.root)),
                "offset": offset,
                "covers": covers,
                "line": line_no,
            }
            self._db.set_meta("sync_start", json.dumps(where))
            return path, offset, covers, line_no
        # (a rebuild takes this device's own operations from it too: its logs may be gone)
        self._state.floor = {
            d: n for d, n in covers.items() if d != folder.device or self._state.rebuilding
        }
        self._db.set_meta("sync_floor", json.dumps(self._state.floor))
        self._db.conn.execute("DELETE FROM _metadata WHERE key = 'sync_start'")
        return None

    def _take_snapshot_line(
        self, line: bytes, where: str, result: Pass, aad: str, signed: tuple[str, bytes]
    ) -> str | None:
        sealed = False
        try:
            op, text = self._opened(line, *signed)
            line = text.encode("utf-8")
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
        except (ValueError, InputError, SecretError, KeyError, RecursionError, trust.NotYet) as exc:
            text = (
                str(exc)
                if isinstance(exc, MnemoError)
                else "signed by a key not known yet"
                if isinstance(exc, trust.NotYet)
                else "not a snapshot line"
            )
            problem(self._db, result, "line", f"a line in {where} was skipped: {text}")
            return None
        self._db.conn.execute(
            "INSERT OR REPLACE INTO sync_ops(rev, memory_id, device, seq, lamport, kind, body) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (rev, memory_id, device, seq, lamport, kind, line.decode("utf-8")),
        )
        return memory_id

    def read(self, folder: Folder, result: Pass, own: bool) -> bool:
        """Read new operations (this device's own logs, or the others'), up to
        BATCH_LINES, and fold what they touch; whether more wait."""
        offsets = oplog.offsets(self._db)
        self._skipping = set(json.loads(self._db.get_meta("sync_skipping", "[]")))
        affected: set[str] = set()
        budget = BATCH_LINES
        more = False
        behind = set() if own else self.behind(folder)
        for log_file in folder.logs():
            if (log_file.device == folder.device) != own or log_file.device in behind:
                continue
            key = str(log_file.path.relative_to(folder.root))
            start = offsets.get(key, 0)
            skipping = key in self._skipping
            try:
                size = log_file.path.stat().st_size
                if size < start:  # replaced by a shorter file: read again (ops count once)
                    start, skipping = 0, False
                if size == start:
                    continue
                lines, end, skipping = Folder.read_from(log_file.path, start, budget, skipping)
            except OSError as exc:
                problem(self._db, result, "read", f"cannot read {key}: {exc.strerror or exc}")
                continue
            if len(lines) == budget:
                more = True
            budget -= len(lines)
            for at, line in lines:
                if line is None:
                    problem(
                        self._db,
                        result,
                        "line",
                        f"a line in {key} at byte {at} was skipped: it is longer than "
                        f"{MAX_LINE_BYTES // 2**20} MB",
                    )
                    continue
                try:
                    taken = self._take(line, log_file.device, f"{key} at byte {at}", result)
                except trust.NotYet:
                    end, skipping = at, False  # read again once its key is known
                    break
                affected.update(taken)
                result.read += bool(taken) and not own  # (what was new: not a line held already)
            if skipping != (key in self._skipping):
                self._skipping ^= {key}
                self._db.set_meta("sync_skipping", json.dumps(sorted(self._skipping)))
            self._db.conn.execute(
                "INSERT INTO sync_files(path, offset) VALUES (?, ?) "
                "ON CONFLICT(path) DO UPDATE SET offset = excluded.offset",
                (key, end),
            )
            if budget <= 0:
                more = True
                break
        self._ledger.apply(affected, result, write_rows=not own or self._state.rebuilding)
        return more

    def _take(self, line: bytes, device: str, where: str, result: Pass) -> list[str]:
        """Store one operation line if it is new and well formed; the memories it touches.
        What is held already (read twice, or in the snapshot this device started from) is
        passed over before the checks (a join reads each record once)."""
        sealed = False
        try:
            if len(line) > MAX_LINE_BYTES:
                raise InputError(f"it is longer than {MAX_LINE_BYTES // 2**20} MB")
            op, body = self._opened(line, device, trust.LINE)
            if isinstance(op, dict) and "sealed" in op:
                if self._sealer is None:
                    raise InputError("it is encrypted and this device has no sync key")
                body = self._sealer.open(op, str(op.get("rev")))
                op = json.loads(body)
                sealed = True
            elif self._sealer is not None:  # in an encrypted folder, only sealed lines count
                raise InputError("it is not sealed with the folder's key")
        except (ValueError, RecursionError):
            problem(self._db, result, "line", f"a line in {where} was skipped: not JSON")
            return []
        except InputError as exc:
            problem(self._db, result, "line", f"a line in {where} was skipped: {exc}")
            return []
        known = []  # (an operation of another device than its folder's is refused below)
        if isinstance(op, dict) and op.get("dev") == device:
            seq = op.get("seq")
            if isinstance(seq, int) and 0 < seq <= self._state.floor.get(device, 0):
                return []  # held already by the snapshot this device started from
            known = self._db.query(
                "SELECT body, memory_id FROM sync_ops WHERE rev = ?", (str(op.get("rev")),)
            )
            if known and _same(known[0][0], body):
                return []
        try:
            rev, memory_id, kind, seq, lamport = self._checked(op, device, sealed)
        except (InputError, SecretError) as exc:
            problem(self._db, result, "line", f"a line in {where} was skipped: {exc}")
            return []
        touched = [memory_id]  # (`known`: the operation held under `rev`, as checked)
        if known:
            problem(self._db, result, "line", f"two different operations numbered {rev} in {where}")
            if _sha(known[0][0]) <= _sha(body):  # the same one kept on every device
                return []
            touched.append(known[0][1])  # the one it replaces is folded again without it
        self._db.conn.execute(
            "INSERT OR REPLACE INTO sync_ops(rev, memory_id, device, seq, lamport, kind, body) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (rev, memory_id, device, seq, lamport, kind, body),
        )
        return touched

    def _opened(self, line: bytes, device: str, domain: bytes):
        """An operation line as an object without its signature and as the JSON text kept
        of it, once the signature is checked against the key approved for `device`
        (InputError when it does not verify, or is missing where the device signs: what it
        wrote before it had a key is read unsigned). A line as Mnemo writes it is checked
        as its bytes are; another layout is parsed and laid out again to be checked."""
        key = self._state.keys.get(device)
        fast = trust.signed_part(line) if key is not None else None
        if fast is not None:
            data, sig = fast
            if not trust.verify_part(key, data, sig, domain):
                raise InputError(f"it is not signed by the key approved for device {device}")
            text = data.decode("utf-8")
            return json.loads(text), text
        op = self._signed(json.loads(line), device, domain)
        if not isinstance(op, dict):
            return op, ""
        return op, trust.canonical(op).decode("utf-8")

    def _signed(self, op, device: str, domain: bytes):
        """An operation without its signature, once the signature is checked (`_opened`)."""
        if not isinstance(op, dict):
            return op
        key = self._state.keys.get(device)
        if "sig" in op:
            if key is None:
                raise trust.NotYet(device)  # (its signed device file is on its way)
            if not trust.verify(key, op, domain):
                raise InputError(f"it is not signed by the key approved for device {device}")
            return {k: v for k, v in op.items() if k != "sig"}
        seq = op.get("seq")
        before = isinstance(seq, int) and 0 < seq < self._state.signed_from.get(device, 1)
        if key is not None and not before:
            raise InputError(f"it is not signed (device {device} signs what it writes)")
        return op

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
            if last is not None and (not isinstance(last, str) or utc_stamp(last) is None):
                raise InputError("last must be an ISO date/time")
        return op["rev"], memory_id, kind, seq, lamport


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _same(kept: str, body: str) -> bool:
    """Whether two texts of an operation say the same (one may be laid out otherwise: kept
    by an older Mnemo)."""
    if kept == body:
        return True
    try:
        return json.loads(kept) == json.loads(body)
    except ValueError:
        return False
