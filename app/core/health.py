"""`mnemo doctor`: checks of the model, the database file and the search index."""

from __future__ import annotations

import apsw

from app.core.db import Database
from app.core.meaning import Meaning
from app.core.store import Store


def checks(db: Database, store: Store, meaning: Meaning) -> list[tuple[bool, str]]:
    """(passed, description) for each health check."""
    out: list[tuple[bool, str]] = []
    embedder = meaning.embedder
    if embedder is None:
        out.append((False, f"model: {meaning.problem}"))
    else:
        info = embedder.info
        probe = embedder.embed_query("health check")
        out.append(
            (
                abs(float(probe @ probe) - 1.0) < 1e-3,
                f"model: {info.name} loads and embeds ({info.dimension} dimensions, "
                f"window {info.window} tokens)",
            )
        )
    integrity = [r[0] for r in db.query("PRAGMA integrity_check")]
    out.append((integrity == ["ok"], "database integrity: " + "; ".join(integrity[:5])))
    try:
        db.conn.execute("INSERT INTO memories_fts(memories_fts, rank) VALUES('integrity-check', 1)")
        out.append((True, "keyword index matches the memories"))
    except apsw.Error as exc:
        out.append((False, f"keyword index out of sync ({exc}); fix: mnemo doctor --repair"))
    mode = db.query("PRAGMA journal_mode")[0][0]
    out.append((mode == "wal", f"journal mode: {mode}"))
    pending = db.pending_migrations()
    out.append((not pending, "schema up to date" if not pending else f"pending: {pending}"))
    if embedder is not None:
        counts = store.vector_counts(embedder.info.model_id)
        out.append(
            (
                counts["missing"] + counts["stale"] == 0,
                f"vectors: {counts['embedded']} current, {counts['missing']} missing, "
                f"{counts['stale']} stale (fix: mnemo backfill)",
            )
        )
    return out


def repair(db: Database) -> None:
    """Rebuild the keyword index from the memories table."""
    with db.write() as conn:
        conn.execute("INSERT INTO memories_fts(memories_fts) VALUES('rebuild')")
