"""The one engine thread: every front end's engine work runs here, one call at a time.

A front end (the desktop app through `gui/worker.py`, the MCP server) makes one Runner. It
owns the Engine (connection and model) on its thread, and:

- runs `submit(fn)` calls by priority (a search before a page before the backfill), each
  returning a `concurrent.futures.Future` whose exception is the typed error
  (ConflictError, NotFoundError, ...); on a `channel` a newer call supersedes an older one
  that has not run yet (its future is cancelled);
- embeds what lacks vectors in small batches when nothing else waits (the backfill), after
  the model loads, after every write, and when another process wrote; a long text is
  embedded slice by slice there, so a search waits one chunk at most (`embed_now` is the one
  rule for what a write embeds at once);
- tells its `Listener` what happened: the model's state, backfill progress, each write's
  `Change`, writes by other processes (`PRAGMA data_version`) and settings they saved;
- does the database's background work (sync passes, the periodic snapshot) when its
  process is the one that does (`duties.py`: one process per database, the others take over
  within a poll when it ends), and otherwise tells its listener of the owner's passes.

The listener's methods run on the runner's thread: a Qt front end turns them into signals
(`gui/worker.py`), never touching a widget there.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from app.core import duties
from app.core.duties import Duties
from app.core.engine import Engine, SettingsChange
from app.core.errors import LockedError, MnemoError
from app.core.indexer import LONG_TEXT_CHARS
from app.core.memory import Change
from app.core.settings import MODEL_KEYS
from app.core.sync.state import Pass

log = logging.getLogger(__name__)

INTERACTIVE, NORMAL, BACKGROUND = 0, 1, 2
# Short notes a backfill step embeds: with labels from the same pass, 2 at a time embed as
# fast as 32 (165 notes/s) and a search waits for at most two notes' decode.
BACKFILL_BATCH = 2
RECOUNT_S = 0.5  # how often a backfill counts what is missing again (two index counts)
GIVE_WAY_IN_ROW = 3
EXTERNAL_POLL_S = 2.0  # how often the runner asks whether another process wrote
SNAPSHOT_LOOK_S = 600.0  # how often it looks whether the periodic snapshot is due
_STOP, _LOAD, _BACKFILL, _RETRY = "stop", "load", "backfill", "retry"  # the runner's own jobs


def embed_now(chars: int) -> bool:
    """The one rule for every front end: a write of up to LONG_TEXT_CHARS characters is
    embedded as it is stored (its near-duplicates found at once); a longer one is stored at
    once and embedded by the backfill, slice by slice between other work."""
    return chars <= LONG_TEXT_CHARS


class Listener:
    """What a runner reports, on its own thread; a front end overrides what it shows."""

    def model_moved(self, state: str, detail: str) -> None:
        """ "loading" | "ready" | "unavailable" | "locked" (the database is encrypted and
        its key is not at hand: `Runner.retry_open` once it is), and a detail."""

    def backfill_moved(self, done: int, total: int) -> None:
        """Memories embedded so far of those waiting (0, 0 when the backfill is done)."""

    def wrote(self, changes: list[Change]) -> None:
        """A write made through this runner finished (or the backfill added vectors): what
        it changed, one Change per kind, in one report."""

    def written_elsewhere(self, changes: list[Change]) -> None:
        """Another process (the CLI, an agent, the desktop app) wrote to the database: what
        it changed, read from the database's journal (one Change per kind)."""

    def synced(self, summary: dict) -> None:
        """A sync pass ran (`engine.sync.now`): {"written", "read", "applied", "conflicts",
        "problem"} (problem: why it could not run, or "")."""

    def settings_taken(self, keys: list[str]) -> None:
        """Settings another process saved were taken."""

    def members_joined(self, joined: list[dict]) -> None:
        """Devices joined a team space since this process started, not told of before here
        (`Spaces.joined_since`: {"space", "device", "person", "at"}), whichever process's
        pass saw them."""

    def removals_held(self, held: list[dict]) -> None:
        """Removals en masse in a team space wait for a person, not told of before here
        (`Spaces.held_now`: {"space", "member", "memories", "hold"}), whichever process's
        pass held them."""


def _thread(target: Callable[[], None], name: str) -> Any:
    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.start()
    return thread


class Runner:
    """Owns the Engine on one thread; front ends `submit` work and get futures back."""

    def __init__(
        self,
        engine_factory: Callable[[], Engine] = Engine,
        listener: Listener | None = None,
        start_thread: Callable[[Callable[[], None], str], Any] = _thread,
        load_model: bool = True,
        close_engine: bool = True,
        kind: str = "app",
    ):
        self._factory = engine_factory
        self.listener = listener or Listener()
        self._start_thread = start_thread
        self._load_first = load_model  # load the model at start (else on first use)
        self._close_engine = close_engine  # False: the engine was handed in, its owner closes
        self.kind = kind  # what this process is, for `duties.py`: app, mcp, helper, cli
        self._duties: Duties | None = None  # made once the engine is open
        self._stand_in: Duties | None = None  # for an owner that is stopped
        self._cannot_open = False  # the database could not be opened again after a switch
        self._state_before = ("loading", "")  # the model's state when that happened
        self._heard: dict[str, str] = {}  # the last pass told of, by the record it was in
        self._born = time.time()  # passes recorded before this are not news here
        self._sync_asked = False  # a person asked for a pass (runs here, owner or not)
        self._space_mark: tuple = ()  # `Spaces.mark` as the last pass over the spaces left it
        self._space_problem = ""  # why the last one could not run, said once
        self._holds_told: set[str] = set()  # the removals held in spaces, told of once
        self._joins_told = self._born  # the last join into a space told of (its time)
        self._queue: queue.PriorityQueue = queue.PriorityQueue()
        self._order = itertools.count()
        self._latest: dict[str, concurrent.futures.Future] = {}
        self._lock = threading.Lock()
        self._stopping = False
        self._backfill_total = 0
        self._backfill_done = 0
        self._recount_at = 0.0  # when the backfill counts what is missing again
        self._backfill_queued = False
        self._given_way = 0  # backfill passes given up in a row
        self._seen_version: int | None = None
        self._journal = 0  # the last journal entry read (`Engine.changes_since`)
        self._next_poll = 0.0
        self._next_snapshot_look = time.monotonic() + 60.0  # not in the way of a start
        self._sync_mark: tuple | None = None  # where the last sync pass left off
        self._sync_problem = ""  # why the last pass could not run (said once)
        self._handle: Any = None
        self.poll_s = EXTERNAL_POLL_S
        self.thread_ident: int | None = None
        self.engine: Engine | None = None
        self.model_state = ("loading", "")  # the last state reported, for views opened later
        self.model_id = ""  # the loaded model's id (`mnemo status`)
        self.stopped = threading.Event()

    def start(self) -> None:
        """Start the thread (once)."""
        if self._handle is None:
            self._handle = self._start_thread(self._run, "mnemo-engine")

    # ---- work from front ends --------------------------------------------------------
    def submit(
        self,
        fn: Callable[[Engine], Any],
        priority: int = NORMAL,
        channel: str | None = None,
        writes: bool | Change = False,
    ) -> concurrent.futures.Future:
        """Queue `fn(engine)`. `writes`: what it changes (a Change; True: content of any
        memory), reported to the listener after it ran, and followed by the backfill."""
        future: concurrent.futures.Future = concurrent.futures.Future()
        if self._stopping:
            future.set_exception(MnemoError("Mnemo is shutting down"))
            return future
        with self._lock:
            if channel:
                older = self._latest.get(channel)
                if older is not None:
                    older.cancel()  # not run yet: never will be; running: its result is moot
                self._latest[channel] = future
        self._queue.put((priority, next(self._order), fn, future, writes))
        return future

    def apply_settings(self, values: dict[str, Any]) -> concurrent.futures.Future:
        """Hand new settings to the engine (their one owner); a model change reloads it."""

        def apply(engine: Engine) -> SettingsChange:
            before = self.model_state
            if set(values) & set(MODEL_KEYS):
                self._model_is("loading", "")
            try:
                change = engine.apply_settings(values)
            except BaseException:
                self._model_is(*before)  # refused: the model in use did not change
                raise
            if change.model_reloaded:
                self._backfill_total = 0  # another model: count the work again
                self._load_model()
            elif self.model_state != before:
                self._model_is(*before)  # the same model after all
            return change

        return self.submit(apply, INTERACTIVE, writes=Change("settings"))

    def reload_model(self) -> concurrent.futures.Future:
        """Load the model again, then re-embed what is stale."""
        self._model_is("loading", "")

        def reload(engine: Engine) -> None:
            engine.model.reload()
            self._load_model()

        return self.submit(reload, NORMAL)

    def refresh_settings(self) -> None:
        """Take settings another process saved now, not at the next call."""
        self.submit(lambda engine: None, INTERACTIVE, channel="refresh-settings")

    def backfill(self) -> None:
        """Embed what is missing or stale, in small batches behind everything else."""
        with self._lock:
            if self._backfill_queued or self._stopping:
                return
            self._backfill_queued = True
        self._queue.put((BACKGROUND, next(self._order), _BACKFILL, None, False))

    def stop(self, timeout: float = 10.0) -> bool:
        """Finish the current call (or backfill batch), close the engine, end the thread;
        whether it ended within `timeout`. Calls still queued fail as cancelled."""
        self._stopping = True
        self._queue.put((-1, next(self._order), _STOP, None, False))
        if self._handle is None:
            return True
        return self.stopped.wait(timeout)

    # ---- the thread ------------------------------------------------------------------
    def _run(self) -> None:
        self.thread_ident = threading.get_ident()
        try:
            self._serve()
        finally:
            self._cancel_waiting()
            self.stopped.set()

    def _serve(self) -> None:
        if not self._open_engine():
            return
        if self._load_first:
            self._model_is("loading", "")
            # The model loads as the first background job; searches queued meanwhile run first
            self._queue.put((NORMAL, next(self._order), _LOAD, None, False))
        try:
            while True:
                wait = max(0.0, self._next_poll - time.monotonic())
                try:
                    item = self._queue.get(timeout=wait)
                except queue.Empty:
                    item = None
                if time.monotonic() >= self._next_poll:  # between calls, also when busy
                    self._look_around()
                    self._next_poll = time.monotonic() + self.poll_s
                if item is None:
                    continue
                _, _, fn, future, writes = item
                if fn == _STOP:
                    break
                if fn == _RETRY:  # open already: the file a switch left is tried again
                    if self._cannot_open:
                        self._let_go_if_asked()
                    continue
                if fn == _LOAD:
                    self._load_model()
                elif fn == _BACKFILL:
                    self._backfill_step()
                else:
                    self._call(fn, future, writes)
        finally:
            self._let_go_of_duties()  # the next process to look takes the work over
            if self._close_engine:
                self.engine.close()

    def _look_around(self) -> None:
        """What the runner does at each poll: let go of a database being replaced, notice
        other processes' writes, and the background work when it is this process's. A bug
        here is logged and the thread goes on serving (a record planted in the duties file
        once stopped a server for good)."""
        try:
            if self._let_go_if_asked() is not None:
                return  # nothing to look at until the file a switch left opens (locked)
            self._notice_elsewhere()
            # (one stat) an idle owner syncs where it was set up; a model changed there is
            # loaded at its first use when none is in use here (an idle MCP server)
            self._refresh_settings(load_model=bool(self.model_id))
            owner = self._owns_duties()
            if owner:
                self._snapshot_if_due()
            self._sync_if_due(owner)
            if owner:
                self._spaces_if_due()
            self._tell_space_news()
        except Exception:
            log.exception("a background look failed")

    def _open_engine(self) -> bool:
        """Make the engine; while the database is locked (encrypted, its key not at hand) or
        cannot be opened, report "locked" or "unavailable" and fail calls with why. Each new
        call (or `retry_open`: the tray's Unlock) tries again first: the key may be at hand
        now (`mnemo unlock`, a keyring unlocked, a passphrase typed), the file repaired.
        Whether there is an engine to serve with."""
        while True:
            try:
                self.engine = self._factory()
                self._journal = self.engine.journal_head()
                return True
            except MnemoError as exc:  # locked, or damaged, read-only, on a full disk...
                self._model_is(
                    "locked" if isinstance(exc, LockedError) else "unavailable", str(exc)
                )
                self._fail_waiting(exc)
            while True:
                item = self._queue.get()
                if item[2] == _STOP:
                    return False
                if item[2] in (_LOAD, _BACKFILL):  # asked again once open
                    self._backfill_queued = False
                    continue
                if item[2] != _RETRY:
                    self._queue.put(item)  # served once open, or failed with why
                break

    def _fail_waiting(self, exc: MnemoError) -> None:
        """Fail every call waiting with why the database cannot be opened (a stop stays)."""
        stop = False
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item[2] == _STOP:
                stop = True
            elif item[3] is not None and item[3].set_running_or_notify_cancel():
                item[3].set_exception(exc)
        self._backfill_queued = False
        if stop:
            self._queue.put((-1, next(self._order), _STOP, None, False))

    def retry_open(self) -> None:
        """Try to open a locked database again (a passphrase was given, a keyring unlocked)."""
        self._queue.put((INTERACTIVE, next(self._order), _RETRY, None, False))

    def _cancel_waiting(self) -> None:
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            future = item[3]
            if future is not None:
                future.cancel()

    def _call(self, fn, future: concurrent.futures.Future, writes) -> None:
        if not future.set_running_or_notify_cancel():
            return  # superseded (or cancelled by its caller) while it waited
        problem = self._let_go_if_asked()
        if problem is not None:
            future.set_exception(problem)
            return
        self._refresh_settings()
        try:
            result = fn(self.engine)
        except MnemoError as exc:
            future.set_exception(exc)
            return
        except Exception as exc:  # a bug: logged with its traceback; the caller says it
            log.exception("engine call failed")
            future.set_exception(exc)
            return
        future.set_result(result)
        if writes:
            # What the database says the call changed (ids and kinds); what it keeps no
            # journal of (settings, pairs said not to be duplicates) as the caller declared.
            declared = writes if isinstance(writes, Change) else Change("content")
            changes = self._read_journal() or [declared]
            try:
                self.listener.wrote(changes)
            except Exception:
                log.exception("reporting a change failed")
            if any(c.needs_embedding for c in changes):
                self.backfill()
            self._sync_if_due()  # a change made here goes to the sync folder at once (by
            # this process when it does the background work, else at the owner's next poll)

    def _let_go_if_asked(self) -> MnemoError | None:
        """Let go of the database while another process replaces it (`mnemo encrypt`, a
        restore: `storage/handoff.py`), then tell the listener everything may have changed;
        the problem if the new file cannot be opened (a key not at hand)."""
        try:
            if not self.engine.hand_off():
                self._cannot_open = False
                return None
            self._journal = self.engine.journal_head()
            self._seen_version = None
        except MnemoError as exc:
            if not self._cannot_open:
                log.warning("the database cannot be opened again after a switch: %s", exc)
                self._state_before = self.model_state
            state = "locked" if isinstance(exc, LockedError) else "unavailable"
            if self.model_state != (state, str(exc)):  # said once, and again when it changes
                self._model_is(state, str(exc))  # (a wrong passphrase typed)
            self._cannot_open = True  # the background work goes to a process that can
            self._let_go_of_duties()
            return exc
        if self._cannot_open:
            self._model_is(*self._state_before)  # unlocked: as it was before the switch
        self._cannot_open = False
        self.listener.written_elsewhere([Change("content")])
        if self.model_id:
            self.backfill()
        return None

    def _snapshot_if_due(self) -> None:
        """Take the periodic snapshot when it is due (looked at every few minutes)."""
        if time.monotonic() < self._next_snapshot_look:
            return
        self._next_snapshot_look = time.monotonic() + SNAPSHOT_LOOK_S
        try:
            self.engine.vault.backup_if_due()
        except MnemoError as exc:
            log.warning("the periodic snapshot was not taken: %s", exc)
        except OSError as exc:
            log.warning("the periodic snapshot was not taken: %s", exc.strerror or exc)

    def _owns_duties(self) -> bool:
        """Whether this process does the database's background work (taking it over when
        no process does, and standing in for an owner that is stopped); never while its
        database cannot be opened."""
        if self._cannot_open:
            return False
        if self._duties is None:
            database = self.engine.database_path
            self._duties = Duties(database, self.kind)
            self._stand_in = Duties(database, self.kind, ".duties-standin")
        if self._duties.held():
            self._stand_in.let_go()
            return True
        record = duties.read(self.engine.database_path)
        if record and record.get("stopped"):  # Ctrl+Z on its agent: one other stands in
            if self._stand_in.held():
                return True
        else:
            self._stand_in.let_go()
        return False

    def _let_go_of_duties(self) -> None:
        for claim in (self._duties, self._stand_in):
            if claim is not None:
                claim.let_go()

    def sync_soon(self) -> None:
        """A sync pass at the next poll, whether or not anything moved (the tray's Sync
        now; any thread): run here, whichever process does the background work."""
        self._sync_mark = None
        self._sync_asked = True
        self._next_poll = 0.0
        self._queue.put((NORMAL, next(self._order), _RETRY, None, False))

    def look_soon(self) -> None:
        """Look at the next poll whether a sync pass is due (the sync folder changed; any
        thread): made by the process that does the background work."""
        self._next_poll = 0.0
        self._queue.put((NORMAL, next(self._order), _RETRY, None, False))

    def _sync_if_due(self, owner: bool | None = None) -> None:
        """A sync pass when this database or the sync folder moved since the last one (at
        start too), by the process that does the background work (or where a person asked
        for one): a change here is written within a poll, one that arrived is applied. The
        other processes hear of the owner's passes. `owner`: whether this process does the
        background work, when the caller asked already this poll."""
        try:
            if not self.engine.sync.configured():
                return
        except (MnemoError, OSError) as exc:
            self._sync_failed(None, exc)
            return
        if owner is None:
            owner = self._owns_duties()
        if not self._sync_asked and not owner:
            self._follow_owner()
            return
        self._sync_asked = False
        try:
            mark = self.engine.sync.mark()
        except (MnemoError, OSError) as exc:
            self._sync_failed(None, exc)
            return
        if mark == self._sync_mark:
            return
        try:
            result = self.engine.sync.now()
            # Where the folder stood before the pass, not after: a log another device grew
            # while the pass ran would be taken for seen and wait for the next move. The
            # journal's part says what waits to be written, which the pass settled in its
            # own transactions (a write made since moves it again).
            self._sync_mark = self.engine.sync.settled(mark)
        except (MnemoError, OSError) as exc:
            self._sync_failed(mark, exc)
            return
        self._sync_problem = ""
        self._tell_pass(result.summary())
        if result.applied:
            self.listener.written_elsewhere(self._read_journal() or [Change("content")])
            if self.model_id:
                self.backfill()

    def _spaces_if_due(self) -> None:
        """A pass over the team spaces this device is in, by the process doing the
        background work, when another member's file moved or a shared memory changed here
        (`Spaces.mark`): what a member shared arrives, an edit made here goes out, without
        `mnemo space sync`. A folder that cannot be read is said once by the pass."""
        try:
            mark = self.engine.spaces.mark()
            if not mark or mark == self._space_mark:
                return
            reports = self.engine.spaces.sync_all()
            # the shared memories and this device's own files as the pass left them, the
            # others' files as they were before it (one another member wrote meanwhile is due)
            after = self.engine.spaces.mark()
            self._space_mark = (after[:1] or ((),)) + mark[1:2] + after[2:]
        except (MnemoError, OSError) as exc:
            if str(exc) != self._space_problem:
                self._space_problem = str(exc)
                log.info("team spaces: %s", exc)
            return
        self._space_problem = ""
        if any(r.get("applied") or r.get("withdrawn") for r in reports):
            self.listener.written_elsewhere(self._read_journal() or [Change("content")])
            if self.model_id:
                self.backfill()

    def _tell_space_news(self) -> None:
        """Tell the listener of each removal en masse held in a space and each device that
        joined one, not told of before: read from the database, so whichever process's
        pass saw it (this one's, an MCP server's, `mnemo space sync`); a hold once while it
        waits, again when it grows; a join once, if it came after this process started."""
        try:
            held = self.engine.spaces.held_now()
            joined = self.engine.spaces.joined_since(self._joins_told)
        except MnemoError as exc:
            log.info("cannot read the news of the spaces: %s", exc)
            return
        new = [h for h in held if h["hold"] not in self._holds_told]
        self._holds_told = {h["hold"] for h in held}
        if new:
            self.listener.removals_held(new)
        if joined:
            self._joins_told = max(j["at"] for j in joined)
            self.listener.members_joined(joined)

    def _tell_pass(self, summary: dict) -> None:
        """Tell the listener of a pass made here, and the other processes when this one
        does the background work."""
        owner = self._duties is not None and bool(self._duties.note_pass(summary))
        standing_in = not owner and self._stand_in is not None and self._stand_in.holding
        if standing_in:  # (in its own file: the stopped owner's record stays its own)
            self._stand_in.note_pass(summary)
        log.info(
            "sync pass (%s): wrote %d, read %d, applied %d%s",
            "this process does the background work"
            if owner
            else "standing in for a stopped owner"
            if standing_in
            else "asked for here",
            summary["written"],
            summary["read"],
            summary["applied"],
            f"; {summary['problem']}" if summary["problem"] else "",
        )
        self.listener.synced({**summary, "by": self.kind, "here": True})

    def _follow_owner(self) -> None:
        """Tell the listener of a pass the process doing the background work made (or the
        one standing in for it while it is stopped): a device waiting, removals held, a
        problem, once each."""
        for suffix in (".duties", ".duties-standin"):
            record = duties.read(self.engine.database_path, suffix)
            last = (record or {}).get("last_pass")
            if not last or last["n"] == self._heard.get(suffix):
                continue
            before = suffix not in self._heard and last["at"] < self._born
            self._heard[suffix] = last["n"]
            if before and not last["problem"]:
                continue  # (from before this process started: said already, or in status)
            summary = {k: last[k] for k in Pass().summary()}
            self.listener.synced({**summary, "by": record["kind"], "here": False})

    def _sync_failed(self, mark: tuple | None, exc: Exception) -> None:
        """Say once why sync cannot run (a folder not mounted); tried again at the next
        poll, or when something moved."""
        text = (
            str(exc) if isinstance(exc, MnemoError) else (getattr(exc, "strerror", "") or str(exc))
        )
        self._sync_mark = mark
        if self._sync_problem != text:
            self._sync_problem = text
            log.warning("sync: %s", text)
            self._tell_pass(Pass().summary(problem=text))

    def _model_is(self, state: str, detail: str) -> None:
        self.model_state = (state, detail)
        self.listener.model_moved(state, detail)

    def _read_journal(self) -> list[Change]:
        """What changed in the database since the last look, whoever wrote it (one Change per
        kind; one that reaches every memory when the journal no longer goes back so far)."""
        try:
            self._journal, changes = self.engine.changes_since(self._journal)
        except MnemoError as exc:
            log.info("cannot read what changed: %s", exc)
            return []
        return [Change("content")] if changes is None else changes

    def _notice_elsewhere(self) -> None:
        """Whether another process wrote since the last look: then the listener is told
        what, and what it left without vectors is embedded (`mnemo import --no-embed`)."""
        try:
            version = self.engine.changed_elsewhere()
        except MnemoError as exc:
            log.info("cannot tell whether another process wrote: %s", exc)
            return
        seen, self._seen_version = self._seen_version, version
        if seen is None or version == seen:
            return
        changes = self._read_journal()
        if not changes:  # read already, with a write of this process's
            return
        self.listener.written_elsewhere(changes)
        written = any(c.needs_embedding for c in changes)
        if written and self.model_id and self.engine.needs_backfill():  # (never loads a model)
            self.backfill()

    def _refresh_settings(self, load_model: bool = True) -> None:
        """Take settings another process saved (`mnemo settings`, `mnemo model use`)."""
        try:
            change = self.engine.refresh_settings(load_model)
        except MnemoError as exc:
            log.warning("settings not reloaded: %s", exc)
            return
        if change.model_reloaded and load_model:
            self._backfill_total = 0
            self._load_model()
        if change.changed:
            self.listener.settings_taken(list(change.changed))

    def _load_model(self) -> None:
        embedder = self.engine.embedder
        if embedder is None:
            self.model_id = ""
            self._model_is("unavailable", self.engine.model_error or "")
            return
        # The first search then finds the vectors mapped (a second at 1M memories): queued
        # before the model is said ready, so what waits for "ready" queues behind it
        self.submit(lambda engine: engine.model.prepare(), BACKGROUND)
        self.model_id = embedder.info.model_id
        self._model_is("ready", f"{embedder.info.name} ({embedder.info.dimension}d)")
        self.backfill()

    def _someone_waits(self) -> bool:
        """Whether an interactive call that is still wanted (or the stop) is queued (asked
        during a model's pass, with the queue's lock held for a look)."""
        if self._stopping:
            return True
        with self._queue.mutex:
            return any(
                priority <= INTERACTIVE and (future is None or not future.cancelled())
                for priority, _, _, future, _ in self._queue.queue
            )

    def _backfill_step(self) -> None:
        with self._lock:
            self._backfill_queued = False
        engine = self.engine
        if self._stopping or self._cannot_open or engine.embedder is None:
            return  # (locked after a switch: asked again once it opens)
        if self._backfill_total == 0 and not engine.needs_backfill():
            return  # nothing to embed: nothing counted (a LIMIT 1 query, not a count)
        if self._backfill_total == 0:
            counts = engine.vector_status()
            self._backfill_total = counts.get("missing", 0) + counts.get("stale", 0)
            self._backfill_done = 0

        def progress(done: int, _total: int) -> None:
            done += self._backfill_done
            if done >= self._backfill_total or time.monotonic() >= self._recount_at:
                # what arrived meanwhile counts too: "done" only when nothing is missing
                # (counted once, the tray said "3188/3188" with 1,708 still missing)
                self._backfill_total = done + engine.model.missing()
                self._recount_at = time.monotonic() + RECOUNT_S
            self.listener.backfill_moved(done, max(self._backfill_total, done))

        given_way_before = engine.embedder.given_way
        try:
            done = engine.backfill(
                batch_size=BACKFILL_BATCH,
                progress=progress,
                count_total=False,
                # Yield after each batch (a slice of a long text) when anything else waits,
                # and give up the model's pass half way when someone waits (a search, a
                # prompt): it is done again next time.
                should_stop=lambda: self._stopping or not self._queue.empty(),
                # (after GIVE_WAY_IN_ROW passes given up in a row, one is finished: calls
                # arriving faster than a pass never leave the backfill without progress)
                give_way=self._someone_waits if self._given_way < GIVE_WAY_IN_ROW else None,
            )
        except MnemoError as exc:
            log.warning("backfill stopped: %s", exc)
            return
        gave_way = engine.embedder.given_way > given_way_before
        self._given_way = self._given_way + 1 if gave_way and not done else 0
        self._backfill_done += done
        self._read_journal()  # its labels: the progress and the last Change say it
        if engine.needs_backfill() and not self._stopping:
            self.backfill()
        else:
            self._backfill_total = 0
            self.listener.backfill_moved(0, 0)
            if done:
                self.listener.wrote([Change("content")])  # new vectors: results may change
