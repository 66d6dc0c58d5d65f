"""Logs never hold a memory's content, at any level (issue 26, encryption at rest).

A marker planted in every field of memories (text, title, tags, source, project, reasoning,
references, thread), in an imported file, in a candidate an agent's hook captured, in what a
simulated bug quotes in its exception and in what the GUI notifies, must reach no log record
and no file of the log folder: ids, counts, timings, paths and error types only. Each path
runs through the real log plumbing (`crash.install`, the files the app and its servers
write), with DEBUG on where the process can be reached (in this process) and as shipped
(INFO) in the subprocesses.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from app.core import crash, paths
from app.core.errors import MnemoError, SecretError
from app.core.runner import Runner
from app.core.storage.inbox import Candidate
from tests.conftest import REPO, run_cli, wait
from tests.crash_state import process_state_kept

# The GUI's fixtures (an offscreen Qt platform, a seeded worker); imported, they apply here.
from tests.gui.conftest import blockers_kept_alive, seeded  # noqa: F401

MNEMO = Path(sys.executable).parent / "mnemo"
# An AWS access key pattern (not AWS's published example, which scans as benign).
AWS_KEY = "AKIAQ3EGRVZ7M4KXPLWD"


@pytest.fixture
def marker() -> str:
    return "ZQXMARKER" + secrets.token_hex(6)


def _learning(marker: str) -> dict:
    """An MCP `store_memory` learning with the marker in every field."""
    return {
        "name": f"{marker} learning",
        "description": f"{marker}: collect real input before writing a parser",
        "reasoning": f"{marker} fixtures missed CRLF",
        "category": "patterns",
        "tags": [marker],
        "references": [f"{marker}.py"],
        "project": marker,
        "thread": marker,
    }


@pytest.fixture
def debug_logs():
    """The app's own log file (`crash.install`, as the desktop app sets it up) with DEBUG
    on, and every record's message kept as well; what `crash.install` changes in the
    process is put back after."""
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    with process_state_kept():
        crash.install("app")
        crash._handler.setLevel(logging.DEBUG)
        root = logging.getLogger()
        root.addHandler(Keep(logging.DEBUG))
        root.setLevel(logging.DEBUG)
        yield records


def _log_folder_text() -> str:
    for handler in logging.getLogger().handlers:
        handler.flush()
    folder = paths.log_dir()
    return "\n".join(
        f"== {p.name}\n" + p.read_text(encoding="utf-8", errors="replace")
        for p in sorted(folder.iterdir())
        if p.is_file()
    )


def _assert_no_marker(marker: str, records: list[logging.LogRecord] | None = None) -> str:
    """The log folder's files (and the records kept) hold no trace of the marker."""
    leaked = []
    for record in records or []:
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            text += f" | {record.exc_info[0].__name__}"
        if marker in text:
            leaked.append(f"{record.name}:{record.lineno} {record.levelname}: {text}")
    files = _log_folder_text()
    lines = [line for line in files.splitlines() if marker in line]
    assert not leaked and not lines, "memory content in the log:\n" + "\n".join(leaked + lines)
    return files


def _fields(marker: str, n: int) -> dict:
    return {
        "title": f"{marker} title {n}",
        "tags": [f"{marker}-tag", "ops"],
        "source": f"{marker}-source",
        "project": f"{marker}-project",
        "reasoning": f"Because {marker} said so ({n})",
        "references": [f"https://example.com/{marker}/{n}"],
    }


# ---- tracebacks -----------------------------------------------------------------------
def test_a_logged_traceback_names_its_exceptions_without_their_messages(debug_logs, marker):
    # GIVEN a console handler before the log file (as the MCP server and the hook helper
    # have): its formatter caches the whole traceback on the record first
    console = logging.StreamHandler(open(os.devnull, "w"))  # noqa: SIM115
    root = logging.getLogger()
    root.handlers.insert(0, console)
    try:
        # WHEN a bug is logged whose exceptions, chained, quote a memory
        try:
            try:
                {}[f"{marker} title"]
            except KeyError as exc:
                raise ValueError(f"bad text {marker}") from exc
        except ValueError:
            try:
                raise RuntimeError(f"while saving {marker}")
            except RuntimeError:
                logging.getLogger("mnemo.test").exception("saving failed")
    finally:
        root.removeHandler(console)
        console.stream.close()
    # THEN the log keeps where and what (each type, the chain), never the messages
    files = _assert_no_marker(marker, debug_logs)
    assert "saving failed\nTraceback (most recent call last):" in files
    assert "KeyError (message of" in files and "ValueError (message of" in files
    assert "RuntimeError (message of" in files and "characters not logged)" in files
    assert "was the direct cause of the following exception" in files
    assert "During handling of the above exception, another exception occurred" in files


# ---- the core, in this process, at DEBUG --------------------------------------------
def test_the_core_logs_no_memory_content_at_debug(engine, debug_logs, marker, tmp_path):
    records = debug_logs
    engine.apply_settings({"mirror_dir": str(tmp_path / "mirror")})
    text = f"The {marker} billing service deploys with Helm on Fridays from build-07"
    first = engine.remember(text, **_fields(marker, 1))
    assert first.status == "stored"
    assert engine.remember(text, **_fields(marker, 1)).status == "observed"
    near = f"The {marker} billing service deploys with Helm on Fridays from build-07!"
    assert engine.remember(near, title=f"{marker} near").status == "similar"
    merged = engine.remember(near, title=f"{marker} near", merge=True)
    forced = engine.remember(
        f"The {marker} billing service deploys with Helm on Friday nights from build-08",
        force=True,
        thread=f"{marker}-thread",
        **_fields(marker, 2),
    )
    # a secret: refused, then stored redacted (the secret path of every field)
    leak = f"{marker} deploy key is {AWS_KEY} for CI"
    with pytest.raises(SecretError):
        engine.remember(leak, title=f"{marker} key {AWS_KEY}", tags=[AWS_KEY])
    redacted = engine.remember(leak, title=f"{marker} key", secrets="redact", force=True)
    assert redacted.notice and AWS_KEY not in redacted.memory.text
    # a long text, embedded later by the backfill
    long = engine.remember(f"{marker} runbook step. " * 400, embed=False, force=True)
    engine.backfill()

    engine.recall(marker)
    engine.recall(f"how does the {marker} billing service deploy?")
    engine.context(max_chars=4000)
    engine.prompt_context(f"how do we deploy {marker} billing?", frozenset())
    engine.context(query=f"{marker} billing", max_chars=4000)
    engine.duplicate_pairs()

    edited = engine.edit(
        forced.memory.id, text=f"{marker} edited text", title=f"{marker} edited", tags=[marker]
    )
    pair = engine.merge([edited.id, redacted.memory.id])
    engine.unmerge(pair.id)
    engine.forget([first.memory.id, long.memory.id])
    assert engine.remember(text).status == "restored"
    engine.forget([merged.memory.id])
    engine.restore([merged.memory.id])
    engine.mark_used([first.memory.id])

    # import: good lines, a secret, a broken line, a line whose id holds another text
    lines = tmp_path / f"{marker}.jsonl"
    good = {"text": f"{marker} imported fact", "title": f"{marker} imported", "tags": [marker]}
    lines.write_text(
        "\n".join(
            [
                json.dumps(good),
                json.dumps({"text": f"{marker} secret {AWS_KEY}", "title": marker}),
                f'{{"text": "{marker} not json',
                json.dumps({"id": first.memory.id, "text": f"{marker} another text"}),
                json.dumps({"text": f"{marker} bad date", "created_at": marker}),
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / f"{marker}.md").write_text(f"# {marker} section\n\n{marker} body\n", "utf-8")
    report = engine.import_paths([lines, notes])
    assert report.added >= 2 and report.errors  # the bad lines were reported, not logged
    engine.backfill()
    exported = "".join(engine.export("jsonl", include_trash=True))
    exported += "".join(engine.export("markdown"))
    assert marker in exported
    engine.export_to(tmp_path / "out.jsonl", "jsonl")

    # the capture inbox: proposed, accepted, another rejected, a secret refused
    said = f"Remember that the {marker} cache lives on db2.internal. Fix the login bug."
    for words in (f"The {marker} cache lives on db2.internal.", f"Use {marker} not npm."):
        what, _ = engine.capture(
            Candidate(words, "remember", [marker], "claude", f"{marker}-project", "s1", said)
        )
        assert what == "proposed"
    waiting = engine.inbox()
    engine.accept([waiting[0].id])
    engine.reject([waiting[1].id])
    with pytest.raises(MnemoError):
        engine.capture(Candidate(f"{marker} key is {AWS_KEY}", "remember", said=said))

    # the MCP tools, in this process
    from mcp.server.mcpserver.exceptions import ToolError

    from app.mcp_server import build_server

    server = build_server(engine)

    async def tools() -> None:
        learning = _learning(marker)
        stored = json.loads((await server.call_tool("store_memory", learning)).content[0].text)
        with pytest.raises(ToolError):  # an unknown category: the error quotes it
            await server.call_tool("store_memory", {**learning, "category": marker})
        await server.call_tool("store_memory", {**learning, "description": f"{marker} {AWS_KEY}"})
        await server.call_tool("search_memory", {"query": marker, "project": marker})
        await server.call_tool("get_memory", {"id": stored["id"]})
        await server.call_tool("list_recent", {})
        await server.call_tool("forget_memory", {"id": stored["id"]})

    try:
        asyncio.run(tools())
    finally:
        assert server.close(30)

    # a bug whose message quotes a memory: on the engine thread, and uncaught
    runner = Runner(lambda: engine, load_model=False, close_engine=False)
    runner.start()
    try:

        def buggy(e):
            raise ValueError(f"cannot parse {e.get(first.memory.id).text!r}")

        with pytest.raises(ValueError):
            runner.submit(buggy).result(timeout=30)
    finally:
        runner.stop(10)
    notices = []
    crash.set_notifier(lambda title, body: notices.append(body))
    try:
        raise KeyError(f"{marker} title 1")
    except KeyError:
        sys.excepthook(*sys.exc_info())
    assert notices and marker in notices[0]  # the user is told; the log does not keep it

    files = _assert_no_marker(marker, records)
    # (the log was written: the bugs are in it, by type, with their tracebacks)
    assert "engine call failed" in files and "ValueError" in files and "in buggy" in files
    assert "uncaught exception" in files and "KeyError" in files


# ---- the command line, the MCP server and the hook helper: real processes -----------
def test_the_command_line_mcp_server_and_hook_helper_log_no_memory_content(
    mnemo_home, marker, tmp_path
):
    def cli(*args: str) -> subprocess.CompletedProcess:
        done = run_cli("-v", *args)
        assert done.returncode == 0, done.stderr.decode()
        # -v: what happens is logged on standard error
        assert marker not in done.stderr.decode(errors="replace"), done.stderr
        return done

    stored = json.loads(
        cli(
            "remember",
            f"The {marker} billing service deploys with Helm on Fridays",
            "--title",
            f"{marker} deploy",
            "--tags",
            f"{marker},ops",
            "--project",
            marker,
            "--json",
        ).stdout
    )
    cli("remember", f"The {marker} billing service deploys with Helm on Fridays!", "--merge")
    cli("remember", f"{marker} key is {AWS_KEY}", "--redact-secrets")
    cli("recall", marker)
    cli("edit", stored["id"], "--title", f"{marker} edited")
    cli("forget", stored["id"])
    cli("restore", stored["id"])
    lines = tmp_path / "in.jsonl"
    lines.write_text(json.dumps({"text": f"{marker} imported", "tags": [marker]}) + "\n")
    cli("import", str(lines))
    cli("export")

    # the MCP server (its log: mnemo-mcp.log), through the SDK's stdio client
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "app", "mcp"],
        cwd=REPO,
        env={"MNEMO_HOME": os.environ["MNEMO_HOME"]},
    )

    async def session() -> None:
        async with Client(params) as client:
            learning = _learning(marker)
            done = await client.call_tool("store_memory", learning)
            kept = json.loads(done.content[0].text)
            # an unknown category: the error quotes it, the log must not
            refused = await client.call_tool("store_memory", {**learning, "category": marker})
            assert refused.is_error
            # arguments the SDK rejects: its error quotes the values
            bad = await client.call_tool("search_memory", {"query": marker, "limit": marker})
            assert bad.is_error
            await client.call_tool("search_memory", {"query": marker, "project": marker})
            await client.call_tool("get_memory", {"id": kept["id"]})
            await client.call_tool("get_memory", {"id": marker})
            await client.call_tool("forget_memory", {"id": kept["id"]})

    asyncio.run(session())

    # the agents' hook and its helper (its log: mnemo-hook.log)
    prompt = {
        "session_id": "s1",
        "cwd": str(REPO),
        "hook_event_name": "UserPromptSubmit",
        "prompt": f"Remember that the {marker} cache lives on db2.internal. Also fix the bug.",
    }
    try:
        for words in (
            prompt["prompt"],
            f"how does the {marker} billing service deploy?",
            f"Remember that the {marker} deploy key is {AWS_KEY}.",
        ):
            hooked = subprocess.run(
                [str(MNEMO), "hook", "prompt"],
                input=json.dumps({**prompt, "prompt": words}),
                capture_output=True,
                text=True,
                timeout=120,
                cwd=REPO,
            )
            assert hooked.returncode == 0 and marker not in hooked.stderr
        waiting = wait(
            lambda: json.loads(run_cli("inbox", "--json").stdout) or None, 60, "a candidate"
        )
        cli("inbox", "accept", waiting[0]["id"])
    finally:
        subprocess.run([str(MNEMO), "hook", "stop"], capture_output=True, timeout=60)
    files = _assert_no_marker(marker)
    assert "== mnemo-mcp.log" in files and "== mnemo-hook.log" in files
    assert "capture" in files  # the helper logged the capture, by its rule and outcome


# ---- the desktop app: what it notifies is logged ------------------------------------
@pytest.fixture
def running_app(qtbot, qapp, embedder, seeded, tmp_path, monkeypatch, debug_logs):  # noqa: F811
    """The desktop app on the seeded database, logging as `app.gui.app.run` sets it up; its
    engine's `remember` has a bug for a text that says so (the bug quotes the text)."""
    from app.core.engine import Engine
    from app.gui.app import MnemoApp

    class Buggy(Engine):
        def remember(self, text, **fields):
            if "BUG" in text:
                raise RuntimeError(f"cannot remember {text!r}")
            return super().remember(text, **fields)

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    app = MnemoApp(qapp, engine_factory=lambda s: Buggy(settings=s, embedder=embedder))
    crash.set_notifier(app.tell_bug)  # as `run` does
    qtbot.waitUntil(lambda: app.status()["model"] == "ready", timeout=10_000)
    yield app
    app.hotkey.unregister()
    app.server.close()
    app.worker.stop()


def test_the_desktop_app_logs_no_memory_content(qtbot, running_app, debug_logs, marker):
    from app.gui.qt import QtGui

    app = running_app

    def notified(title: str) -> None:
        qtbot.waitUntil(lambda: app.status()["last_notification"][:1] == [title], timeout=10_000)
        app._last_notification = None

    # "Remembered: <title>"
    text = f"The {marker} billing service deploys with Helm on Fridays from build-07"
    app.remember_text(text, "manual")
    notified("Remembered")
    app.remember_text(text, "manual")
    notified("Already known")
    # a near-duplicate, merged
    app.remember_text(text + "!", "clipboard")
    qtbot.waitUntil(lambda: app.duplicate_choice is not None, timeout=10_000)
    app.duplicate_choice.chosen.emit("merge")
    notified("Merged")
    # a secret, stored redacted
    app.remember_text(f"{marker} deploy key is {AWS_KEY}", "clipboard")
    qtbot.waitUntil(lambda: app.secret_choice is not None, timeout=5000)
    app.secret_choice.chosen.emit("redact")
    notified("Remembered")
    # the clipboard
    QtGui.QGuiApplication.clipboard().setText(f"{marker} copied: a note about the caches")
    app.remember_clipboard()
    notified("Remembered")
    # a bug on the engine thread whose message quotes the text
    app.remember_text(f"{marker} BUG text", "manual")
    notified("Nothing remembered")
    # an uncaught exception in the GUI whose message quotes a title
    try:
        raise KeyError(f"{marker} title")
    except KeyError:
        sys.excepthook(*sys.exc_info())
    notified("Mnemo hit a bug")

    files = _assert_no_marker(marker, debug_logs)
    assert "Remembered: memory " in files and "Merged: memory " in files
    assert "Nothing remembered: RuntimeError" in files
    assert "Mnemo hit a bug: KeyError" in files
