"""`mnemo mcp`: a Model Context Protocol server over stdio, so AI agents share your memory.

A thin layer over `app.core`: the same database as the desktop app and the CLI (WAL and a
busy timeout let several servers, the app and the CLI write at once). Known problems come
back as tool errors the model can read; nothing is printed to stdout but the protocol.

Under load (issues 8 and 10):

- **One engine thread** owns the Engine (connection and model) and runs every call in
  arrival order, like the desktop app's worker. The tools are async and queue their work
  there; the SDK would run sync tools in worker threads, several at once on one connection.
- **Long learnings are embedded in the background**, by the rule every front end uses
  (`runner.embed_now`): name, description and reasoning over `INLINE_EMBED_CHARS` (8,000
  characters) are stored without vectors, still validated and redacted (~0.1-0.3 s for
  200 KB), found by keywords meanwhile and not checked for near-duplicates; `notice` says
  so. Shorter ones are embedded inline, so near-duplicates are linked as before. The
  backfill then runs on the same engine thread between calls, one slice (one chunk) of a
  long text at a time, so a search waits for one chunk's decode at most.
- **Every line is answered** (`app.mcp_transport`): -32700 for a line that is not JSON,
  -32600 for JSON that is not a JSON-RPC message (with its id if it has one), for an id
  that is neither a string nor an integer, and for a line over 16 MB; blank lines are
  ignored. The SDK alone drops such lines without a word. The next request is served as
  usual.
- **Exit**: when stdin closes (or the client stops reading), the requests under way are
  finished and answered, then the engine thread finishes its call and closes the engine.
  An embedding still under way is left to the next backfill (its vectors are written in one
  transaction) and the process ends at once: llama.cpp cannot be interrupted, and
  finalizing Python under a running decode can crash (1 exit in 3 did, here).
"""

from __future__ import annotations

import logging
import os
import secrets
import sys
from typing import TypeVar

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError

from app import __version__
from app.core import origin as origins
from app.core.engine import Engine
from app.core.errors import InputError
from app.core.memory import public_dict
from app.core.runner import LONG_TEXT_CHARS, embed_now
from app.core.storage.store import Filters
from app.core.writer import Remembered
from app.mcp_greeting import INSTRUCTIONS
from app.mcp_runtime import EXIT_GRACE, EngineThread, MnemoServer

log = logging.getLogger(__name__)

T = TypeVar("T")

INLINE_EMBED_CHARS = LONG_TEXT_CHARS  # longer learnings: embedded later (runner.embed_now)
LATER = (
    "a long text: stored and found by keywords now; its embedding continues in the "
    "background, then search by meaning finds it too (it was not checked for near-duplicates)"
)


def client_origin(ctx: Context | None, session: str) -> origins.Origin:
    """Who stores through this server: an agent, named as its client said in `initialize`
    (`clientInfo.name`), in this connection (`session`). Nothing a tool's arguments hold
    (tags, references, a thread) can name another origin."""
    try:
        params = ctx.session.client_params if ctx is not None else None
    except (AttributeError, ValueError, LookupError):  # (no request under way)
        params = None
    name = params.client_info.name if params is not None and params.client_info else ""
    return origins.agent(name or "", session)


def build_server(engine: Engine | None = None) -> MnemoServer:
    """The MCP server with Mnemo's tools; the engine (and model) load on first use."""
    core = EngineThread(engine)
    session = secrets.token_hex(4)  # this connection: what one agent's run stored
    server = MnemoServer(
        core, name="mnemo", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING"
    )

    def required(**values: str) -> None:
        for name, value in values.items():
            if not isinstance(value, str) or not value.strip():
                raise ToolError(f"{name} must not be empty")

    @server.tool()
    async def store_memory(
        name: str,
        description: str,
        reasoning: str,
        category: str,
        references: list[str] | None = None,
        tags: list[str] | None = None,
        project: str | None = None,
        thread: str | None = None,
        space: str | None = None,
        ctx: Context | None = None,
    ) -> dict:
        """Store a learning: a short name, what was learned, why it matters, and a category
        (anti-patterns, patterns, heuristics or note). The same description again counts
        one more observation. A near-duplicate is stored as a new memory linked to the
        similar one (`similar` in the result says which); merging is left to the user.
        `thread` (optional, e.g. a session id): memories of one thread lend each other
        context when searched. `space` (optional): the name of a team space to share it
        in, only when the user asked for it to be shared with that team; without it the
        memory stays the user's own."""
        required(name=name, description=description, reasoning=reasoning, category=category)
        inline = embed_now(len(name) + len(description) + len(reasoning))
        origin = client_origin(ctx, session)

        def store(engine: Engine) -> dict:
            allowed = engine.settings["categories"]
            if category not in allowed:
                raise InputError(f"unknown category {category!r}; use one of: {', '.join(allowed)}")
            if space is not None:
                engine.spaces.ready(space)  # (an unknown space: nothing stored)
            result = engine.remember(
                description,
                title=name,
                reasoning=reasoning,
                category=category,
                references=references or [],
                tags=tags or [],
                project=project,
                thread=thread,
                source="mcp",
                origin=origin,
                force=True,  # never merge on an agent's behalf: merging is a person's call
                link_similar=True,
                secrets="redact",
                embed=inline,
            )
            notices = [result.notice] if result.notice else []
            if not inline and result.status is Remembered.STORED:
                if engine.embedder is None:
                    notices.append(
                        f"stored without embedding ({engine.model_error}); "
                        "`mnemo backfill` adds it later"
                    )
                else:
                    core.embed_later()
                    notices.append(LATER)
            out = result.to_dict()
            apart = space is not None and engine.spaces.known_apart(
                result.memory.id, space, result.status, "the user's"
            )
            if apart:
                notices.append(apart)
            elif space is not None and result.memory is not None:
                try:
                    report = engine.spaces.share(result.memory.id, space)
                    if report.get("outside"):  # (nothing sent: removed, left, no key yet)
                        notices.append(f"stored here, not shared in {space!r}: {report['outside']}")
                    else:
                        out["space"] = engine.spaces.shared([result.memory.id]).get(
                            result.memory.id
                        )
                except InputError as exc:  # (stored all the same: said, never lost)
                    notices.append(f"stored as the user's own, not shared in {space!r}: {exc}")
            if notices:
                out["notice"] = "; ".join(notices)
            return out

        return await core.run(store)

    @server.tool()
    async def search_memory(
        query: str, limit: int = 10, category: str | None = None, project: str | None = None
    ) -> dict:
        """Search memories by meaning and keywords, best first. Each result has a score from
        0 to 1 that means the same for every query and its band: `strong` (says what was
        asked: 0.6+, meaning and words agreeing, the best match or nearly), `partial` (partly
        about it, or only its topic) or `weak` (shares a little with it: check before
        relying on it). A date in the query ("on 16 June 2023", "last week") puts
        what was stored then first. An empty list means nothing stored is about the query.
        Each result says who wrote it (`origin`); `written_by` ("written by codex, 3 days
        ago") marks another agent's words, not the user's: weigh them as such."""
        required(query=query)

        def search(engine: Engine) -> dict:
            result = engine.recall(
                query,
                limit=max(1, min(limit, 100)),
                filters=Filters(category=category, project=project),
            )
            out = {
                "query": query,
                "mode": result.mode,
                "results": [
                    {**public_dict(r.memory, score=r.score), "band": str(r.band)}
                    for r in result.results
                ],
            }
            if result.notice:
                out["notice"] = result.notice
            return out

        return await core.run(search)

    @server.tool()
    async def get_memory(id: str) -> dict:  # noqa: A002 - the tool's public argument name
        """One memory by its id (or a unique prefix of at least 4 characters), with who
        wrote it (`origin`; `written_by` when it was an agent) and how many earlier versions
        of its words it has (`mnemo history ID` lists them)."""
        required(id=id)

        def get(engine: Engine) -> dict:
            found = engine.history(id)
            return {**public_dict(found.memory), "versions": len(found.versions)}

        return await core.run(get)

    @server.tool()
    async def list_recent(limit: int = 20) -> dict:
        """The most recently created or changed memories."""

        def recent(engine: Engine) -> dict:
            memories = engine.listing(Filters(), limit=max(1, min(limit, 200)))
            return {"results": [public_dict(m) for m in memories]}

        return await core.run(recent)

    @server.tool()
    async def forget_memory(id: str, ctx: Context | None = None) -> dict:  # noqa: A002
        """Move a memory this agent wrote to the trash (the user can restore it). A memory
        holding anyone else's words (the user's, another agent's) is the user's to forget:
        store a correction instead (the user is asked whether it supersedes the old one)."""
        required(id=id)
        who = client_origin(ctx, session)

        def forget(engine: Engine) -> dict:
            memory = engine.get(id)
            others = [o for o in memory.origins if (o.kind, o.name) != (who.kind, who.name)]
            if others or not memory.origins:
                raise InputError(
                    f"{memory.id} holds words {origins.summary(others or memory.origins)} "
                    "wrote: only the user moves it to the trash (`mnemo forget "
                    f"{memory.id}`); store a correction instead"
                )
            engine.forget([memory.id])
            return {"status": "trashed", "id": memory.id, "title": memory.display_title}

        return await core.run(forget)

    return server


def main() -> int:
    """Serve over stdio until the client closes the connection."""
    from app.core import crash

    # Standard error is the agent's (which may keep it in a log of its own): tracebacks
    # there name exceptions without their messages too, as in the log file
    console = logging.StreamHandler()
    console.setFormatter(crash.Formatter("mnemo-mcp: %(levelname)s: %(message)s"))
    logging.basicConfig(level=logging.WARNING, handlers=[console])
    crash.install("mcp")  # a log file and a crash file; stdout stays the protocol's alone
    # The SDK logs a failed tool's message at INFO ("Tool 'store_memory' failed: …"), and
    # it quotes what the agent sent (an unknown category, a title): its warnings only
    logging.getLogger("mcp").setLevel(logging.WARNING)
    server = build_server()
    code = 1
    try:
        server.run("stdio")
        code = 0
    finally:
        if not server.close(EXIT_GRACE):
            log.info("exiting during a background embedding; the next backfill finishes it")
            logging.shutdown()
            sys.stderr.flush()
            os._exit(code)  # never finalize Python under a running llama.cpp decode
    return code
