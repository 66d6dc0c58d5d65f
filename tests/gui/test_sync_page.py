"""Settings → Sync and the tray's sync line (issue 27): real widgets, a real worker and a
second device (another database) sharing the folder. Starting to sync shows the other
device and brings its memories; a change it makes later arrives by itself; the tray says
when it last synced; Stop asks first."""

from __future__ import annotations

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
