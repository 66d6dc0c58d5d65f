"""The desktop app's door to the engine: a thin Qt adapter over the core's Runner.

The Runner (`app/core/runner.py`) owns the one engine thread: priorities, superseding
channels, the backfill, typed changes. This adapter runs it on a QThread (PySide6 may
corrupt reference counts when signals are emitted from threads Qt did not create,
PYSIDE-3124) and turns what it reports into Qt signals, which Qt delivers in the GUI thread;
nothing here touches a widget off that thread.

Front ends use `call(fn, done, failed)`: `fn(engine)` runs on the engine thread, then
`done(result)` or `failed(failure)` runs on the GUI thread (a `Failure`: the message,
carrying the typed error). Read every widget value before calling, never inside `fn`
(Anki's CollectionOp rule).
"""

from __future__ import annotations

import concurrent.futures
import itertools
import logging
import threading
from collections.abc import Callable
from typing import Any

from app.core.engine import Engine, SettingsChange
from app.core.errors import MnemoError
from app.core.memory import Change
from app.core.runner import BACKGROUND, INTERACTIVE, NORMAL, Listener, Runner
from app.gui.qt import QtCore, Signal

log = logging.getLogger(__name__)

__all__ = ["BACKGROUND", "INTERACTIVE", "NORMAL", "Failure", "Worker"]

MAX_KEPT_RESULTS = 256


class Failure(str):
    """What a failed request gives its `failed` callback: the message for the user (a str,
    shown as it is) carrying the typed error in `error` (ConflictError, NotFoundError, ...;
    a bug's exception otherwise), so views branch on the type, never on the wording."""

    error: BaseException | None

    def __new__(cls, message: str, error: BaseException | None = None) -> Failure:
        failure = super().__new__(cls, message)
        failure.error = error
        return failure


class _Loop(QtCore.QThread):
    """Runs one function on a Qt-created thread."""

    def __init__(self, target, name: str):
        super().__init__()
        self._target = target
        self.setObjectName(name)

    def run(self) -> None:
        self._target()


class Worker(QtCore.QObject, Listener):
    """Runs engine calls on the runner's thread; every result arrives as a signal."""

    # Only ids and strings cross threads: PySide6 can drop references to Python objects
    # (even None) carried by queued signals. The owner of a request fetches its result.
    finished = Signal(int)  # request id of a kept request: `result(request_id)` has the value
    failed = Signal(int, str)  # request id, message for the user
    modelState = Signal(str, str)  # "loading" | "ready" | "unavailable", detail
    backfillProgress = Signal(int, int)  # done, total (0, 0 when finished)
    changed = Signal()  # memories were written (anything but a use): views should refresh
    changes = Signal(object)  # after every write: list[Change] (frozen: safe to share)
    progress = Signal(str, int, int)  # job, done, total (0 = unknown) for imports, exports
    settingsChanged = Signal(str)  # comma-separated keys another process changed on disk
    changedElsewhere = Signal()  # another process (the CLI, an agent) wrote, not only a use
    syncMoved = Signal(object)  # a sync pass ran: its summary, a new dict (`Listener.synced`)
    spacesJoined = Signal(object)  # devices joined a team space: a new list, told once
    spacesHeld = Signal(object)  # removals held in a team space, not told before: a new list

    def __init__(
        self, engine_factory: Callable[[], Engine] = Engine, parent=None, start: bool = True
    ):
        QtCore.QObject.__init__(self, parent)
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        # finished futures of kept requests, until delivered or taken with `result`
        self._results: dict[int, concurrent.futures.Future] = {}
        self._keep: set[int] = set()  # requests whose result someone will come for
        # GUI-thread bookkeeping of `call`: request id -> (done, failed) callbacks.
        self._callbacks: dict[int, tuple[Callable | None, Callable | None]] = {}
        self._channel_requests: dict[str, int] = {}
        self._thread: _Loop | None = None
        self.runner = Runner(engine_factory, listener=self, start_thread=self._qthread, kind="app")
        # Queued even from the GUI thread: a call's callbacks are registered after `submit`
        queued = QtCore.Qt.QueuedConnection
        self.finished.connect(self._deliver_result, queued)
        self.failed.connect(self._deliver_failure, queued)
        if start:
            self.start()

    def _qthread(self, target: Callable[[], None], name: str) -> _Loop:
        self._thread = _Loop(target, name)
        self._thread.start()
        return self._thread

    def start(self) -> None:
        """Start the thread. Connect to the signals first: a queued signal emitted before a
        slot is connected never reaches it (the model's "ready" would be lost)."""
        self.runner.start()

    # ---- what the runner tells (its thread): signals only ------------------------------
    def model_moved(self, state: str, detail: str) -> None:  # Listener
        self.modelState.emit(state, detail)

    def backfill_moved(self, done: int, total: int) -> None:  # Listener
        self.backfillProgress.emit(done, total)

    def wrote(self, changes: list[Change]) -> None:  # Listener
        # One signal of each per write: a second queued emission reaching a slot already
        # disconnected (a test's waitSignal) found its object gone (PySide6).
        self.changes.emit(list(changes))
        if any(c.reloads_lists for c in changes):
            self.changed.emit()

    def written_elsewhere(self, changes: list[Change]) -> None:  # Listener
        self.changes.emit(list(changes))  # an agent's recall: counts in place
        if any(c.reloads_lists for c in changes):
            self.changedElsewhere.emit()

    def synced(self, summary: dict) -> None:  # Listener
        self.syncMoved.emit(dict(summary))

    def members_joined(self, joined: list[dict]) -> None:  # Listener
        self.spacesJoined.emit([dict(j) for j in joined])

    def removals_held(self, held: list[dict]) -> None:  # Listener
        self.spacesHeld.emit([dict(h) for h in held])

    def settings_taken(self, keys: list[str]) -> None:  # Listener
        self.settingsChanged.emit(",".join(keys))

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
        return self._track(self.runner.submit(fn, priority, channel, writes), keep)

    def _track(self, future: concurrent.futures.Future, keep: bool) -> int:
        request = next(self._ids)
        if keep:
            with self._lock:
                self._keep.add(request)
        future.add_done_callback(lambda f: self._done(request, f))
        return request

    def _done(self, request: int, future: concurrent.futures.Future) -> None:
        """On the runner's thread: keep the finished future for its owner and say so."""
        with self._lock:
            kept = request in self._keep
            self._keep.discard(request)
            if not kept or future.cancelled():
                return  # nobody comes for it, or superseded on its channel
            self._results[request] = future
            while len(self._results) > MAX_KEPT_RESULTS:  # nobody came for these
                self._results.pop(next(iter(self._results)))
        error = future.exception()
        if error is None:
            self.finished.emit(request)
        else:
            self.failed.emit(request, _message(error))

    def call(
        self,
        fn: Callable[[Engine], Any],
        done: Callable[[Any], None] | None = None,
        failed: Callable[[str], None] | None = None,
        priority: int = NORMAL,
        channel: str | None = None,
        writes: bool | Change = False,
    ) -> int:
        """Queue `fn(engine)`; `done(result)` or `failed(failure)` then runs on the GUI
        thread.

        Call from the GUI thread. On a `channel`, a newer call supersedes an older one that
        has not run yet: the older one's callbacks are dropped.
        """
        wanted = done is not None or failed is not None
        request = self.submit(fn, priority, channel, writes, keep=wanted)
        self._follow(request, done, failed, channel)
        return request

    def _follow(self, request: int, done, failed, channel: str | None = None) -> None:
        """Register a request's callbacks (GUI thread; delivery is queued, so in time)."""
        if channel:
            older = self._channel_requests.get(channel)
            if older is not None and self._callbacks.pop(older, None) is not None:
                with self._lock:  # it may be running already: its result is not wanted
                    self._keep.discard(older)
                    self._results.pop(older, None)
            self._channel_requests[channel] = request
        if done is not None or failed is not None:
            self._callbacks[request] = (done, failed)

    def waiting(self, channel: str) -> bool:
        """Whether the latest call on `channel` has yet to deliver its answer."""
        return self._channel_requests.get(channel) in self._callbacks

    def _deliver_result(self, request: int) -> None:
        callbacks = self._callbacks.pop(request, None)
        if callbacks is None:
            return  # `submit`'s caller takes it with `result(request)`
        result = self.result(request)
        if callbacks[0] is not None:
            try:
                callbacks[0](result)
            except Exception:  # a bug in a view: log it, keep the app running
                log.exception("handling the result of request %s failed", request)

    def _deliver_failure(self, request: int, message: str) -> None:
        with self._lock:
            future = self._results.pop(request, None)
        callbacks = self._callbacks.pop(request, None)
        if callbacks is None or callbacks[1] is None:
            return
        error = future.exception() if future is not None else None
        try:
            callbacks[1](Failure(message, error))
        except Exception:
            log.exception("handling the failure of request %s failed", request)

    def result(self, request: int) -> Any:
        """Take the result of a finished request (once)."""
        with self._lock:
            future = self._results.pop(request, None)
        if future is None or future.cancelled() or future.exception() is not None:
            return None
        return future.result()

    def apply_settings(
        self,
        values: dict[str, Any],
        done: Callable[[SettingsChange], None] | None = None,
        failed: Callable[[str], None] | None = None,
    ) -> int:
        """Hand new settings to the engine (their one owner); a model change reloads it."""
        wanted = done is not None or failed is not None
        request = self._track(self.runner.apply_settings(values), keep=wanted)
        self._follow(request, done, failed)
        return request

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
        self.runner.backfill()

    def refresh_settings(self) -> None:
        """Take settings another process saved (`mnemo settings KEY VALUE`) now."""
        self.runner.refresh_settings()

    def reload_model(self) -> None:
        """Load the model again (after a settings change), then re-embed what is stale."""
        self.runner.reload_model()

    def stop(self, timeout: float = 10.0) -> None:
        """Finish the current batch, close the database, end the thread."""
        self.runner.stop(timeout)
        if self._thread is not None:
            self._thread.wait(int(timeout * 1000))

    # ---- the runner's state, for views opened later and for `mnemo status` -----------
    @property
    def engine(self) -> Engine | None:
        return self.runner.engine

    @property
    def model_state(self) -> tuple[str, str]:
        """The last state of the model, for views opened later."""
        return self.runner.model_state

    @property
    def model_id(self) -> str:
        return self.runner.model_id

    @property
    def thread_ident(self) -> int | None:
        return self.runner.thread_ident

    @property
    def poll_s(self) -> float:
        return self.runner.poll_s

    @poll_s.setter
    def poll_s(self, value: float) -> None:
        self.runner.poll_s = value

    def _model_is(self, state: str, detail: str) -> None:
        self.runner._model_is(state, detail)


def _message(error: BaseException) -> str:
    if isinstance(error, MnemoError):
        return str(error)
    return f"internal error: {error}"  # a bug: the runner logged its traceback
