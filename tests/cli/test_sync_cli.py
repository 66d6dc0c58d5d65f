"""`mnemo sync` as a user types it (issue 27): each known problem is one line and exit 1,
nothing changed; moving to another folder writes everything there again; removing a
device. The real CLI in real processes."""

from __future__ import annotations

import json

from tests.conftest import run_cli


def mnemo(home, *args: str):
    return run_cli(*args, env={"MNEMO_HOME": str(home)})


def ok(home, *args: str) -> str:
    done = mnemo(home, *args)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


def _one_line_error(done) -> str:
    err = done.stderr.decode()
    assert done.returncode == 1, (done.returncode, err)
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


def test_known_problems_are_one_line_and_change_nothing(tmp_path):
    home = tmp_path / "home"
    ok(home, "remember", "The bike lock code is written in the red notebook.")
    assert "Sync is off" in ok(home, "sync", "status")
    assert "not set up" in _one_line_error(mnemo(home, "sync", "now"))
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "holiday.jpg").write_bytes(b"\xff\xd8")
    assert "holds other files" in _one_line_error(
        mnemo(home, "sync", "init", str(busy), "--no-embed")
    )
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    assert "is a file" in _one_line_error(mnemo(home, "sync", "init", str(a_file), "--no-embed"))
    assert "Sync is off" in ok(home, "sync", "status")  # nothing was set up

    folder = tmp_path / "shared"
    ok(home, "sync", "init", str(folder), "--name", "laptop", "--no-embed")
    assert "no device 'nosuch'" in _one_line_error(mnemo(home, "sync", "remove", "nosuch"))
    own = json.loads(ok(home, "sync", "status", "--json"))["device"]
    assert "this device" in _one_line_error(mnemo(home, "sync", "remove", own))
    folder.rename(tmp_path / "unmounted")
    assert "missing" in _one_line_error(mnemo(home, "sync", "now"))
    assert "missing" in _one_line_error(mnemo(home, "sync", "status"))


def test_moving_to_another_folder_writes_everything_there_again(tmp_path):
    laptop, desktop = tmp_path / "laptop", tmp_path / "desktop"
    ok(laptop, "remember", "The bike lock code is written in the red notebook.")
    ok(laptop, "sync", "init", str(tmp_path / "old"), "--no-embed")
    ok(laptop, "sync", "init", str(tmp_path / "new"), "--no-embed")
    ok(desktop, "sync", "init", str(tmp_path / "new"), "--no-embed")
    listed = json.loads(ok(desktop, "list", "--json"))
    assert [m["text"] for m in listed] == ["The bike lock code is written in the red notebook."]


def test_a_removed_device_is_shown_as_removed(tmp_path):
    laptop, desktop = tmp_path / "laptop", tmp_path / "desktop"
    folder = tmp_path / "shared"
    ok(laptop, "sync", "init", str(folder), "--name", "laptop", "--no-embed")
    ok(desktop, "remember", "An old desktop's note.")
    ok(desktop, "sync", "init", str(folder), "--name", "desktop", "--no-embed")
    gone = json.loads(ok(desktop, "sync", "status", "--json"))["device"]
    ok(laptop, "sync", "devices", "approve", gone, "--no-embed")
    ok(laptop, "sync", "remove", gone)
    state = json.loads(ok(laptop, "sync", "status", "--json"))
    assert [d["removed"] for d in state["devices"] if d["id"] == gone] == [True]
    assert "(removed)" in ok(laptop, "sync", "status")
    # what it wrote stays
    assert "An old desktop's note." in ok(laptop, "list")


def test_a_pass_on_a_damaged_database_says_so_and_status_still_reads(tmp_path):
    """Issue 40, 13: `sync now` on a database marked damaged reported "Wrote 0 operations;
    read 0" as if all were fine."""
    home = tmp_path / "home"
    ok(home, "remember", "A note before the damage.")
    ok(home, "sync", "init", str(tmp_path / "shared"), "--no-embed")
    (home / "data" / "mnemo.db.damaged").write_text("row 3 missing from index\n")
    done = mnemo(home, "sync", "now", "--no-embed")
    err = done.stderr.decode()
    assert done.returncode == 1 and "integrity check" in err and "Wrote" not in done.stdout.decode()
    assert _one_line_error(done)
    assert "Folder:" in ok(home, "sync", "status")


def test_a_join_from_a_snapshot_counts_each_operation_once(tmp_path):
    """Issue 40, 13: a 20,000-memory join printed "read 80000": the snapshot's lines and
    then the logs it covers, read again and passed over, were both counted."""
    first, joiner, folder = tmp_path / "first", tmp_path / "joiner", tmp_path / "shared"
    notes = tmp_path / "notes.jsonl"
    notes.write_text("".join(f'{{"text": "Note {n} about the pier."}}\n' for n in range(300)))
    ok(first, "import", str(notes), "--no-embed")
    wrote = ok(first, "sync", "init", str(folder), "--no-embed")
    written = int(wrote.split("Wrote ")[1].split(" ")[0])
    ok(first, "sync", "compact")
    joined = ok(joiner, "sync", "init", str(folder), "--no-embed")
    assert f"read {written} from other devices; 300 memories changed here" in joined, joined


def test_sync_key_of_a_plain_folder_is_an_error_not_a_key(tmp_path):
    """Issue 40, 13: `sync key` on a plain folder printed a sentence on stdout with exit
    0, which `KEY=$(mnemo sync key)` took for the key."""
    home = tmp_path / "home"
    ok(home, "sync", "init", str(tmp_path / "shared"), "--no-embed")
    done = mnemo(home, "sync", "key")
    assert done.stdout == b""
    assert "not encrypted" in _one_line_error(done)
