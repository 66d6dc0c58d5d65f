"""The MCP server through the official SDK's stdio client: real subprocesses, real files."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time

import apsw
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from app.core import paths
from tests.conftest import REPO


def _params() -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "app", "mcp"],
        cwd=REPO,
        env={"MNEMO_HOME": os.environ["MNEMO_HOME"]},
    )


def _payload(result) -> dict:
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


def _error_text(result) -> str:
    assert result.is_error
    return result.content[0].text


LEARNING = {
    "name": "Read real samples before writing a parser",
    "description": "Collect real input files before writing a parser; synthetic fixtures "
    "missed byte order marks and CRLF line endings.",
    "reasoning": "Two parser bugs in the CSV importer only showed up on users' files.",
    "category": "patterns",
    "references": ["importer/csv.py"],
    "tags": ["parsing"],
    "project": "importer",
}


def test_store_search_get_forget_and_validation_over_stdio(mnemo_home):
    seen: dict[str, str] = {}

    async def session() -> None:
        async with Client(_params()) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert tools == {
                "store_memory",
                "search_memory",
                "get_memory",
                "list_recent",
                "forget_memory",
            }

            stored = _payload(await client.call_tool("store_memory", LEARNING))
            assert stored["status"] == "stored" and stored["category"] == "patterns"
            seen["id"] = stored["id"]
            assert 3 <= len(stored["keywords"]) <= 10
            again = _payload(await client.call_tool("store_memory", LEARNING))
            assert again["status"] == "observed" and again["observation_count"] == 2

            found = _payload(
                await client.call_tool(
                    "search_memory", {"query": "how to build a robust file parser"}
                )
            )
            assert found["results"][0]["id"] == stored["id"]
            assert found["results"][0]["score"] > 0

            got = _payload(await client.call_tool("get_memory", {"id": stored["id"]}))
            assert got["reasoning"] == LEARNING["reasoning"]
            assert got["references"] == ["importer/csv.py"] and got["recall_count"] == 1
            recent = _payload(await client.call_tool("list_recent", {"limit": 5}))
            assert [m["id"] for m in recent["results"]] == [stored["id"]]

            for field in ("name", "description", "reasoning"):
                bad = {**LEARNING, field: "  "}
                assert f"{field} must not be empty" in _error_text(
                    await client.call_tool("store_memory", bad)
                )
            assert "unknown category" in _error_text(
                await client.call_tool("store_memory", {**LEARNING, "category": "gossip"})
            )
            assert "no memory" in _error_text(
                await client.call_tool("get_memory", {"id": "0123456789abcdef"})
            )

            secret = {**LEARNING, "description": "Deploy key is AKIAIOSFODNN7EXAMPLE for CI"}
            redacted = _payload(await client.call_tool("store_memory", secret))
            assert "AKIA" not in redacted["text"] and "redacted" in redacted["notice"]

            gone = _payload(await client.call_tool("forget_memory", {"id": stored["id"]}))
            assert gone["status"] == "trashed"
            after = _payload(
                await client.call_tool(
                    "search_memory", {"query": "how to build a robust file parser"}
                )
            )
            assert stored["id"] not in [r["id"] for r in after["results"]]

    asyncio.run(session())
    # A later process finds what the agent stored (design 004, acceptance 4).
    conn = apsw.Connection(str(paths.database_path()))
    assert conn.execute(
        "SELECT source, deleted_at IS NOT NULL FROM memories WHERE id = ?", (seen["id"],)
    ).fetchall() == [("mcp", 1)]


@pytest.mark.slow
def test_two_mcp_servers_and_the_cli_write_at_once_without_loss(mnemo_home):
    from app.core.engine import Engine
    from app.core.settings import Settings

    Engine().close()
    settings = Settings()
    settings.set("model_threads", 1)
    settings.save()

    async def agent(n: int) -> None:
        async with Client(_params()) as client:
            for i in range(40):
                result = await client.call_tool(
                    "store_memory",
                    {
                        **LEARNING,
                        "name": f"Agent {n} learning {i}",
                        "description": f"Agent {n} observed build step {i} of module m{i * 3 + n}",
                    },
                )
                assert not result.is_error, result.content

    async def both() -> None:
        await asyncio.gather(agent(1), agent(2))

    cli = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from app.cli import main\n"
            "for i in range(40):\n"
            "    assert main(['remember', f'CLI note {i} about release {i * 11}', '--force']) == 0",
        ],
        cwd=REPO,
        env=os.environ.copy(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    asyncio.run(both())
    _, err = cli.communicate(timeout=300)
    assert cli.returncode == 0, err
    conn = apsw.Connection(str(paths.database_path()))
    # store_memory never merges: every agent call is a live row or an observation.
    rows = dict(
        conn.execute(
            "SELECT source, sum(observation_count) FROM memories WHERE deleted_at IS NULL "
            "GROUP BY source"
        ).fetchall()
    )
    assert rows == {"mcp": 80, "cli": 40}
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]


def test_server_picks_up_settings_changed_on_disk_without_a_restart(mnemo_home):
    # GIVEN a running MCP server that refuses an unknown category
    from app.core.settings import Settings

    async def session() -> None:
        async with Client(_params()) as client:
            decision = {**LEARNING, "category": "decisions"}
            assert "unknown category" in _error_text(
                await client.call_tool("store_memory", decision)
            )
            # WHEN the user adds the category (desktop settings dialog, `mnemo settings`)
            settings = Settings()
            settings.apply({"categories": [*settings["categories"], "decisions"]})
            stamp = time.time() + 2  # coarse mtimes: make sure the stamp moves
            os.utime(settings.path, (stamp, stamp))
            # THEN the same server accepts it on the next call
            stored = _payload(await client.call_tool("store_memory", decision))
            assert stored["status"] == "stored" and stored["category"] == "decisions"

    asyncio.run(session())


def test_an_agents_near_duplicate_is_stored_and_linked_never_merged(mnemo_home):
    # Merging drops nothing now, but it is still a person's decision, not an agent's.
    async def session() -> None:
        async with Client(_params()) as client:
            first = _payload(await client.call_tool("store_memory", LEARNING))
            near = {
                **LEARNING,
                "description": "Collect real input files before you write a parser; synthetic "
                "fixtures missed byte order marks and CRLF line endings!",
            }
            second = _payload(await client.call_tool("store_memory", near))
            assert second["status"] == "stored" and second["id"] != first["id"]
            assert second["similar"]["id"] == first["id"]
            assert second["similar"]["similarity"] >= 0.85
            assert f"mnemo:{first['id']}" in second["references"]
            again = _payload(await client.call_tool("get_memory", {"id": first["id"]}))
            assert again["text"] == LEARNING["description"] and "deleted_at" not in again

    asyncio.run(session())
