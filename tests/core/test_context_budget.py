"""`mnemo context` within a character budget: Claude Code cuts hook output at ~10,000 chars."""

from __future__ import annotations

import json
import re

import pytest

from app.core.engine import Engine
from app.core.errors import InputError
from app.core.search.context import ContextBlock
from tests.cli.test_cli import fails, ok

WORDS = (
    "parser rollout cache index vector keyword budget session hook memory sqlite merge "
    "encoding fixture deployment rollback migration trigger embedding threshold"
).split()
POINTER = re.compile(
    r"^(?P<cut>.*?)(?:\n```)?[ \n]?… \(shortened; full text: mnemo show (\w+)\)$", re.S
)


def long_text(i: int, size: int = 2_000) -> str:
    """Distinct sentences of nine words each, about `size` characters, no blank lines."""
    sentences, k = [], 0
    while sum(len(s) + 1 for s in sentences) < size:
        words = [WORDS[(i * 7 + k * 3 + j) % len(WORDS)] for j in range(9)]
        sentences.append(f"Note{i} item{k} " + " ".join(words) + ".")
        k += 1
    return " ".join(sentences)


@pytest.fixture
def plain(tmp_path, monkeypatch, mnemo_home):
    """An engine on real SQLite files without the model (prominence and keywords only)."""
    monkeypatch.setenv("MNEMO_MODEL", str(tmp_path / "no-model.gguf"))
    engine = Engine()
    yield engine
    engine.close()


@pytest.fixture
def long_memories(plain):
    """40 memories of ~2,000 characters, titled `Note 00` … `Note 39`."""
    for i in range(40):
        plain.remember(long_text(i), title=f"Note {i:02d}", category="patterns", force=True)
    return plain


def sections(markdown: str) -> tuple[list[str], str]:
    """The memory sections of a block and its diagnostic line."""
    parts = markdown.split("\n\n")
    assert parts[0] == "## Memories from earlier sessions"
    return parts[1:-1], parts[-1]


def block_of(engine: Engine, ids: list[str]) -> ContextBlock:
    """A block with these memories in this order of relevance."""
    memories = [(engine.get(i), 1.0 - n / 100) for n, i in enumerate(ids)]
    return ContextBlock(memories=memories, total=len(ids), query="q", model="m")


def check_section(section: str, memory) -> bool:
    """Assert the section shows `memory` whole or properly shortened; True if shortened."""
    lines = section.split("\n")
    assert lines[0].startswith(f"### {memory.display_title} (")
    extras = [f"Why: {memory.reasoning}"] if memory.reasoning else []
    if memory.references:
        extras.append(f"References: {', '.join(memory.references)}")
    if section == "\n".join([lines[0], memory.text, *extras]):
        return False
    body = section[len(lines[0]) + 1 :]
    kept = []
    for line in reversed(extras):  # kept lines are whole and in their usual order
        if body.endswith("\n" + line):
            body = body.removesuffix("\n" + line)
            kept.insert(0, line)
    match = POINTER.match(body)
    assert match, f"shortened without a pointer: {section[-200:]!r}"
    assert match.group(2) == memory.id
    cut = match.group("cut")
    assert memory.text.startswith(cut)
    assert len(cut) < len(memory.text) or kept != extras  # something is left for `mnemo show`
    if len(cut) < len(memory.text):
        assert memory.text[len(cut)].isspace(), f"cut mid-word: …{cut[-30:]!r}"
    assert "Why:" not in body and "References:" not in body  # no half lines
    return True


def test_forty_long_memories_fit_in_the_default_budget(long_memories):
    # GIVEN 40 memories of 2,000 characters, all selected (80,000+ characters in full)
    block = long_memories.context(query=None, cwd=long_memories.database_path.parent, limit=40)
    assert len(block.memories) == 40

    # WHEN the block is made with the default budget
    markdown = block.markdown()

    # THEN it fits in 9,000 characters, best first, each entry whole or shortened with a
    # pointer to its own id, and the diagnostic line says what was left out
    assert len(markdown) <= 9_000
    shown, line = sections(markdown)
    order = {m.display_title: n for n, (m, _) in enumerate(block.memories)}
    by_title = {m.display_title: m for m, _ in block.memories}
    titles = [re.match(r"### (Note \d\d) \(", s).group(1) for s in shown]
    assert [order[t] for t in titles] == sorted(order[t] for t in titles)
    assert titles[0] == block.memories[0][0].display_title
    shortened = sum(check_section(s, by_title[t]) for s, t in zip(shown, titles, strict=True))
    assert 5 <= len(shown) < 40 and shortened == len(shown)
    assert line.startswith(
        f"*Memory: {len(shown)} entries from 40 ({40 - len(shown)} left out, "
        f"{shortened} shortened to fit 9,000 chars) | semantic: unavailable (no context signals)"
    )
    assert line == markdown.splitlines()[-1]


def test_shortened_texts_are_useful_and_end_at_a_boundary(long_memories):
    block = long_memories.context(query="parser budget", limit=40, track=False)
    for budget in (500, 1_000, 3_000, 9_000, 20_000):
        shown, _ = sections(block.markdown(budget))
        for section in shown:
            cut = POINTER.match(section.split("\n", 1)[1]).group("cut")
            assert 200 <= len(cut) <= 1_200
            assert cut.endswith(".") or budget < 9_000  # a sentence end when there is room


def test_short_memories_are_unchanged_and_the_line_is_as_before(plain):
    for i in range(5):
        plain.remember(f"Short fact number {i} about the parser.", force=True)
    block = plain.context(query="parser", limit=5, track=False)
    markdown = block.markdown()
    shown, line = sections(markdown)
    assert len(shown) == 5 and "shortened" not in markdown
    assert line == block.diagnostic()
    assert re.fullmatch(
        r"\*Memory: 5 entries from 5 \| matches: 5 strong \| semantic: unavailable \(.*\) "
        r"\| context: .*\*",
        line,
    )


def test_an_entry_that_cannot_fit_is_skipped_for_a_smaller_one(plain):
    # GIVEN a long memory, another long one with a long title, then a short one
    a = plain.remember(long_text(1), title="First", force=True).memory
    b = plain.remember(long_text(2), title="Second " + "long title " * 20, force=True).memory
    c = plain.remember("A short note on the cache.", title="Third", force=True).memory
    block = block_of(plain, [a.id, b.id, c.id])

    # WHEN the budget shrinks step by step
    seen_skip = False
    for budget in range(500, 4_000, 25):
        markdown = block.markdown(budget)
        assert len(markdown) <= budget
        shown, line = sections(markdown)
        titles = [s.split(" (", 1)[0].removeprefix("### ") for s in shown]
        assert titles == [t for t in ("First", b.display_title, "Third") if t in titles]
        left_out = 3 - len(shown)
        assert (f"({left_out} left out" in line) == bool(left_out)
        seen_skip |= titles == ["First", "Third"]

    # THEN somewhere the second no longer fits but the less relevant short one still does
    assert seen_skip


def test_why_and_references_stay_whole_or_go(plain):
    why = "Found when the importer broke on real files with byte order marks. " * 30
    memory = plain.remember(
        long_text(3, 1_500), reasoning=why, references="importer/csv.py, feature #023", force=True
    ).memory
    short_why = plain.remember(
        long_text(4, 1_500), reasoning="Seen twice.", references="a.py", force=True
    ).memory
    block = block_of(plain, [memory.id, short_why.id])
    shown, _ = sections(block.markdown(9_000))
    assert check_section(shown[0], memory) and check_section(shown[1], short_why)
    assert "Why:" not in shown[0]  # 2,000 characters of reasoning do not fit beside the text
    assert shown[1].endswith("\nWhy: Seen twice.\nReferences: a.py")


def test_a_shortened_code_block_is_closed_and_a_giant_word_is_not_split(plain):
    code = "Run this:\n```python\n" + "\n".join(f"value_{i} = compute({i})" for i in range(200))
    fenced = plain.remember(code + "\n```", title="Code", force=True).memory
    blob = plain.remember("x" * 3_000, title="Blob", force=True).memory
    shown, _ = sections(block_of(plain, [fenced.id, blob.id]).markdown())
    assert shown[0].count("```") % 2 == 0 and "\n```\n… (shortened" in shown[0]
    heading, body = shown[1].split("\n", 1)
    assert (
        heading.startswith("### Blob (")
        and body == f"… (shortened; full text: mnemo show {blob.id})"
    )


def test_json_lists_the_same_entries_in_full(long_memories):
    block = long_memories.context(query=None, cwd=long_memories.database_path.parent, limit=40)
    data = block.to_dict(3_000)
    shown, line = sections(block.markdown(3_000))
    assert [e["title"] for e in data["entries"]] == [s[4:11] for s in shown]
    assert all(len(e["text"]) >= 2_000 for e in data["entries"])
    assert data["left_out"] == 40 - len(shown) and data["max_chars"] == 3_000
    assert data["shortened"] == len(shown) and data["diagnostic"] == line


@pytest.mark.parametrize("budget", [0, -5, 499])
def test_a_budget_below_500_is_an_input_error(plain, budget):
    block = plain.context(query="anything", track=False)
    with pytest.raises(InputError, match="--max-chars must be at least 500"):
        block.markdown(budget)
    with pytest.raises(InputError, match="--max-chars must be at least 500"):
        block.to_dict(budget)


def test_cli_context_keeps_to_max_chars_and_counts_only_what_it_shows(long_memories, tmp_path):
    ids = [m.id for m in long_memories.listing(limit=100)]
    long_memories.close()
    env = {"MNEMO_MODEL": str(tmp_path / "no-model.gguf")}

    out = ok("context", "--max-chars", "3000", "--query", "parser", "--limit", "40", env=env)
    markdown = out.stdout.decode().removesuffix("\n")
    assert len(markdown) <= 3_000
    shown, line = sections(markdown)
    assert f"({40 - len(shown)} left out, {len(shown)} shortened to fit 3,000 chars)" in line

    engine = Engine()
    try:
        counts = {i: engine.get(i).recall_count for i in ids}
    finally:
        engine.close()
    assert sorted(counts.values()) == [0] * (40 - len(shown)) + [1] * len(shown)

    data = json.loads(
        ok("context", "--max-chars", "3000", "--query", "", "--json", "--no-track", env=env).stdout
    )  # no signals: prominence alone chooses
    assert data["max_chars"] == 3_000 and len(data["entries"]) + data["left_out"] == 20
    assert "--max-chars must be at least 500" in fails("context", "--max-chars", "100", env=env)
    assert "--max-chars N" in ok("context", "--help").stdout.decode()


def test_one_entry_is_said_in_the_singular(engine):
    engine.remember("Parser errors: report the line number and the offending byte", force=True)
    block = engine.context(query="parser errors line number", track=False)
    assert len(block.memories) == 1
    assert block.diagnostic().startswith("*Memory: 1 entry from 1 ")
