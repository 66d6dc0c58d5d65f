"""The desktop app on an encrypted database whose key is not at hand (issue 26): a locked
state (not a crash, not "damaged"), and Unlock… asks the passphrase once in a real dialog."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from app.core import paths
from app.core.engine import Engine
from app.core.vault import keys
from app.gui.app import MnemoApp
from app.gui.qt import QtCore, QtWidgets
from tests.conftest import REPO
from tests.gui.conftest import close_app

PASSPHRASE = "a passphrase for the tray"


@pytest.fixture
def encrypted(embedder, mnemo_home, monkeypatch):
    engine = Engine(embedder=embedder)
    engine.remember("the boiler's service code is in the red folder")
    engine.vault.encrypt("passphrase", PASSPHRASE)
    engine.close()
    keys.forget_passphrases()  # a new process: the passphrase is not known yet
    yield
    keys.forget_passphrases()


def _answer_dialog(text: str) -> None:
    """Type into the passphrase dialog once it is up, and press OK (a real QInputDialog)."""

    def answer():
        dialog = QtWidgets.QApplication.activeModalWidget()
        if not isinstance(dialog, QtWidgets.QInputDialog):
            QtCore.QTimer.singleShot(50, answer)
            return
        assert dialog.textEchoMode() == QtWidgets.QLineEdit.Password
        dialog.setTextValue(text)
        dialog.accept()

    QtCore.QTimer.singleShot(50, answer)


def test_a_locked_database_is_a_locked_state_and_unlock_asks_the_passphrase_once(
    qtbot, qapp, embedder, encrypted, tmp_path, monkeypatch
):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    app = MnemoApp(qapp, engine_factory=lambda s: Engine(settings=s, embedder=embedder))
    try:
        qtbot.waitUntil(lambda: app.status()["model"] == "locked", timeout=10_000)
        state = app.status()
        assert "encrypted with a passphrase" in state["model_detail"]
        assert state["last_notification"][0] == "Mnemo is locked"
        if app.tray is not None:
            assert app.tray.unlock_action.isVisible()
        # a search meanwhile fails with why, and nothing crashes
        failed = []
        app.worker.call(lambda e: e.count(), lambda _: None, failed.append)
        qtbot.waitUntil(lambda: bool(failed), timeout=5000)
        assert "passphrase" in str(failed[0])

        _answer_dialog("not the passphrase")
        app.unlock()
        qtbot.waitUntil(lambda: "does not open" in app.status()["model_detail"], timeout=10_000)
        assert app.status()["model"] == "locked"

        _unlock_and_count(qtbot, app, 1)
        assert keys.passphrase_for(paths.database_path()) == PASSPHRASE  # asked once
        if app.tray is not None:
            assert not app.tray.unlock_action.isVisible()
    finally:
        close_app(app)


def _unlock_and_count(qtbot, app, expected: int) -> None:
    """Unlock… with the passphrase typed into the real dialog: ready, the memories there."""
    _answer_dialog(PASSPHRASE)
    app.unlock()
    qtbot.waitUntil(lambda: app.status()["model"] == "ready", timeout=20_000)
    counted = []
    app.worker.call(lambda e: e.count(), counted.append)
    qtbot.waitUntil(lambda: bool(counted), timeout=5000)
    assert counted == [expected]


def _answer_question(button) -> None:
    """Press `button` of the message box once it is up (a real QMessageBox)."""

    def answer():
        box = QtWidgets.QApplication.activeModalWidget()
        if not isinstance(box, QtWidgets.QMessageBox):
            QtCore.QTimer.singleShot(50, answer)
            return
        box.button(button).click()

    QtCore.QTimer.singleShot(50, answer)


def test_the_manager_exports_an_encrypted_database_only_once_the_user_says_yes(
    qtbot, embedder, seeded, settings, tmp_path, monkeypatch
):
    from app.gui.manager import Manager
    from app.gui.worker import Worker

    engine = Engine(embedder=embedder)
    engine.vault.encrypt("passphrase", PASSPHRASE)  # (this process keeps the passphrase)
    engine.close()
    worker = Worker(lambda: Engine(settings=settings, embedder=embedder))
    try:
        manager = Manager(worker, settings)
        qtbot.addWidget(manager)
        out = tmp_path / "plain.jsonl"
        _answer_question(QtWidgets.QMessageBox.No)
        manager.export_to(out, "jsonl")
        qtbot.waitUntil(lambda: not manager.progress.isVisible(), timeout=10_000)
        assert not out.exists()
        _answer_question(QtWidgets.QMessageBox.Yes)
        with qtbot.waitSignal(worker.finished, timeout=10_000):
            manager.export_to(out, "jsonl")
        qtbot.waitUntil(lambda: out.exists(), timeout=10_000)
        assert len(out.read_text().splitlines()) == 4
    finally:
        worker.stop()
        keys.forget_passphrases()


class Answers:
    """Answer the modal dialogs that come up, in order (real QInputDialog / QMessageBox):
    each answer is a text to type (an input dialog) or a button (a message box)."""

    def __init__(self, *answers):
        self.left = list(answers)
        self.seen: list[str] = []
        self._poll()

    def _poll(self) -> None:
        if not self.left:
            return
        dialog = QtWidgets.QApplication.activeModalWidget()
        if isinstance(dialog, QtWidgets.QInputDialog) and isinstance(self.left[0], str):
            self.seen.append(dialog.labelText())
            dialog.setTextValue(self.left.pop(0))
            dialog.accept()
        elif isinstance(dialog, QtWidgets.QMessageBox) and not isinstance(self.left[0], str):
            self.seen.append(f"{dialog.text()} {dialog.informativeText()}")
            dialog.button(self.left.pop(0)).click()
        QtCore.QTimer.singleShot(30, self._poll)


def test_settings_privacy_encrypts_shows_the_recovery_key_snapshots_and_decrypts(
    qtbot, embedder, seeded, settings, monkeypatch
):
    from app.gui.privacy_page import PrivacyPage
    from app.gui.worker import Worker

    monkeypatch.delenv("MNEMO_PASSPHRASE", raising=False)
    worker = Worker(lambda: Engine(settings=settings, embedder=embedder))
    try:
        page = PrivacyPage(worker)
        qtbot.addWidget(page)
        qtbot.waitUntil(lambda: "Not encrypted" in page.state.text(), timeout=10_000)
        # no keyring here (no D-Bus): a passphrase, typed twice; then yes; then the key
        answers = Answers(
            PASSPHRASE, PASSPHRASE, QtWidgets.QMessageBox.Yes, QtWidgets.QMessageBox.Ok
        )
        with qtbot.waitSignal(page.done, timeout=30_000):
            page.encrypt()
        qtbot.waitUntil(lambda: not answers.left, timeout=10_000)
        recovery = answers.seen[-1].split()[-1]
        assert keys.parse_recovery(recovery)  # a whole recovery key was shown
        qtbot.waitUntil(lambda: "Encrypted" in page.state.text(), timeout=10_000)
        assert "passphrase" in page.state.text()
        assert not page.encrypt_button.isEnabled() and page.decrypt_button.isEnabled()
        assert paths.database_path().read_bytes()[:16] != b"SQLite format 3\x00"

        with qtbot.waitSignal(page.done, timeout=30_000):
            page.backup()
        assert "Snapshot written" in page.result.text()

        answers = Answers(QtWidgets.QMessageBox.Yes)
        with qtbot.waitSignal(page.done, timeout=30_000):
            page.decrypt()
        qtbot.waitUntil(lambda: "Not encrypted" in page.state.text(), timeout=10_000)
        assert paths.database_path().read_bytes()[:16] == b"SQLite format 3\x00"
        counted = []
        worker.call(lambda e: e.count(), counted.append)
        qtbot.waitUntil(lambda: bool(counted), timeout=5000)
        assert counted == [4]
    finally:
        worker.stop()
        keys.forget_passphrases()


def _cli(*args: str) -> subprocess.Popen:
    """`mnemo ARGS` in another process (the passphrase in its environment only)."""
    return subprocess.Popen(
        [sys.executable, "-m", "app", *args],
        cwd=REPO,
        env={**os.environ, "MNEMO_PASSPHRASE": PASSPHRASE},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _finished(qtbot, proc: subprocess.Popen) -> str:
    qtbot.waitUntil(lambda: proc.poll() is not None, timeout=90_000)
    out, err = proc.communicate()
    assert proc.returncode == 0, err.decode()
    return out.decode()


def test_encrypt_from_another_process_locks_the_running_app_at_once_and_unlock_resumes(
    qtbot, qapp, embedder, mnemo_home, tmp_path, monkeypatch, caplog
):
    """Issue 46, item 3: `mnemo encrypt` while the app runs. The app lets go, then cannot
    open the new file (this process has no passphrase): it is *locked* (tray, status, a
    notification, Unlock…), the popup says so instead of the key store's raw error, and
    Unlock… resumes it. A decrypt from another process is then followed too."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    with Engine(embedder=embedder) as engine:
        engine.remember("the boiler's service code is in the red folder")
    app = MnemoApp(qapp, engine_factory=lambda s: Engine(settings=s, embedder=embedder))
    try:
        qtbot.waitUntil(lambda: app.status()["model"] == "ready", timeout=30_000)
        _finished(qtbot, _cli("encrypt", "--passphrase"))
        qtbot.waitUntil(lambda: app.status()["model"] == "locked", timeout=10_000)
        state = app.status()
        assert "passphrase" in state["model_detail"]
        assert state["last_notification"][0] == "Mnemo is locked"
        if app.tray is not None:
            assert app.tray.unlock_action.isVisible()

        app.popup.present()
        qtbot.keyClicks(app.popup.search, "boiler")
        qtbot.waitUntil(lambda: "Mnemo is locked" in app.popup.status.text(), timeout=10_000)
        assert "MNEMO_PASSPHRASE" not in app.popup.status.text()
        assert app.popup.model.rowCount() == 0  # no rows of before, dimmed or not
        app.popup.hide()

        _unlock_and_count(qtbot, app, 1)
        if app.tray is not None:
            assert not app.tray.unlock_action.isVisible()
        said = [r.getMessage() for r in caplog.records if r.name == "app.core.runner"]
        assert sum("cannot be opened again" in m for m in said) == 1, said  # once, not every poll
        assert not any("cannot tell" in m for m in said), said

        _finished(qtbot, _cli("decrypt"))
        assert paths.database_path().read_bytes()[:16] == b"SQLite format 3\x00"
        app.popup.present()
        app.popup.search.clear()
        qtbot.keyClicks(app.popup.search, "boiler")
        qtbot.waitUntil(
            lambda: app.popup.model.rowCount() == 1 and app.popup.state()["settled"],
            timeout=10_000,
        )
        assert app.status()["model"] == "ready"
    finally:
        close_app(app)
        keys.forget_passphrases()
