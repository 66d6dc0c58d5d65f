"""The tray icon and its menu; the icon shows when backfilling or when the model is out."""

from __future__ import annotations

from app.core import paths
from app.gui.qt import QtCore, QtGui, QtWidgets

ICON = paths.RESOURCES / "icons" / "mnemo.svg"
SIZES = (16, 22, 24, 32, 48, 64)
BADGES = {"busy": "#F59E0B", "unavailable": "#DC2626", "locked": "#6B7280"}


def icon(state: str = "ready") -> QtGui.QIcon:
    """The app icon, with an amber (backfilling) or red (model unavailable) badge."""
    base = QtGui.QIcon(str(ICON))
    if state not in BADGES:
        return base
    out = QtGui.QIcon()
    for size in SIZES:
        pixmap = base.pixmap(size, size)
        painter = QtGui.QPainter(pixmap)
        painter.setRenderHint(QtGui.QPainter.Antialiasing)
        r = max(3, size // 4)
        painter.setPen(QtGui.QPen(QtGui.QColor("white"), max(1, size // 16)))
        painter.setBrush(QtGui.QColor(BADGES[state]))
        painter.drawEllipse(QtCore.QRect(size - 2 * r - 1, size - 2 * r - 1, 2 * r, 2 * r))
        painter.end()
        out.addPixmap(pixmap)
    return out


class Tray(QtWidgets.QSystemTrayIcon):
    """The tray icon: left click searches; the menu has every action."""

    def __init__(self, hotkey_text: str, parent=None):
        super().__init__(icon(), parent)
        self.setObjectName("tray")
        menu = QtWidgets.QMenu()
        menu.setObjectName("trayMenu")
        # First, and shown only while the database is locked (encrypted, its key not at hand)
        self.unlock_action = menu.addAction("Mnemo is locked: Unlock…")
        self.unlock_action.setObjectName("actionUnlock")
        self.unlock_action.setVisible(False)
        self._unlock_line = menu.addSeparator()
        self._unlock_line.setVisible(False)
        self.search_action = menu.addAction(f"Search…\t{hotkey_text}")
        self.search_action.setObjectName("actionSearch")
        self.clipboard_action = menu.addAction("Remember clipboard")
        self.clipboard_action.setObjectName("actionRememberClipboard")
        self.manager_action = menu.addAction("Open manager")
        self.manager_action.setObjectName("actionManager")
        self.inbox_action = menu.addAction("Captured from agents…")
        self.inbox_action.setObjectName("actionInbox")
        self.settings_action = menu.addAction("Settings…")
        self.settings_action.setObjectName("actionSettings")
        # Shown once this device syncs (Settings → Sync): the last pass in its title; in it,
        # a pass now, the other devices and when each was last seen, what waits, problems
        self.sync_menu = menu.addMenu("Sync")
        self.sync_menu.setObjectName("syncMenu")
        self.sync_menu.menuAction().setVisible(False)
        self.sync_action = self.sync_menu.addAction("Sync now")
        self.sync_action.setObjectName("actionSync")
        self.sync_menu.addSeparator()
        self._sync_lines: list = []
        menu.addSeparator()
        self.quit_action = menu.addAction("Quit Mnemo")
        self.quit_action.setObjectName("actionQuit")
        self._menu = menu
        self.setContextMenu(menu)
        self.setToolTip("Mnemo")

    def set_hotkey_text(self, text: str, clipboard_text: str = "", selection: bool = False) -> None:
        """Show the current hotkeys next to Search… and Remember clipboard (Remember
        selection, when that is what it reads: `clipboard_source`)."""
        self.search_action.setText(f"Search…\t{text}")
        label = "Remember selection" if selection else "Remember clipboard"
        self.clipboard_action.setText(f"{label}\t{clipboard_text}" if clipboard_text else label)

    def set_state(self, state: str, tooltip: str) -> None:
        """ready | busy | unavailable | locked, and the tooltip line."""
        self.setIcon(icon(state))
        self.setToolTip(tooltip)
        self.unlock_action.setVisible(state == "locked")
        self._unlock_line.setVisible(state == "locked")

    def set_sync(self, line: str, details: list[str] | None = None) -> None:
        """The last sync pass (or why it could not run) and, in its menu, the devices and
        what waits; hidden while sync is off."""
        self.sync_menu.menuAction().setVisible(bool(line))
        self.sync_menu.setTitle(f"Sync: {line}" if line else "Sync")
        if details is None:
            return
        for action in self._sync_lines:
            self.sync_menu.removeAction(action)
        self._sync_lines = []
        for text in details:
            action = self.sync_menu.addAction(text)
            action.setEnabled(False)
            self._sync_lines.append(action)

    def on_left_click(self, slot) -> None:
        """Connect a plain left click (not the menu) to `slot`."""
        self.activated.connect(
            lambda reason: slot() if reason == QtWidgets.QSystemTrayIcon.Trigger else None
        )
