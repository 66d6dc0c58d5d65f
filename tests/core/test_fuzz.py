"""A fuzz pass over what Mnemo reads from outside (issue 21, "Must be shown"): JSONL and
markdown imports, the settings file, and the MCP server's request loop.

Hypothesis writes the input; the properties are the quality bar's: no traceback, every bad
line skipped and reported, nothing already stored harmed. Real SQLite files through the real
Engine; the MCP loop in a real `python -m app mcp` subprocess. Found by it (each fixed with
the first failing example kept below as a regression): a BOM before line 1 of a JSONL file
refused the line.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from app.core.settings import BY_KEY, Settings
from app.core.storage.transfer import MARKDOWN_SUFFIXES
from app.mcp_transport import message_of
from tests.conftest import REPO

FIELDS = [
    "id", "text", "title", "reasoning", "category", "tags", "keywords", "references",
    "project", "source", "confidence", "pinned", "observation_count", "recall_count",
    "created_at", "updated_at", "thread", "deleted_at", "merged_from", "name", "description",
]  # fmt: skip

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
    st.sampled_from(["2024-02-30", "2024-01-01T00:00:00Z", "high", "", " ", "\x00", "é" * 3]),
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=8,
)
MEMORY_LIKE = st.dictionaries(st.sampled_from(FIELDS), JSON_VALUES, max_size=8).map(
    lambda d: {"text": "a note about parsers", **d} if "text" not in d else d
)
JSONL_LINES = st.one_of(
    MEMORY_LIKE.map(lambda d: json.dumps(d).encode()),
    JSON_VALUES.map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=60).filter(lambda b: b"\n" not in b),
    st.integers(min_value=1, max_value=20_000).map(lambda n: b"[" * n + b"]" * n),
    st.sampled_from(
        [b"NaN", b'{"text": NaN}', b'{"text": "x", "pinned": Infinity}', b"\xef\xbb\xbf{}"]
    ),
)

PROTECTED = [
    "The staging cluster runs Kubernetes 1.29 behind the office VPN",
    "Wrap low-level parse exceptions in a ParseError that carries the line number",
    "Anna's birthday is on 14 March; she likes Earl Grey",
]


def _snapshot(store) -> dict[str, tuple]:
    return {
        m.id: (m.text, m.title, tuple(m.tags), m.category, m.deleted_at)
        for m in store.iter_all(include_deleted=True)  # noqa: SLF001
    }


@pytest.fixture
def protected(engine, store):
    for text in PROTECTED:
        engine.remember(text, tags=["keep"], force=True)
    return {k: v for k, v in _snapshot(store).items() if v[0] in PROTECTED}


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(lines=st.lists(JSONL_LINES, min_size=1, max_size=12), bom=st.booleans())
@example(lines=[b'{"text": "a note after a byte order mark"}'], bom=True)
def test_any_jsonl_file_imports_its_good_lines_and_reports_the_rest(
    engine, store, protected, tmp_path, lines, bom
):
    path = tmp_path / "fuzz.jsonl"
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + b"\n".join(lines) + b"\n")
    protected_lines = [
        json.dumps({"id": i, "text": text + " (changed)"}).encode()
        for i, (text, *_) in protected.items()
    ]
    path.write_bytes(path.read_bytes() + b"\n".join(protected_lines) + b"\n")
    # WHEN it is imported (no exception of any kind may escape)
    report = engine.import_paths([path])
    # THEN every line is accounted for: added, known already, or reported by its number
    non_blank = [
        raw
        for n, raw in enumerate(path.read_bytes().split(b"\n"))
        if raw.decode("utf-8-sig" if n == 0 else "utf-8", "replace").strip()
    ]
    assert report.added + report.skipped + len(report.errors) == len(non_blank), report
    assert all(":" in e and "fuzz.jsonl:" in e for e in report.errors)
    # AND what was stored before is untouched (an id taken by another text is refused)
    now = _snapshot(store)
    assert {i: now[i] for i in protected} == protected
    if bom and lines[0] == b'{"text": "a note after a byte order mark"}':
        assert report.added >= 1 and not any(":1:" in e for e in report.errors)


MARKDOWN_LINES = st.one_of(
    st.text(max_size=60).map(lambda s: s.replace("\n", " ")),
    st.builds(lambda level, t: "#" * level + " " + t, st.integers(1, 7), st.text(max_size=30)),
    st.builds(
        lambda k, v: f"- {k}: {v}",
        st.sampled_from(
            [
                "Tags",
                "Category",
                "Id",
                "Thread",
                "Created",
                "Confidence",
                "Pinned",
                "Observations",
                "Project",
                "References",
                "Keywords",
                "Why",
                "Nope",
            ]
        ),
        st.text(max_size=30).map(lambda s: s.replace("\n", " ")),
    ),
    st.sampled_from(["```", "```python", "---", "- ", "  - nested", "\x00", "\ufeff# BOM title"]),
    st.integers(1, 3000).map(lambda n: "  " * n + "- deep"),
)


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    files=st.lists(
        st.one_of(
            st.lists(MARKDOWN_LINES, max_size=15).map(lambda ls: "\n".join(ls).encode()),
            st.binary(max_size=80),
        ),
        min_size=1,
        max_size=3,
    )
)
def test_any_markdown_folder_imports_what_it_can_and_names_each_bad_file(
    engine, store, protected, tmp_path, files
):
    folder = tmp_path / "notes"
    folder.mkdir(exist_ok=True)
    for old in folder.iterdir():
        old.unlink()
    for n, data in enumerate(files):
        (folder / f"note{n}{MARKDOWN_SUFFIXES[0]}").write_bytes(data)
    report = engine.import_paths([folder])  # no exception may escape
    for error in report.errors:  # each problem names its file
        assert str(folder) in error, error
    now = _snapshot(store)
    assert {i: now[i] for i in protected} == protected


SETTING_VALUES = st.one_of(
    JSON_VALUES, st.sampled_from(["Ctrl+Alt+Space", "/tmp", "keyword", 0, -1, 1e308])
)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    content=st.one_of(
        st.dictionaries(st.sampled_from(sorted(BY_KEY)), SETTING_VALUES, max_size=6).map(
            lambda d: json.dumps(d).encode()
        ),
        JSON_VALUES.map(lambda v: json.dumps(v).encode()),
        st.binary(max_size=100),
        st.integers(1, 5000).map(lambda n: b'{"hotkey": ' + b"[" * n + b"]" * n + b"}"),
        st.sampled_from([b'{"default_limit": NaN}', b'{"hotkey": "x",}', b"\xff\xfe{}"]),
    )
)
def test_any_settings_file_loads_to_valid_values_and_is_left_as_it_is(tmp_path, content):
    path = tmp_path / "settings.json"
    path.write_bytes(content)
    loaded = Settings(path)  # no exception may escape
    # THEN every value in use is one its own check accepts (a bad one is the default) ...
    for key, declared in BY_KEY.items():
        value = loaded[key]
        assert declared.coerce(value) == value, (key, value)
    # ... AND reading the file never changes it
    assert path.read_bytes() == content


# -- the MCP request loop ----------------------------------------------------------------

REQUEST_LIKE = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "1.0", 2, None]),
        "id": st.one_of(SCALARS, st.lists(SCALARS, max_size=2), st.floats(allow_nan=False)),
        "method": st.one_of(
            st.sampled_from(
                [
                    "tools/call",
                    "tools/list",
                    "ping",
                    "resources/list",
                    "notifications/cancelled",
                    "initialize",
                    "nope",
                ]
            ),
            JSON_VALUES,
        ),
        "params": st.one_of(
            JSON_VALUES,
            st.fixed_dictionaries(
                {
                    "name": st.sampled_from(
                        [
                            "search_memory",
                            "store_memory",
                            "get_memory",
                            "list_recent",
                            "forget_memory",
                            "nope",
                        ]
                    )
                },
                optional={
                    "arguments": st.dictionaries(
                        st.sampled_from(
                            [
                                "query",
                                "limit",
                                "id",
                                "name",
                                "description",
                                "reasoning",
                                "category",
                                "tags",
                                "thread",
                                "project",
                                "x",
                            ]
                        ),
                        JSON_VALUES,
                        max_size=5,
                    )
                },
            ),
        ),
    },
)
MCP_LINES = st.one_of(
    REQUEST_LIKE.map(lambda d: json.dumps(d).encode()),
    JSON_VALUES.map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=60).filter(lambda b: b"\n" not in b),
)


@settings(max_examples=500, deadline=None)
@given(line=MCP_LINES)
def test_the_mcp_line_reader_answers_or_passes_on_any_line(line):
    answer = message_of(line)  # no exception may escape
    if answer is None:
        assert not line.decode("utf-8", "replace").strip()
    elif hasattr(answer, "error"):
        assert answer.error.code in (-32700, -32600)
        assert answer.id is None or type(answer.id) in (int, str)


class _Server:
    """One `python -m app mcp` for many lines; each line is followed by a ping, so every
    answer the line got arrives before the ping's."""

    def __init__(self, stderr):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "app", "mcp"],
            cwd=REPO,
            env=os.environ.copy(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.pings = 0

    def _read(self):
        for raw in self.proc.stdout:
            self.lines.put(raw)
        self.lines.put(None)

    def exchange(self, line: bytes, answered: bool = False) -> list[dict]:
        """The answers to `line`, every one of them: those before the ping's, and with
        `answered` (a request, which gets one) at least one, however late. JSON-RPC lets a
        server answer out of order: a tool call on the engine thread is often answered
        after the ping sent behind it, and its answer must not count for the next line."""
        self.pings += 1
        ping = {"jsonrpc": "2.0", "id": f"ping-{self.pings}", "method": "ping"}
        self.proc.stdin.write(line + b"\n" + json.dumps(ping).encode() + b"\n")
        self.proc.stdin.flush()
        answers, pinged = [], False
        while not pinged or (answered and not answers):
            raw = self.lines.get(timeout=60)
            assert raw is not None, "the server stopped"
            answer = json.loads(raw)
            if answer.get("id") == ping["id"] and "result" in answer and not pinged:
                pinged = True
            else:
                answers.append(answer)
        return answers


@pytest.mark.slow
def test_the_mcp_server_answers_fuzzed_requests_and_harms_nothing(
    mnemo_home, engine, store, tmp_path
):
    for text in PROTECTED:
        engine.remember(text, tags=["keep"], force=True)
    before = _snapshot(store)
    errors = tmp_path / "stderr.txt"
    with open(errors, "wb") as stderr:
        server = _Server(stderr)
        try:
            hello = {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "fuzz", "version": "1"},
                },
            }
            assert server.exchange(json.dumps(hello).encode(), answered=True)[0]["id"] == 0
            server.exchange(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')

            @settings(max_examples=300, deadline=None)
            @given(line=MCP_LINES)
            # Found by the fuzzer on 2026-11-26: a tool call answered after the ping behind
            # it (the harness took it for no answer, and for a second answer to the next line)
            @example(
                line=b'{"params": {"name": "list_recent"}, "method": "tools/call", '
                b'"jsonrpc": "2.0", "id": ""}'
            )
            @example(line=b'{"method": "tools/call", "params": {"name": "list_recent"}, "id": ""}')
            def one_line(line):
                try:
                    value = json.loads(line)
                except ValueError:
                    value = None
                request = isinstance(value, dict) and "method" in value and "id" in value
                broken = value is None and bool(line.decode("utf-8", "replace").strip())
                answers = server.exchange(line, answered=request or broken)
                # THEN it gets at most one answer, a JSON-RPC 2.0 one, and the server goes on;
                # a request (a method and an id, whatever they hold) and a line that is not
                # JSON get exactly one (waited for: it may come after the ping's)
                assert len(answers) <= 1, answers
                if request or broken:
                    assert len(answers) == 1, line
                for answer in answers:
                    assert answer["jsonrpc"] == "2.0" and ("result" in answer or "error" in answer)

            one_line()
        finally:
            server.proc.stdin.close()
            code = server.proc.wait(60)
    assert code == 0
    log = errors.read_text(errors="replace")
    assert "Traceback" not in log, log[-3000:]
    # AND what was stored before is still there, unchanged (nothing here can guess its ids)
    after = _snapshot(store)
    assert {i: after[i] for i in before} == before
    assert store.db.query("PRAGMA integrity_check") == [("ok",)]  # noqa: SLF001
