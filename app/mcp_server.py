"""`mnemo mcp`: a Model Context Protocol server over stdio, so AI agents share your memory.

A thin layer over `app.core`: the same database as the desktop app and the CLI (WAL and a
busy timeout let several servers, the app and the CLI write at once). Known problems come
back as tool errors the model can read; nothing is printed to stdout but the protocol.
"""

from __future__ import annotations

import logging

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from app.core.engine import Engine
from app.core.errors import MnemoError
from app.core.memory import Memory, public_dict
from app.core.store import Filters

log = logging.getLogger(__name__)

INSTRUCTIONS = (
    "Mnemo is the user's long-term memory, shared with their other agents and their desktop "
    "app. Call search_memory before relying on assumptions about the user's projects, "
    "preferences or past decisions. Call store_memory when you learn something worth keeping "
    "beyond this session: a pattern that worked, an anti-pattern to avoid, a heuristic, with "
    "the reasoning behind it. Never store secrets (they are redacted)."
)


def _summary(memory: Memory, score: float | None = None) -> dict:
    return public_dict(memory, score=score)


def build_server(engine: Engine | None = None) -> MCPServer:
    """The MCP server with Mnemo's tools; the engine (and model) load on first use."""
    server = MCPServer("mnemo", instructions=INSTRUCTIONS, log_level="WARNING")
    state: dict[str, Engine] = {}

    def core() -> Engine:
        """The engine, with the settings file re-read if it changed since the last call."""
        if "engine" not in state:
            state["engine"] = engine or Engine()
        else:
            try:
                state["engine"].refresh_settings()
            except MnemoError as exc:
                log.warning("settings not reloaded: %s", exc)
        return state["engine"]

    def required(**values: str) -> None:
        for name, value in values.items():
            if not isinstance(value, str) or not value.strip():
                raise ToolError(f"{name} must not be empty")

    @server.tool()
    def store_memory(
        name: str,
        description: str,
        reasoning: str,
        category: str,
        references: list[str] | None = None,
        tags: list[str] | None = None,
        project: str | None = None,
    ) -> dict:
        """Store a learning: a short name, what was learned, why it matters, and a category
        (anti-patterns, patterns, heuristics or note). The same description again counts
        one more observation. A near-duplicate is stored as a new memory linked to the
        similar one (`similar` in the result says which); merging is left to the user."""
        required(name=name, description=description, reasoning=reasoning, category=category)
        engine = core()
        allowed = engine.settings["categories"]
        if category not in allowed:
            raise ToolError(f"unknown category {category!r}; use one of: {', '.join(allowed)}")
        try:
            result = engine.remember(
                description,
                title=name,
                reasoning=reasoning,
                category=category,
                references=references or [],
                tags=tags or [],
                project=project,
                source="mcp",
                force=True,  # never merge on an agent's behalf: merging is a person's call
                link_similar=True,
                secrets="redact",
            )
        except MnemoError as exc:
            raise ToolError(str(exc)) from None
        out = {
            "status": result.status,
            **_summary(result.memory),
            "similarity": result.similarity,
            "related": [
                {"id": m.id, "title": m.display_title, "similarity": round(s, 4)}
                for m, s in result.related
            ],
        }
        if result.similar is not None:
            out["similar"] = {
                "id": result.similar.id,
                "title": result.similar.display_title,
                "similarity": round(result.similarity or 0.0, 4),
            }
        if result.notice:
            out["notice"] = result.notice
        return out

    @server.tool()
    def search_memory(
        query: str, limit: int = 10, category: str | None = None, project: str | None = None
    ) -> dict:
        """Search memories by meaning and keywords; best first, with scores."""
        required(query=query)
        try:
            result = core().recall(
                query,
                limit=max(1, min(limit, 100)),
                filters=Filters(category=category, project=project),
            )
        except MnemoError as exc:
            raise ToolError(str(exc)) from None
        out = {
            "query": query,
            "mode": result.mode,
            "results": [_summary(r.memory, r.score) for r in result.results],
        }
        if result.notice:
            out["notice"] = result.notice
        return out

    @server.tool()
    def get_memory(id: str) -> dict:  # noqa: A002 - the tool's public argument name
        """One memory by its id (or a unique prefix of at least 4 characters)."""
        required(id=id)
        try:
            return _summary(core().get(id))
        except MnemoError as exc:
            raise ToolError(str(exc)) from None

    @server.tool()
    def list_recent(limit: int = 20) -> dict:
        """The most recently created or changed memories."""
        memories = core().listing(Filters(), limit=max(1, min(limit, 200)))
        return {"results": [_summary(m) for m in memories]}

    @server.tool()
    def forget_memory(id: str) -> dict:  # noqa: A002 - the tool's public argument name
        """Move a memory to the trash (the user can restore it)."""
        required(id=id)
        try:
            engine = core()
            memory = engine.get(id)
            engine.forget([memory.id])
        except MnemoError as exc:
            raise ToolError(str(exc)) from None
        return {"status": "trashed", "id": memory.id, "title": memory.display_title}

    return server


def main() -> int:
    """Serve over stdio until the client closes the connection."""
    from app.core import crash

    logging.basicConfig(level=logging.WARNING, format="mnemo-mcp: %(levelname)s: %(message)s")
    crash.install("mcp")  # a log file and a crash file; stdout stays the protocol's alone
    build_server().run("stdio")
    return 0
