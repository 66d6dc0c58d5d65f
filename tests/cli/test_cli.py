"""The `mnemo` command line as users and scripts call it: real processes, real files."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli


def ok(*args, **kw):
    result = run_cli(*args, **kw)
    assert result.returncode == 0, result.stderr.decode()
    return result


def fails(*args, **kw) -> str:
    """Run a command that must fail cleanly: exit 1, one line on stderr, no traceback."""
    result = run_cli(*args, **kw)
    err = result.stderr.decode()
    assert result.returncode == 1, (result.stdout, err)
    assert "Traceback" not in err and err.startswith("mnemo: error: ")
    assert len(err.strip().splitlines()) == 1
    return err


def test_remember_and_recall_json_contract():
    out = json.loads(
        ok(
            "remember",
            "k8s pod restart debugging",
            "--tags",
            "k8s,ops",
            "--category",
            "debugging",
            "--json",
        ).stdout
    )
    assert out["status"] == "stored" and len(out["id"]) == 16
    again = json.loads(ok("remember", "K8s pod  restart debugging", "--json").stdout)
    assert again["status"] == "observed" and again["observation_count"] == 2
    result = json.loads(ok("recall", "kubernetes troubleshooting", "--json").stdout)
    assert set(result) >= {"query", "mode", "results"} and result["mode"] == "hybrid"
    hit = result["results"][0]
    assert {"id", "title", "text", "score", "category", "tags", "created_at"} <= set(hit)
    assert hit["id"] == out["id"] and hit["tags"] == ["k8s", "ops"]
    assert hit["category"] == "debugging"
    shown = json.loads(ok("show", out["id"][:8], "--json").stdout)
    assert shown["recall_count"] == 1  # the printed result counted as a recall
    ok("recall", "kubernetes", "--no-track", "--json")
    assert json.loads(ok("show", out["id"], "--json").stdout)["recall_count"] == 1


def test_nothing_relevant_is_exit_0_with_empty_results():
    ok("remember", "Buy oat milk")
    result = json.loads(ok("recall", "quantum physics lecture", "--json").stdout)
    assert result["results"] == []
    assert "No relevant memories" in ok("recall", "quantum physics lecture").stdout.decode()


def test_remember_reads_stdin_and_refuses_binary():
    ok("remember", "-", input=b"piped text about sourdough starters\n")
    found = ok("recall", "keeping a sourdough starter alive", "--mode", "semantic").stdout
    assert b"sourdough" in found
    assert "binary" in fails("remember", "-", input=b"\x00\x01\x02PNG\x00")
    assert "not UTF-8" in fails("remember", "-", input=b"\xff\xfe\xfa caf\xe9")


def test_edit_forget_restore_cycle():
    memory_id = json.loads(ok("remember", "Standup is at 9:30", "--json").stdout)["id"]
    ok("edit", memory_id, "--text", "Standup moved to 10:00", "--tags", "team", "--pin")
    shown = json.loads(ok("show", memory_id, "--json").stdout)
    assert (
        shown["text"] == "Standup moved to 10:00" and shown["pinned"] and shown["tags"] == ["team"]
    )
    assert "mnemo restore" in ok("forget", memory_id).stdout.decode()
    assert json.loads(ok("recall", "standup", "--json").stdout)["results"] == []
    ok("restore", memory_id)
    assert json.loads(ok("recall", "standup", "--json").stdout)["results"][0]["id"] == memory_id


def test_show_prints_a_memorys_text_once_and_a_title_of_its_own_above_it():
    # GIVEN a short memory (its title is its text), a long one (its title is its start)
    # and one with a title that says something else
    short = "Use port 5432 for the dev database"
    long = "The backup job copies the photo library to the NAS at two; it mails a report after."
    titled = "Migrate first, then restart the web workers"
    ids = [
        json.loads(ok("remember", text, *more, "--json").stdout)["id"]
        for text, more in ((short, ()), (long, ()), (titled, ("--title", "How to deploy")))
    ]
    # WHEN each is shown
    shown = [ok("show", memory_id).stdout.decode() for memory_id in ids]
    # THEN the short and the long one say their words once, their fields still after them
    assert shown[0].startswith(f"{short}\n\nid:") and shown[0].count(short) == 1
    assert shown[1].startswith(f"{long}\n\nid:") and shown[1].count("The backup job") == 1
    assert "origin:" in shown[0] and "created:" in shown[1]
    # AND the titled one keeps its title above its text
    assert shown[2].startswith(f"How to deploy\n\n{titled}\n\nid:")


def test_known_problems_are_one_line_and_exit_1():
    assert "no memory" in fails("show", "0123456789abcdef")
    assert "empty" in fails("recall", "   ")
    assert "nothing to change" in fails("edit", "0123456789abcdef")
    assert "must be at least" in fails("settings", "weight_vector", "-1")
    assert "no config.json" in fails("model", "convert", "/tmp", "/tmp/x.gguf")
    # a global key without Ctrl/Alt/Super would take that key from every window
    assert "needs Ctrl, Alt or Super" in fails("settings", "hotkey", "Q")
    assert "sequence" in fails("settings", "clipboard_hotkey", "Ctrl+A, Backspace")


def test_missing_model_degrades_with_notices(tmp_path):
    env = {"MNEMO_MODEL": str(tmp_path / "missing.gguf")}
    stored = ok("remember", "still stored without a model", env=env)
    assert "without embedding" in stored.stderr.decode()
    result = json.loads(ok("recall", "stored", "--json", env=env).stdout)
    assert result["mode"] == "keyword" and "unavailable" in result["notice"]
    assert "missing.gguf" in fails("backfill", env=env)
    assert "Embedded 1 memory" in ok("backfill").stdout.decode()


def test_export_import_round_trip_through_files(tmp_path, monkeypatch):
    ok("remember", "First", "--tags", "a")
    ok("remember", "Second thing entirely different")
    out = tmp_path / "all.jsonl"
    ok("export", "-o", str(out))
    monkeypatch.setenv("MNEMO_HOME", str(tmp_path / "elsewhere"))
    assert "Imported 2 new memories (0 already known)" in ok("import", str(out)).stdout.decode()
    assert "Imported 0 new memories (2 already known)" in ok("import", str(out)).stdout.decode()
    again = [json.loads(line) for line in ok("export").stdout.decode().splitlines()]
    before = [json.loads(line) for line in out.read_text().splitlines()]
    # every field as exported but who wrote it: the import of that file (issue 44)
    for line in again + before:
        origin = line.pop("origin")
        assert line.pop("origins") == [origin]
    assert again == before


def test_stats_doctor_and_model_info():
    ok("remember", "something to count")
    stats = json.loads(ok("stats", "--json").stdout)
    assert stats["memories"] == 1 and stats["embedded"] == 1 and stats["missing"] == 0
    doctor = ok("doctor").stdout.decode()
    assert "FAIL" not in doctor and "keyword index matches" in doctor
    info = json.loads(ok("model", "info", "--json").stdout)
    assert info["name"] == "all-MiniLM-L6-v2" and info["window"] == 256 and info["default"]


def test_doctor_detects_and_repairs_a_desynced_keyword_index(mnemo_home):
    import apsw

    from app.core import paths

    ok("remember", "the index will drift")
    conn = apsw.Connection(str(paths.database_path()))
    conn.execute(
        "INSERT INTO memories_fts(memories_fts, rowid, title, text, reasoning, tags) "
        "VALUES('delete', 1, 'the index will drift', 'the index will drift', '', '[]')"
    )
    conn.close()
    broken = run_cli("doctor")
    assert broken.returncode == 1 and b"FAIL  keyword index" in broken.stdout
    assert b"FAIL" not in ok("doctor", "--repair").stdout


@pytest.mark.parametrize(
    "query", ['"unbalanced', "NEAR(a b)", "title:x AND", "*", "\u202e🙂", "x" * 10_000]
)
def test_hostile_queries_from_the_command_line(query):
    ok("remember", "a harmless memory about near title stars")
    assert "results" in json.loads(ok("recall", query, "--json").stdout)


def test_imported_memories_reach_the_markdown_mirror(tmp_path):
    # Imports used to bypass the Engine, so the mirror (the audit trail) never saw them.
    mirror = tmp_path / "mirror"
    ok("settings", "mirror_dir", str(mirror))
    notes = tmp_path / "notes.md"
    notes.write_text("# Backups\n\nThe NAS backs up every night at two.\n")
    ok("import", str(notes))
    written = "".join(p.read_text() for p in mirror.glob("*.md"))
    assert "The NAS backs up every night at two." in written


def test_purge_goes_through_the_engine_and_is_final():
    memory_id = json.loads(ok("remember", "A note to delete for good", "--json").stdout)["id"]
    assert b"Deleted 1 memory for good" in ok("forget", memory_id, "--purge").stdout
    assert "no memory" in fails("show", memory_id)
    assert json.loads(ok("list", "--trash", "--json").stdout) == []


def test_rerunning_an_import_embeds_what_an_earlier_run_left(tmp_path):
    notes = tmp_path / "notes.jsonl"
    notes.write_text(
        "".join(
            json.dumps({"text": f"Imported note number {i} about sourdough"}) + "\n"
            for i in range(5)
        )
    )
    ok("import", str(notes), "--no-embed")  # like a run killed before embedding
    assert json.loads(ok("stats", "--json").stdout)["missing"] == 5
    assert b"Imported 0 new" in ok("import", str(notes)).stdout
    assert json.loads(ok("stats", "--json").stdout)["missing"] == 0


@pytest.mark.parametrize(
    "change", [("--title", "A new title"), ("--pin",), ("--tags", "x,y"), ("--confidence", "high")]
)
def test_edit_without_text_changes_only_what_was_given(change):
    memory_id = json.loads(ok("remember", "Edit me without touching the text", "--json").stdout)[
        "id"
    ]
    edited = json.loads(ok("edit", memory_id, *change, "--json").stdout)
    assert edited["text"] == "Edit me without touching the text"


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN"])
def test_settings_refuse_non_finite_numbers(value):
    # (a value starting with "-" follows "--", as argparse wants)
    assert "finite" in fails("settings", "weight_vector", "--", value)
    assert "finite" in fails("settings", "duplicate_threshold", "--", value)
    assert "weight_vector = 0.5" in ok("settings", "weight_vector").stdout.decode()


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("popup_results", "abc", "'abc' is not a whole number"),
        ("weight_vector", "lots", "'lots' is not a number"),
        ("popup_preview", "maybe", "'maybe' is not true or false"),
    ],
)
def test_a_wrong_setting_value_is_named_in_words(key, value, words):
    assert fails("settings", key, value).strip().endswith(f"setting {key}: {words}")


def test_a_near_duplicate_held_back_exits_3_so_scripts_see_it_was_not_stored():
    ok("remember", "Kubernetes pods restart when the liveness probe times out")
    held = run_cli("remember", "Kubernetes pods restart when the liveness probe is timing out")
    assert held.returncode == 3 and held.stdout.decode().startswith("Not stored: very similar")
    as_json = run_cli(
        "remember", "Kubernetes pods restart when the liveness probe timed out", "--json"
    )
    assert as_json.returncode == 3 and json.loads(as_json.stdout)["status"] == "similar"
    assert ok("remember", "Kubernetes pods restart when the probe is timing out", "--force")


@pytest.mark.parametrize(
    "args",
    [
        ["recall", "sourdough", "--since", "garbage"],
        ["recall", "sourdough", "--until", "garbage"],
        ["recall", "sourdough", "--since", "2024-13-45"],
        ["list", "--since", "someday soon"],
        ["recall", "sourdough", "--limit", "0"],
        ["recall", "sourdough", "--limit", "-3"],
        ["list", "--limit", "0"],
        ["context", "--limit", "-1"],
    ],
)
def test_bad_dates_and_limits_are_refused_in_words(args):
    # Found by a tester: `--until garbage` returned everything (dates were compared as
    # text), `--since garbage` nothing, and `--limit 0` quietly meant the default.
    run_cli("remember", "Sourdough loaf: 500 g flour, 350 g water", "--force")
    done = run_cli(*args)
    assert done.returncode == 1, done
    err = done.stderr.decode()
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 3, err
    assert any(word in err for word in ("date", "whole number", "at least 1")), err


def test_dates_in_filters_accept_a_day_or_a_timestamp():
    run_cli("remember", "Sourdough loaf: 500 g flour, 350 g water", "--force")
    for since in ("2000-01-01", "2000-01-01T10:00:00", "2000-01-01T10:00:00+02:00"):
        done = run_cli("recall", "sourdough", "--since", since, "--json")
        assert done.returncode == 0, done
        assert json.loads(done.stdout)["results"], since
    done = run_cli("recall", "sourdough", "--until", "2000-01-01", "--json")
    assert json.loads(done.stdout)["results"] == []


def test_dates_in_filters_accept_words_a_person_uses():
    # Issue 20: --since/--until understand the words a query does
    run_cli("remember", "Sourdough loaf: 500 g flour, 350 g water", "--force")
    for args in (("--since", "yesterday"), ("--since", "last week"), ("--until", "tomorrow")):
        done = run_cli("recall", "sourdough", *args, "--json")
        assert done.returncode == 0 and json.loads(done.stdout)["results"], (args, done)
    for args in (("--until", "yesterday"), ("--since", "next year")):
        done = run_cli("list", *args, "--json")
        assert done.returncode == 0 and json.loads(done.stdout) == [], (args, done)


@pytest.mark.parametrize("since", ["0001-01-01T00:00+01:00", "9999-12-31T23:59-05:00"])
def test_a_date_out_of_range_in_utc_is_refused_in_words(since):
    done = run_cli("recall", "sourdough", "--since", since)
    assert done.returncode == 1 and "Traceback" not in done.stderr.decode(), done
    assert "not a date" in done.stderr.decode()


def test_a_day_with_a_z_is_a_day():
    run_cli("remember", "Sourdough loaf: 500 g flour, 350 g water", "--force")
    done = run_cli("recall", "sourdough", "--since", "2000-01-01Z", "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["results"], done


def test_recall_reads_a_long_query_from_stdin():
    # A pasted page is longer than a command line allows (about 128 KB): `-` reads it from
    # standard input, as `remember -` does.
    run_cli("remember", "Autovacuum on the events table falls behind at night", "--force")
    page = ("notes from the week about meetings and people " * 4_000) + "autovacuum events table"
    done = run_cli("recall", "-", "--json", input=page.encode())
    assert done.returncode == 0, done
    assert json.loads(done.stdout)["query"] == page


def test_every_engine_a_command_opens_is_closed_also_when_it_fails(mnemo_home, monkeypatch):
    # Issue 23: none of the 17 Engine() in cli/commands.py was closed (the model stayed
    # loaded, the vectors added were not saved to the copy the next start maps)
    from app import cli
    from app.core.engine import Engine

    opened, closed = [], []
    real_init, real_close = Engine.__init__, Engine.close

    def init(self, *args, **kwargs):
        opened.append(self)
        real_init(self, *args, **kwargs)

    def close(self):
        closed.append(self)
        real_close(self)

    monkeypatch.setattr(Engine, "__init__", init)
    monkeypatch.setattr(Engine, "close", close)
    assert cli.main(["remember", "The boiler pressure should be 1.5 bar", "--json"]) == 0
    assert cli.main(["show", "no-such-id"]) == 1  # a known problem: one line, exit 1
    assert cli.main(["stats"]) == 0
    assert len(opened) == 3 and all(engine in closed for engine in opened)


def test_the_header_over_a_named_days_memories_says_when_some_are_only_near_it(tmp_path):
    # "on saturday" stood over a note stored on Monday (two days near it rank with the day,
    # as people tell of a day in the days after; the header said only the day: a new user)
    notes = tmp_path / "notes.jsonl"
    notes.write_text(
        json.dumps(
            {
                "text": "The staging database is read-only on weekends.",
                "created_at": "2026-11-30T09:00:00Z",
            }
        )
        + "\n"  # fmt: skip
    )
    ok("import", str(notes))
    near = ok("recall", "is staging writable on 28 November 2026").stdout.decode()
    assert "── on 28 November 2026, or within two days ──" in near, near
    # AND a memory of that very day is under the day's words alone
    notes.write_text(
        json.dumps(
            {
                "text": "Staging was rebuilt from scratch over the weekend.",
                "created_at": "2026-11-28T15:00:00Z",
            }
        )
        + "\n"  # fmt: skip
    )
    ok("import", str(notes))
    ok(
        "forget",
        json.loads(ok("recall", "read-only on weekends", "--json").stdout)["results"][0]["id"],
    )
    day = ok("recall", "was staging rebuilt on 28 November 2026").stdout.decode()
    assert "── on 28 November 2026 ──" in day, day
