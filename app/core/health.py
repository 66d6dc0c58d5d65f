"""`mnemo doctor`: checks of the model, the database file and the search index."""

from __future__ import annotations

from collections.abc import Callable

import apsw

from app.core.errors import MnemoError, StoreError
from app.core.model.embedder import ModelInfo
from app.core.search.meaning import Meaning
from app.core.storage.db import Database, now
from app.core.storage.migrations import valid_row
from app.core.storage.store import COLUMNS, Store, row_to_memory


def stats(db: Database, store: Store, model_info: Callable[[], ModelInfo]) -> dict:
    """Counts, the model's facts (without loading it) and the schema, for `mnemo stats`."""
    out = {"database": str(db.path), **store.counts(), "categories": store.category_counts()}
    try:
        info = model_info()
        out["model"] = {
            "name": info.name,
            "id": info.model_id,
            "path": str(info.path),
            "dimension": info.dimension,
            "window": info.window,
        }
        out.update(store.vectors.counts(info.model_id))
    except MnemoError as exc:
        out["model"] = {"error": str(exc)}
    out["schema_version"] = int(db.get_meta("schema_version", "0"))
    return out


def overview(db: Database, store: Store, model_id: str) -> dict:
    """Counts and the model's name for a status bar, without loading the model."""
    return {
        **store.counts(),
        "model_name": db.get_meta("model_name", "no model"),
        "model_dimension": db.get_meta("model_dimension", "?"),
        "embedded": store.vectors.embedded_count(model_id) if model_id else 0,
    }


def checks(db: Database, store: Store, meaning: Meaning) -> list[tuple[bool, str]]:
    """(passed, description) for each health check."""
    out: list[tuple[bool, str]] = []
    embedder = meaning.embedder
    if embedder is None:
        out.append((False, f"model: {meaning.problem}"))
    else:
        info = embedder.info
        problem = embedder.check()
        out.append(
            (
                problem is None,
                f"model: {info.name} loads and embeds ({info.dimension} dimensions, "
                f"window {info.window} tokens)"
                if problem is None
                else f"model: {info.name} {problem} (fix: mnemo model use default, or fetch "
                "the file again)",
            )
        )
    integrity = [r[0] for r in db.query("PRAGMA integrity_check")]
    if integrity == ["ok"]:
        db.clear_damaged()
        out.append((True, "database integrity: ok"))
    else:
        found = "; ".join(integrity[:5])
        db.mark_damaged(found)
        out.append(
            (
                False,
                f"database integrity: {found} (writes are refused until it is repaired; "
                "fix: mnemo doctor --repair)",
            )
        )
    try:
        db.conn.execute("INSERT INTO memories_fts(memories_fts, rank) VALUES('integrity-check', 1)")
        out.append((True, "keyword index matches the memories"))
    except apsw.Error as exc:
        out.append((False, f"keyword index out of sync ({exc}); fix: mnemo doctor --repair"))
    mode = db.query("PRAGMA journal_mode")[0][0]
    out.append((mode == "wal", f"journal mode: {mode}"))
    pending = db.pending_migrations()
    out.append((not pending, "schema up to date" if not pending else f"pending: {pending}"))
    if not pending:
        bad = db.query(f"SELECT count(*) FROM memories m WHERE NOT ({valid_row('m')})")[0][0]
        out.append(
            (
                bad == 0,
                "every memory has the right field types"
                if not bad
                else f"{bad} memor{'y has' if bad == 1 else 'ies have'} fields of the wrong "
                "type or range (fix: mnemo doctor --repair)",
            )
        )
        held = db.query("SELECT count(*) FROM memories_quarantine")[0][0]
        if held:
            out.append(
                (
                    True,
                    f"{held} unrepairable row(s) kept aside in the table memories_quarantine",
                )
            )
    if embedder is not None:
        counts = store.vectors.counts(embedder.info.model_id)
        out.append(
            (
                counts["missing"] + counts["stale"] == 0,
                f"vectors: {counts['embedded']} current, {counts['missing']} missing, "
                f"{counts['stale']} stale (fix: mnemo backfill)",
            )
        )
    if meaning.index is not None:
        damage = meaning.index.verify(store)
        if damage is not None:
            out.append(
                (
                    False,
                    f"vector copy beside the database is damaged: {damage} (it is not used; "
                    "fix: mnemo doctor --repair, or delete it)",
                )
            )
        elif meaning.index.damage is not None:  # found at this start, and written anew
            out.append(
                (
                    True,
                    f"vector copy beside the database was damaged ({meaning.index.damage}): "
                    "not used, and written again from the database",
                )
            )
        else:
            out.append((True, "vector copy beside the database: every row checked"))
    return out


def repair(db: Database) -> tuple[int, int]:
    """Fix rows with wrong field types (or move them to `memories_quarantine` when the
    text itself is unusable), then rebuild the keyword index. Returns (fixed, quarantined).
    """
    with db.unguarded():
        return _repair(db)


def _repair(db: Database) -> tuple[int, int]:
    fixed = quarantined = 0
    with db.write() as conn:
        rows = db.query(f"SELECT seq, {COLUMNS} FROM memories m WHERE NOT ({valid_row('m')})")
        for row in rows:
            seq, memory = row[0], row_to_memory(row[1:])
            try:
                with db.write():  # a savepoint: a row that cannot be fixed rolls back alone
                    if not memory.text.strip() or not isinstance(row[2], str):
                        raise StoreError("the text is not usable")
                    values = Store._columns(memory)
                    del values["id"], values["content_hash"]
                    conn.execute(
                        f"UPDATE memories SET {', '.join(f'{c} = ?' for c in values)} "
                        "WHERE seq = ?",
                        (*values.values(), seq),
                    )
                fixed += 1
            except StoreError as exc:
                # Columns by name: each migration adds its columns at the end of both tables.
                names = [r[1] for r in db.query("PRAGMA table_info(memories)")]
                listed = ", ".join(names)
                conn.execute(
                    f"INSERT INTO memories_quarantine ({listed}, reason, quarantined_at) "
                    f"SELECT {listed}, ?, ? FROM memories WHERE seq = ?",
                    (str(exc), now(), seq),
                )
                conn.execute("DELETE FROM memories WHERE seq = ?", (seq,))
                quarantined += 1
        conn.execute("INSERT INTO memories_fts(memories_fts) VALUES('rebuild')")
    # Damaged indexes ("row 1460 missing from index …" in integrity_check) are rebuilt
    with db.write() as conn:
        conn.execute("REINDEX")
    return fixed, quarantined
