"""The one core API that the CLI, the GUI and the MCP server all use."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from app.core import health, loaded_model, paths
from app.core.errors import InputError, ModelError
from app.core.indexer import Indexer
from app.core.loaded_model import LoadedModel
from app.core.memory import Change, Memory
from app.core.model.embedder import Embedder
from app.core.origin import Origin, Trust, trust_from
from app.core.search import neighbours
from app.core.search.context import (
    DEFAULT_MAX_CHARS,
    PROMPT_LIMIT,
    PROMPT_QUERY_CHARS,
    ContextBlock,
    build_context,
    check_max_chars,
    prompt_block,
)
from app.core.search.meaning import NO_MEANING, Meaning, assess
from app.core.search.neighbours import NearPair
from app.core.search.ranking import Band, Weights, weights_from
from app.core.search.recall import RecallResult, recall
from app.core.search.vectors import VectorIndex
from app.core.settings import MODEL_KEYS, Settings, SettingsChange
from app.core.space.spaces import Spaces
from app.core.storage import knowledge, transfer
from app.core.storage.db import Database
from app.core.storage.inbox import Candidate, Inbox
from app.core.storage.store import Filters, Store, check_limit
from app.core.sync.folder import Folder
from app.core.sync.service import SyncService
from app.core.vault import service as vault
from app.core.vault.service import Vault
from app.core.version import History
from app.core.writer import RememberResult, Writer

log = logging.getLogger(__name__)


class Engine:
    """The one door into the core for the CLI, the GUI and the MCP server.

    It opens the database, owns the settings, the model (loaded on first use) and the
    vector index. Front ends call its methods only; `_db` and `_store` are private.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        database: Path | None = None,
        embedder: Embedder | None = None,
    ):
        self._settings = settings or Settings()
        self._db = Database(database or paths.database_path())
        self._store = Store(self._db)
        # the model and its vectors (loaded on first use); encryption and snapshots
        self.model = LoadedModel(self._db, self._store, self._settings, embedder)
        self.vault = Vault(self._db, self._settings, self._forget_reads)
        self._live_count: tuple[tuple, int] | None = None
        self._indexer = Indexer(
            self._db, self._store, lambda: self.model.embedder, lambda: self.model.error
        )
        self._inbox = Inbox(self._db)
        # sync through a shared folder: one service for this engine's database (ADR 0015)
        self.sync = SyncService(
            self._db,
            self._store,
            self._settings,
            lambda values: self.apply_settings(values),  # (looked up when called: on
            lambda: self.model.known_id(),  # the thread that calls)
            lambda memory_id, **changes: self.edit(memory_id, **changes),
        )
        self.spaces = Spaces(self._db, self._store)  # team spaces this device is in (ADR 0026)
        self._writer = Writer(self._db, self._store, self._indexer, self._settings,
            lambda v: self.similar(v), lambda: self.model.error, self._inbox)  # fmt: skip

    # ---- settings (this engine is their one owner in the process) --------------------
    @property
    def settings(self) -> Settings:
        """The settings, to read; change them with `apply_settings`."""
        return self._settings

    def apply_settings(self, values: dict[str, Any]) -> SettingsChange:
        """Validate, save and take new settings; reload the model when a model key changed.

        All or nothing: a bad value, or a model that cannot be used, raises InputError and
        changes nothing (the settings file included).
        """
        # Take what another process saved first: a save here never undoes it.
        before = self.refresh_settings()
        checked = self._settings.validate(values)
        if checked.get("mirror_dir") and self._db.encrypted:
            raise InputError(
                "the database is encrypted and the markdown mirror would write every memory "
                "in the clear; it stays off while the database is encrypted"
            )
        current = self._settings.as_dict()
        model_keys_changed = any(k in checked and checked[k] != current[k] for k in MODEL_KEYS)
        if model_keys_changed:
            try:
                self.model.check({**current, **checked})
            except ModelError as exc:
                raise InputError(f"model not switched: {exc}") from None
        if checked.get("sync_folder") and checked["sync_folder"] != current["sync_folder"]:
            self.sync.refuse_plain()
            checked["sync_folder"] = str(Folder.check(Path(checked["sync_folder"])))
        change = self._settings_changed(self._settings.apply(checked))
        change.changed = list(dict.fromkeys(before.changed + change.changed))
        if before.model_reloaded and not change.model_reloaded:
            change.model_reloaded = True
            change.model_error, change.model_name = before.model_error, before.model_name
        return change

    def refresh_settings(self, load_model: bool = True) -> SettingsChange:
        """Re-read the settings file if another process changed it (before each call); a
        model changed there is loaded now, or at its first use (`load_model` False)."""
        return self._settings_changed(self._settings.reload_if_changed(), load_model)

    def _settings_changed(self, changed: list[str], load_model: bool = True) -> SettingsChange:
        result = SettingsChange(changed)
        if set(changed) & set(MODEL_KEYS):
            log.info("model settings changed (%s): reloading the model", ", ".join(changed))
            embedder = self.model.reload(load_model)
            result.model_reloaded = True
            result.model_error = self.model.error
            result.model_name = embedder.info.name if embedder else ""
        return result

    # ---- the model (`engine.model`) ----------------------------------------------------
    @property
    def embedder(self) -> Embedder | None:
        """The loaded model, or None (see `model_error`) if it cannot be loaded."""
        return self.model.embedder

    @property
    def model_error(self) -> str | None:
        """Why the model is unavailable, if it is."""
        return self.model.error

    @property
    def model_id(self) -> str:
        """The current model's id ('' when the model is unavailable)."""
        return self.model.id

    def vector_index(self) -> VectorIndex | None:
        """The in-memory vectors of the current model, refreshed from the database."""
        return self.model.index()

    def changed_elsewhere(self) -> int:
        """A number that changes when another connection (the CLI, an agent's MCP server)
        commits to the database: `PRAGMA data_version`. Cheap enough to poll."""
        return self._db.moved()[0]

    def journal_head(self) -> int:
        """The database's last change (`changes_since` reads what came after it)."""
        return self._store.journal_head()

    def changes_since(self, seq: int) -> tuple[int, list[Change] | None]:
        """What changed after journal entry `seq`, by whichever process: one Change per kind
        with the memories' ids, and the last entry read (None: the journal no longer reaches
        back so far, anything may have changed)."""
        return self._store.changes_since(seq)

    def _live(self) -> int:
        """How many live memories there are (cached until the database changes)."""
        version = self._db.moved()
        if self._live_count is None or self._live_count[0] != version:
            self._live_count = (version, self._store.live_count())
        return self._live_count[1]

    def meaning(self) -> Meaning:
        """Whether search by meaning is available now and, if not, why (one answer for
        recall, context and health)."""
        embedder = self.embedder
        index = self.vector_index() if embedder is not None else None
        return assess(embedder, self.model.error, index, self._live())

    def vector_status(self) -> dict[str, int]:
        """How many live memories have current, stale or no vectors ({} without a model)."""
        model_id = self.model_id
        return self._store.vectors.counts(model_id) if model_id else {}

    def weights(self) -> Weights:
        """The hybrid weights from the settings."""
        return weights_from(self._settings)

    # ---- reading -------------------------------------------------------------------
    def recall(
        self,
        query: str,
        mode: str | None = None,
        limit: int | None = None,
        filters: Filters | None = None,
        track: bool = True,
        prefix: bool = False,
    ) -> RecallResult:
        """Search; with `track`, every returned memory counts as recalled."""
        meaning = self.meaning() if mode != "keyword" else NO_MEANING
        result = recall(
            self._store,
            meaning,
            self._settings,
            query,
            mode,
            self._settings["default_limit"] if limit is None else check_limit(limit),
            filters,
            prefix,
        )
        if track and result.results and not self._db.read_only:
            self.mark_used([r.memory.id for r in result.results])
        self._store.noting_changes([r.memory for r in result.results])  # (what they superseded)
        return result

    def context(self, query: str | None = None, limit: int = 20, cwd: Path | None = None,
        feature: Path | None = None, project: str | None = None, track: bool = True,
        use_model: bool = True, max_chars: int = DEFAULT_MAX_CHARS) -> ContextBlock:  # fmt: skip
        """The session-start memory block (the memories `trust` admits), fitted to
        `max_chars`; with `track`, those it shows (not those left out to fit) count as used."""
        max_chars = check_max_chars(max_chars)  # before any work
        meaning = self.meaning() if use_model else NO_MEANING
        block = build_context(self._store, meaning, self._settings, query, check_limit(limit),
            cwd, feature, project, self.trust())  # fmt: skip
        block.max_chars = max_chars
        shown = [m.id for m, _, _ in block.fit().entries]
        if track and shown and not self._db.read_only:
            self.mark_used(shown)
        return block

    def prompt_context(
        self, prompt: str, skip: set[str] | frozenset = frozenset(), track: bool = True
    ) -> tuple[str, list[str]]:
        """The memories to put before an agent's answer to `prompt`: strong matches among
        those `trust` admits (none when nothing stored is about it), not those in `skip`
        (shown earlier in the session), fitted to a few thousand characters. The block and
        the ids shown."""
        query = prompt.strip()[:PROMPT_QUERY_CHARS]
        if len(query) < 8 or query.startswith("/"):  # "yes", "go on", a slash command
            return "", []
        trust = self.trust()  # (found as if the memories not trusted were not stored)
        found = self.recall(query, limit=min(PROMPT_LIMIT + len(skip), 50),
            filters=Filters(trust=None if trust.everything else trust), track=False)  # fmt: skip
        strong = [
            r.memory for r in found.results if r.band == Band.STRONG and r.memory.id not in skip
        ]
        text, shown = prompt_block(strong[:PROMPT_LIMIT])
        if track and shown and not self._db.read_only:
            self.mark_used(shown)
        return text, shown

    def trust(self) -> Trust:
        """What agents are given unasked: the setting `inject_origins`, less the devices
        not approved here (issue 44), with the team spaces that allow it (issue 45)."""
        return trust_from(
            self._settings["inject_origins"], self.sync.unapproved_names(), self.spaces.injected()
        )

    def mark_used(self, ids: list[str]) -> None:
        """Count memories as recalled (printed, copied, injected)."""
        self._store.record_recall(ids)

    def get(self, memory_id: str, include_deleted: bool = True) -> Memory:
        """One memory by id or unique id prefix (saying what it superseded, if it did)."""
        return self._store.noting_changes([self._store.get(memory_id, include_deleted)])[0]

    def listing(
        self,
        filters: Filters | None = None,
        limit: int = 50,
        offset: int = 0,
        order: str = "updated_at DESC",
    ) -> list[Memory]:
        """A page of memories in a fixed order (newest change first by default)."""
        return self._store.listing(filters, order=order, limit=check_limit(limit), offset=offset)

    def recent(self, limit: int = 10) -> list[Memory]:
        """Pinned memories first, then the most recently changed (the popup's empty query)."""
        return self._store.recent(limit)

    def count(self, filters: Filters | None = None) -> int:
        """How many memories pass `filters` (live ones when none)."""
        return self._store.count(filters or Filters())

    def page(
        self,
        filters: Filters | None = None,
        order: str = "updated_at DESC",
        offset: int = 0,
        limit: int = 200,
    ) -> list[tuple[Memory, bool]]:
        """(memory, has current vectors) for one page of the manager's table."""
        return self._store.page(filters or Filters(), order, offset, limit, self.model.known_id())

    def embedded(self, ids: Iterable[str]) -> set[str]:
        """Which of these memories have vectors from the current model."""
        return self._store.vectors.embedded_ids(list(ids), self.model.known_id())

    def filter_values(self, limit: int = 500) -> dict[str, list[str]]:
        """The categories, tags, projects and sources in use (for filter lists)."""
        return self._store.distinct_values(limit)

    def overview(self) -> dict:
        """Counts and the model's name for a status bar, without loading the model."""
        return health.overview(self._db, self._store, self.model.known_id())

    # ---- writing (the write path is `writer.Writer`) ----------------------------------
    def similar(
        self,
        vectors: np.ndarray,
        exclude: str | None = None,
        minimum: float | None = None,
        k: int = 6,
    ) -> list[tuple[Memory, float]]:
        """Live memories whose best chunk is close to any of these vectors, closest first."""
        floor = self._settings["related_threshold"] if minimum is None else minimum
        return neighbours.similar(self.vector_index(), self._store, vectors, exclude, floor, k)

    def remember(
        self,
        text: str,
        *,
        title: str | None = None,
        category: str | None = None,
        tags: str | list[str] | None = None,
        project: str | None = None,
        reasoning: str | None = None,
        source: str = "manual",
        references: str | list[str] | None = None,
        confidence: str = "medium",
        merge: bool = False,
        force: bool = False,
        embed: bool = True,
        secrets: str = "refuse",
        link_similar: bool = False,
        thread: str | None = None,
        origin: Origin | None = None,
    ) -> RememberResult:
        """Store a memory, count it again, merge it or hold it back (`Writer.remember`);
        `origin`: who wrote it, as the front end knows (`app.core.origin`)."""
        return self._writer.remember(
            text, title, category, tags, project, reasoning, source, references, confidence,
            merge, force, embed, secrets, link_similar, thread, origin,
        )  # fmt: skip

    def merge(self, ids: list[str]) -> Memory:
        """Merge memories into a new one that keeps every distinct statement; the sources
        go to the trash linked to it (`unmerge` undoes it)."""
        return self._writer.merge(ids)

    def unmerge(self, merged_id: str) -> list[str]:
        """Undo a merge: its sources come back exactly as they were; the restored ids."""
        return self._writer.unmerge(merged_id)

    def edit(
        self,
        memory_id: str,
        *,
        title: str | None = None,
        text: str | None = None,
        reasoning: str | None = None,
        category: str | None = None,
        tags: str | list[str] | None = None,
        references: str | list[str] | None = None,
        source_project: str | None = None,
        confidence: str | None = None,
        pinned: bool | None = None,
        keywords: str | list[str] | None = None,
        thread: str | None = None,
        secrets: str = "refuse",
        embed: bool = True,
        expect: dict | None = None,
        origin: Origin | None = None,
    ) -> Memory:
        """Change the fields given (None: left as it is), checked like `remember`; `expect`:
        fields as the caller read them, else ConflictError; `origin`: who (`Writer.edit`)."""
        changes = dict(title=title, text=text, reasoning=reasoning, category=category, tags=tags,
            references=references, source_project=source_project, confidence=confidence,
            pinned=pinned, keywords=keywords, thread=thread)  # fmt: skip
        self.spaces.may_edit(memory_id, changes, secrets)  # (no secret into a shared one)
        return self._writer.edit(memory_id, secrets, embed, expect, origin, **changes)

    def history(self, memory_id: str) -> History:
        """A memory, its versions (newest first) and what a merge joined into it."""
        return self._store.history(memory_id)

    def restore_version(
        self, memory_id: str, seq: int, *, origin: Origin | None = None, embed: bool = True
    ) -> Memory:
        """A memory's words back to its version `seq` (`Writer.restore_version`); refused
        when they hold a secret and it is shared (`Spaces.may_restore`)."""
        self.spaces.may_restore(memory_id, seq)
        return self._writer.restore_version(memory_id, seq, origin, embed)

    def forget(self, ids: list[str]) -> list[str]:
        """Move memories to the trash."""
        return self._writer.forget(ids)

    def restore(self, ids: list[str]) -> list[str]:
        """Bring memories back from the trash."""
        return self._writer.restore(ids)

    def purge(self, ids: list[str]) -> int:
        """Delete memories for good, with their vectors (no undo)."""
        return self._writer.purge(ids)

    def empty_trash(self) -> int:
        """Delete every memory in the trash for good (no undo); how many."""
        return self._writer.empty_trash()

    # ---- the capture inbox ----------------------------------------------------------
    def capture(self, candidate: Candidate, auto: bool = False) -> tuple[str, str]:
        """A statement an agent's hook found: observed, stored (`auto`) or proposed for
        review (`Writer.capture`)."""
        return self._writer.capture(candidate, self._inbox, auto)

    def capture_imported(self, candidate: Candidate, keep: bool = True) -> str:
        """A statement read in an agent's file (`candidate.source`): captured like a hook's
        the first time, "known" when it came from that file before (else, without `keep`,
        "new": nothing written)."""
        known = self._inbox.imported(candidate.source, candidate.text)
        if known or not keep:
            return "known" if known else "new"
        what, _ = self._writer.capture(candidate, self._inbox, auto=False)
        self._inbox.record_import(candidate.source, candidate.text)
        return what

    def inbox_from(self, source: str) -> list[Candidate]:
        """The candidates waiting that were imported from the file `source`."""
        return self._inbox.from_source(source)

    def inbox(self, limit: int = 200, offset: int = 0) -> list[Candidate]:
        """Candidates waiting for review, newest first."""
        return self._inbox.pending(check_limit(limit), offset)

    def inbox_count(self) -> int:
        return self._inbox.count()

    def accept(
        self, ids: list[str], text: str | None = None, failed: list[str] | None = None
    ) -> list[RememberResult]:
        """Make candidates memories (one, with `text`, as the user edited it); they leave
        the inbox. NotFoundError for an id that waits there no more (nothing done). With
        `failed`, one that cannot be accepted (a stale proposal) waits on, said there ("ID:
        why"), and the others are accepted."""
        return self._writer.accept_all(self._candidates(ids), text, failed)

    def reject(self, ids: list[str]) -> int:
        """Say no to candidates: they go, and the same words are not proposed again."""
        found = self._candidates(ids)
        self._inbox.reject([c.id for c in found])
        return len(found)

    def _candidates(self, ids: list[str]) -> list[Candidate]:
        if not ids:
            raise InputError("name the candidates (ids from `mnemo inbox`)")
        return self._inbox.get(ids)

    # ---- files -----------------------------------------------------------------------
    def import_paths(
        self,
        paths_: Iterable[Path],
        progress: Callable[[int], None] | None = None,
        secrets: str = "refuse",
    ) -> transfer.ImportReport:
        """Import markdown files/folders and JSONL exports; what changed reaches the mirror.

        Embedding is left to `backfill` (the GUI's worker runs it next; the CLI right after).
        """
        mirror = "" if self._db.encrypted else self._settings["mirror_dir"]
        return transfer.import_into(self._store, paths_, progress, secrets, mirror)

    def export(
        self, fmt: str = "jsonl", include_trash: bool = False, plain: bool = False
    ) -> Iterator[str]:
        """The export, piece by piece (one line per memory for JSONL). `plain`: the user
        said yes to plain text out of an encrypted database."""
        transfer.refuse_plain_copy(self._db.encrypted, plain)
        return transfer.export(self._store, fmt, include_trash)

    def export_to(
        self,
        path: Path,
        fmt: str = "jsonl",
        include_trash: bool = False,
        progress: Callable[[int, int], None] | None = None,
        plain: bool = False,
    ) -> int:
        """Write an export to a file atomically; returns how many memories it holds."""
        transfer.refuse_plain_copy(self._db.encrypted, plain)
        return transfer.export_to(self._store, path, fmt, include_trash, progress)

    convert_model = staticmethod(loaded_model.convert)  # a BERT folder to a GGUF file

    def backfill(
        self,
        batch_size: int = 32,
        progress: Callable[[int, int], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
        count_total: bool = True,
        give_way: Callable[[], bool] | None = None,
    ) -> int:
        """Embed every live memory whose vectors are missing or stale; returns how many
        (`Indexer.backfill`: `should_stop` is asked between batches and slices, `give_way`
        also during a model's pass)."""
        return self._indexer.backfill(batch_size, progress, should_stop, count_total, give_way)

    def needs_backfill(self) -> bool:
        """Whether any live memory still lacks current vectors or keyword labels."""
        return self._indexer.needs_backfill()

    def duplicate_pairs(self, threshold: float | None = None, limit: int = 500) -> list[NearPair]:
        """Pairs of live memories whose meaning is nearly the same, closest first; pairs
        said not to be duplicates (`not_duplicates`) are left out."""
        index = self.vector_index()
        if index is None:
            raise ModelError(f"finding duplicates needs the model: {self.model_error}")
        floor = self._settings["duplicate_threshold"] if threshold is None else threshold
        return neighbours.near_pairs(index, self._store, floor, limit)

    def not_duplicates(self, a: str, b: str) -> None:
        """The user says these two are not duplicates: `duplicate_pairs` lists them no more."""
        for memory_id in (a, b):
            self._store.get(memory_id)  # NotFoundError for an unknown id
        if a == b:
            raise InputError("a memory is always a duplicate of itself")
        self._store.mark_not_duplicates(a, b)

    # ---- overview ------------------------------------------------------------------
    def stats(self) -> dict:
        """Counts, model and database facts for `mnemo stats` and the status bar."""
        snaps = self.vault.backups()
        newest = snaps[0].taken.isoformat() if snaps else None
        snapshots = {"count": len(snaps), "newest": newest}
        facts = health.stats(self._db, self._store, self.model.info)
        return {**facts, "encryption": self.vault.status(), "snapshots": snapshots}

    def health(self) -> list[tuple[bool, str]]:
        """(passed, description) for each `mnemo doctor` check."""
        problem = self._settings.problem
        settings = [(problem is None, f"settings: {problem or 'readable'}")]
        if self._settings["mirror_dir"]:
            mirror = knowledge.mirror_problem(self._settings["mirror_dir"])
            settings.append((mirror is None, f"mirror: {mirror or 'writable'}"))
        return settings + health.checks(self._db, self._store, self.meaning())

    def repair(self) -> tuple[int, int]:
        """Fix rows of the wrong types (or set them aside), rebuild the keyword index and
        every index (REINDEX), and drop a damaged vector copy (rebuilt from the database);
        returns (fixed, quarantined)."""
        index = self.vector_index()
        if index is not None and index.verify(self._store) is not None:
            index.drop_copy()
        return health.repair(self._db)

    # ---- encryption at rest and snapshots (`engine.vault`, ADR 0014) -------------------
    def _forget_reads(self) -> None:
        """What was read from the database goes (it is let go of for a switch)."""
        self.model.forget_index()
        self._live_count = None

    def hand_off(self) -> bool:
        """Let go of the database while another process replaces it (`Vault.hand_off`)."""
        return self.vault.hand_off()

    # (need no open database: the tray asks them before one can be opened)
    keyring_available = staticmethod(vault.keyring_available)
    sealed_by_passphrase = staticmethod(vault.sealed_by_passphrase)
    give_passphrase = staticmethod(vault.give_passphrase)
    unlock = staticmethod(vault.unlock)

    @property
    def database_path(self) -> Path:
        """The database file this engine uses."""
        return self._db.path

    @property
    def read_only(self) -> bool:
        """Whether the database can only be read."""
        return self._db.read_only

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *_exc) -> None:
        self.close()

    def close(self) -> None:
        """Free the model (if this engine loaded it) and close the database; the vectors
        added since start go to the copy the next start maps. Closing twice is harmless."""
        self.model.close()
        self._db.close()
