"""Conflicts by name (issue 40, item 11): a memory edited on two devices apart is listed
with both versions and the devices that wrote them, the same on every device; resolving
it (as merged, as one version, or by unmerging) takes it off the list everywhere. Real
engines on real files (the word model); the CLI in a real process."""

from __future__ import annotations

import json

import pytest

from app.core.engine import Engine
from app.core.errors import InputError
from app.core.settings import Settings
from tests.conftest import run_cli
from tests.sync_devices import approve_waiting


def device(tmp_path, name, word_model) -> Engine:
    return Engine(Settings(tmp_path / f"{name}.json"), tmp_path / f"{name}.db", word_model)


@pytest.fixture
def apart(tmp_path, word_model):
    """Two devices; one memory edited on each while they could not see each other."""
    folder = tmp_path / "shared"
    lap, desk = device(tmp_path, "lap", word_model), device(tmp_path, "desk", word_model)
    memory = lap.remember("The staging server runs Debian 11.", embed=False).memory
    lap.sync.init(str(folder), "lap")
    desk.sync.init(str(folder), "desk")
    approve_waiting(lap)
    lap.edit(memory.id, text="The staging server runs Debian 12.")
    desk.edit(memory.id, text="The staging server runs Debian 11 and reboots on Sundays.")
    for _ in range(2):
        lap.sync.now()
        desk.sync.now()
    yield lap, desk, memory.id
    lap.close()
    desk.close()


def _settle(*engines) -> None:
    for _ in range(2):
        for engine in engines:
            engine.sync.now()


def test_a_conflict_is_listed_with_both_versions_and_their_devices(apart):
    lap, desk, memory_id = apart
    for engine in (lap, desk):
        listed = engine.sync.conflicts()
        assert [c["id"] for c in listed] == [memory_id]
        versions = listed[0]["versions"]
        assert sorted(v["device_name"] for v in versions) == ["desk", "lap"]
        assert sorted(v["text"] for v in versions) == [
            "The staging server runs Debian 11 and reboots on Sundays.",
            "The staging server runs Debian 12.",
        ]
        assert "Debian 12" in listed[0]["text"] and "Sundays" in listed[0]["text"]
        assert engine.sync.status()["conflicts"] == 1  # the same count on both


def test_unmerging_takes_it_off_the_list_everywhere(apart):
    """Before: the count never went down (still 3 after `unmerge`)."""
    lap, desk, memory_id = apart
    desk.unmerge(memory_id)
    _settle(desk, lap)
    assert lap.sync.status()["conflicts"] == desk.sync.status()["conflicts"] == 0


def test_resolving_as_merged_or_as_one_version_is_seen_on_every_device(apart):
    lap, desk, memory_id = apart
    versions = lap.sync.conflicts()[0]["versions"]
    chosen = next(v for v in versions if v["device_name"] == "desk")
    lap.sync.resolve(memory_id, keep=chosen["id"].rsplit("-", 1)[1])  # (its own part)
    _settle(lap, desk)
    for engine in (lap, desk):
        assert engine.sync.conflicts() == []
        assert engine.get(memory_id).text == chosen["text"]
        kept = engine.get(chosen["id"])  # the versions stay in the trash, unlinked
        assert kept.deleted_at and kept.merged_into is None
    with pytest.raises(InputError, match="no versions"):
        lap.sync.resolve(memory_id)


def test_the_cli_lists_and_resolves(apart, tmp_path, mnemo_home):
    lap, _, memory_id = apart
    lap.close()
    settings = tmp_path / "lap.json"
    home = {"MNEMO_HOME": str(mnemo_home)}
    # the lap's engine as the CLI would open it
    (mnemo_home / "data").mkdir(parents=True, exist_ok=True)
    (mnemo_home / "config").mkdir(parents=True, exist_ok=True)
    (tmp_path / "lap.db").rename(mnemo_home / "data" / "mnemo.db")
    (mnemo_home / "config" / "settings.json").write_text(settings.read_text())
    out = run_cli("sync", "conflicts", env=home).stdout.decode()
    assert f"{memory_id}:" in out and "from desk" in out and "from lap" in out, out
    assert "mnemo sync conflicts resolve" in out
    listed = json.loads(run_cli("sync", "conflicts", "--json", env=home).stdout)
    assert len(listed[0]["versions"]) == 2
    done = run_cli("sync", "conflicts", "resolve", memory_id, env=home)
    assert done.returncode == 0, done.stderr.decode()
    assert (
        "No memory edited on two devices apart"
        in run_cli("sync", "conflicts", env=home).stdout.decode()
    )
