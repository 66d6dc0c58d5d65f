"""Import and export: the markdown splitting rule, idempotence, lossless JSONL."""

from __future__ import annotations

import json

import pytest

from app.core.errors import InputError
from app.core.storage import transfer
from app.core.storage.transfer import markdown_sections


@pytest.fixture
def engine(word_engine):
    """Mechanics, not meaning: the small deterministic model (tests/word_model.py)."""
    return word_engine


NOTES = """Intro line before any heading.

# Shell

Use `set -euo pipefail` in every bash script.

## Empty section
### Git

Rebase feature branches; never rebase main.

```
# not a heading inside a fence
```
"""


def test_markdown_splits_at_headings_outside_code_fences():
    sections = markdown_sections(NOTES, "notes")
    assert [t for t, _ in sections] == ["notes", "Shell", "Git"]
    assert sections[2][1].startswith("Rebase feature branches")
    assert "# not a heading inside a fence" in sections[2][1]


def test_import_folder_is_idempotent(engine, store, tmp_path):
    folder = tmp_path / "kb"
    (folder / "sub").mkdir(parents=True)
    (folder / "notes.md").write_text(NOTES)
    (folder / "sub" / "plain.txt").write_text("A file without headings is one memory.")
    (folder / "ignored.bin").write_bytes(b"\x00\x01")
    first = engine.import_paths([folder])
    assert (first.added, first.skipped) == (4, 0)
    second = engine.import_paths([folder])
    assert (second.added, second.skipped) == (0, 4)
    titles = sorted(m.title for m in store.iter_all())
    assert titles == ["Git", "Shell", "notes", "plain"]
    assert all(m.source == "import" for m in store.iter_all())


def _without_origins(jsonl: str) -> list[dict]:
    lines = [json.loads(line) for line in jsonl.splitlines()]
    for line in lines:
        line.pop("origin"), line.pop("origins")
    return lines


def test_jsonl_export_import_round_trip_is_lossless(engine, tmp_path, monkeypatch):
    engine.remember(
        "First memory",
        title="One",
        tags="a,b",
        project="p",
        reasoning="why",
        references="x.py",
        confidence="high",
    )
    second = engine.remember("Second memory with ünïcödé and emoji 🙂").memory
    engine.edit(second.id, pinned=True)
    engine.recall("memory")
    exported = "".join(engine.export("jsonl"))
    path = tmp_path / "export.jsonl"
    path.write_text(exported)

    monkeypatch.setenv("MNEMO_HOME", str(tmp_path / "other-home"))
    from app.core.engine import Engine

    fresh = Engine(embedder=engine.embedder)
    report = fresh.import_paths([path])
    assert report.added == 2 and not report.errors
    again = "".join(fresh.export("jsonl"))
    assert _without_origins(again) == _without_origins(exported)
    # (every field but the origin, which an import sets: the file, not what it claims)
    origins = [json.loads(line)["origins"] for line in again.splitlines()]
    assert [[(o["kind"], o["name"]) for o in each] for each in origins] == [
        [("import", "export.jsonl")]
    ] * 2
    assert fresh.import_paths([path]).added == 0
    # Imported memories have no vectors yet; backfill adds them.
    assert fresh.vector_status()["missing"] == 2
    assert fresh.backfill() == 2
    fresh.close()


def test_bad_jsonl_lines_are_reported_and_good_ones_kept(engine, tmp_path):
    path = tmp_path / "mixed.jsonl"
    path.write_text(
        "\n".join(
            [
                json.dumps({"text": "good line"}),
                "{not json",
                json.dumps({"text": ""}),
                json.dumps({"title": "no text"}),
            ]
        )
    )
    report = engine.import_paths([path])
    assert report.added == 1 and len(report.errors) == 3
    assert all("mixed.jsonl:" in e for e in report.errors)


def test_markdown_export_can_be_imported_back(engine, tmp_path):
    engine.remember("Prefer composition over inheritance", title="Composition")
    out = tmp_path / "export.md"
    transfer.write_atomically(out, engine.export("markdown"))
    text = out.read_text()
    assert "### Composition" in text and "- Confidence: medium" in text


def test_missing_path_and_non_utf8_file_are_clear_errors(engine, tmp_path):
    with pytest.raises(InputError, match="no such file"):
        engine.import_paths([tmp_path / "nope"])
    latin = tmp_path / "latin.md"
    latin.write_bytes("café".encode("latin-1"))
    with pytest.raises(InputError, match="not UTF-8"):
        engine.import_paths([latin])
