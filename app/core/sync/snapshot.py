"""Compaction of the sync folder: a device's snapshot, how a new device starts from one,
and which of a device's own logs may go (ADR 0015).

A snapshot (`devices/<id>/snapshot-<seq>.jsonl`) holds what the operations up to `covers`
(per device, every one up to that number) fold to, as few operations as fold the same now
and with anything that comes later (`fold.compact`) plus each memory's count totals. A new
device starts from the newest snapshot whose devices' logs still reach back to what it
covers, then reads only the operations after it. A device deletes one of its own logs once
every device's newest snapshot covers all of it: no device still needs it, and a new one
starts from a snapshot.
"""

from __future__ import annotations

import json
from pathlib import Path

from app.core import paths
from app.core.errors import MnemoError
from app.core.sync import fold, trust
from app.core.sync.folder import Folder

REAL = "device NOT IN ('~', '=')"  # '~': versions kept from edits made apart; '=': totals


def aad(device: str, number: int, line: int) -> str:
    """What a sealed snapshot line is bound to: its device, its snapshot and its place (a
    line moved to another file or place, or a header swapped, does not open)."""
    return f"snapshot {device} {number} {line}"


def number_of(path: Path) -> int:
    return int(path.name.split("-")[1].split(".")[0])


def _header(header, path: Path, key: str | None):
    """A snapshot's first line without its signature, once checked against the key of the
    device whose snapshot it is (ValueError when it does not verify; a device from before
    keys, `key` None, wrote it unsigned)."""
    if not isinstance(header, dict) or key is None:
        return header
    if not trust.verify(key, header, trust.snapshot_domain(path.parent.name, number_of(path), 0)):
        raise ValueError("not signed by its device")
    return {k: v for k, v in header.items() if k != "sig"}


def covers_of(path: Path, sealer=None, key: str | None = None) -> dict[str, int] | None:
    """A snapshot's header: the operations it covers per device (None if unreadable, not
    signed by `key`, or in an encrypted folder not sealed with its key for this file)."""
    try:
        with paths.open_regular(path) as f:
            header = _header(json.loads(f.readline(1 << 20)), path, key)
        if sealer is not None:
            header = json.loads(sealer.open(header, aad(path.parent.name, number_of(path), 0)))
    except (OSError, ValueError, RecursionError, MnemoError, AttributeError):
        return None
    covers = header.get("covers") if isinstance(header, dict) else None
    if not isinstance(covers, dict) or not all(
        isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
        for k, v in covers.items()
    ):
        return None
    return covers


def contiguous(db, device: str, floor: int = 0) -> int:
    """The largest n such that this database holds every operation of `device` up to n
    (those up to `floor` came folded in the snapshot it started from)."""
    top, held = db.query(
        "SELECT COALESCE(MAX(seq), ?), COUNT(*) FROM sync_ops WHERE device = ? AND seq > ?",
        (floor, device, floor),
    )[0]
    if top - floor == held:  # no gap (the usual case: one look at the index)
        return top
    n = floor
    for (seq,) in db.query(
        "SELECT seq FROM sync_ops WHERE device = ? AND seq > ? ORDER BY seq", (device, floor)
    ):
        if seq != n + 1:
            break
        n = seq
    return n


def applied(db, floor: dict[str, int]) -> dict[str, int]:
    """Per device, how far this database holds every one of its operations."""
    devices = [r[0] for r in db.query(f"SELECT DISTINCT device FROM sync_ops WHERE {REAL}")]
    return {device: contiguous(db, device, floor.get(device, 0)) for device in devices}


def stable_floor(folder: Folder, removed: set[str], covers: dict[str, int]) -> dict[str, int]:
    """Per device E, up to which of E's operations every known device has applied, while
    this one holds everything those devices made before they did (so no operation made
    apart from one of them can still arrive): those that are no longer heads may go."""
    floor: dict[str, int] = {}
    for device in folder.devices():
        if device in removed:
            continue
        if device == folder.device:
            seen = covers
        else:
            seen = folder.vouched_info(device).get("applied")
            if not isinstance(seen, dict) or covers.get(device, 0) < _int(seen.get(device)):
                return {}  # it may have made something this one has not seen yet
        for source in covers:
            floor[source] = min(floor.get(source, covers[source]), _int(seen.get(source)))
    return floor


def _int(value) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def lines(
    db, own: str, operations, floor: dict[str, int], stable: dict[str, int], covered=None
) -> tuple[list[str], dict[str, int]]:
    """This database's snapshot as lines, and what it covers. `operations(memory_id,
    covers)` gives a memory's nodes and counts, up to `covers`; a version up to `stable`
    that is no longer a head is left out."""
    covers = applied(db, floor)

    def gone(node) -> bool:
        _, device, seq = node.order
        return seq <= stable.get(device, 0)

    out = [""]  # the header, once the lines are counted
    ids = [r[0] for r in db.query("SELECT DISTINCT memory_id FROM sync_ops ORDER BY memory_id")]
    for memory_id in ids:
        nodes, counts = operations(memory_id, covers)
        for node in fold.compact(nodes, gone, covered):
            lamport, device, seq = node.order
            op = {
                "v": 1,
                "rev": node.rev,
                "dev": device,
                "seq": seq,
                "lc": lamport,
                "op": "purge" if node.record is None else "put",
                "id": memory_id,
                "base": list(node.base),
            }
            if node.record is not None:
                op["rec"] = node.record
            out.append(json.dumps(op, sort_keys=True, ensure_ascii=False))
        if counts.observations or counts.recalls or counts.last_recalled_at:
            total = {
                "v": 1,
                "total": True,
                "id": memory_id,
                "obs": counts.observations,
                "recalls": counts.recalls,
                "last": counts.last_recalled_at,
            }
            out.append(json.dumps(total, sort_keys=True))
    header = {"v": 1, "snapshot": own, "covers": covers, "lines": len(out) - 1}
    out[0] = json.dumps(header, sort_keys=True)
    return out, covers


def whole(path: Path, sealer=None, key: str | None = None) -> bool:
    """Whether a snapshot holds every line its header counts and, sealed, each opens in its
    place: a new device starts only from a whole one."""
    try:
        with paths.open_regular(path) as f:
            header = _header(json.loads(f.readline(1 << 20)), path, key)
            if sealer is not None:
                device, number = path.parent.name, number_of(path)
                header = json.loads(sealer.open(header, aad(device, number, 0)))
                count = 0
                for count, line in enumerate(f, 1):  # noqa: B007
                    outer = {k: v for k, v in json.loads(line).items() if k != "sig"}
                    sealer.open(outer, aad(device, number, count))
            else:
                count = sum(1 for _ in f)
    except (OSError, ValueError, RecursionError, MnemoError, AttributeError):
        return False
    return isinstance(header, dict) and header.get("lines") == count


def usable(folder: Folder, covers: dict[str, int]) -> bool:
    """Whether every device's logs reach back to just after what a snapshot covers (so a
    device starting from it misses nothing)."""
    for device in folder.devices():
        segments = folder.segments(device)
        if segments and segments[0][0] > covers.get(device, 0) + 1:
            return False
    return True


def best(folder: Folder, sealer=None, own: bool = False) -> tuple[Path, dict[str, int]] | None:
    """The snapshot a new device starts from: the one covering most that is usable (this
    device's own too when `own`: a restored database taking its history again)."""
    found = []
    keys = folder.trusted or {}
    for device, path in folder.snapshots().items():
        if device == folder.device and not own:
            continue
        covers = covers_of(path, sealer, keys.get(device))
        if covers is not None and usable(folder, covers):
            found.append((sum(covers.values()), path.name, path, covers))
    for _, _, path, covers in sorted(found, reverse=True):
        if whole(path, sealer, keys.get(path.parent.name)):  # (damaged, tampered: passed over)
            return path, covers
    return None


def prunable(folder: Folder, removed: set[str], sealer=None) -> list[Path]:
    """This device's logs every known device's newest snapshot covers whole (never the
    newest log); none while a device has no snapshot yet."""
    snapshots = folder.snapshots()
    known = [d for d in folder.devices() if d not in removed]
    if any(d not in snapshots for d in known):
        return []
    covered = []
    keys = folder.trusted or {}
    for device in known:
        covers = covers_of(snapshots[device], sealer, keys.get(device))
        if covers is None:
            return []
        covered.append(covers.get(folder.device, 0))
    floor = min(covered)
    segments = folder.segments(folder.device)
    out = []
    for (_, path), (next_first, _) in zip(segments, segments[1:], strict=False):
        if next_first - 1 <= floor:
            out.append(path)
    return out
