"""`mnemo history ID [--restore N] [--json]` (issue 44, ADR 0023): the versions a memory's
words passed through, restored one by number, and a merge said with how to undo it."""

from __future__ import annotations

import json

from app.cli import main
from app.core import origin
from app.core.engine import Engine
from tests.conftest import run_cli


def _edited(word_model) -> str:
    """A memory an agent wrote and a person edited on the command line; its id."""
    with Engine(embedder=word_model) as engine:
        memory = engine.remember(
            "The staging database listens on port 5432.",
            origin=origin.agent("claude-code"),
            embed=False,
        ).memory
    assert main(["edit", memory.id, "--text", "The staging database listens on port 6543."]) == 0
    return memory.id


def test_history_lists_each_version_with_who_wrote_and_replaced_it(word_model, capsys):
    memory_id = _edited(word_model)
    capsys.readouterr()
    assert main(["history", memory_id[:8]]) == 0
    out = capsys.readouterr().out
    now, version = out.split("\n1 ")
    assert "port 6543" in now and "changed" in now and "by you (cli)" in now
    assert "by agent claude-code" in version and "replaced by an edit" in version
    assert "by you (cli)" in version and "port 5432." in version
    assert "“5432.” → “6543.”" in version  # what changed, at a glance
    assert f"mnemo history {memory_id} --restore N" in out
    # --json: the memory and its versions, newest first
    assert main(["history", memory_id, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["memory"]["text"].endswith("6543.")
    [kept] = shown["versions"]
    assert (kept["number"], kept["why"], kept["text"]) == (1, "edit", "The staging database "
                                                           "listens on port 5432.")  # fmt: skip
    assert kept["origins"][0]["name"] == "claude-code"
    assert (kept["replaced_by"]["kind"], kept["replaced_by"]["name"]) == ("person", "cli")


def test_history_restore_brings_a_version_back_and_says_how_to_undo_it(word_model, capsys):
    memory_id = _edited(word_model)
    capsys.readouterr()
    assert main(["history", memory_id, "--restore", "1"]) == 0
    out = capsys.readouterr().out
    assert f"Restored version 1 of {memory_id}" in out
    assert f"undo: mnemo history {memory_id} --restore 2" in out
    with Engine(embedder=word_model) as engine:
        assert engine.get(memory_id).text.endswith("5432.")
    # and the undo it printed works
    assert main(["history", memory_id, "--restore", "2"]) == 0
    with Engine(embedder=word_model) as engine:
        assert engine.get(memory_id).text.endswith("6543.")
        assert len(engine.history(memory_id).versions) == 3


def test_a_bad_version_or_id_is_one_line_and_changes_nothing(word_model):
    memory_id = _edited(word_model)
    for args, said in (
        (("history", memory_id, "--restore", "5"), "has no version 5 (its versions are 1–1)"),
        (("history", memory_id, "--restore", "x"), "invalid int value"),
        (("history", "nothere"), "no memory with id 'nothere'"),
    ):
        done = run_cli(*args)
        assert done.returncode != 0 and "Traceback" not in done.stderr.decode()
        assert said in done.stderr.decode()
    with Engine(embedder=word_model) as engine:
        assert engine.get(memory_id).text.endswith("6543.")
        assert len(engine.history(memory_id).versions) == 1


def test_history_of_a_merge_says_what_it_joined_and_how_to_undo_it(word_model, capsys):
    with Engine(embedder=word_model) as engine:
        a = engine.remember("Staging runs Postgres 16.", embed=False).memory
        b = engine.remember("Staging backups run nightly.", embed=False).memory
        merged = engine.merge([a.id, b.id])
    assert main(["history", merged.id]) == 0
    out = capsys.readouterr().out
    assert "Merged from 2 memories" in out and f"mnemo unmerge {merged.id}" in out
    assert a.id in out and "Staging backups run nightly." in out
    # a source, in the trash, says where it went
    assert main(["history", a.id]) == 0
    assert f"merged into {merged.id}" in capsys.readouterr().out
    # and the unmerge it names brings the originals back
    assert main(["unmerge", merged.id]) == 0
    with Engine(embedder=word_model) as engine:
        assert engine.get(a.id).deleted_at is None and engine.get(merged.id).deleted_at
