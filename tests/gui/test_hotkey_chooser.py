"""Which global-hotkey backend runs, and what the user is told when none can.

The session is described by environment variables (DISPLAY, WAYLAND_DISPLAY,
XDG_SESSION_TYPE, DBUS_SESSION_BUS_ADDRESS); Qt runs offscreen here (tests/gui/conftest.py),
so nothing is grabbed for real.
"""

from __future__ import annotations

import logging

import pytest

from app.core.errors import InputError
from app.core.settings import BY_KEY
from app.gui import hotkey
from app.gui.hotkey import BACKENDS, ManualHotkey, PortalHotkey, X11Hotkey

SESSION_VARIABLES = ("DISPLAY", "WAYLAND_DISPLAY", "XDG_SESSION_TYPE", "DBUS_SESSION_BUS_ADDRESS")


@pytest.fixture
def bare_session(monkeypatch, qapp, caplog):
    """A session with no X server, no Wayland and no D-Bus; hotkey logs captured."""
    for name in SESSION_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    caplog.set_level(logging.INFO, logger="app.gui.hotkey")
    return monkeypatch


def test_without_x11_or_wayland_the_manual_backend_names_the_fallback(bare_session):
    chosen = hotkey.backend()
    assert isinstance(chosen, ManualHotkey) and chosen.name == "none"
    error = chosen.register("Ctrl+Alt+Space")
    assert error is not None and "no global hotkey backend" in error
    assert "mnemo popup" in error


def test_the_chooser_logs_why_each_backend_was_skipped(bare_session, caplog):
    hotkey.backend()
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert "x11 skipped: DISPLAY not set" in messages
    assert any(m.startswith("portal skipped: not a Wayland session") for m in messages)
    assert "hotkey backend: none" in messages


def test_an_x_display_under_another_qt_platform_is_skipped_with_that_reason(
    bare_session, caplog, qapp
):
    if qapp.platformName() != "offscreen":
        pytest.skip("needs Qt on the offscreen platform (tests/gui/conftest.py)")
    # GIVEN an X server is reachable but Qt itself runs offscreen (as under XWayland+wayland)
    bare_session.setenv("DISPLAY", ":99")
    chosen = hotkey.backend()
    assert isinstance(chosen, ManualHotkey)
    assert "x11 skipped: Qt uses the offscreen platform plugin, not xcb" in caplog.messages


def test_x11_is_preferred_when_both_x11_and_the_portal_could_run(bare_session, caplog):
    # GIVEN Qt on xcb with a DISPLAY inside a Wayland session that has a session bus
    bare_session.setenv("DISPLAY", ":99")
    bare_session.setenv("XDG_SESSION_TYPE", "wayland")
    bare_session.setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent")
    bare_session.setattr("app.gui.hotkey.x11.qt_platform", lambda: "xcb")
    assert isinstance(hotkey.backend(), X11Hotkey)
    # WHEN the portal is forced THEN the portal is used
    assert isinstance(hotkey.backend(forced="portal"), PortalHotkey)
    assert "hotkey backend: portal (chosen in the settings)" in caplog.messages


def test_a_wayland_session_with_a_session_bus_gets_the_portal(bare_session):
    bare_session.setenv("WAYLAND_DISPLAY", "wayland-0")
    bare_session.setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent")
    chosen = hotkey.backend()
    assert isinstance(chosen, PortalHotkey) and chosen.name == "xdg-desktop-portal"


def test_a_wayland_session_without_a_session_bus_falls_back(bare_session, caplog):
    bare_session.setenv("XDG_SESSION_TYPE", "wayland")
    assert isinstance(hotkey.backend(), ManualHotkey)
    assert any(
        m.startswith("portal skipped: DBUS_SESSION_BUS_ADDRESS not set") for m in caplog.messages
    )


def test_forced_none_grabs_nothing_and_raises_no_alarm(bare_session):
    # GIVEN a session where X11 could be tried
    bare_session.setenv("DISPLAY", ":99")
    chosen = hotkey.backend(forced="none")
    assert isinstance(chosen, ManualHotkey)
    # the user chose to bind `mnemo popup` themselves: nothing to warn about at each start
    assert chosen.register("Ctrl+Alt+Space") is None
    chosen.unregister()


def test_forced_x11_without_a_display_gives_a_clear_error_from_register(bare_session, caplog):
    chosen = hotkey.backend(forced="x11")
    assert isinstance(chosen, ManualHotkey)
    error = chosen.register("Ctrl+Alt+Space")
    assert error is not None
    assert "x11 hotkey backend chosen in the settings cannot run here" in error
    assert "DISPLAY not set" in error and "mnemo popup" in error
    assert any(
        r.levelno == logging.WARNING and "DISPLAY not set" in r.getMessage() for r in caplog.records
    )


def test_forced_portal_outside_wayland_gives_a_clear_error_from_register(bare_session):
    error = hotkey.backend(forced="portal").register("Ctrl+Alt+Space")
    assert error is not None
    assert "portal hotkey backend chosen in the settings cannot run here" in error
    assert "not a Wayland session" in error


def test_an_unknown_forced_name_is_reported_not_ignored(bare_session):
    error = hotkey.backend(forced="wayland").register("Ctrl+Alt+Space")
    assert error is not None and "unknown hotkey backend 'wayland'" in error


def test_the_setting_offers_exactly_the_backends_the_chooser_knows():
    setting = BY_KEY["hotkey_backend"]
    assert setting.default == "auto" and setting.group == "Desktop"
    assert set(setting.choices) == {"auto"} | {cls.key for cls in BACKENDS}
    with pytest.raises(InputError):
        setting.coerce("wayland")


def test_the_package_keeps_the_names_the_app_uses():
    assert callable(hotkey.active_window) and callable(hotkey.activate_window)
    assert hotkey.parse("Meta+Shift+M") == ({"super", "shift"}, "M")
    assert "mnemo popup" in hotkey.FALLBACK
    assert all(issubclass(cls, hotkey.HotkeyBackend) for cls in BACKENDS)


def test_a_key_typed_in_lower_case_is_kept_as_the_tray_shows_keys():
    # Issue 46, item 8: `mnemo settings hotkey ctrl+alt+space` left the tray saying
    # "Ctrl+Alt+space"; the setting keeps the key as Qt writes it, whatever its case
    check = BY_KEY["hotkey"].coerce
    assert check("ctrl+alt+space") == "Ctrl+Alt+Space"
    assert check("CTRL + ALT + F5") == "Ctrl+Alt+F5"
    assert check("super+shift+k") == "Super+Shift+K"
    assert check("Alt+PgUp") == "Alt+PgUp"  # (a key written in mixed case stays so)
    with pytest.raises(InputError):
        check("ctrl+q, k")


def test_a_key_name_not_known_keeps_its_case():
    # helper-16's review: "eacute" (é) became "Eacute" (É), another key
    check = BY_KEY["hotkey"].coerce
    assert check("ctrl+alt+eacute") == "Ctrl+Alt+eacute"
    assert check("ctrl+alt+pgup") == "Ctrl+Alt+PgUp"
    assert check("ctrl+alt+f12") == "Ctrl+Alt+F12"
