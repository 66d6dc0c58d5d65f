"""Import never poisons the database: every field checked, a bad line skipped and reported.

Each hostile line below imported with exit 0 before and then made every search crash.
"""

from __future__ import annotations

import json

import pytest

from app.core.errors import StoreError
from app.core.memory import Memory
from app.core.storage.migrations import valid_row
from tests.conftest import run_cli


@pytest.fixture
def engine(word_engine):
    """Mechanics, not meaning: the small deterministic model (tests/word_model.py)."""
    return word_engine


HOSTILE = [
    ('{"text": "x", "observation_count": "several"}', "observation_count"),
    ("[1,2,3]", "not a JSON object"),
    ("null", "not a JSON object"),
    ('"str"', "not a JSON object"),
    ('{"text": "pinned no", "pinned": "no"}', "pinned"),
    ('{"text": "huge count", "observation_count": ' + str(2**70) + "}", "observation_count"),
    ('{"text": "project dict", "source_project": {"a": 1}}', "source_project"),
    ('{"text": "category list", "category": ["a"]}', "category"),
    ('{"text": "nan count", "recall_count": NaN}', "NaN"),
    ('{"text": "float count", "observation_count": 2.5}', "observation_count"),
    ('{"text": "tags of numbers", "tags": [1, 2]}', "tags"),
    ('{"text": "bad date", "created_at": "yesterday"}', "created_at"),
    ('{"text": "nul\\u0000byte"}', "NUL"),
    ('{"text": "%s"}' % ("y" * 2_000_001), "limit"),
    ('{"text": "bad id", "id": "../../etc"}', "id"),
    ('{"text": ""}', "non-empty text"),
    ("{not json", "not valid JSON"),
]


def _write(path, lines: list[str | bytes]) -> None:
    with path.open("wb") as f:
        for line in lines:
            f.write(line if isinstance(line, bytes) else line.encode())
            f.write(b"\n")


def test_every_bad_line_is_skipped_and_reported_the_rest_imports(engine, tmp_path):
    path = tmp_path / "hostile.jsonl"
    good = [json.dumps({"text": f"Good memory {i} about sourdough starters"}) for i in range(3)]
    lines = [good[0], *(line for line, _ in HOSTILE), b'{"text": "bad \xff utf8"}', *good[1:]]
    _write(path, lines)
    report = engine.import_paths([path])
    assert report.added == 3
    assert len(report.errors) == len(HOSTILE) + 1
    for (_, needle), error in zip(HOSTILE, report.errors[: len(HOSTILE)], strict=True):
        assert needle in error, error
    assert all(e.startswith(f"{path}:") for e in report.errors)
    assert f"{path}:{len(HOSTILE) + 2}: not UTF-8 text" in report.errors
    # THEN searching, context and doctor all keep working
    assert engine.recall("sourdough", track=False).results
    assert engine.context(query="sourdough", track=False).memories
    engine.backfill()
    assert all(ok for ok, _ in engine.health())


def test_a_duplicate_id_with_another_text_is_reported_not_dropped_silently(engine, tmp_path):
    path = tmp_path / "dupe.jsonl"
    _write(
        path,
        [
            json.dumps({"id": "abcd1234", "text": "The first text under this id"}),
            json.dumps({"id": "abcd1234", "text": "A different text under the same id"}),
        ],
    )
    report = engine.import_paths([path])
    assert report.added == 1
    assert report.errors == [f"{path}:2: id abcd1234 already holds a different text; skipped"]
    assert engine.get("abcd1234").text == "The first text under this id"


def test_cli_import_exits_1_when_lines_were_skipped(tmp_path):
    path = tmp_path / "mixed.jsonl"
    _write(path, [json.dumps({"text": "A fine memory"}), '{"text": "x", "pinned": "no"}'])
    result = run_cli("import", str(path), "--no-embed")
    err = result.stderr.decode()
    assert result.returncode == 1 and "Traceback" not in err
    assert f"{path}:2" in err and "1 line(s) or section(s) skipped" in err
    assert b"Imported 1 new" in result.stdout


def test_the_database_refuses_wrong_types_from_any_path(engine, store):
    memory = engine.remember("A memory to corrupt by hand", force=True).memory
    for column, value in (
        ("observation_count", "several"),
        ("pinned", "no"),
        ("tags", '{"a": 1}'),
        ("recall_count", -1),
        ("confidence", "certain"),
    ):
        with pytest.raises(StoreError, match="wrong type"), store.db.write() as conn:
            conn.execute(f"UPDATE memories SET {column} = ? WHERE id = ?", (value, memory.id))
    with pytest.raises(StoreError):
        store.insert(Memory(id="", text="bad count", observation_count="nine"))  # type: ignore[arg-type]
    assert engine.get(memory.id).observation_count == 1


def test_doctor_finds_and_repairs_rows_an_older_version_let_in(engine, store):
    good = engine.remember("A memory that is fine", force=True).memory
    bad = engine.remember("A memory with a bad count", force=True).memory
    hopeless = engine.remember("A memory whose text will be a blob", force=True).memory
    conn = store.db.conn
    # GIVEN rows written before the checks existed (the triggers are dropped to let them in)
    conn.execute("DROP TRIGGER memories_check_update")
    conn.execute(
        "UPDATE memories SET observation_count = 'several', tags = 'x' WHERE id = ?", (bad.id,)
    )
    conn.execute("UPDATE memories SET text = x'00ff' WHERE id = ?", (hopeless.id,))
    conn.execute(
        f"CREATE TRIGGER memories_check_update BEFORE UPDATE ON memories "
        f"WHEN NOT ({valid_row('NEW')}) BEGIN SELECT RAISE(ABORT, 'wrong type'); END"
    )
    # THEN search still works, and doctor says what is wrong
    assert engine.recall("memory", mode="keyword", track=False).results
    failing = [line for ok, line in engine.health() if not ok]
    assert any("2 memories have fields of the wrong type" in line for line in failing)
    # WHEN repaired THEN the fixable row is fixed, the other is set aside, nothing is lost
    assert engine.repair() == (1, 1)
    assert all(ok for ok, _ in engine.health())
    fixed = engine.get(bad.id)
    assert fixed.observation_count == 1 and fixed.tags == [] and fixed.text == bad.text
    held = conn.execute("SELECT id, reason FROM memories_quarantine").fetchall()
    assert held == [(hopeless.id, "the text is not usable")]
    assert engine.get(good.id).text == good.text
