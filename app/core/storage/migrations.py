"""Schema migrations: ordered, named functions, each applied once and recorded."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import apsw
import numpy as np

# The table that records which migrations ran (made before the first one)
RECORD = "CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"


def m001_memories(db: apsw.Connection) -> None:
    """Memories, their FTS5 index (kept in sync by triggers) and metadata."""
    db.execute(
        """
        CREATE TABLE _metadata (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE memories (
            seq INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            content_hash TEXT NOT NULL,
            title TEXT NOT NULL DEFAULT '',
            text TEXT NOT NULL,
            reasoning TEXT NOT NULL DEFAULT '',
            category TEXT NOT NULL DEFAULT 'note',
            tags TEXT NOT NULL DEFAULT '[]',
            refs TEXT NOT NULL DEFAULT '[]',
            source TEXT NOT NULL DEFAULT 'manual',
            source_project TEXT,
            confidence TEXT NOT NULL DEFAULT 'medium'
                CHECK (confidence IN ('low', 'medium', 'high')),
            observation_count INTEGER NOT NULL DEFAULT 1,
            recall_count INTEGER NOT NULL DEFAULT 0,
            last_recalled_at TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            pinned INTEGER NOT NULL DEFAULT 0,
            deleted_at TEXT
        );
        CREATE INDEX memories_content_hash ON memories(content_hash);
        CREATE INDEX memories_updated ON memories(updated_at);
        CREATE INDEX memories_category ON memories(category);

        CREATE VIRTUAL TABLE memories_fts USING fts5(
            title, text, reasoning, tags,
            content='memories', content_rowid='seq',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
            INSERT INTO memories_fts(rowid, title, text, reasoning, tags)
            VALUES (new.seq, new.title, new.text, new.reasoning, new.tags);
        END;
        CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, title, text, reasoning, tags)
            VALUES ('delete', old.seq, old.title, old.text, old.reasoning, old.tags);
        END;
        CREATE TRIGGER memories_au AFTER UPDATE OF title, text, reasoning, tags ON memories
        BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, title, text, reasoning, tags)
            VALUES ('delete', old.seq, old.title, old.text, old.reasoning, old.tags);
            INSERT INTO memories_fts(rowid, title, text, reasoning, tags)
            VALUES (new.seq, new.title, new.text, new.reasoning, new.tags);
        END;
        """
    )


def m002_embeddings(db: apsw.Connection) -> None:
    """Embedding vectors, one row per chunk, and a counter that tells readers to reload."""
    db.execute(
        """
        CREATE TABLE embeddings (
            rowid INTEGER PRIMARY KEY,
            memory_id TEXT NOT NULL REFERENCES memories(id) ON DELETE CASCADE
                ON UPDATE CASCADE,
            chunk INTEGER NOT NULL,
            model_id TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            vector BLOB NOT NULL,
            UNIQUE (memory_id, chunk)
        );
        CREATE INDEX embeddings_model ON embeddings(model_id, memory_id);
        INSERT INTO _metadata(key, value) VALUES ('vector_generation', '0');
        -- A reader holding vectors in memory must reload after anything but an append.
        CREATE TRIGGER embeddings_ad AFTER DELETE ON embeddings BEGIN
            UPDATE _metadata SET value = CAST(value AS INTEGER) + 1
            WHERE key = 'vector_generation';
        END;
        CREATE TRIGGER memories_trash AFTER UPDATE OF deleted_at ON memories BEGIN
            UPDATE _metadata SET value = CAST(value AS INTEGER) + 1
            WHERE key = 'vector_generation';
        END;
        """
    )


def m003_keywords(db: apsw.Connection) -> None:
    """Keyword labels per memory (JSON list; NULL = not made yet), indexed by FTS5."""
    db.execute(
        """
        ALTER TABLE memories ADD COLUMN keywords TEXT;
        DROP TRIGGER memories_ai;
        DROP TRIGGER memories_ad;
        DROP TRIGGER memories_au;
        DROP TABLE memories_fts;
        CREATE VIRTUAL TABLE memories_fts USING fts5(
            title, text, reasoning, tags, keywords,
            content='memories', content_rowid='seq',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
            INSERT INTO memories_fts(rowid, title, text, reasoning, tags, keywords)
            VALUES (new.seq, new.title, new.text, new.reasoning, new.tags, new.keywords);
        END;
        CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, title, text, reasoning, tags, keywords)
            VALUES ('delete', old.seq, old.title, old.text, old.reasoning, old.tags,
                    old.keywords);
        END;
        CREATE TRIGGER memories_au
        AFTER UPDATE OF title, text, reasoning, tags, keywords ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, title, text, reasoning, tags, keywords)
            VALUES ('delete', old.seq, old.title, old.text, old.reasoning, old.tags,
                    old.keywords);
            INSERT INTO memories_fts(rowid, title, text, reasoning, tags, keywords)
            VALUES (new.seq, new.title, new.text, new.reasoning, new.tags, new.keywords);
        END;
        INSERT INTO memories_fts(memories_fts) VALUES ('rebuild');
        """
    )


def valid_row(row: str) -> str:
    """An SQL condition that holds when a memories row (alias or NEW) has the right types.

    The one statement of the column rules: the triggers of m004 enforce it on every write
    and `mnemo doctor` uses it to find older rows that break it.
    """
    r = row
    lists = " AND ".join(
        f"json_valid({r}.{c}) AND json_type({r}.{c}) = 'array' AND NOT EXISTS "
        f"(SELECT 1 FROM json_each({r}.{c}) WHERE type != 'text')"
        for c in ("tags", "refs")
    )
    return (
        f"typeof({r}.id) = 'text' AND length({r}.id) BETWEEN 1 AND 64"
        f" AND typeof({r}.text) = 'text' AND length({r}.text) > 0"
        f" AND typeof({r}.title) = 'text' AND typeof({r}.reasoning) = 'text'"
        f" AND typeof({r}.category) = 'text' AND typeof({r}.source) = 'text'"
        f" AND ({r}.source_project IS NULL OR typeof({r}.source_project) = 'text')"
        f" AND {r}.confidence IN ('low', 'medium', 'high')"
        f" AND typeof({r}.observation_count) = 'integer'"
        f" AND {r}.observation_count BETWEEN 1 AND 2147483647"
        f" AND typeof({r}.recall_count) = 'integer'"
        f" AND {r}.recall_count BETWEEN 0 AND 2147483647"
        f" AND {r}.pinned IN (0, 1) AND typeof({r}.pinned) = 'integer'"
        f" AND typeof({r}.created_at) = 'text' AND typeof({r}.updated_at) = 'text'"
        f" AND ({r}.last_recalled_at IS NULL OR typeof({r}.last_recalled_at) = 'text')"
        f" AND ({r}.deleted_at IS NULL OR typeof({r}.deleted_at) = 'text')"
        f" AND ({r}.merged_into IS NULL OR typeof({r}.merged_into) = 'text')"
        f" AND ({r}.thread IS NULL OR (typeof({r}.thread) = 'text'"
        f" AND length({r}.thread) BETWEEN 1 AND 500))"
        f" AND {lists}"
        f" AND ({r}.keywords IS NULL OR (json_valid({r}.keywords)"
        f" AND json_type({r}.keywords) = 'array'))"
    )


def m004_merges_and_checks(db: apsw.Connection) -> None:
    """Merge sources point at their result; every write is checked for the right types.

    SQLite adds CHECK constraints only by rebuilding the table, and a rebuild under the
    embeddings' ON DELETE CASCADE would drop every vector: triggers enforce the same
    rules instead. Older rows that break them are found by `mnemo doctor` and moved to
    `memories_quarantine` (or fixed) by `mnemo doctor --repair`.
    """
    db.execute("ALTER TABLE memories ADD COLUMN merged_into TEXT")
    db.execute("CREATE INDEX memories_merged_into ON memories(merged_into)")
    db.execute(
        "CREATE TABLE memories_quarantine AS SELECT * FROM memories WHERE 0; "
        "ALTER TABLE memories_quarantine ADD COLUMN reason TEXT; "
        "ALTER TABLE memories_quarantine ADD COLUMN quarantined_at TEXT;"
    )
    _check_triggers(db, valid_row("NEW").split(" AND (NEW.thread")[0])


def _check_triggers(db: apsw.Connection, condition: str) -> None:
    """The triggers that refuse a write breaking `condition` (the column rules)."""
    for event in ("INSERT", "UPDATE"):
        db.execute(f"DROP TRIGGER IF EXISTS memories_check_{event.lower()}")
        db.execute(
            f"CREATE TRIGGER memories_check_{event.lower()} BEFORE {event} ON memories "
            f"WHEN NOT ({condition}) BEGIN "
            "SELECT RAISE(ABORT, 'mnemo: a memory field has the wrong type or range'); END"
        )


def m005_live_observations_index(db: apsw.Connection) -> None:
    """The largest observation count of a live memory, read by every ranking, from an index
    (a full scan took 52-78 ms per recall at 100k memories)."""
    db.execute(
        "CREATE INDEX memories_live_observations ON memories(observation_count) "
        "WHERE deleted_at IS NULL"
    )


def m006_trash_index(db: apsw.Connection) -> None:
    """The trashed memories from an index, so counting the live ones that have vectors
    costs the size of the trash, not of the collection (the manager's status bar)."""
    db.execute("CREATE INDEX memories_trashed ON memories(deleted_at) WHERE deleted_at IS NOT NULL")


def m007_threads_and_times(db: apsw.Connection) -> None:
    """A memory may belong to a thread (a conversation, a session: its turns lend each other
    context when ranked), and the memories made in a window of time are read from an index
    (a question that names a date ranks them first)."""
    db.execute("ALTER TABLE memories ADD COLUMN thread TEXT")
    db.execute("ALTER TABLE memories_quarantine ADD COLUMN thread TEXT")
    db.execute("CREATE INDEX memories_thread ON memories(thread, seq) WHERE thread IS NOT NULL")
    db.execute("CREATE INDEX memories_created ON memories(created_at)")
    _check_triggers(db, valid_row("NEW"))


def m008_secure_delete_index(db: apsw.Connection) -> None:
    """Deleting a row removes its words from the full-text index (FTS5 otherwise leaves them
    in the index until a merge): text purged or edited away is gone, not just unlisted."""
    db.execute("INSERT INTO memories_fts(memories_fts, rank) VALUES ('secure-delete', 1)")
    db.execute("INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')")


def m009_not_duplicates(db: apsw.Connection) -> None:
    """Pairs the user said are not duplicates ("Find duplicates" lists them no more), by
    memory id, the smaller id first."""
    db.execute(
        "CREATE TABLE not_duplicates (a TEXT NOT NULL, b TEXT NOT NULL, at TEXT NOT NULL, "
        "PRIMARY KEY (a, b), CHECK (a < b)) WITHOUT ROWID"
    )


# What a change to a memory's row is, for the journal (`changes`): its trash state, its words
# (what a search reads), a use (counted, read), or else its other fields (metadata).
JOURNAL_CONTENT = ("text", "title", "reasoning")
JOURNAL_USAGE = ("recall_count", "last_recalled_at")
JOURNAL_KEEP = 20_000  # changes kept; a reader further behind reloads everything


def journal_triggers(db: apsw.Connection) -> None:
    """(Re)make the journal's triggers from the memories table's columns as they are now
    (a migration that adds a column calls this again)."""
    columns = [row[1] for row in db.execute("PRAGMA table_info(memories)")]
    differ = lambda names: " OR ".join(f"old.{c} IS NOT new.{c}" for c in names)  # noqa: E731
    other = [c for c in columns if c not in (*JOURNAL_CONTENT, *JOURNAL_USAGE, "deleted_at")]
    kind = (
        f"CASE WHEN old.deleted_at IS NOT new.deleted_at THEN 'trash' "
        f"WHEN {differ(JOURNAL_CONTENT)} THEN 'content' "
        f"WHEN {differ(other)} THEN 'metadata' ELSE 'usage' END"
    )
    for name in ("journal_insert", "journal_update", "journal_delete"):
        db.execute(f"DROP TRIGGER IF EXISTS {name}")
    db.execute(
        "CREATE TRIGGER journal_insert AFTER INSERT ON memories BEGIN "
        "INSERT INTO changes(memory_id, kind) VALUES (new.id, 'content'); END"
    )
    db.execute(
        "CREATE TRIGGER journal_update AFTER UPDATE ON memories BEGIN "
        f"INSERT INTO changes(memory_id, kind) VALUES (new.id, {kind}); END"
    )
    db.execute(
        "CREATE TRIGGER journal_delete AFTER DELETE ON memories BEGIN "
        "INSERT INTO changes(memory_id, kind) VALUES (old.id, 'purge'); END"
    )


def m010_change_journal(db: apsw.Connection) -> None:
    """A journal of what changed in which memory, written by triggers whoever writes (this
    process, the CLI, an agent's MCP server): a view reads what changed since it last looked
    and refreshes only that (a recall count bumped by an agent never reloads the manager).
    It keeps the last JOURNAL_KEEP changes (pruned every 1,000)."""
    db.execute(
        "CREATE TABLE changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
        "memory_id TEXT NOT NULL, kind TEXT NOT NULL)"
    )
    db.execute(
        "CREATE TRIGGER journal_prune AFTER INSERT ON changes WHEN new.seq % 1000 = 0 BEGIN "
        f"DELETE FROM changes WHERE seq <= new.seq - {JOURNAL_KEEP}; END"
    )
    journal_triggers(db)


def m011_inbox(db: apsw.Connection) -> None:
    """The capture inbox (`storage.inbox`): statements agents' hooks found, waiting for the
    user's review; rejected ones keep only their text's hash. Its changes go in the journal
    as kind 'inbox' (a view shows how many wait), with the candidate's id."""
    db.execute(
        "CREATE TABLE inbox (id TEXT PRIMARY KEY, text_hash TEXT NOT NULL, "
        "status TEXT NOT NULL CHECK (status IN ('pending', 'rejected')), text TEXT NOT NULL, "
        "rule TEXT NOT NULL, keywords TEXT NOT NULL DEFAULT '[]', agent TEXT NOT NULL, "
        "project TEXT, session TEXT NOT NULL DEFAULT '', said TEXT NOT NULL DEFAULT '', "
        "created_at TEXT NOT NULL, seen INTEGER NOT NULL DEFAULT 1, similar TEXT)"
    )
    db.execute("CREATE UNIQUE INDEX inbox_text_hash ON inbox(text_hash)")
    for event, row in (("INSERT", "new"), ("UPDATE", "new"), ("DELETE", "old")):
        db.execute(
            f"CREATE TRIGGER inbox_journal_{event.lower()} AFTER {event} ON inbox BEGIN "
            f"INSERT INTO changes(memory_id, kind) VALUES ({row}.id, 'inbox'); END"
        )


def m012_sync(db: apsw.Connection) -> None:
    """Sync over a shared folder (`core/sync`): every operation seen from any device (the
    memories are their fold), what was last synced of each memory (a local change is what
    differs from it), how far each log file was read, and the problems met."""
    db.execute(
        "CREATE TABLE sync_ops (rev TEXT PRIMARY KEY, memory_id TEXT NOT NULL, "
        "device TEXT NOT NULL, seq INTEGER NOT NULL, lamport INTEGER NOT NULL, "
        "kind TEXT NOT NULL, body TEXT NOT NULL) WITHOUT ROWID"
    )
    db.execute("CREATE INDEX sync_ops_memory ON sync_ops(memory_id)")
    db.execute("CREATE INDEX sync_ops_device ON sync_ops(device, seq)")
    db.execute(
        "CREATE TABLE sync_memories (id TEXT PRIMARY KEY, heads TEXT NOT NULL, "
        "digest TEXT NOT NULL, observations INTEGER NOT NULL DEFAULT 0, "
        "recalls INTEGER NOT NULL DEFAULT 0, last_recalled_at TEXT) WITHOUT ROWID"
    )
    db.execute(
        "CREATE TABLE sync_files (path TEXT PRIMARY KEY, offset INTEGER NOT NULL) WITHOUT ROWID"
    )
    db.execute(
        "CREATE TABLE sync_problems (seq INTEGER PRIMARY KEY AUTOINCREMENT, at TEXT NOT NULL, "
        "kind TEXT NOT NULL, what TEXT NOT NULL)"
    )
    # memories with operations that wait for a version they were made from
    db.execute(
        "CREATE TABLE sync_waiting (memory_id TEXT PRIMARY KEY, operations INTEGER NOT NULL) "
        "WITHOUT ROWID"
    )


def m013_float16_vectors(db: apsw.Connection) -> None:
    """Vectors stored as float16, half the bytes (ADR 0017): every row was float32 until
    now. Cosines move by about 1e-4. The rows shrink in place and no page is freed: the
    file keeps its size until it is rewritten (VACUUM, an encrypt or a decrypt)."""

    def half(blob: bytes) -> bytes:
        if len(blob) % 4:  # not a float32 row: left as it is (readers check its length)
            return blob
        return np.frombuffer(blob, dtype="<f4").astype("<f2").tobytes()

    db.create_scalar_function("mnemo_float16", half, 1, deterministic=True)
    # The conversion is not a delete or a trash: readers holding vectors must still reload
    # (the rows changed under them), which the generation tells them.
    db.execute(
        "UPDATE embeddings SET vector = mnemo_float16(vector);"
        "UPDATE _metadata SET value = CAST(value AS INTEGER) + 1 "
        "WHERE key = 'vector_generation';"
    )


def m014_sync_trust(db: apsw.Connection) -> None:
    """Which devices may write (`sync/trust.py`): each device's key and whether it is
    approved; removals held back until a person says so (`sync/held.py`). The devices this
    database already took operations from stay trusted (their keys are learned when they
    first publish one)."""
    db.execute(
        "CREATE TABLE sync_devices (id TEXT PRIMARY KEY, key TEXT, state TEXT NOT NULL "
        "CHECK (state IN ('self', 'approved', 'pending', 'refused')), "
        "name TEXT NOT NULL DEFAULT '', since TEXT NOT NULL, by TEXT NOT NULL DEFAULT '') "
        "WITHOUT ROWID"
    )
    db.execute("ALTER TABLE sync_ops ADD COLUMN held INTEGER NOT NULL DEFAULT 0")
    # whether a memory was live when it was last synced (a removal is a change from live)
    db.execute("ALTER TABLE sync_memories ADD COLUMN live INTEGER NOT NULL DEFAULT 1")
    # memories a person trashed or purged through Mnemo since the last pass: any other
    # removal (a trigger, an sqlite shell) is not sent to the other devices en masse
    db.execute(
        "CREATE TABLE sync_said (memory_id TEXT PRIMARY KEY, at TEXT NOT NULL) WITHOUT ROWID"
    )
    db.execute(
        "INSERT INTO sync_devices(id, state, since, by) "
        "SELECT DISTINCT device, 'approved', strftime('%Y-%m-%dT%H:%M:%fZ'), 'legacy' "
        "FROM sync_ops WHERE device NOT IN ('~', '=') AND device IS NOT "
        "(SELECT value FROM _metadata WHERE key = 'sync_device')"
    )


def m015_inbox_sources(db: apsw.Connection) -> None:
    """Where a candidate came from beyond the hook (`mnemo agents import`: the agent's file,
    and when it was said there), so a whole file's proposals are reviewed at once; and which
    statements were taken from which file already, so an import run again adds nothing."""
    db.execute("ALTER TABLE inbox ADD COLUMN source TEXT NOT NULL DEFAULT ''")
    db.execute("ALTER TABLE inbox ADD COLUMN said_at TEXT NOT NULL DEFAULT ''")
    db.execute("CREATE INDEX inbox_source ON inbox(source) WHERE source != ''")
    db.execute(
        "CREATE TABLE agent_imports (source TEXT NOT NULL, text_hash TEXT NOT NULL, "
        "at TEXT NOT NULL, PRIMARY KEY (source, text_hash)) WITHOUT ROWID"
    )


def m016_symbol_words(db: apsw.Connection) -> None:
    """Emoji and other pictographic symbols are words in the keyword index (issue 46):
    `🎂` finds the memory holding 🎂 (`storage/symbols.py` says which characters and why).
    The index is made again with the new tokenizer and filled from the memories, its
    triggers (m003) unchanged; deleted words are still purged (m008)."""
    skin_tones = "".join(map(chr, range(0x1F3FB, 0x1F400)))
    currencies = "".join(map(chr, range(0x20BA, 0x20C1)))
    separators = f"°℃℉©®™℗℠№{currencies}{skin_tones}"
    # one line: FTS5 reads no line break in it
    tokenize = (
        f"porter unicode61 remove_diacritics 2 categories 'L* N* Co So' separators '{separators}'"
    )
    db.execute(
        f"""
        DROP TABLE memories_fts;
        CREATE VIRTUAL TABLE memories_fts USING fts5(
            title, text, reasoning, tags, keywords,
            content='memories', content_rowid='seq',
            tokenize="{tokenize}"
        );
        INSERT INTO memories_fts(memories_fts, rank) VALUES ('secure-delete', 1);
        INSERT INTO memories_fts(memories_fts) VALUES ('rebuild');
        """
    )


def m017_origins(db: apsw.Connection) -> None:
    """Who wrote each memory (issue 44, `core/origin.py`): a JSON array of origins, set by
    Mnemo on every path. An existing memory gets the best origin its source word allows
    (`origin.from_source`, marked inferred, at its creation), and one that arrived from
    another device (its first operation in `sync_ops` is that device's) says which. The
    journal's triggers are made again with the new column (a change of it is metadata);
    the update itself is no change a view or a sync pass must see (origins are not synced
    as a change: they never change once set)."""
    from app.core import origin

    db.execute("ALTER TABLE memories ADD COLUMN origin TEXT NOT NULL DEFAULT '[]'")
    db.execute("ALTER TABLE memories_quarantine ADD COLUMN origin TEXT")
    me = db.execute("SELECT value FROM _metadata WHERE key = 'sync_device'").fetchall()
    names = dict(db.execute("SELECT id, name FROM sync_devices"))
    first = {  # each memory's first put and the device that wrote it
        memory_id: device
        for memory_id, device, _ in db.execute(
            "SELECT memory_id, device, min(lamport) FROM sync_ops "
            "WHERE kind = 'put' AND device NOT IN ('~', '=') GROUP BY memory_id"
        )
    }
    mine = me[0][0] if me else None

    def best(memory_id, source, created_at) -> str:
        found = origin.from_source(source if isinstance(source, str) else "", created_at)
        device = first.get(memory_id)
        if device is not None and device != mine:
            found = replace(found, device=origin.label(names.get(device) or device))
        return origin.encode([found])

    db.create_scalar_function("mnemo_origin", best, 3, deterministic=True)
    # (no journal entry and no type check for it: a row an older version let in is
    # doctor's, and this touches no field the check reads)
    for name in ("journal_update", "memories_check_update"):
        db.execute(f"DROP TRIGGER IF EXISTS {name}")
    db.execute("UPDATE memories SET origin = mnemo_origin(id, source, created_at)")
    _check_triggers(db, valid_row("NEW"))
    for event in ("INSERT", "UPDATE"):  # (its own: doctor's rules are the other columns')
        db.execute(
            f"CREATE TRIGGER memories_check_origin_{event.lower()} BEFORE {event} ON memories "
            "WHEN NOT (json_valid(NEW.origin) AND json_type(NEW.origin) = 'array') BEGIN "
            "SELECT RAISE(ABORT, 'mnemo: a memory origin must be a list of origins'); END"
        )
    journal_triggers(db)


def m018_memory_versions(db: apsw.Connection) -> None:
    """What a memory said before each change of its words (issue 44, ADR 0023,
    `storage/versions.py`): its fields then, the origins of those words (`origin`), when
    they were written, and when, by whom (an origin, or NULL) and why they were replaced.
    Read by memory; deleted with it by a purge. Not in the journal: the change of the
    memory itself is."""
    db.execute(
        "CREATE TABLE memory_versions (seq INTEGER PRIMARY KEY, memory_id TEXT NOT NULL, "
        "title TEXT NOT NULL DEFAULT '', text TEXT NOT NULL, reasoning TEXT NOT NULL "
        "DEFAULT '', category TEXT NOT NULL DEFAULT 'note', tags TEXT NOT NULL DEFAULT '[]', "
        "refs TEXT NOT NULL DEFAULT '[]', source_project TEXT, confidence TEXT NOT NULL "
        "DEFAULT 'medium', origin TEXT NOT NULL DEFAULT '[]', written_at TEXT NOT NULL, "
        "replaced_at TEXT NOT NULL, replaced_by TEXT, why TEXT NOT NULL)"
    )
    db.execute("CREATE INDEX memory_versions_memory ON memory_versions(memory_id, seq)")


def m019_synced_versions(db: apsw.Connection) -> None:
    """Sync carries versions (ADR 0023): what was last synced of a memory's versions (a
    hash of their keys; NULL until a pass records it, so the upgrade sends nothing), and a
    version kept of a memory is a change of it in the journal (a superseded memory's words
    kept as a version of the newer one are sent with it; a view showing its history
    refreshes)."""
    db.execute("ALTER TABLE sync_memories ADD COLUMN versions TEXT")
    db.execute(
        "CREATE TRIGGER journal_version AFTER INSERT ON memory_versions BEGIN "
        "INSERT INTO changes(memory_id, kind) VALUES (new.memory_id, 'metadata'); END"
    )


def m020_space_memories(db: apsw.Connection) -> None:
    """Team spaces' memories (issue 45, ADR 0026, `space/sharing.py`): which space a memory
    is shared in, what the space last said of it (its heads and a digest of its shared
    fields: a change here is what differs from it) and whether it was withdrawn; and the
    lines this device wrote in each space (sealed, as they are in its file there). Not in
    the journal: sharing changes no memory."""
    db.execute(
        "CREATE TABLE space_memories (memory_id TEXT PRIMARY KEY, space TEXT NOT NULL, "
        "heads TEXT NOT NULL DEFAULT '[]', digest TEXT NOT NULL DEFAULT '', "
        "withdrawn INTEGER NOT NULL DEFAULT 0)"
    )
    db.execute("CREATE INDEX space_memories_space ON space_memories(space)")
    db.execute(
        "CREATE TABLE space_lines (space TEXT NOT NULL, seq INTEGER NOT NULL, "
        "line TEXT NOT NULL, PRIMARY KEY (space, seq))"
    )


def m021_space_taken(db: apsw.Connection) -> None:
    """The lines this device took of the other devices in each space (issue 45, ADR 0026,
    `space/ledger.py`): by author and number, the line's hash and its sealed text (none
    once its author dropped it), so a line changed or lost in the folder changes nothing
    here."""
    db.execute(
        "CREATE TABLE space_taken (space TEXT NOT NULL, author TEXT NOT NULL, "
        "seq INTEGER NOT NULL, hash TEXT NOT NULL, line TEXT, PRIMARY KEY (space, author, seq))"
    )


MIGRATIONS: tuple[Callable[[apsw.Connection], None], ...] = (
    m001_memories,
    m002_embeddings,
    m003_keywords,
    m004_merges_and_checks,
    m005_live_observations_index,
    m006_trash_index,
    m007_threads_and_times,
    m008_secure_delete_index,
    m009_not_duplicates,
    m010_change_journal,
    m011_inbox,
    m012_sync,
    m013_float16_vectors,
    m014_sync_trust,
    m015_inbox_sources,
    m016_symbol_words,
    m017_origins,
    m018_memory_versions,
    m019_synced_versions,
    m020_space_memories,
    m021_space_taken,
)


def schema(conn: apsw.Connection) -> dict[tuple[str, str], str]:
    """What a database's schema holds: (type, name) → its SQL, for every table, index,
    trigger and view but SQLite's own (`sqlite_…`: automatic indexes, statistics)."""
    rows = conn.execute("SELECT type, name, sql FROM sqlite_master").fetchall()
    return {
        (kind, name): " ".join((sql or "").split())
        for kind, name, sql in rows
        if not _sqlites_own(kind, str(name), sql)
    }


def _sqlites_own(kind: str, name: str, sql) -> bool:
    """What SQLite makes by itself (and no one can make with CREATE): the indexes of
    UNIQUE and PRIMARY KEY constraints (no SQL), its statistics and its AUTOINCREMENT
    counter. A trigger or a view named `sqlite_…` (written into the schema by hand) is not."""
    if kind == "index":
        return name.startswith("sqlite_autoindex_") and sql is None
    return kind == "table" and name in (
        "sqlite_sequence",
        "sqlite_stat1",
        "sqlite_stat2",
        "sqlite_stat3",
        "sqlite_stat4",
    )


def expected_schema(applied: list[str]) -> dict[tuple[str, str], str]:
    """The schema Mnemo's migrations make when `applied` (the names `_migrations` lists, in
    the order they ran) have run; ValueError naming the first that is not one of ours or
    not in order (a newer Mnemo's file, or not Mnemo's)."""
    names = [m.__name__ for m in MIGRATIONS]
    if applied != names[: len(applied)]:
        unknown = next((a for a, b in zip(applied, names, strict=False) if a != b), applied[-1])
        raise ValueError(f"migration {unknown!r} is not one this Mnemo made (a newer Mnemo?)")
    conn = apsw.Connection(":memory:")
    try:
        conn.execute(RECORD)
        for migration in MIGRATIONS[: len(applied)]:
            migration(conn)
        return schema(conn)
    finally:
        conn.close()


def unexpected(conn: apsw.Connection) -> list[str]:
    """What a database holds beyond (or short of) the schema its own record of migrations
    says it has, described ("trigger wipe on memories"); [] when it is exactly Mnemo's.
    Read from `sqlite_master` alone before anything else, so a view planted in place of a
    table is never queried."""
    found = schema(conn)
    record = " ".join(RECORD.replace(" IF NOT EXISTS", "").split())
    if found.get(("table", "_migrations")) != record:
        return ["no record of Mnemo's migrations (not a Mnemo database)"]
    applied = [r[0] for r in conn.execute("SELECT name FROM _migrations ORDER BY rowid")]
    try:
        wanted = expected_schema(applied)
    except ValueError as exc:
        return [str(exc)]
    extra = [f"{k} {n} that Mnemo does not make" for k, n in sorted(set(found) - set(wanted))]
    missing = [f"no {k} {n}" for k, n in sorted(set(wanted) - set(found))]
    changed = [
        f"{kind} {name} changed from what Mnemo makes"
        for kind, name in sorted(set(found) & set(wanted))
        if found[kind, name] != wanted[kind, name]
    ]
    return extra + missing + changed


def upgrade(conn: apsw.Connection, stamp: str) -> None:
    """Apply the migrations a database has not had yet, each in its own transaction (a
    restored copy, before it is put in place; `Database.migrate` does the same with its
    write lock and logging)."""
    conn.execute(RECORD)
    applied = {r[0] for r in conn.execute("SELECT name FROM _migrations")}
    for migration in MIGRATIONS:
        if migration.__name__ in applied:
            continue
        with conn:
            migration(conn)
            conn.execute("INSERT INTO _migrations VALUES (?, ?)", (migration.__name__, stamp))
            conn.execute(
                "INSERT INTO _metadata(key, value) VALUES ('schema_version', ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (str(len(applied) + 1),),
            )
        applied.add(migration.__name__)
