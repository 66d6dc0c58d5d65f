"""Notifications where no notification service answers fall back to the tray's balloon.
(The service itself, a real dunst, is tested end to end in tests/e2e/test_desktop.py.)"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from app.gui.notifier import Notifier
from tests.secret_service import BUS_CONFIG


def test_without_a_session_bus_the_tray_says_it(qtbot, monkeypatch):
    monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)
    notifier = Notifier()
    with qtbot.waitSignal(notifier.fallback, timeout=1000) as shown:
        notifier.show("Remembered", "the boiler pressure")
    assert shown.args == ["Remembered", "the boiler pressure"] and notifier.via == "tray"
    notifier.close()


@pytest.mark.skipif(shutil.which("dbus-daemon") is None, reason="needs dbus-daemon")
def test_a_bus_without_a_notification_service_falls_back_to_the_tray(qtbot, monkeypatch, tmp_path):
    config = tmp_path / "bus.conf"
    # a bus on which nobody owns org.freedesktop.Notifications
    config.write_text(BUS_CONFIG.format(listen=f"unix:tmpdir={tmp_path}"))
    bus = subprocess.Popen(
        ["dbus-daemon", f"--config-file={config}", "--nofork", "--print-address=1"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", bus.stdout.readline().strip())
        notifier = Notifier()
        with qtbot.waitSignal(notifier.fallback, timeout=10_000) as shown:
            notifier.show("Nothing remembered", "The text held a secret.", ("Open", print))
        assert shown.args == ["Nothing remembered", "The text held a secret."]
        assert notifier.via == "tray"
        notifier.close()
    finally:
        bus.terminate()
        bus.wait(10)
