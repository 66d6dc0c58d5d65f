"""Which keys paste into which window (issue 22, item 2): a terminal's own key, by class."""

from __future__ import annotations

import pytest

from app.core.errors import InputError
from app.core.settings import Settings
from app.gui.paste import keys_for


@pytest.mark.parametrize(
    ("window_class", "keys"),
    [
        (("xterm", "XTerm"), "Shift+Insert"),  # pastes PRIMARY: Mnemo puts the memory there
        (("urxvt", "URxvt"), "Shift+Insert"),
        (("gnome-terminal-server", "Gnome-terminal"), "Ctrl+Shift+V"),
        (("konsole", "konsole"), "Ctrl+Shift+V"),
        (("kitty", "kitty"), "Ctrl+Shift+V"),
        (("Alacritty", "Alacritty"), "Ctrl+Shift+V"),
        (("Navigator", "firefox"), "Ctrl+V"),
        (("mousepad", "Mousepad"), "Ctrl+V"),
        ((), "Ctrl+V"),  # a window whose class cannot be read
    ],
)
def test_auto_pastes_with_the_windows_own_key(window_class, keys):
    assert keys_for(window_class, "auto", []) == keys


def test_a_chosen_key_and_a_window_of_the_users_own_come_first():
    assert keys_for(("Navigator", "firefox"), "Ctrl+Shift+V", []) == "Ctrl+Shift+V"
    chosen = ["XTerm=Ctrl+Shift+V", "emacs=Shift+Insert"]
    assert keys_for(("xterm", "XTerm"), "auto", chosen) == "Ctrl+Shift+V"
    assert keys_for(("emacs", "Emacs"), "Ctrl+V", chosen) == "Shift+Insert"


def test_window_entries_are_checked_when_saved(mnemo_home):
    settings = Settings()
    assert settings["paste_keys"] == "auto"
    settings.apply({"paste_by_window": "XTerm=shift+insert, Emacs = Ctrl+Shift+V"})
    assert Settings()["paste_by_window"] == ["XTerm=Shift+Insert", "Emacs=Ctrl+Shift+V"]
    with pytest.raises(InputError, match="WINDOW_CLASS=KEYS"):
        settings.apply({"paste_by_window": "XTerm=Ctrl+Z"})
    with pytest.raises(InputError, match="WINDOW_CLASS=KEYS"):
        settings.apply({"paste_by_window": "Ctrl+V"})
    assert Settings()["paste_by_window"] == ["XTerm=Shift+Insert", "Emacs=Ctrl+Shift+V"]


def test_the_tray_names_what_remember_reads(qtbot):
    # The desktop pass (issue 22, low): the tray said "Remember clipboard" when the setting
    # had it read the primary selection
    from app.gui.tray import Tray

    tray = Tray("Ctrl+Alt+Space")
    tray.set_hotkey_text("Ctrl+Alt+Space", "Ctrl+Alt+C")
    assert tray.clipboard_action.text() == "Remember clipboard\tCtrl+Alt+C"
    tray.set_hotkey_text("Ctrl+Alt+Space", "Ctrl+Alt+C", selection=True)
    assert tray.clipboard_action.text() == "Remember selection\tCtrl+Alt+C"


def test_the_preview_counts_recalls_not_copies():
    # The desktop pass (issue 22, low): "copied 1×" for a memory an agent had only searched;
    # the count is of every recall (printed, copied, sent to an agent), as the manager says
    from app.core.memory import Memory
    from app.gui.popup import preview_html

    shown = preview_html(Memory(id="a1", text="Boiler code F22", recall_count=1), "boiler")
    assert "recalled 1×" in shown and "copied" not in shown
