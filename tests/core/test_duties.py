"""One process does a database's background work (issue 43): of several runners on one
database (the desktop app, MCP servers, the hook helper), only the one holding the lock on
`<database>.duties` runs sync passes; the others hear of its passes; when it ends another
takes over within a poll; `sync status` names it. Real runners on real SQLite files sharing
a real sync folder with a second device; the word model. (Several runners in one process:
`flock` locks belong to each open file, so they exclude each other as processes do; the
real processes are in tests/test_background_owner.py.)"""

from __future__ import annotations

import json
import logging
import os
import threading

import pytest

from app.core import duties
from app.core.duties import Duties
from app.core.engine import Engine
from app.core.errors import LockedError
from app.core.runner import Listener, Runner
from app.core.settings import Settings
from tests.conftest import wait


class Heard(Listener):
    def __init__(self) -> None:
        self.passes: list[dict] = []
        self.lock = threading.Lock()

    def synced(self, summary: dict) -> None:
        with self.lock:
            self.passes.append(summary)


@pytest.fixture
def one_database(tmp_path, word_model):
    """This device's database with sync set up, a second device on the same folder, and a
    way to start runners (counting the passes each one runs) on this device's database."""
    folder = tmp_path / "shared"
    here_settings, here_db = tmp_path / "here.json", tmp_path / "here.db"

    def engine(name: str) -> Engine:
        return Engine(Settings(tmp_path / f"{name}.json"), tmp_path / f"{name}.db", word_model)

    with engine("here") as e:
        e.sync.init(str(folder), "here")
    with engine("laptop") as e:
        e.sync.init(str(folder), "laptop")
    with engine("here") as e:  # the laptop is this person's: approved here
        e.sync.now()
        for device in e.sync.devices():
            if device["state"] == "pending":
                e.sync.approve(device["id"])
    started: list[tuple[Runner, Heard, list[int]]] = []

    def start(kind: str) -> tuple[Runner, Heard, list[int]]:
        ran: list[int] = []

        def made() -> Engine:
            e = Engine(Settings(here_settings), here_db, word_model)
            real = e.sync.now

            def counted(*args, **kwargs):
                ran.append(1)
                return real(*args, **kwargs)

            e.sync.now = counted
            return e

        heard = Heard()
        runner = Runner(made, listener=heard, load_model=False, kind=kind)
        runner.poll_s = 0.1
        runner.start()
        started.append((runner, heard, ran))
        return runner, heard, ran

    def from_laptop(text: str) -> str:
        with engine("laptop") as e:
            memory_id = e.remember(text, embed=False).memory.id
            e.sync.now()
        return memory_id

    yield start, from_laptop, here_db
    for runner, _, _ in started:
        runner.stop(30)


def _arrived(runner: Runner, memory_id: str) -> bool:
    try:
        return runner.submit(lambda e: e.get(memory_id).text).result(10) is not None
    except Exception:
        return False


def test_of_three_runners_on_one_database_one_runs_the_passes_and_sync_status_names_it(
    one_database,
):
    start, from_laptop, database = one_database
    # GIVEN the desktop app and two MCP servers running on one database
    app, app_heard, app_ran = start("app")
    wait(lambda: app_ran, 10, "the app's first pass")
    first_mcp, first_heard, first_ran = start("mcp")
    second_mcp, _, second_ran = start("mcp")
    # WHEN another device writes, three times
    for n in range(3):
        memory_id = from_laptop(f"Note {n} from the laptop: the boat is at pier {n}.")
        wait(lambda m=memory_id: _arrived(first_mcp, m), 20, "the laptop's note")
    # THEN only the first to start ran passes (before issue 43: each runner ran its own)
    assert len(app_ran) >= 2 and first_ran == [] and second_ran == [], (
        len(app_ran),
        first_ran,
        second_ran,
    )
    # AND the others heard of them (the tray of an app that is not the owner says so)
    wait(
        lambda: any(p["applied"] and not p["here"] for p in first_heard.passes),
        10,
        "the MCP server to hear of the app's pass",
    )
    assert all(p["by"] == "app" for p in first_heard.passes)
    # AND sync status names the owner: this process, the desktop app
    status = app.submit(lambda e: e.sync.status()).result(10)
    assert status["owner"]["pid"] == os.getpid() and status["owner"]["kind"] == "app"
    assert status["owner"]["what"] == "the desktop app"


def test_when_the_owner_ends_another_runner_takes_over_within_a_poll(one_database):
    start, from_laptop, database = one_database
    app, _, app_ran = start("app")
    wait(lambda: app_ran, 10, "the app's first pass")
    mcp, _, mcp_ran = start("mcp")
    assert duties.owner(database)["kind"] == "app"
    # WHEN the app quits
    assert app.stop(30)
    # THEN the MCP server does the background work: it names itself, and runs the passes
    wait(lambda: (duties.owner(database) or {}).get("kind") == "mcp", 5, "the MCP server")
    memory_id = from_laptop("Written while only the MCP server runs.")
    wait(lambda: _arrived(mcp, memory_id), 20, "the laptop's note through the MCP server")
    assert mcp_ran


def test_a_person_asking_for_a_pass_gets_it_where_they_asked(one_database):
    # The tray's "Sync now" in an app that is not the owner runs a pass there (a person
    # asked); a change in the sync folder alone does not
    start, _, _ = one_database
    mcp, _, mcp_ran = start("mcp")
    wait(lambda: mcp_ran, 10, "the MCP server's first pass")
    app, heard, app_ran = start("app")
    app.look_soon()
    app.sync_soon()
    wait(lambda: app_ran, 10, "the asked-for pass")
    assert len(app_ran) == 1
    wait(lambda: any(p["here"] for p in heard.passes), 10, "the pass to be told")


def test_no_empty_pass_follows_one_that_wrote(one_database):
    # Before issue 43 a pass that wrote moved the journal it was marked from: one more
    # pass followed, which found nothing
    start, _, _ = one_database
    app, heard, app_ran = start("app")
    wait(lambda: app_ran, 10, "the first pass")
    before = len(app_ran)
    # (embedded as it is stored: a backfill's labels would move the journal, a pass due)
    app.submit(lambda e: e.remember("Written here."), writes=True).result(10)
    wait(lambda: len(app_ran) > before, 10, "the pass that writes it")
    counted = len(app_ran)
    threading.Event().wait(1.0)  # ten polls (nothing to wait for: nothing must happen)
    assert len(app_ran) == counted, heard.passes


def test_a_record_that_is_not_ours_names_no_owner(tmp_path):
    database = tmp_path / "mnemo.db"
    lock = duties.lock_path(database)
    for planted in (b"", b"\x00\x00", b"[1, 2]", b'{"pid": "1; rm -rf"}', b"[" * 100_000):
        lock.write_bytes(planted)
        assert duties.owner(database) is None


@pytest.mark.parametrize("planted", ["link", "folder", "pipe"])
def test_a_lock_file_that_cannot_be_used_leaves_the_work_to_every_process_and_says_so(
    tmp_path, planted, caplog
):
    # Before: a folder, a link or a pipe at the lock's path left the background work to no
    # process at all (no pass, no snapshot, status said none ran), and a pipe hung
    # `mnemo sync status` for good
    database = tmp_path / "mnemo.db"
    lock = duties.lock_path(database)
    target = tmp_path / "elsewhere"
    target.write_text("theirs")
    {
        "link": lambda: lock.symlink_to(target),
        "folder": lock.mkdir,
        "pipe": lambda: os.mkfifo(lock),
    }[planted]()
    first, second = Duties(database, "app"), Duties(database, "mcp")
    with caplog.at_level(logging.INFO, logger="app.core.duties"):
        for _ in range(5):
            assert first.held() and second.held()  # each does its own, as before issue 43
    said = [r for r in caplog.records if "cannot be used" in r.getMessage()]
    assert len(said) == 2  # once per process, not at every poll
    assert target.read_text() == "theirs"  # never written through
    found = []
    reading = threading.Thread(target=lambda: found.append(duties.owner(database)), daemon=True)
    reading.start()
    reading.join(5)
    assert found, "reading the record hung"
    assert "every Mnemo process" in duties.describe(found[0])


def test_a_record_with_fields_of_the_wrong_type_is_read_as_what_it_can_be(tmp_path):
    database = tmp_path / "mnemo.db"
    claim = Duties(database, "mcp")
    assert claim.held()
    planted = {
        "pid": os.getpid(),
        "kind": ["app"],
        "since": 1e20,
        "last_pass": {"n": 7, "written": "lots", "held": [1, 2], "problem": {"x": 1}},
    }
    data = json.dumps(planted).encode()
    fd = os.open(duties.lock_path(database), os.O_WRONLY)
    os.pwrite(fd, data, 0)
    os.ftruncate(fd, len(data))
    os.close(fd)
    seen = duties.owner(database)
    assert seen["kind"] == "?" and seen["since"] == 0.0
    assert seen["last_pass"]["written"] == 0 and seen["last_pass"]["held"] == {}
    assert seen["last_pass"]["problem"] == "" and seen["last_pass"]["n"] == ""
    assert duties.describe(seen).startswith("Background passes: a Mnemo process")  # no error
    claim.let_go()


def test_a_runner_hearing_of_a_planted_pass_goes_on_serving(one_database):
    # Before: a well-formed record with a count that was not a number raised in the
    # runner's poll and ended its thread: that MCP server never answered again
    start, _, database = one_database
    owner = Duties(database, "mcp")
    assert owner.held()
    owner.note_pass({"written": 1, "read": 0, "applied": 0, "conflicts": 0, "problem": ""})
    app, heard, _ = start("app")
    fd = os.open(duties.lock_path(database), os.O_WRONLY)
    data = json.dumps(
        {
            "pid": os.getpid(),
            "kind": "mcp",
            "last_pass": {"n": "y", "written": "lots", "held": [1], "problem": "planted"},
        }
    ).encode()
    os.pwrite(fd, data, 0)
    os.ftruncate(fd, len(data))
    os.close(fd)
    wait(lambda: any(p["problem"] == "planted" for p in heard.passes), 10, "the planted pass")
    told = next(p for p in heard.passes if p["problem"] == "planted")
    assert told["written"] == 0 and told["held"] == {} and not told["here"]
    assert app.submit(lambda e: e.count()).result(10) >= 0  # still serving
    owner.let_go()


def test_an_owner_whose_lock_file_was_removed_gives_way_to_the_one_there_now(tmp_path):
    # Before: removing the file while its owner ran let a second process lock a new one,
    # and both made passes
    database = tmp_path / "mnemo.db"
    first, second = Duties(database, "app"), Duties(database, "mcp")
    assert first.held()
    duties.lock_path(database).unlink()
    assert second.held()
    assert not first.held()
    assert duties.owner(database)["kind"] == "mcp"
    second.let_go()
    assert first.held()


def test_a_runner_that_cannot_open_the_database_again_lets_another_do_the_work(one_database):
    # Before: an owner whose database was encrypted meanwhile (its key not at hand) kept
    # the lock; no other process synced, and its "connection closed" reached the tray
    start, from_laptop, database = one_database
    blocked = threading.Event()

    def cannot_open():
        raise LockedError("the database is encrypted with a passphrase, and none was given")

    app, _, app_ran = start("app")
    wait(lambda: app_ran, 10, "the app's first pass")
    app.submit(lambda e: setattr(e, "hand_off", cannot_open)).result(10)
    blocked.set()
    mcp, _, mcp_ran = start("mcp")
    wait(lambda: (duties.owner(database) or {}).get("kind") == "mcp", 10, "the MCP server")
    memory_id = from_laptop("Written while the app cannot open the database.")
    wait(lambda: _arrived(mcp, memory_id), 20, "the laptop's note through the MCP server")
    assert mcp_ran


def test_the_claim_is_given_back_and_taken_by_the_next(tmp_path):
    database = tmp_path / "mnemo.db"
    first, second = Duties(database, "helper"), Duties(database, "mcp")
    assert first.held() and not second.held()
    first.note_pass({"written": 1, "read": 0, "applied": 0, "conflicts": 0, "problem": ""})
    seen = duties.owner(database)
    assert seen["kind"] == "helper" and seen["last_pass"]["written"] == 1
    assert os.stat(duties.lock_path(database)).st_mode & 0o777 == 0o600
    first.let_go()
    assert duties.owner(database) is None  # (its record stays: the last pass made)
    assert second.held()
    taken = duties.owner(database)
    assert taken["kind"] == "mcp" and taken["last_pass"]["written"] == 1
    second.let_go()


def test_an_idle_owner_syncs_once_sync_is_set_up_by_another_process(tmp_path, word_model):
    # Found in review: an MCP server that owned the background work and got no tool call
    # never read the settings again, so after sync was set up in the app nobody synced
    settings, database = tmp_path / "here.json", tmp_path / "here.db"
    Engine(Settings(settings), database, word_model).close()  # sync off
    ran: list[int] = []

    def made() -> Engine:
        e = Engine(Settings(settings), database, word_model)
        real = e.sync.now
        e.sync.now = lambda *a, **k: ran.append(1) or real(*a, **k)
        return e

    server = Runner(made, load_model=False, kind="mcp")
    server.poll_s = 0.1
    server.start()
    try:
        wait(lambda: (duties.owner(database) or {}).get("kind") == "mcp", 10, "the server")
        with Engine(Settings(settings), database, word_model) as app:  # the app sets it up
            app.sync.init(str(tmp_path / "shared"), "desk")
        counted = len(ran)
        with Engine(Settings(settings), database, word_model) as other:
            other.remember("Written once sync was set up elsewhere.", embed=False)
        wait(lambda: len(ran) > counted, 10, "the idle owner's pass")
        assert server.model_id == ""  # (and it loaded no model to read the settings)
    finally:
        assert server.stop(30)


def test_a_closed_database_says_so_when_asked_what_moved(tmp_path):
    # Found in the suite: the poll's "what moved" on a connection closed for a switch
    # raised apsw's own error, logged with a traceback every 2 s
    from app.core.errors import StoreError
    from app.core.storage.db import Database

    db = Database(tmp_path / "mnemo.db")
    db.moved()
    db.release()
    with pytest.raises(StoreError):
        db.moved()


def test_the_passes_of_a_stand_in_are_heard_by_the_other_processes(one_database, monkeypatch):
    # Found in review: while the owner was stopped, the process standing in made passes that
    # no other process heard of (the app's tray said nothing of what they found)
    start, from_laptop, database = one_database
    owner = Duties(database, "mcp")  # an owner that will not run again soon
    assert owner.held()
    monkeypatch.setattr(duties, "stopped", lambda pid: True)
    first, first_heard, first_ran = start("app")
    second, second_heard, second_ran = start("mcp")
    memory_id = from_laptop("Written while the owner is stopped.")
    wait(lambda: _arrived(first, memory_id) and _arrived(second, memory_id), 20, "the note")
    assert bool(first_ran) != bool(second_ran)  # one of them stood in
    other = second_heard if first_ran else first_heard
    wait(
        lambda: any(p["applied"] and not p["here"] for p in other.passes),
        10,
        "the other to hear of the stand-in's pass",
    )
    owner.let_go()


def test_the_first_pass_an_owner_makes_after_a_process_started_is_heard(one_database):
    # Found in CI: a process heard of a record's passes only from the second one it saw (the
    # first was taken for one made before it started), so a stand-in's first pass, or the
    # first of an owner that had made none yet, reached no other tray
    start, _, database = one_database
    owner = Duties(database, "mcp")  # owns the work, has made no pass yet
    assert owner.held()
    follower, heard, ran = start("app")
    wait(lambda: follower.submit(lambda e: True).result(10), 10, "the runner")
    owner.note_pass({"written": 0, "read": 1, "applied": 1, "conflicts": 0, "problem": ""})
    wait(lambda: any(p["applied"] and not p["here"] for p in heard.passes), 10, "the pass")
    assert ran == []
    owner.let_go()
