"""The engine worker: one thread owns the model and every write; the GUI only sends requests.

Requests wait in a priority queue, so a query from the popup goes ahead of backfill, which
runs in small batches and yields as soon as anything else is waiting. Results come back as
Qt signals, which Qt delivers in the GUI thread; the worker never touches a widget.

Front ends use `call(fn, done, failed)`: `fn(engine)` runs on the worker, then `done(result)`
or `failed(message)` runs on the GUI thread. Read every widget value before calling, never
inside `fn` (Anki's CollectionOp rule).
"""

from __future__ import annotations

import collections
import itertools
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from app.core.engine import Engine, SettingsChange
from app.core.errors import MnemoError
from app.core.memory import Change
from app.core.settings import MODEL_KEYS
from app.gui.qt import QtCore, Signal

log = logging.getLogger(__name__)

INTERACTIVE, NORMAL, BACKGROUND = 0, 1, 2


class Failure(str):
    """What a failed request gives its `failed` callback: the message for the user (a str,
    shown as it is) carrying the typed error in `error` (ConflictError, NotFoundError, ...;
    None for a bug), so views branch on the type, never on the wording."""

    error: Exception | None

    def __new__(cls, message: str, error: Exception | None = None) -> Failure:
        failure = super().__new__(cls, message)
        failure.error = error
        return failure


# Short notes a backfill step embeds: with labels from the same pass, 2 at a time embed as
# fast as 32 (165 notes/s) and a search waits for at most two notes' decode.
BACKFILL_BATCH = 2
EXTERNAL_POLL_S = 2.0  # how often the worker asks whether another process wrote
MAX_KEPT_RESULTS = 256


class _Loop(QtCore.QThread):
    """Runs one function on a Qt-created thread."""

    def __init__(self, target, name: str):
        super().__init__()
        self._target = target
        self.setObjectName(name)

    def run(self) -> None:
        self._target()


class Worker(QtCore.QObject):
    """Runs engine calls on its own thread; every result arrives as a signal."""

    # Only ids and strings cross threads: PySide6 can drop references to Python objects
    # (even None) carried by queued signals. The owner of a request fetches its result.
    finished = Signal(int)  # request id of a kept request: `result(request_id)` has the value
    failed = Signal(int, str)  # request id, message for the user
    modelState = Signal(str, str)  # "loading" | "ready" | "unavailable", detail
    backfillProgress = Signal(int, int)  # done, total (0, 0 when finished)
    changed = Signal()  # memories were written (anything but a use): views should refresh
    changes = Signal(str)  # after every write: Change.to_json(), its kind and memory ids
    progress = Signal(str, int, int)  # job, done, total (0 = unknown) for imports, exports
    settingsChanged = Signal(str)  # comma-separated keys another process changed on disk
    changedElsewhere = Signal()  # another process (the CLI, an agent) wrote to the database

    def __init__(
        self, engine_factory: Callable[[], Engine] = Engine, parent=None, start: bool = True
    ):
        super().__init__(parent)
        self._factory = engine_factory
        self._queue: queue.PriorityQueue = queue.PriorityQueue()
        self._ids = itertools.count(1)
        self._order = itertools.count()
        self._latest: dict[str, int] = {}
        self._lock = threading.Lock()
        self._stopping = False
        self._backfill_total = 0
        self._backfill_done = 0
        self._backfill_queued = False
        self._results: collections.OrderedDict[int, Any] = collections.OrderedDict()
        self._errors: dict[int, Exception] = {}  # the typed error of each failed request
        self._keep: set[int] = set()  # requests whose result someone will come for
        self.thread_ident: int | None = None
        self.poll_s = EXTERNAL_POLL_S
        self.model_state = ("loading", "")  # the last modelState, for views opened later
        self._next_poll = 0.0
        self._seen_version: int | None = None
        self.engine: Engine | None = None
        self.model_id = ""  # the loaded model's id, for `mnemo status`
        # GUI-thread bookkeeping of `call`: request id -> (done, failed) callbacks.
        self._callbacks: dict[int, tuple[Callable | None, Callable | None]] = {}
        self._channel_requests: dict[str, int] = {}
        self.finished.connect(self._deliver_result)
        self.failed.connect(self._deliver_failure)
        # A QThread, not a threading.Thread: PySide6 (6.8+) may corrupt reference counts
        # when signals are emitted from threads Qt did not create (PYSIDE-3124).
        self._thread = _Loop(self._run, "mnemo-engine")
        if start:
            self.start()

    def start(self) -> None:
        """Start the thread. Connect to the signals first: a queued signal emitted before a
        slot is connected never reaches it (the model's "ready" would be lost)."""
        if not self._thread.isRunning():
            self._thread.start()

    # ---- requests from the GUI -----------------------------------------------------
    def submit(
        self,
        fn: Callable[[Engine], Any],
        priority: int = NORMAL,
        channel: str | None = None,
        writes: bool | Change = False,
        keep: bool = True,
    ) -> int:
        """Queue `fn(engine)`; returns the request id its result will carry.

        Requests on the same `channel` supersede each other: only the newest runs. With
        `keep`, the result waits for `result(request)`; without, it is dropped. `writes`
        says what a write changes (a Change; True: content, of any memory).
        """
        request = next(self._ids)
        with self._lock:
            if channel:
                self._latest[channel] = request
            if keep:
                self._keep.add(request)
        self._queue.put((priority, next(self._order), request, fn, channel, writes))
        return request

    def call(
        self,
        fn: Callable[[Engine], Any],
        done: Callable[[Any], None] | None = None,
        failed: Callable[[str], None] | None = None,
        priority: int = NORMAL,
        channel: str | None = None,
        writes: bool | Change = False,
    ) -> int:
        """Queue `fn(engine)`; `done(result)` or `failed(message)` then runs on the GUI thread.

        Call from the GUI thread. On a `channel`, a newer call supersedes an older one that
        has not run yet: the older one's callbacks are dropped.
        """
        wanted = done is not None or failed is not None
        request = self.submit(fn, priority, channel, writes, keep=wanted)
        if channel:
            older = self._channel_requests.get(channel)
            if older is not None and self._callbacks.pop(older, None) is not None:
                with self._lock:  # it may be running already: its result is not wanted
                    self._keep.discard(older)
                    self._results.pop(older, None)
            self._channel_requests[channel] = request
        if done is not None or failed is not None:
            self._callbacks[request] = (done, failed)
        return request

    def _deliver_result(self, request: int) -> None:
        callbacks = self._callbacks.pop(request, None)
        if callbacks is None:
            return
        result = self.result(request)
        if callbacks[0] is not None:
            try:
                callbacks[0](result)
            except Exception:  # a bug in a view: log it, keep the app running
                log.exception("handling the result of request %s failed", request)

    def _deliver_failure(self, request: int, message: str) -> None:
        with self._lock:
            error = self._errors.pop(request, None)
        callbacks = self._callbacks.pop(request, None)
        if callbacks is None:
            return
        if callbacks[1] is not None:
            try:
                callbacks[1](Failure(message, error))
            except Exception:
                log.exception("handling the failure of request %s failed", request)

    def apply_settings(
        self,
        values: dict[str, Any],
        done: Callable[[SettingsChange], None] | None = None,
        failed: Callable[[str], None] | None = None,
    ) -> int:
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

        return self.call(apply, done, failed, INTERACTIVE)

    def search(
        self,
        query: str,
        mode: str | None,
        limit: int,
        prefix: bool = False,
        channel: str = "search",
        done: Callable[[Any], None] | None = None,
        failed: Callable[[str], None] | None = None,
    ) -> int:
        """A recall that does not count as use (the GUI counts copies instead)."""
        return self.call(
            lambda e: e.recall(query, mode=mode, limit=limit, track=False, prefix=prefix),
            done,
            failed,
            INTERACTIVE,
            channel,
        )

    def backfill(self) -> None:
        """Embed what is missing or stale, in small batches behind everything else."""
        with self._lock:
            if self._backfill_queued:
                return
            self._backfill_queued = True
        self._queue.put((BACKGROUND, next(self._order), 0, None, "backfill", False))

    def result(self, request: int) -> Any:
        """Take the result of a finished request (once)."""
        with self._lock:
            return self._results.pop(request, None)

    def refresh_settings(self) -> None:
        """Take settings another process saved (`mnemo settings KEY VALUE`) now, not at the
        next request: every request starts by reading them (`_refresh_settings`)."""
        self.submit(lambda engine: None, INTERACTIVE, channel="refresh-settings", keep=False)

    def reload_model(self) -> None:
        """Load the model again (after a settings change), then re-embed what is stale."""
        self._model_is("loading", "")

        def reload(engine: Engine) -> None:
            engine.reload_model()
            self._load_model()

        self.submit(reload, NORMAL)

    def stop(self, timeout: float = 10.0) -> None:
        """Finish the current batch, close the database, end the thread."""
        self._stopping = True
        self._queue.put((-1, next(self._order), 0, None, "stop", False))
        self._thread.wait(int(timeout * 1000))

    # ---- the thread ------------------------------------------------------------------
    def _run(self) -> None:
        self.thread_ident = threading.get_ident()
        try:
            self.engine = self._factory()
        except MnemoError as exc:
            self._model_is("unavailable", str(exc))
            return
        self._model_is("loading", "")
        # Load the model as the first background job; keyword requests queued meanwhile
        # still run first.
        self._queue.put((NORMAL, next(self._order), 0, None, "load", False))
        while True:
            try:
                item = self._queue.get(timeout=max(0.0, self._next_poll - time.monotonic()))
            except queue.Empty:
                item = None
            if time.monotonic() >= self._next_poll:  # between requests, also when busy
                self._notice_elsewhere()
                self._next_poll = time.monotonic() + self.poll_s
            if item is None:
                continue
            priority, _, request, fn, channel, writes = item
            if channel == "stop":
                break
            if channel == "load":
                self._load_model()
            elif channel == "backfill":
                self._backfill_step()
            else:
                self._call(request, fn, channel, writes)
        self.engine.close()

    def _model_is(self, state: str, detail: str) -> None:
        """Keep the model's state for views opened later, and tell the open ones."""
        self.model_state = (state, detail)
        self.modelState.emit(state, detail)

    def _notice_elsewhere(self) -> None:
        """Whether another process wrote since the last look (`PRAGMA data_version`): then
        views are told, and what it left without vectors is embedded (`mnemo import
        --no-embed`, a model switch elsewhere)."""
        try:
            version = self.engine.changed_elsewhere()
        except MnemoError as exc:
            log.info("cannot tell whether another process wrote: %s", exc)
            return
        seen, self._seen_version = self._seen_version, version
        if seen is None or version == seen:
            return
        self.changedElsewhere.emit()
        if self.model_id and self.engine.needs_backfill():  # (never loads the model here)
            self.backfill()

    def _refresh_settings(self) -> None:
        """Take settings another process saved (`mnemo settings`, `mnemo model use`)."""
        try:
            change = self.engine.refresh_settings()
        except MnemoError as exc:
            log.warning("settings not reloaded: %s", exc)
            return
        if change.model_reloaded:
            self._backfill_total = 0
            self._load_model()
        if change.changed:
            self.settingsChanged.emit(",".join(change.changed))

    def _load_model(self) -> None:
        embedder = self.engine.embedder
        if embedder is None:
            self.model_id = ""
            self._model_is("unavailable", self.engine.model_error or "")
        else:
            self.model_id = embedder.info.model_id
            self._model_is("ready", f"{embedder.info.name} ({embedder.info.dimension}d)")
            # The first keystroke then finds the vectors loaded (a second at 1M memories).
            self.submit(lambda engine: engine.prepare_search(), BACKGROUND, keep=False)
            self.backfill()

    def _call(self, request: int, fn, channel: str | None, writes: bool) -> None:
        if channel and self._latest.get(channel) != request:
            with self._lock:
                self._keep.discard(request)
            return  # superseded by a newer request on the same channel
        self._refresh_settings()
        try:
            result = fn(self.engine)
        except MnemoError as exc:
            with self._lock:
                if request in self._keep:  # someone will come for it: the typed error
                    self._errors[request] = exc
                    while len(self._errors) > MAX_KEPT_RESULTS:
                        self._errors.pop(next(iter(self._errors)))
                self._keep.discard(request)
            self.failed.emit(request, str(exc))
            return
        except Exception as exc:  # a bug: log it with its traceback, tell the user briefly
            log.exception("engine request failed")
            with self._lock:
                self._keep.discard(request)
            self.failed.emit(request, f"internal error: {exc}")
            return
        with self._lock:
            kept = request in self._keep
            if kept:
                self._keep.discard(request)
                self._results[request] = result
                while len(self._results) > MAX_KEPT_RESULTS:  # nobody came for these
                    self._results.popitem(last=False)
        if kept:  # a request nobody takes the result of (warming up, settings) says nothing
            self.finished.emit(request)
        if writes:
            change = writes if isinstance(writes, Change) else Change("content")
            self.changes.emit(change.to_json())
            if change.kind != "usage":  # a use changes a count: nothing to reload or embed
                self.changed.emit()
                self.backfill()

    def _backfill_step(self) -> None:
        with self._lock:
            self._backfill_queued = False
        engine = self.engine
        if self._stopping or engine.embedder is None:
            return
        if self._backfill_total == 0:
            counts = engine.vector_status()
            self._backfill_total = counts.get("missing", 0) + counts.get("stale", 0)
            self._backfill_done = 0

        def progress(done: int, _total: int) -> None:
            self.backfillProgress.emit(
                self._backfill_done + done, max(self._backfill_total, self._backfill_done + done)
            )

        try:
            done = engine.backfill(
                batch_size=BACKFILL_BATCH,
                progress=progress,
                count_total=False,
                # Yield after each batch when anything else is waiting.
                should_stop=lambda: self._stopping or not self._queue.empty(),
            )
        except MnemoError as exc:
            log.warning("backfill stopped: %s", exc)
            return
        self._backfill_done += done
        if engine.needs_backfill() and not self._stopping:
            self.backfill()
        else:
            self._backfill_total = 0
            self.backfillProgress.emit(0, 0)
            if done:
                self.changed.emit()
