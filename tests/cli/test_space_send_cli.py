"""An edit of a shared memory whose pass cannot write the space's folder (issue 45): the edit
is the person's and is kept; the answer says it changed here and goes at the next pass."""

from __future__ import annotations

import json
import shutil

from app.core.space import lines
from tests.cli.test_space_cli import device_id, mnemo, ok, team


def test_an_edit_the_folder_cannot_take_now_is_kept_and_said_to_go_later(tmp_path):
    alice, bob, folder = team(tmp_path)
    made = ok(alice, "remember", "--space", "team", "Standup is at nine", "--json")
    memory_id = json.loads(made)["id"]
    own = folder / "lines" / lines.file_name(device_id(alice))
    own.unlink()
    own.mkdir()  # (a directory where Alice's file of lines goes: no write succeeds)
    # WHEN Alice edits it
    done = mnemo(alice, "edit", memory_id, "--text", "Standup is at ten")
    err = done.stderr.decode()
    # THEN the edit is kept, and the answer says it is not sent yet, in one line, exit 0
    assert done.returncode == 0, err
    assert "changed here; not yet sent to the space 'team'" in err
    assert "sent at the next pass" in err and len(err.strip().splitlines()) == 1
    assert "Traceback" not in err
    assert "ten" in json.loads(ok(alice, "show", memory_id, "--json"))["text"]
    # AND once the folder can be written, the next pass sends it
    shutil.rmtree(own)
    ok(alice, "space", "sync", "team")
    ok(bob, "space", "sync", "team")
    assert "Standup is at ten" in ok(bob, "recall", "standup", "--mode", "keyword")
