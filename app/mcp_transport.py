"""The MCP server's stdio transport: one JSON-RPC message a line in, one a line out.

The SDK's `stdio_server` with four holes closed (issue 21, finding 16), each tested in
tests/test_mcp_server.py through a real subprocess:

- **A line has a size limit** (`MAX_LINE`, 16 MB: a 2,000,000-character memory escaped as
  \\uXXXX fits). A longer one is read through and dropped and answered with -32600; a 60 MB
  search held the server for three minutes.
- **Every request is answered.** A request whose id is neither a string nor an integer (an
  object, a list, true, 1.5) gets -32600 with id null, as JSON-RPC 2.0 says; the SDK read
  it as a notification and said nothing. An integral float id (2.0) is the integer 2.
  Unreadable lines get -32700 and malformed messages -32600 (with their id if usable);
  blank lines are no message.
- **Requests under way at the end of input are finished and answered** (for up to
  `DRAIN`): a store sent just before stdin closed was dropped, its handler cancelled
  before it reached the engine.
- **A client that goes away is not an error.** Once stdout is closed (EPIPE) replies are
  dropped, the input is treated as ended, and one line says so in the log; it was a
  BrokenPipe traceback.

Like the SDK's, it moves stdin/stdout out of reach while it serves (fd 0 reads the null
device and fd 1 writes to stderr), so a stray print can never corrupt the protocol; that
part is the SDK's own (`mcp.server.stdio._claim_fd`; pyproject pins mcp < 3).
"""

from __future__ import annotations

import json
import logging
import re
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, BinaryIO

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
from mcp.server import stdio as sdk_stdio
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage
from mcp_types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

log = logging.getLogger("app.mcp_server")

MAX_LINE = 16 << 20  # bytes in one message
SKIP_CHUNK = 1 << 20  # an over-long line is read through this much at a time
DRAIN = 120.0  # seconds requests under way at the end of input get to finish


# The id of an over-long request, when it comes before anything but the version and method
# (as every SDK writes it): the client then learns which request failed
_LEADING_ID = re.compile(
    rb'\s*\{(?:\s*"(?:jsonrpc|method)"\s*:\s*"[^"\\]{0,200}"\s*,)*'
    rb'\s*"id"\s*:\s*(-?\d{1,18}|"[^"\\]{0,200}")\s*[,}]'
)


def read_line(stream: BinaryIO) -> tuple[bytes, bool] | None:
    """The next line and whether it was too long (then only its first KB is kept: the rest
    was read through and dropped, never held whole); None at the end of input."""
    line = stream.readline(MAX_LINE + 1)
    if not line:
        return None
    if len(line) > MAX_LINE and not line.endswith(b"\n"):
        while (rest := stream.readline(SKIP_CHUNK)) and not rest.endswith(b"\n"):
            pass
        return line[:1024], True
    return line, False


def leading_id(start: bytes) -> int | str | None:
    """The id at the start of a message too long to read, if it is plainly there."""
    found = _LEADING_ID.match(start)
    return json.loads(found.group(1)) if found else None


def _error(request_id: int | str | None, code: int, message: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message))


def _usable_id(value: Any) -> int | str | None:
    """A message's id if JSON-RPC allows it (a string or an integer), else None."""
    request_id = value.get("id") if isinstance(value, dict) else None
    return request_id if type(request_id) in (int, str) else None


def message_of(line: bytes) -> SessionMessage | JSONRPCError | None:
    """The message on one line, the error answering it, or None for a blank line."""
    text = line.decode("utf-8", errors="replace")
    if not text.strip():
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return _error(None, PARSE_ERROR, "Parse error: the line is not valid JSON")
    except RecursionError:
        return _error(None, INVALID_REQUEST, "Invalid Request: nested too deeply")
    if isinstance(value, dict) and "method" in value and "id" in value:
        request_id = value["id"]
        if type(request_id) is float and request_id.is_integer():
            value["id"] = int(request_id)  # 2.0 is the integer 2 to any JSON reader
        elif type(request_id) not in (int, str):
            return _error(
                None, INVALID_REQUEST, "Invalid Request: an id must be a string or an integer"
            )
    try:
        return SessionMessage(jsonrpc_message_adapter.validate_python(value, by_name=False))
    except (ValidationError, RecursionError):
        return _error(
            _usable_id(value), INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message"
        )


class _Requests:
    """The requests passed on and not answered yet, so the end of input can wait for them."""

    def __init__(self) -> None:
        self._open: set[int | str] = set()
        self._none_open = anyio.Event()
        self._none_open.set()

    def opened(self, message: Any) -> None:
        if isinstance(message, JSONRPCRequest):
            self._open.add(message.id)
            if self._none_open.is_set():
                self._none_open = anyio.Event()
        elif isinstance(message, JSONRPCNotification) and message.method == (
            "notifications/cancelled"
        ):  # a cancelled request gets no answer
            self._closed((message.params or {}).get("requestId"))

    def answered(self, message: Any) -> None:
        if isinstance(message, JSONRPCResponse | JSONRPCError):
            self._closed(message.id)

    def _closed(self, request_id: Any) -> None:
        self._open.discard(request_id)
        if not self._open:
            self._none_open.set()

    async def finished(self, timeout: float) -> int:
        """Wait up to `timeout` for every open request's answer; how many are still open."""
        with anyio.move_on_after(timeout):
            await self._none_open.wait()
        return len(self._open)


@asynccontextmanager
async def stdio_transport(
    stdin: BinaryIO | None = None,
    stdout: BinaryIO | None = None,
    answer_for: Callable[[str], Awaitable[dict | None]] | None = None,
) -> AsyncIterator[tuple[Any, Any]]:
    """(read stream, write stream) for the low-level server, over the process's stdin and
    stdout (or the binary streams given). `answer_for(protocol)`: the SDK's answer to an
    `initialize` in that version, for the kept answers (`keep_answers`)."""
    releases = []
    if stdin is None:
        stdin, release = sdk_stdio._claim_fd(  # noqa: SLF001 - see the module docstring
            0,
            sys.stdin,
            "rb",
            sdk_stdio._open_stdin_diversion,  # noqa: SLF001
        )
        releases.append(release)
    if stdout is None:
        stdout, release = sdk_stdio._claim_fd(  # noqa: SLF001
            1,
            sys.stdout,
            "wb",
            sdk_stdio._open_stdout_diversion,  # noqa: SLF001
        )
        releases.append(release)
    from app import mcp_greeting

    greeted = mcp_greeting.first  # what `mnemo mcp` read (and answered) before the SDK loaded
    mcp_greeting.first = None
    if greeted is not None and greeted.prefix:
        stdin = _Prefixed(greeted.prefix, stdin)
    read_send, read_stream = create_context_streams[SessionMessage | Exception](0)
    write_stream, write_receive = create_context_streams[SessionMessage](0)
    lines_send, lines_receive = anyio.create_memory_object_stream[tuple[bytes, bool] | None](8)
    requests = _Requests()
    ended = anyio.Event()  # no more input: stdin closed, or the client stopped reading

    def read_stdin(token: Any) -> None:
        # A thread of its own, a daemon: one blocked on a client that never closes stdin
        # must not keep the process alive (anyio's worker threads would)
        try:
            while True:
                item = read_line(stdin)
                anyio.from_thread.run(lines_send.send, item, token=token)
                if item is None:
                    return
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, RuntimeError):
            return  # the transport has ended (RuntimeError: its event loop is gone)
        except OSError as exc:
            log.info("stdin could not be read (%s): treated as its end", exc)
            try:
                anyio.from_thread.run(lines_send.send, None, token=token)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, RuntimeError):
                return

    reading, closing = anyio.CancelScope(), anyio.CancelScope()

    async def reader() -> None:
        with reading:
            await read()
        ended.set()

    async def read() -> None:
        async with lines_receive:
            async for item in lines_receive:
                if item is None or ended.is_set():
                    break
                line, too_long = item
                if too_long:
                    log.warning("answered a request over %d MB with an error", MAX_LINE >> 20)
                    answer = _error(
                        leading_id(line),
                        INVALID_REQUEST,
                        f"Invalid Request: a message is at most {MAX_LINE >> 20} MB",
                    )
                else:
                    answer = message_of(line)
                try:
                    if isinstance(answer, JSONRPCError):
                        log.warning("answered unreadable input with error %d", answer.error.code)
                        await write_stream.send(SessionMessage(answer))
                    elif answer is not None:
                        requests.opened(answer.message)
                        await read_send.send(answer)
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return  # the server has stopped

    async def closer() -> None:
        with closing:
            await ended.wait()
            left = await requests.finished(DRAIN)
            if left:
                log.warning("input ended with %d requests unanswered after %.0f s", left, DRAIN)
        await read_send.aclose()  # the server's loop sees the end of its input

    async def writer() -> None:
        nonlocal greeted
        gone = False
        async with write_receive:
            async for item in write_receive:
                requests.answered(item.message)
                kept: dict[str, dict] | None = None  # the SDK's answer to keep, written first
                if greeted is not None and greeted.key is not None and _answers(item, greeted):
                    result = getattr(item.message, "result", None)  # (None: an error)
                    if isinstance(result, dict):
                        kept = {greeted.key: json.loads(json.dumps(result))}
                    early, made, greeted = greeted.answered, greeted.made, None
                    if early and kept is None:  # the SDK refused what was answered early
                        log.warning("the SDK refused an initialize answered before it loaded")
                    if early:  # answered before the SDK loaded: not twice
                        if kept is not None and made:  # (nothing was kept: all versions)
                            tasks.start_soon(keep_answers, kept, answer_for)
                        elif kept is not None:
                            mcp_greeting.keep(kept)  # (when it differs from the one given)
                        continue
                if not gone:  # (answers still count: the end of input waits for them)
                    data = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                    try:
                        await anyio.to_thread.run_sync(_write, stdout, data.encode() + b"\n")
                    except (OSError, ValueError) as exc:  # EPIPE, or a closed file
                        gone = True
                        log.info("the client stopped reading (%s); serving ends", exc)
                        ended.set()
                if kept is not None:  # the SDK answered it: nothing of this code's was kept
                    tasks.start_soon(keep_answers, kept, answer_for)

    try:
        async with anyio.create_task_group() as tasks:
            token = anyio.lowlevel.current_token()
            threading.Thread(
                target=read_stdin, args=(token,), name="mnemo-mcp-stdin", daemon=True
            ).start()
            tasks.start_soon(reader)
            tasks.start_soon(closer)
            tasks.start_soon(writer)
            try:
                yield read_stream, write_stream
            finally:
                # The server has stopped: stop reading, and let the writer send what is
                # queued (closing the write stream ends it; the server's loop closes it too)
                reading.cancel()
                closing.cancel()
                write_stream.close()
    finally:
        for release in releases:
            if release is not None:
                release()


async def keep_answers(
    kept: dict[str, dict],
    answer_for: Callable[[str], Awaitable[dict | None]] | None,
    within: float = 5.0,
) -> None:
    """After the SDK answered `initialize` itself (nothing usable was kept for this code:
    the first start after an install or an upgrade) and that answer went out: keep it, and
    the SDK's answers to the other protocol versions it negotiates, asked of it in memory
    (`answer_for`), so the next start is answered before the SDK loads whichever version its
    agent speaks. A few ms; given up after `within` seconds (the server's work and its exit
    never wait longer), the answer given kept whatever happens to the others."""
    from app import mcp_greeting

    fresh = dict(kept)
    ((key, _),) = kept.items()
    with anyio.move_on_after(within):
        try:
            for other, protocol in mcp_greeting.missing(key) if answer_for is not None else []:
                result = await answer_for(protocol) if other != key else None
                if isinstance(result, dict):
                    fresh[other] = result
        except Exception as exc:  # noqa: BLE001 - a quick start next time, never a failure now
            log.info("the answers to other protocol versions were not kept (%s)", exc)
    await anyio.to_thread.run_sync(mcp_greeting.keep, fresh)


def _answers(item: SessionMessage, greeted: Any) -> bool:
    """Whether an outgoing message is the SDK's answer to the `initialize` read early (a
    result or an error)."""
    message = item.message
    return isinstance(message, JSONRPCResponse | JSONRPCError) and message.id == greeted.request_id


class _Prefixed:
    """A binary stream that gives `prefix` first (what was read before the SDK loaded),
    then the stream's own bytes; `readline(limit)` as `read_line` uses it."""

    def __init__(self, prefix: bytes, stream: BinaryIO) -> None:
        self._prefix, self._stream = prefix, stream

    def readline(self, limit: int = -1) -> bytes:
        if not self._prefix:
            return self._stream.readline(limit)
        cut = self._prefix.find(b"\n") + 1 or len(self._prefix)
        if 0 <= limit < cut:
            cut = limit
        line, self._prefix = self._prefix[:cut], self._prefix[cut:]
        if line.endswith(b"\n") or (0 <= limit <= len(line)):
            return line
        more = self._stream.readline(limit - len(line) if limit >= 0 else -1)
        return line + more


def _write(stream: BinaryIO, data: bytes) -> None:
    stream.write(data)
    stream.flush()
