"""Settings → Sync and the tray's sync line (issue 27): real widgets, a real worker and a
second device (another database) sharing the folder. Starting to sync shows the other
device and brings its memories; a change it makes later arrives by itself; the tray says
when it last synced; Stop asks first."""

from __future__ import annotations

import os

import pytest

from app.core.engine import Engine
from app.core.settings import Settings
from app.gui.app import MnemoApp
from app.gui.qt import QtCore, QtWidgets
from app.gui.sync_page import SyncPage
from tests.gui.conftest import close_app


@pytest.fixture
def other_device(tmp_path, embedder):
    """A second device that already syncs through the folder."""
    folder = tmp_path / "shared"
    engine = Engine(Settings(tmp_path / "other.json"), tmp_path / "other.db", embedder)
    engine.remember("The spare key is under the blue flower pot.", embed=False)
    engine.sync.init(str(folder), "desktop")
    yield engine, folder
    engine.close()


@pytest.fixture
def synced_app(qtbot, qapp, embedder, other_device, tmp_path, monkeypatch):
    """The desktop app on a database that syncs with the other device, after its first pass."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    with Engine(embedder=embedder) as engine:
        engine.sync.init(str(other_device[1]), "laptop")
    app = MnemoApp(qapp, engine_factory=lambda s: Engine(settings=s, embedder=embedder))
    try:
        qtbot.waitUntil(lambda: app.status()["sync"].startswith("Synced at"), timeout=40_000)
        yield app
    finally:
        close_app(app)


def _press_yes_when_asked() -> None:
    def answer():
        box = QtWidgets.QApplication.activeModalWidget()
        if not isinstance(box, QtWidgets.QMessageBox):
            QtCore.QTimer.singleShot(50, answer)
            return
        box.button(QtWidgets.QMessageBox.Yes).click()

    QtCore.QTimer.singleShot(50, answer)


def test_start_syncing_shows_the_other_device_and_brings_its_memories(qtbot, worker, other_device):
    other, folder = other_device
    page = SyncPage(worker)
    qtbot.addWidget(page)
    page.show()
    qtbot.waitUntil(lambda: "Sync is off" in page.state.text(), timeout=5000)
    page.folder.setText(str(folder))
    page.name.setText("laptop")
    with qtbot.waitSignal(page.done, timeout=30_000) as said:
        page.start_button.click()
    assert "memories changed here" in said.args[0]
    qtbot.waitUntil(lambda: page.devices.topLevelItemCount() == 2, timeout=5000)
    names = {page.devices.topLevelItem(i).text(0) for i in range(2)}
    assert names == {"desktop", "laptop (this device)"}
    assert "Syncing" in page.state.text() and not page.start_button.isEnabled()
    # which process makes the passes in the background: this app (issue 43)
    qtbot.waitUntil(lambda: f"pid {os.getpid()}" in page.details.text(), timeout=10_000)
    assert "Background passes: the desktop app" in page.details.text()
    found = []
    worker.call(lambda e: e.recall("where is the spare key").results, found.append)
    qtbot.waitUntil(lambda: bool(found), timeout=10_000)
    assert "blue flower pot" in found[0][0].memory.text

    # a change the other device makes later arrives by itself (the runner's pass)
    other.remember("The garden gate is painted green now.", embed=False)
    other.sync.now()
    counted = []

    def arrived():
        worker.call(lambda e: e.recall("garden gate colour").results, counted.append)
        qtbot.wait(200)
        return bool(counted and counted[-1] and "painted green" in counted[-1][0].memory.text)

    qtbot.waitUntil(arrived, timeout=20_000)

    # Stop asks first, then sync is off and the fields can be edited again
    _press_yes_when_asked()
    with qtbot.waitSignal(page.done, timeout=10_000):
        page.stop_button.click()
    qtbot.waitUntil(lambda: "Sync is off" in page.state.text(), timeout=5000)
    assert page.start_button.isEnabled()


def test_the_tray_says_when_it_last_synced(qtbot, synced_app, other_device):
    app, folder = synced_app, other_device[1]
    # its menu lists the other device and when it was last seen
    qtbot.waitUntil(lambda: bool(app.status()["sync_details"]), timeout=10_000)
    assert app.status()["sync_details"][0].startswith("desktop: last seen")
    if app.tray is not None:
        assert app.tray.sync_menu.menuAction().isVisible()
        assert "Synced at" in app.tray.toolTip()
    # the folder gone (a drive not mounted): the tray says why, in one line
    folder.rename(folder.with_name("away"))
    app.worker.runner.sync_soon()
    qtbot.waitUntil(lambda: "missing" in app.status()["sync"], timeout=40_000)
    assert "\n" not in app.status()["sync"]


def test_the_app_applies_what_arrives_at_once_by_watching_the_folder(
    qtbot, synced_app, other_device
):
    other, app = other_device[0], synced_app
    app.worker.runner.poll_s = 120  # no poll in this test's time: only the watcher
    qtbot.wait(2500)  # (a poll already scheduled at the old interval passes)
    other.remember("The plumber comes on Tuesday morning.", embed=False)
    other.sync.now()
    found = []

    def arrived():
        app.worker.call(lambda e: e.recall("plumber Tuesday", mode="keyword").results, found.append)
        qtbot.wait(100)
        return bool(found and found[-1])

    qtbot.waitUntil(arrived, timeout=10_000)


def _in_sync_folder(worker, qtbot, folder, name="laptop") -> None:
    done = []
    worker.call(lambda e: e.sync.init(str(folder), name), done.append, done.append)
    qtbot.waitUntil(lambda: bool(done), timeout=30_000)


def _row(page, name: str):
    for i in range(page.devices.topLevelItemCount()):
        item = page.devices.topLevelItem(i)
        if item.text(0) == name:
            return item
    return None


def test_a_new_device_waits_until_approved_on_the_page(qtbot, worker, tmp_path, embedder):
    """Issue 40: a device's lines wait until a person approves it in Settings → Sync."""
    folder = tmp_path / "shared"
    _in_sync_folder(worker, qtbot, folder)  # this device made the folder
    other = Engine(Settings(tmp_path / "o.json"), tmp_path / "o.db", embedder)
    try:
        other.remember("Written on the new desktop.", embed=False)
        other.sync.init(str(folder), "desktop")
        page = SyncPage(worker)
        qtbot.addWidget(page)
        page.show()
        qtbot.waitUntil(lambda: _row(page, "desktop") is not None, timeout=10_000)
        row = _row(page, "desktop")
        assert row.text(1) == "waits for you" and row.text(2) == other.sync.status()["key"]
        page.devices.setCurrentItem(row)
        assert page.approve_button.isEnabled() and page.refuse_button.isEnabled()
        with qtbot.waitSignal(page.done, timeout=20_000) as said:
            page.approve_button.click()
        assert said.args[0] == "Approved desktop."
        found = []
        worker.call(lambda e: e.recall("new desktop", mode="keyword").results, found.append)
        qtbot.waitUntil(lambda: bool(found), timeout=10_000)
        assert found[0] and "new desktop" in found[0][0].memory.text
        qtbot.waitUntil(lambda: _row(page, "desktop").text(1) == "approved", timeout=10_000)
    finally:
        other.close()


def test_held_removals_are_listed_and_kept_from_the_page(qtbot, worker, tmp_path, embedder):
    folder = tmp_path / "shared"
    made = []
    worker.call(
        lambda e: [
            e.remember(f"Note {n} about the pier.", embed=False).memory.id for n in range(60)
        ],
        made.append,
    )
    qtbot.waitUntil(lambda: bool(made), timeout=20_000)
    _in_sync_folder(worker, qtbot, folder)
    other = Engine(Settings(tmp_path / "o.json"), tmp_path / "o.db", embedder)
    try:
        other.sync.init(str(folder), "desktop")
        desktop, approved = other.sync.status()["device"], []
        worker.call(lambda e: e.sync.approve(desktop), approved.append, approved.append)
        qtbot.waitUntil(lambda: bool(approved), timeout=20_000)
        other.purge(made[0][:55])
        other.sync.now()
        page = SyncPage(worker)
        qtbot.addWidget(page)
        page.show()
        worker.call(lambda e: e.sync.now(), lambda _: page.refresh())
        qtbot.waitUntil(lambda: page.held.topLevelItemCount() == 1, timeout=20_000)
        item = page.held.topLevelItem(0)
        assert item.text(0).startswith("desktop (") and item.text(1) == "55"
        assert page.held_box.isVisible()
        with qtbot.waitSignal(page.done, timeout=20_000) as said:
            page.refuse_held.click()
        assert said.args[0].startswith("Kept: they stay on every device.")
        qtbot.waitUntil(lambda: not page.held_box.isVisible(), timeout=10_000)
        other.sync.now()
        # written back on the device that removed them
        assert all(not other.get(i).deleted_at for i in made[0])
    finally:
        other.close()


def test_conflicts_are_reviewed_in_the_managers_view(qtbot, worker, tmp_path, embedder):
    from app.gui.conflicts import ConflictsDialog

    folder = tmp_path / "shared"
    made = []
    worker.call(lambda e: e.remember("The boat is blue.", embed=False).memory.id, made.append)
    qtbot.waitUntil(lambda: bool(made), timeout=10_000)
    _in_sync_folder(worker, qtbot, folder)
    other = Engine(Settings(tmp_path / "o.json"), tmp_path / "o.db", embedder)
    try:
        other.sync.init(str(folder), "desktop")
        desktop, approved = other.sync.status()["device"], []
        worker.call(lambda e: e.sync.approve(desktop), approved.append, approved.append)
        qtbot.waitUntil(lambda: bool(approved), timeout=20_000)
        other.edit(made[0], text="The boat is green.")
        worker.call(lambda e: e.edit(made[0], text="The boat is red."))
        other.sync.now()
        passed = []
        worker.call(lambda e: (e.sync.now(), e.sync.now()), passed.append)
        qtbot.waitUntil(lambda: bool(passed), timeout=20_000)
        page = SyncPage(worker)
        qtbot.addWidget(page)
        page.show()
        qtbot.waitUntil(lambda: page.conflicts_row.isVisible(), timeout=10_000)
        with qtbot.waitSignal(page.conflicts_wanted, timeout=2000):
            page.review_button.click()
        listed = []
        worker.call(lambda e: e.sync.conflicts(), listed.append)
        qtbot.waitUntil(lambda: bool(listed), timeout=10_000)
        dialog = ConflictsDialog(listed[0], worker)
        qtbot.addWidget(dialog)
        dialog.show()
        assert dialog.list.count() == 1 and dialog.versions.count() == 2
        tabs = {dialog.versions.tabText(i).split(",")[0] for i in range(2)}
        assert tabs == {"desktop", "laptop"}
        shown = next(i for i in range(2) if dialog.versions.tabText(i).startswith("desktop"))
        dialog.versions.setCurrentIndex(shown)
        dialog.keep_version.click()
        qtbot.waitUntil(lambda: dialog.list.count() == 0, timeout=10_000)
        got = []
        worker.call(lambda e: e.get(made[0]).text, got.append)
        qtbot.waitUntil(lambda: bool(got), timeout=10_000)
        assert got[0] == "The boat is green."
    finally:
        other.close()


def test_the_app_says_when_a_new_device_waits(qtbot, synced_app, other_device, tmp_path, embedder):
    """Issue 40: a notification when a device nobody approved writes to the folder."""
    app, folder = synced_app, other_device[1]
    third = Engine(Settings(tmp_path / "t.json"), tmp_path / "t.db", embedder)
    try:
        third.remember("Written on a device nobody approved.", embed=False)
        third.sync.init(str(folder), "stranger")
        app.worker.runner.sync_soon()
        qtbot.waitUntil(
            lambda: (app.status()["last_notification"] or [""])[0] == "A new device wants to sync",
            timeout=30_000,
        )
        assert third.sync.status()["device"] in app.status()["last_notification"][1]
    finally:
        third.close()
