"""Secrets are checked on every field and every path (issue 8): one rule, one place.

Before, `edit`, tags, references, the project and imports stored raw tokens, and the MCP
server left them in tags, references and project despite "always redacts".
"""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from app.core.errors import SecretError
from app.core.origin import person
from tests.conftest import run_cli


@pytest.fixture
def engine(word_engine):
    """Mechanics, not meaning: the small deterministic model (tests/word_model.py)."""
    return word_engine


TOKEN = "ghp_" + "Zq8xT2mV9kLp4RwN7cJd3HsY6bFa1GeU5oIi"  # shape of a GitHub token, not real
FIELDS = {
    "title": {"title": f"deploy with {TOKEN}"},
    "reasoning": {"reasoning": f"because {TOKEN} works"},
    "tags": {"tags": ["ci", TOKEN]},
    "references": {"references": [f"https://example.com/?t={TOKEN}"]},
    "project": {"project": TOKEN},
    "category": {"category": TOKEN},
}


@pytest.mark.parametrize("field", FIELDS)
def test_remember_refuses_a_secret_in_any_field_and_redacts_it_on_request(engine, field):
    with pytest.raises(SecretError, match=f"in the {field}"):
        engine.remember("A harmless note about deploys", **FIELDS[field])
    assert engine.count() == 0
    stored = engine.remember("A harmless note about deploys", secrets="redact", **FIELDS[field])
    assert TOKEN not in json.dumps(stored.memory.to_dict())
    assert "[REDACTED" in json.dumps(stored.memory.to_dict())
    assert "redacted 1 secret" in stored.notice


def test_edit_checks_every_changed_field(engine):
    memory = engine.remember("The CI token lives in the vault").memory
    for change in ({"text": f"The CI token is {TOKEN}"}, {"tags": f"ci,{TOKEN}"}):
        with pytest.raises(SecretError):
            engine.edit(memory.id, **change)
    assert engine.get(memory.id).text == "The CI token lives in the vault"
    edited = engine.edit(memory.id, secrets="redact", tags=f"ci,{TOKEN}")
    assert TOKEN not in edited.tags[1] and edited.tags[0] == "ci"


def test_cli_edit_and_import_refuse_secrets_and_say_where(tmp_path):
    memory_id = json.loads(run_cli("remember", "Rotate keys yearly", "--json").stdout)["id"]
    result = run_cli("edit", memory_id, "--text", f"Rotate {TOKEN} yearly")
    assert result.returncode == 1 and b"in the text" in result.stderr
    assert b"Traceback" not in result.stderr
    lines = tmp_path / "notes.jsonl"
    lines.write_text(
        json.dumps({"text": "Clean line about backups"})
        + "\n"
        + json.dumps({"text": "Line with a token", "tags": [TOKEN]})
        + "\n"
    )
    notes = tmp_path / "notes.md"
    notes.write_text(f"# Deploy\n\nUse {TOKEN} for the pipeline.\n\n# Backups\n\nNightly.\n")
    result = run_cli("import", str(lines), str(notes), "--no-embed")
    err = result.stderr.decode()
    assert result.returncode == 1
    assert f"{lines}:2: not stored: it contains a secret" in err and "in the tags" in err
    assert f"{notes} (section “Deploy”)" in err
    exported = run_cli("export").stdout.decode()
    assert TOKEN not in exported and "Clean line about backups" in exported
    assert "Nightly." in exported
    redacted = run_cli("import", str(lines), "--redact-secrets", "--no-embed")
    assert redacted.returncode == 0
    assert TOKEN not in run_cli("export").stdout.decode()


def test_mcp_redacts_secrets_in_every_field(engine):
    from app.mcp_server import build_server

    server = build_server(engine)

    async def call():
        return await server.call_tool(
            "store_memory",
            {
                "name": f"Deploy token {TOKEN}",
                "description": "How the pipeline authenticates",
                "reasoning": f"It uses {TOKEN}",
                "category": "note",
                "tags": ["ci", TOKEN],
                "references": [f"https://ci.example.com/?token={TOKEN}"],
                "project": TOKEN,
            },
        )

    asyncio.run(call())
    stored = engine.listing(limit=5)
    assert len(stored) == 1
    assert TOKEN not in json.dumps(stored[0].to_dict())


def test_one_token_in_the_title_and_the_text_is_one_secret(engine):
    # Found by review: a title made from the text holds the same token, and the notice said
    # "redacted 2 secret(s): GitHub token in the title, GitHub token in the text".
    token = "ghp_" + "a1B2c3D4e5" * 3 + "F6g7H8"
    stored = engine.remember(f"deploy bot token: {token}", secrets="redact", force=True)
    assert stored.notice == "redacted 1 secret: a GitHub token in the title and the text"
    assert token not in stored.memory.text and token not in stored.memory.title


def test_a_secret_the_title_cuts_short_is_the_same_secret_with_the_same_label(engine):
    # Issue 46, item 8: a title made from a long text ends inside the secret ("…"), so the
    # title's finding is a piece of the text's: "redacted 3 secrets" for two, the piece
    # counted as a secret of the title alone, and labelled apart
    secret = "Hq8sT3vLp9Xz/K7mDnG2/bPxRfiCYzq8s9LkT2mW"
    text = f"Deploy key for staging: AKIAZ7QW3RT5YU8IOPLK with secret {secret}"
    stored = engine.remember(text, secrets="redact", force=True)
    memory = stored.memory
    assert stored.notice.startswith("redacted 2 secrets:"), stored.notice
    assert "in the title," not in stored.notice + ",", stored.notice  # none of the title alone
    for piece in (secret[:8], secret[-8:], "AKIAZ7QW3RT5"):
        assert piece not in memory.title and piece not in memory.text
    label = re.compile(r"\[REDACTED:([^\]]+)\]")
    assert set(label.findall(memory.title)) <= set(label.findall(memory.text)), memory


def test_a_secret_is_redacted_in_every_field_it_is_in_with_one_label():
    # The desktop pass (issue 22, low): redaction labels disagreed between the title and the
    # text; and a title holding the token without its context ("password is") kept it
    from app.core.memory import Memory, guard_memory

    memory = Memory(
        id="",
        text="the wifi password is Kx9#mP2vLq7 for the guest net",
        title="Kx9#mP2vLq7 guest wifi",
        tags=["Kx9#mP2vLq7"],
    )
    guard_memory(memory, "redact")
    assert "Kx9#mP2vLq7" not in memory.title + memory.text + "".join(memory.tags)
    labels = {
        part.split("]")[0]
        for field in (memory.title, memory.text, *memory.tags)
        for part in field.split("[REDACTED:")[1:]
    }
    assert labels == {"password"}


# Issue 46, item 8: the title the desktop made from the clipboard's text as it was (and a
# JSONL line's title made so, as an export of it holds) was redacted on its own: cut at 80
# characters inside the password, it kept its first letters ("pw USE-un…") where the text
# said "[REDACTED:password]".
LONG_LINE = (
    "psql on orders-db.c8xkq2.eu-west-1.rds.amazonaws.com, user tkowalski, pw USE-unaware-6442"
)
LONG_SECRET = "USE-unaware-6442"


def _made_again(memory) -> None:
    from app.core.memory import title_from

    assert memory.title == title_from(memory.text), (memory.title, memory.text)
    assert "USE-un" not in memory.title + memory.text
    # the title names the secret as the text does (the marker is never cut: "[REDAC…")
    assert memory.title.endswith("pw [REDACTED:password]") and memory.text.endswith(
        "pw [REDACTED:password]"
    )


def test_a_title_made_from_the_text_is_made_from_the_redacted_text_on_every_path(engine, tmp_path):
    from app.core.memory import title_from
    from app.mcp_server import build_server

    # `mnemo remember` and the manager: no title given
    _made_again(engine.remember(LONG_LINE, secrets="redact", force=True).memory)
    engine.purge([engine.listing(limit=1)[0].id])
    # Remember clipboard: the title made from the clipboard's text, as the desktop made it
    _made_again(
        engine.remember(LONG_LINE, title=title_from(LONG_LINE), secrets="redact", force=True).memory
    )
    engine.purge([engine.listing(limit=1)[0].id])
    # an import of a JSONL line whose title was made from its text (an export holds it)
    lines = tmp_path / "old.jsonl"
    lines.write_text(json.dumps({"text": LONG_LINE, "title": title_from(LONG_LINE)}) + "\n")
    report = engine.import_paths([lines], secrets="redact")
    assert report.errors == [] and engine.count() == 1
    _made_again(engine.listing(limit=1)[0])
    engine.purge([engine.listing(limit=1)[0].id])
    # MCP store_memory, the agent naming it by its first line
    server = build_server(engine)
    asyncio.run(
        server.call_tool(
            "store_memory",
            {
                "name": title_from(LONG_LINE),
                "description": LONG_LINE,
                "reasoning": "the user asked to keep the orders database login",
                "category": "note",
            },
        )
    )
    _made_again(engine.listing(limit=1)[0])


def test_a_title_of_its_own_keeps_its_words_with_the_secret_named_as_in_the_text(engine):
    memory = engine.remember(
        LONG_LINE, title=f"orders db login {LONG_SECRET}", secrets="redact", force=True
    ).memory
    assert memory.title == "orders db login [REDACTED:password]"
    assert memory.text.endswith("pw [REDACTED:password]")


# Review: a memory stored before titles kept a marker whole holds the old cut title ("pw
# [REDAC…"); that title was made from its text, so it follows the text on an edit and is
# made again on an import, as a title made now is.
REDACTED_LINE = (
    "psql on orders-db.c8xkq2.eu-west-1.rds.amazonaws.com, user tkowalski, pw [REDACTED:password]"
)
OLD_CUT = REDACTED_LINE[:79].rstrip() + "…"


def test_a_title_cut_by_an_older_mnemo_inside_a_marker_still_follows_its_text(engine, tmp_path):
    lines = tmp_path / "export.jsonl"
    lines.write_text(json.dumps({"text": REDACTED_LINE, "title": OLD_CUT}) + "\n")
    assert engine.import_paths([lines]).errors == []
    (imported,) = engine.listing(limit=5)
    assert imported.title.endswith("pw [REDACTED:password]")  # made again, whole
    # as an older Mnemo stored it (written to the database file as it would hold it)
    import apsw

    from app.core import paths

    raw = apsw.Connection(str(paths.database_path()))
    raw.execute("UPDATE memories SET title = ? WHERE id = ?", (OLD_CUT, imported.id))
    raw.close()
    assert engine.get(imported.id).title == OLD_CUT
    moved = "the orders db login moved to the vault"
    engine.edit(imported.id, text=moved, origin=person("cli"))
    assert engine.get(imported.id).title == moved  # it followed the text
