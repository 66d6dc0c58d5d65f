"""The MCP server's runtime: one engine thread and background embedding (see
`app.mcp_server` for why each exists; `app.mcp_transport` reads and answers the lines)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from app.core.engine import Engine
from app.core.errors import MnemoError
from app.mcp_transport import stdio_transport

log = logging.getLogger("app.mcp_server")

T = TypeVar("T")

BACKFILL_BATCH = 4  # memories per background batch; stopping waits for at most one
EXIT_GRACE = 1.0  # seconds to let threads finish at exit (the SDK client waits 2 s)


class _Backfill:
    """Embeds what is missing on its own thread with its own Engine, so a long text never
    holds up the engine thread; opened per run, so it always uses the current model."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._wanted = False
        self._open: Callable[[], Engine] | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def request(self, open_engine: Callable[[], Engine]) -> None:
        """Embed what is missing soon (again, if a run is under way)."""
        with self._lock:
            self._wanted, self._open = True, open_engine
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(
                    target=self._run, name="mnemo-backfill", daemon=True
                )
                self._thread.start()

    def _next(self) -> Callable[[], Engine] | None:
        """The engine to open for one more pass, or None (and the thread is done)."""
        with self._lock:
            if self._wanted and not self._stop.is_set():
                self._wanted = False
                return self._open
            self._thread = None  # under the lock: a request from now on starts a new thread
            return None

    def _run(self) -> None:
        engine = None
        try:
            while (open_engine := self._next()) is not None:
                engine = engine or open_engine()
                done = engine.backfill(
                    batch_size=BACKFILL_BATCH, should_stop=self._stop.is_set, count_total=False
                )
                log.info("embedded %d memories in the background", done)
        except MnemoError as exc:
            log.warning("background embedding stopped: %s", exc)
        except Exception:
            log.exception("background embedding failed")
        finally:
            with self._lock:
                if self._thread is threading.current_thread():
                    self._thread = None
            if engine is not None:
                engine.close()

    def stop(self, timeout: float) -> bool:
        """Stop after the current batch; whether the thread ended within `timeout`."""
        self._stop.set()
        with self._lock:
            thread = self._thread
        if thread is not None:
            thread.join(timeout)
            return not thread.is_alive()
        return True


class EngineThread:
    """One thread that owns the Engine and runs every engine call, in arrival order."""

    def __init__(self, engine: Engine | None = None) -> None:
        self._engine = engine
        self._owned = engine is None
        self._used = False
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.backfill = _Backfill()

    async def run(self, fn: Callable[[Engine], T]) -> T:
        """`fn(engine)` on the engine thread; a known problem (MnemoError) becomes a ToolError."""
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="mnemo-engine", daemon=True)
                self._thread.start()
        future: concurrent.futures.Future = concurrent.futures.Future()
        self._jobs.put((fn, future))
        return await asyncio.wrap_future(future)

    def _loop(self) -> None:
        while (job := self._jobs.get()) is not None:
            fn, future = job
            if not future.set_running_or_notify_cancel():
                continue  # the caller gave up (cancelled) while it waited
            try:
                result = fn(self._core())
            except MnemoError as exc:
                future.set_exception(ToolError(str(exc)))
            except Exception as exc:  # a bug: the SDK logs it with its traceback
                future.set_exception(exc)
            else:
                future.set_result(result)
        if self._owned and self._engine is not None:
            self._engine.close()

    def _core(self) -> Engine:
        """The engine, with the settings file re-read if it changed since the last call."""
        if self._engine is None:
            self._engine = Engine()
        elif self._used:
            try:
                self._engine.refresh_settings()
            except MnemoError as exc:
                log.warning("settings not reloaded: %s", exc)
        self._used = True
        return self._engine

    def embed_later(self, engine: Engine) -> None:
        """Embed what is missing on the background thread (call on the engine thread)."""
        settings, database = engine.settings, engine.database_path
        self.backfill.request(lambda: Engine(settings=settings, database=database))

    def close(self, timeout: float = EXIT_GRACE) -> bool:
        """Finish the current call, close the engine and stop the background embedding;
        whether both threads ended within `timeout`."""
        deadline = time.monotonic() + timeout
        self.backfill.stop(0)  # no new batch from now on
        with self._lock:
            thread = self._thread
        if thread is not None:
            self._jobs.put(None)
            thread.join(max(0.0, deadline - time.monotonic()))
        stopped = self.backfill.stop(max(0.0, deadline - time.monotonic()))
        return stopped and (thread is None or not thread.is_alive())


class MnemoServer(MCPServer):
    """The SDK's server over our stdio transport, with the engine thread it serves from."""

    def __init__(self, engine_thread: EngineThread, **options: Any) -> None:
        super().__init__(**options)
        self.engine_thread = engine_thread

    async def run_stdio_async(self) -> None:
        """Serve over stdin/stdout (the SDK's own loop over `app.mcp_transport`)."""
        # mcp 2.x keeps its low-level server private; pyproject pins mcp < 3 and
        # tests/test_mcp_server.py drives this path through a real subprocess.
        lowlevel = self._lowlevel_server
        async with stdio_transport() as (read_stream, write_stream):
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())

    def close(self, timeout: float = EXIT_GRACE) -> bool:
        """Stop the engine thread and the background embedding; whether they ended in time."""
        return self.engine_thread.close(timeout)
