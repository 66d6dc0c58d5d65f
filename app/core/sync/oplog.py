"""The operations this database holds of a sync folder (table `sync_ops`) and the journal
a pass writes from (table `changes`): the reads every part of a pass shares."""

from __future__ import annotations

import json

from app.core.memory import utc_stamp
from app.core.storage.db import Database
from app.core.sync import fold


def operations(
    db: Database, memory_id: str, covers: dict[str, int] | None = None
) -> tuple[list[fold.Node], fold.Counts]:
    """A memory's puts and purges, and its counts (with `covers`: only the operations a
    snapshot covering that holds, and the counts as they were written)."""
    nodes: list[fold.Node] = []
    counts = fold.Counts()
    rows = db.query(  # (not what is held for a person, but in a snapshot: it covers every
        # operation up to its numbers, and a device starting from it has no memory of its
        # own to hold them for)
        "SELECT rev, device, seq, lamport, kind, body FROM sync_ops "
        "WHERE memory_id = ? AND (held = 0 OR ?)",
        (memory_id, covers is not None),
    )
    for rev, device, seq, lamport, kind, body in rows:
        if covers is not None and device not in "~=" and seq > covers.get(device, 0):
            continue
        op = json.loads(body)
        if kind == "count":  # (a time that is not one, held from before it was
            last = op.get("last")  # checked, never blocks the memory)
            last = utc_stamp(last) if isinstance(last, str) else None
            counts.add(op.get("obs", 0), op.get("recalls", 0), last)
            continue
        record = op.get("rec") if kind == "put" else None
        if device == "~" and covers is None:  # a version kept from edits made apart:
            counts.add(1, 0, None)  # observed once
        nodes.append(fold.Node(rev, (lamport, device, seq), tuple(op.get("base", [])), record))
    return nodes, counts


def journal_head(db: Database) -> int:
    """The newest change the journal holds."""
    return int(db.query("SELECT COALESCE(MAX(seq), 0) FROM changes")[0][0])


def journal_reaches(db: Database, cursor: int) -> bool:
    """Whether the journal still holds every change after `cursor` (it is pruned)."""
    rows = db.query("SELECT MIN(seq) FROM changes")
    return rows[0][0] is None or rows[0][0] <= cursor + 1


def offsets(db: Database) -> dict[str, int]:
    """How far each log file of the folder was read (by its path in the folder)."""
    return dict(db.query("SELECT path, offset FROM sync_files"))
