"""The MCP server's runtime: the core's one engine thread (see `app.mcp_server`;
`app.mcp_transport` reads and answers the lines)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from app.core.engine import Engine
from app.core.errors import MnemoError
from app.core.runner import INTERACTIVE, Runner
from app.mcp_transport import stdio_transport

log = logging.getLogger("app.mcp_server")

T = TypeVar("T")

EXIT_GRACE = 1.0  # seconds to let threads finish at exit (the SDK client waits 2 s)


class EngineThread:
    """The MCP server's door to the core's Runner (`app/core/runner.py`): the one engine
    thread every tool call runs on, by arrival, with the backfill between calls (an agent
    waits for each call: the backfill gives way to it)."""

    def __init__(self, engine: Engine | None = None) -> None:
        factory: Callable[[], Engine] = Engine if engine is None else (lambda: engine)
        # The model loads on first use (a search or a store), not at start
        self.runner = Runner(factory, load_model=False, close_engine=engine is None, kind="mcp")

    async def run(self, fn: Callable[[Engine], T]) -> T:
        """`fn(engine)` on the engine thread; a known problem (MnemoError) becomes a ToolError."""
        self.runner.start()
        try:
            return await asyncio.wrap_future(self.runner.submit(fn, INTERACTIVE))
        except MnemoError as exc:
            raise ToolError(str(exc)) from None

    def embed_later(self) -> None:
        """Embed what is missing between calls, slice by slice (call on the engine thread)."""
        self.runner.backfill()

    def close(self, timeout: float = EXIT_GRACE) -> bool:
        """Finish the current call (or slice of embedding), close the engine; whether the
        thread ended within `timeout`."""
        return self.runner.stop(timeout)


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
        # The engine thread from the start, not at the first tool call: it does the
        # database's background work when this process is the one that does (`duties.py`)
        self.engine_thread.runner.start()
        async with stdio_transport(answer_for=self.answer_to_initialize) as (reads, writes):
            await lowlevel.run(reads, writes, lowlevel.create_initialization_options())

    async def answer_to_initialize(self, protocol: str) -> dict | None:
        """The SDK's own answer to an `initialize` in `protocol`: what a client starting this
        server over stdio would get (the same loop, over a connection in memory)."""
        from mcp.shared._context_streams import create_context_streams
        from mcp.shared.message import SessionMessage
        from mcp_types import JSONRPCRequest, JSONRPCResponse

        lowlevel = self._lowlevel_server  # (see run_stdio_async)
        to_server, server_reads = create_context_streams[SessionMessage | Exception](1)
        server_writes, from_server = create_context_streams[SessionMessage](1)
        hello = JSONRPCRequest(jsonrpc="2.0", id=0, method="initialize", params={
            "protocolVersion": protocol, "capabilities": {},
            "clientInfo": {"name": "mnemo", "version": "kept answers"}})  # fmt: skip
        async with anyio.create_task_group() as tasks:
            options = lowlevel.create_initialization_options()
            tasks.start_soon(lowlevel.run, server_reads, server_writes, options)
            async with to_server, from_server:
                await to_server.send(SessionMessage(hello))
                reply = (await from_server.receive()).message
            tasks.cancel_scope.cancel()
        if not isinstance(reply, JSONRPCResponse) or not isinstance(reply.result, dict):
            return None
        return json.loads(json.dumps(reply.result))

    def close(self, timeout: float = EXIT_GRACE) -> bool:
        """Stop the engine thread and the background embedding; whether they ended in time."""
        return self.engine_thread.close(timeout)
