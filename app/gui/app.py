"""The desktop app: tray + background engine + hotkey + popup, and the windows on demand."""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import Callable

from app import mcp_greeting
from app.core import origin, paths
from app.core.engine import Engine
from app.core.memory import Change
from app.core.runner import embed_now
from app.core.secrets import describe, scan
from app.core.settings import Settings
from app.core.writer import Remembered, RememberResult
from app.gui import clipboard, desktop, display_server, hotkey, ipc, paste
from app.gui.hotkey.base import qt_platform
from app.gui.notifier import Notifier
from app.gui.popup import Popup
from app.gui.qt import QtCore, QtGui, QtWidgets
from app.gui.sync_tray import SyncTray
from app.gui.tray import ICON, Tray, icon
from app.gui.worker import INTERACTIVE, Worker

log = logging.getLogger(__name__)

PASTE_WAIT_S = 1.0  # how long a paste waits for the previous window to have the focus again


class MnemoApp(QtCore.QObject):
    """Owns the worker, the popup, the tray, the hotkey and the IPC server."""

    def __init__(
        self,
        qapp: QtWidgets.QApplication,
        settings: Settings | None = None,
        engine_factory: Callable[[Settings], Engine] | None = None,
    ):
        super().__init__(qapp)
        self.qapp = qapp
        # The one Settings of the process: the worker's engine owns it (all changes go
        # through `worker.apply_settings`); the GUI only reads it.
        self.settings = settings or Settings()
        factory = engine_factory or (lambda s: Engine(settings=s))
        self.worker = Worker(lambda: factory(self.settings), parent=self, start=False)
        self.popup = Popup(self.worker, self.settings)
        self.manager = None
        self.settings_dialog = None
        self._model_state = ("loading", "")
        self._backfill = (0, 0)
        self.sync_tray = SyncTray(self)  # what the tray says and tells of sync
        self._focus_before: int | None = None
        self.duplicate_choice = None  # the open near-duplicate question, if any
        self.secret_box = None  # the open secret question above the popup, if any
        self.secret_choice = None  # the open secret question of Remember clipboard, if any
        self._last_notification: tuple[str, str] | None = None

        self.tray: Tray | None = None
        if QtWidgets.QSystemTrayIcon.isSystemTrayAvailable():
            log.info("system tray available")
            self.tray = Tray(self.settings["hotkey"])
            self.tray.search_action.triggered.connect(self.show_popup)
            self.tray.clipboard_action.triggered.connect(self.remember_clipboard)
            self.tray.manager_action.triggered.connect(self.show_manager)
            self.tray.inbox_action.triggered.connect(self.show_inbox)
            self.tray.settings_action.triggered.connect(self.show_settings)
            self.tray.unlock_action.triggered.connect(self.unlock)
            self.tray.sync_action.triggered.connect(self.worker.runner.sync_soon)
            self.tray.sync_menu.aboutToShow.connect(self.sync_tray.ask_details)
            self.tray.quit_action.triggered.connect(self.quit)
            self.tray.on_left_click(self.show_popup)
            self.tray.show()
        else:
            self._say_no_tray_once()

        self.notifier = Notifier(str(ICON), self)  # the desktop's service, else the tray
        self.notifier.fallback.connect(self._balloon)
        # the last notification's action (label, callback), as the notifier was given it;
        # the tray's balloon runs it when clicked
        self.last_action: tuple[str, Callable[[], None]] | None = None
        if self.tray is not None:
            self.tray.messageClicked.connect(self._balloon_clicked)

        self.hotkey = None
        self.hotkey_refused: dict | None = None  # the last key asked for that was taken
        self.clipboard_hotkey = None  # Remember clipboard's key, when one is set
        self.clipboard_hotkey_error: str | None = None
        self._start_hotkey()
        if self.tray is not None:
            self._show_keys_in_tray()
        if self.tray is not None and not self.hotkey_error:
            self._welcome_once()

        self.server = ipc.Server(self.status, self)
        self.server.command.connect(self.run_command)
        self.listening = self.server.listen()

        self.popup.used.connect(
            lambda memory_id: self.worker.call(
                lambda e: e.mark_used([memory_id]), writes=Change("usage", (memory_id,))
            )
        )
        self.popup.openMemory.connect(self.show_manager)
        self.popup.openInbox.connect(self.show_inbox)
        self.popup.rememberText.connect(lambda text: self.remember_text(text, "manual"))
        self.popup.hidden.connect(self._restore_focus)
        self.popup.hidden.connect(self._hold_typing)
        self.popup.focused.connect(self._hand_over_typing)
        QtGui.QGuiApplication.instance().focusWindowChanged.connect(self._hold_typing)
        self.worker.modelState.connect(self._on_model_state)
        self.worker.backfillProgress.connect(self._on_backfill)
        self.worker.syncMoved.connect(self.sync_tray.on_synced)
        self.sync_tray.watch_folder()
        self.worker.settingsChanged.connect(lambda keys: self._settings_applied(keys.split(",")))
        # Settings saved by another process (`mnemo settings KEY VALUE`) apply at once: the
        # folder is watched, as the file is replaced (written beside it, then renamed).
        self._config_watch = QtCore.QFileSystemWatcher([str(paths.config_dir())], self)
        self._config_watch.directoryChanged.connect(lambda _: self.worker.refresh_settings())
        self.worker.start()  # only now: every signal above has its slot
        self.popup.prepare()  # the first opening as quick as the next
        desktop.install_launcher()
        mcp_greeting.refresh_later()  # after an upgrade: an agent's first start quick too

    # ---- commands ----------------------------------------------------------------------
    def run_command(self, command: str) -> None:
        """A command from the IPC socket (another `mnemo …`) or the command line."""
        {
            "popup": self.show_popup,
            "show": self.show_popup,
            "manager": self.show_manager,
            "remember-clipboard": self.remember_clipboard,
            "settings": self.show_settings,
            "inbox": self.show_inbox,
            "quit": self.quit,
        }.get(command, lambda: None)()

    def show_popup(self, activation_token: str = "") -> None:
        """Open the recall popup, remembering which window had focus."""
        if not self.popup.isVisible():
            # (Only on X11 does Mnemo give the focus back; on Wayland asking for an X server
            # held the first opening back 0.1-0.4 s under load: keys went to the window before)
            self._focus_before = hotkey.active_window() if qt_platform() == "xcb" else None
        self.popup.present(activation_token)

    def toggle_popup(self) -> None:
        """The hotkey: open the popup, or hide it when it is open (as launchers do); one
        left open behind another window (`popup_hide_on_blur` off) is brought back instead."""
        token = self.hotkey.take_activation_token()  # (Wayland: focused with it)
        if self.popup.isVisible() and (
            self.popup.has_focus() or self.settings["popup_hide_on_blur"]
        ):
            self.popup.hide()
        else:
            self.show_popup(token)

    def _hold_typing(self, *_args) -> None:
        """Tell the hotkey whether its next press opens the popup: then the keys typed after
        it are kept for the popup, not left to the window the user was in."""
        if self.hotkey is not None:
            opens = not self.popup.isVisible() or not (
                self.popup.has_focus() or self.settings["popup_hide_on_blur"]
            )
            self.hotkey.hold_typing(opens)

    def _hand_over_typing(self) -> None:
        if self.hotkey is not None:
            if self.hotkey.holding():  # keys reaching the popup now wait for those kept
                self.popup.key_gate.shut()
            self.hotkey.hand_over()

    def _restore_focus(self) -> None:
        wanted, self.popup.paste_wanted = self.popup.paste_wanted, False
        if self.popup.blurred:  # the user clicked another window: leave the focus there
            self._focus_before = None
            return
        target, self._focus_before = self._focus_before, None
        if target:
            hotkey.activate_window(target)
        if wanted:
            self._paste_into(target)

    def _paste_into(self, target: int | None) -> None:
        """Type the paste keys into `target` once it has the focus again (1 s at most);
        never into another window. Where that cannot work, say so: the memory is copied."""
        why_not = paste.why_not() or (None if target else "no window had the focus")
        if why_not:
            self.notify("Copied, not pasted", f"{why_not}; paste it yourself.")
            return
        deadline = time.monotonic() + PASTE_WAIT_S

        def attempt() -> None:
            if hotkey.active_window() != target:
                if time.monotonic() < deadline:
                    QtCore.QTimer.singleShot(20, attempt)
                else:
                    self.notify(
                        "Copied, not pasted",
                        "The window you were in did not take the focus back; paste it yourself.",
                    )
                return
            keys = paste.keys_for(
                paste.window_class(target),
                self.settings["paste_keys"],
                self.settings["paste_by_window"],
            )
            if keys == "Shift+Insert":  # terminals paste the PRIMARY selection with it
                board = QtGui.QGuiApplication.clipboard()
                if board.supportsSelection():
                    board.setText(board.text(), QtGui.QClipboard.Selection)
            try:
                paste.send(keys)
            except RuntimeError as exc:
                self.notify("Copied, not pasted", f"{exc}; paste it yourself.")

        attempt()

    def show_manager(self, memory_id: str | None = None) -> None:
        """Open (or raise) the memory manager, optionally on one memory."""
        from app.gui.manager import Manager

        if self.manager is None:
            self.manager = Manager(self.worker, self.settings)
        self.manager.show()
        self.manager.raise_()
        self.manager.activateWindow()
        if isinstance(memory_id, str):
            self.manager.select_memory(memory_id)

    def show_inbox(self) -> None:
        """Open the capture inbox (over the manager)."""
        self.show_manager()
        self.manager.show_inbox()

    def show_settings(self) -> None:
        """Open the settings dialog."""
        from app.gui.settings_dialog import SettingsDialog

        if self.settings_dialog is None:
            self.settings_dialog = SettingsDialog(self.settings, self.worker)
            self.settings_dialog.applied.connect(self._settings_applied)
            self.settings_dialog.sync.conflicts_wanted.connect(self.show_conflicts)
        if not self.settings_dialog.isVisible():
            self.settings_dialog.load()  # what the settings are now
        self.settings_dialog.show()
        self.settings_dialog.raise_()
        self.settings_dialog.activateWindow()

    def _hotkey_failed(self, message: str) -> None:
        self.hotkey_error = message
        self.notify("Global hotkey not available", message, action=self._settings_action)

    def _show_keys_in_tray(self) -> None:
        working = self.clipboard_hotkey is not None and not self.clipboard_hotkey_error
        self.tray.set_hotkey_text(
            self.settings["hotkey"],
            self.settings["clipboard_hotkey"] if working else "",
            selection=self.settings["clipboard_source"] == "selection",
        )

    def _clipboard_hotkey_failed(self, message: str) -> None:
        self.clipboard_hotkey_error = message
        self.notify("Remember-clipboard key not available", message)

    def _start_hotkey(self) -> None:
        """Choose the hotkey backend (the setting may force one) and grab the hotkeys."""
        if self.hotkey is not None:
            self.hotkey.unregister()
            self.hotkey.deleteLater()
        self.hotkey = self._hotkey_backend()
        self._hotkey_key = self.settings["hotkey"]  # the key the backend was asked to grab
        self.hotkey_error = self.hotkey.register(self._hotkey_key)
        self._hold_typing()
        if self.hotkey_error:
            self.notify(
                "Global hotkey not available", self.hotkey_error, action=self._settings_action
            )
        self._start_clipboard_hotkey()

    def _hotkey_backend(self, forced: str | None = None):
        made = hotkey.backend(self, forced=forced or self.settings["hotkey_backend"])
        made.activated.connect(self.toggle_popup)
        made.typed.connect(lambda keys: self.popup.type_keys(json.loads(keys)))
        made.failed.connect(self._hotkey_failed)
        return made

    def _change_hotkey(self) -> None:
        """Take the new hotkey only once it is grabbed: a key another program holds (the
        window manager's Alt+Space) is refused, the old key keeps working and the setting
        goes back to it (`mnemo settings hotkey` waits for this answer and says so)."""
        old, new = self._hotkey_key, self.settings["hotkey"]
        trial = self._hotkey_backend(self.hotkey.key)
        error = trial.register(new)
        if error is None or self.hotkey_error:  # taken, or the old key did not work either
            self.hotkey.unregister()
            self.hotkey.deleteLater()
            self.hotkey, self.hotkey_error, self.hotkey_refused = trial, error, None
            self._hotkey_key = new
            self._hold_typing()
            if error:
                self.notify("Global hotkey not available", error)
            return
        trial.unregister()
        trial.deleteLater()
        self.hotkey_refused = {"key": new, "error": error}
        self.notify(
            "Hotkey not changed",
            f"{error}. {old} still opens Mnemo.",
            action=self._settings_action,
        )
        self.worker.apply_settings({"hotkey": old})

    def _start_clipboard_hotkey(self) -> None:
        """The second global key, Remember clipboard (none when its setting is empty)."""
        if self.clipboard_hotkey is not None:
            self.clipboard_hotkey.unregister()
            self.clipboard_hotkey.deleteLater()
            self.clipboard_hotkey = None
        self.clipboard_hotkey_error = None
        sequence = self.settings["clipboard_hotkey"].strip()
        if not sequence or self.hotkey.key == "none":
            return  # no key wanted, or the user binds `mnemo remember-clipboard` by hand
        if sequence == self.settings["hotkey"]:
            self.clipboard_hotkey_error = (
                f"{sequence} already opens the search; choose another key to remember the clipboard"
            )
        else:
            self.clipboard_hotkey = hotkey.backend(
                self, forced=self.hotkey.key, shortcut=hotkey.REMEMBER
            )
            self.clipboard_hotkey.activated.connect(self.remember_clipboard)
            self.clipboard_hotkey.failed.connect(self._clipboard_hotkey_failed)
            self.clipboard_hotkey_error = self.clipboard_hotkey.register(sequence)
        if self.clipboard_hotkey_error:
            self.notify("Remember-clipboard key not available", self.clipboard_hotkey_error)

    def _settings_applied(self, changed: list[str]) -> None:
        if "hotkey_backend" in changed:
            self._start_hotkey()
        else:
            if "hotkey" in changed and self.settings["hotkey"] != self._hotkey_key:
                self._change_hotkey()
            if "hotkey" in changed or "clipboard_hotkey" in changed:
                self._start_clipboard_hotkey()
        shown = ("hotkey", "clipboard_hotkey", "clipboard_source")
        if any(key in changed for key in shown) and self.tray:
            self._show_keys_in_tray()
        if "start_at_login" in changed:
            desktop.set_autostart(self.settings["start_at_login"])
        if "categories" in changed and self.manager is not None:
            self.manager.set_categories(self.settings["categories"])
        # A model change was already applied by the engine (the worker reports its state).

    # ---- remember clipboard ------------------------------------------------------------
    def remember_clipboard(self) -> None:
        """Store the clipboard's text (or the primary selection's, as the setting says),
        unless it is secret, empty, binary or huge."""
        board = QtGui.QGuiApplication.clipboard()
        if self.settings["clipboard_source"] == "selection" and board.supportsSelection():
            content = clipboard.read(board.mimeData(QtGui.QClipboard.Selection), "selection")
        else:
            content = clipboard.read(board.mimeData())
        if content.refusal:
            self.notify("Nothing remembered", content.refusal)
            return
        self.remember_text(content.text, "clipboard")

    def remember_text(
        self,
        text: str,
        source: str,
        merge: bool = False,
        force: bool = False,
        secrets: str = "refuse",
    ) -> None:
        """Store `text` as the popup and Remember clipboard do: a secret in it is asked
        about first (redact, store as it is, or not at all), a near-duplicate offers a merge,
        and a notification says what was kept."""
        found = scan(text) if secrets == "refuse" else []
        if found and not self.popup.isVisible():
            # Asked in a window that takes no focus: the user may be typing elsewhere, and
            # a key typed there must never answer (a "y" used to store the copy).
            from app.gui.duplicate_choice import quiet_secret_question

            self.notifier.withdraw()  # (they stay on top of every window)
            self.secret_choice = quiet_secret_question(  # (kept while it is open; tests)
                describe(found),
                lambda: self.remember_text(text, source, merge, force, secrets="redact"),
                lambda: self.notify("Nothing remembered", "The text held a secret."),
            )
            self.secret_choice.chosen.connect(lambda _: setattr(self, "secret_choice", None))
            return
        if found:
            if not self._ask_to_redact(describe(found)):  # asked above the open popup
                self.notify("Nothing remembered", "The text held a secret.")
                # What was typed goes back in the box, to be edited (never lost).
                self.popup.give_back(text, "Nothing remembered: the text held a secret.")
                return
            secrets = "redact"
        # (no title: the engine makes it from the text it stores, the secret redacted)
        # A long text is stored at once and embedded slice by slice in the background (a
        # search never waits for it); only a short one is checked for near-duplicates.
        inline = embed_now(len(text))
        self.worker.call(
            lambda e: e.remember(
                text,
                source=source,
                origin=origin.person("clipboard" if source == "clipboard" else "popup"),
                merge=merge,
                force=force,
                secrets=secrets,
                embed=inline,
            ),
            lambda result: self._remembered(result, text, source, secrets),
            lambda message: self.notify("Nothing remembered", message, logged=_kind(message)),
            INTERACTIVE,
            writes=True,
        )

    def _ask_to_redact(self, what: str) -> bool:
        """Whether to store a redacted copy: asked above the popup when it is open (it stays
        on top of every other window), No by default and on Esc."""
        from app.gui.duplicate_choice import secret_question

        self.secret_box = secret_question(what, self.popup if self.popup.isVisible() else None)
        try:  # (kept for tests and for the popup not to hide under it)
            return self.secret_box.exec() == QtWidgets.QMessageBox.Yes
        finally:
            self.secret_box = None

    def _remembered(self, result: RememberResult, text: str, source: str, secrets: str) -> None:
        memory = result.memory
        if result.status is Remembered.SIMILAR:
            from app.gui.duplicate_choice import DuplicateChoice

            choice = DuplicateChoice(memory.display_title, result.similarity or 0.0)

            def chosen(key: str) -> None:
                self.duplicate_choice = None
                if key in ("merge", "keep"):
                    self.remember_text(
                        text, source, merge=key == "merge", force=key == "keep", secrets=secrets
                    )

            choice.chosen.connect(chosen)
            self.duplicate_choice = choice  # kept while it is open (and for tests)
            self.notifier.withdraw()  # (they stay on top of every window)
            choice.present()
            return
        verb = {
            Remembered.STORED: "Remembered",
            Remembered.OBSERVED: "Already known",
            Remembered.RESTORED: "Restored from the trash",
            Remembered.MERGED: "Merged",
        }[result.status]
        notice = result.notice or ""
        if result.status is Remembered.STORED and not embed_now(len(text)):  # embedded later
            notice = "; ".join(filter(None, (notice, "search by meaning finds it once embedded")))
        merged = result.status is Remembered.MERGED  # (undone as a merge in the manager is)
        self.notify(
            verb,
            memory.display_title + (f"\n{notice}" if notice else ""),
            logged=f"memory {memory.id}" + (f"; {notice}" if notice else ""),
            action=("Undo merge", lambda: self.undo_merge(memory.id))
            if merged
            else ("Review in the inbox", self.show_inbox)
            if result.proposal
            else ("Open in Mnemo", lambda: self.show_manager(memory.id)),
        )
        if self.popup.isVisible():
            self.popup.report(f"{verb}: {memory.display_title}")

    def undo_merge(self, merged_id: str) -> None:
        """Undo a merge chosen in the near-duplicate question: both memories back on their
        own (the new text was kept as a source of the merge: `Writer._merge`)."""
        self.worker.call(
            lambda e: e.unmerge(merged_id),
            lambda ids: self.notify("Merge undone", f"{len(ids)} memories are back on their own."),
            lambda message: self.notify("Merge not undone", message, logged=_kind(message)),
            INTERACTIVE,
            writes=True,
        )

    # ---- status ------------------------------------------------------------------------
    def _on_model_state(self, state: str, detail: str) -> None:
        log.info("model %s %s", state, detail)
        self._model_state = (state, detail)
        self._refresh_tray()
        if state == "unavailable":
            self.notify(
                "Search by meaning is unavailable", f"{detail}\nKeyword search still works."
            )
        if state == "locked":
            self.notify(  # (the detail, for a terminal, is in the tooltip and the log)
                "Mnemo is locked",
                "Your memories are encrypted and this session does not have the key.\n"
                "Choose Unlock… in the tray menu.",
            )

    def unlock(self) -> None:
        """The tray's Unlock…: ask the passphrase (asked once: this process keeps it), or
        say how to unlock a keyring; then the runner opens the database again."""
        if Engine.sealed_by_passphrase():
            text, ok = QtWidgets.QInputDialog.getText(
                None,
                "Unlock Mnemo",
                "The passphrase of your encrypted memories:",
                QtWidgets.QLineEdit.Password,
            )
            if not ok or not text:
                return
            Engine.give_passphrase(text)
        else:
            QtWidgets.QMessageBox.information(
                None,
                "Unlock Mnemo",
                f"{self._model_state[1]}\n\nUnlock your keyring (log in to the desktop), then "
                "press OK; on a new machine, run `mnemo unlock` with the recovery key first.",
            )
        self.worker.runner.retry_open()

    def _on_backfill(self, done: int, total: int) -> None:
        self._backfill = (done, total)
        self._refresh_tray()

    def show_sync_settings(self) -> None:
        """Settings on its Sync page."""
        self.show_settings()
        self.settings_dialog.tabs.setCurrentWidget(self.settings_dialog.sync)

    def show_conflicts(self) -> None:
        """The manager's Conflicts view (memories edited on two devices apart)."""
        self.show_manager()
        self.manager.show_conflicts()

    def _refresh_tray(self) -> None:
        if self.tray is None:
            return
        state, detail = self._model_state
        done, total = self._backfill
        if state == "locked":
            state, line = "locked", f"Mnemo — locked: {detail}"
        elif state == "unavailable":
            state, line = "unavailable", f"Mnemo — meaning unavailable: {detail}"
        elif total:
            state, line = "busy", f"Mnemo — embedding {done}/{total} memories"
        elif state == "loading":
            state, line = "busy", "Mnemo — loading the model"
        else:
            state, line = "ready", f"Mnemo — {detail}"
        sync = self.sync_tray.line
        self.tray.set_state(state, f"{line}\n{sync}" if sync else line)
        self.tray.set_sync(sync)

    def status(self) -> dict:
        """What `mnemo status` reports about the running app."""
        state, detail = self._model_state
        return {
            "pid": os.getpid(),  # `kill -USR1` it for every thread's stack (README)
            "hotkey": self._hotkey_key,  # the key asked of the backend (the setting may be newer)
            "hotkey_backend": self.hotkey.name,
            "hotkey_error": self.hotkey_error,
            "hotkey_refused": self.hotkey_refused,
            "clipboard_hotkey": self.settings["clipboard_hotkey"],
            "clipboard_hotkey_error": self.clipboard_hotkey_error,
            "clipboard_source": self.settings["clipboard_source"],
            "popup_hide_on_blur": self.settings["popup_hide_on_blur"],
            "popup": self.popup.state(),
            "model": state,
            "model_detail": detail,
            "model_id": self.worker.model_id,
            "tray": self.tray is not None,
            "backfill": list(self._backfill),
            "sync": self.sync_tray.line,  # the last sync pass, or why it could not run
            "sync_details": list(self.sync_tray.details),
            "last_notification": list(self._last_notification or ()),
            "notifications": self.notifier.via or "none yet",
        }

    def notify(
        self,
        title: str,
        text: str,
        logged: str | None = None,
        action: tuple[str, Callable[[], None]] | None = None,
    ) -> None:
        """A desktop notification, logged as well: `logged` in place of `text` when the text
        is the user's (a memory's title stays out of the log). `action` (label, callback)
        runs when the notification is clicked or its action chosen."""
        log.info("%s: %s", title, text if logged is None else logged)
        self._last_notification = (title, text)
        self.last_action = action
        self.notifier.show(title, text, action)

    def tell_bug(self, title: str, text: str) -> None:
        """`crash`'s notifier (called on any thread): the notification on the GUI thread.
        The log keeps the exception's type ("KeyError: …" at the start of `text`), not its
        message, which may quote a memory (`crash` logged the traceback already)."""
        logged = text.split("\n", 1)[0].split(":", 1)[0]
        QtCore.QTimer.singleShot(0, self, lambda: self.notify(title, text, logged=logged))

    @property
    def _settings_action(self) -> tuple[str, Callable[[], None]]:
        return ("Settings", self.show_settings)

    def _balloon(self, title: str, text: str) -> None:
        """No notification service answered: the tray's balloon says it instead."""
        if self.tray is not None:
            self.tray.showMessage(title, text, icon(), 5000)

    def _balloon_clicked(self) -> None:
        action, self.last_action = self.last_action, None
        if action is not None:
            action[1]()

    def _welcome_once(self) -> None:
        """On the very first start, say that Mnemo runs (it only shows a tray icon) and
        which key opens it."""
        if not _first_time(".welcomed"):
            return
        remember = ""
        if self.clipboard_hotkey is not None and not self.clipboard_hotkey_error:
            remember = f"{self.settings['clipboard_hotkey']} remembers what you copied; "
        self.notify(
            "Mnemo is running",
            f"Press {self.settings['hotkey']} anywhere to search your memories; {remember}"
            "the tray icon has the rest.",
        )

    def _say_no_tray_once(self) -> None:
        if not _first_time(".told-no-tray"):
            return
        box = QtWidgets.QMessageBox(
            QtWidgets.QMessageBox.Information,
            "Mnemo is running",
            "No system tray was found (on GNOME, install the AppIndicator extension).\n\n"
            f"Mnemo keeps running: press {self.settings['hotkey']} to search, or use the "
            "launcher's actions, or run `mnemo popup`, `mnemo manager`, "
            "`mnemo remember-clipboard`, `mnemo settings --window`, `mnemo quit`.",
        )
        box.setAttribute(QtCore.Qt.WA_DeleteOnClose)
        box.show()

    def quit(self) -> None:
        """Finish the current batch, close the database, leave no process behind."""
        self.popup.hide()
        self.hotkey.unregister()
        if self.clipboard_hotkey is not None:
            self.clipboard_hotkey.unregister()
        self.server.close()
        self.notifier.close()
        if self.tray:
            self.tray.hide()
        self.worker.stop()
        self.qapp.quit()


def _first_time(name: str) -> bool:
    """True the first time this is asked for `name` (a marker file in the config folder)."""
    marker = paths.config_dir() / name
    if marker.exists():
        return False
    try:
        os.close(paths.private_file(marker))
    except OSError as exc:  # a read-only home: said again next time, no harm
        log.info("cannot write %s: %s", marker, exc)
    return True


def _kind(failure: str) -> str:
    """What the log keeps of a failure told to the user: its type, not its message (which
    may quote the text that failed; logs hold no memory content)."""
    error = getattr(failure, "error", None)
    return type(error).__name__ if error is not None else f"{len(failure)} characters"


def run(command: str | None = None) -> int:
    """Start the app, or hand `command` to the instance that is already running."""
    import contextlib
    import signal
    import socket

    from app.core import crash

    # Talking to a running instance needs no display: no QApplication before it is sure
    # that this process starts the app (Qt aborts the process without a display).
    if command == "status":
        state = ipc.status()
        if state:
            print(json.dumps(state, indent=2))
        elif pid := crash.running_pid():  # alive, yet its event loop does not answer
            print(
                f"mnemo: the app (pid {pid}) runs but does not answer; `kill -USR1 {pid}` "
                f"writes its threads' stacks to {crash.stacks_path()}"
            )
        else:
            print("mnemo: not running")
        return 0 if state else 1
    if ipc.send(command or "popup"):
        return 0  # the running instance does it
    if command == "quit":
        print("mnemo: not running", file=sys.stderr)
        return 0
    if problem := display_server.problem():
        print(f"mnemo: error: {problem}", file=sys.stderr)
        return 1
    QtWidgets.QApplication.setApplicationName("Mnemo")
    QtWidgets.QApplication.setDesktopFileName("mnemo")
    qapp = QtWidgets.QApplication.instance() or QtWidgets.QApplication(["mnemo"])
    notice = crash.previous_crash()
    crash.install("app")
    if notice:
        log.warning("%s", notice)
    qapp.setQuitOnLastWindowClosed(False)
    qapp.setWindowIcon(icon())
    app = MnemoApp(qapp)
    # The hooks may run on any thread; the notification is shown on the GUI thread.
    crash.set_notifier(app.tell_bug)
    if notice:
        QtCore.QTimer.singleShot(1500, lambda: app.notify("Mnemo restarted", notice))

    # SIGTERM (logout, `kill`) and SIGINT (Ctrl+C) quit through the event loop, as `mnemo quit`
    # does. Qt waits in C++, where Python cannot run its handlers: the C-level handler writes
    # to a socket Qt watches, and reading it lets Python run them (qutebrowser's
    # SignalHandler).
    wake_read, wake_write = socket.socketpair()
    wake_read.setblocking(False)
    wake_write.setblocking(False)
    previous_fd = signal.set_wakeup_fd(wake_write.fileno())
    wakeup = QtCore.QSocketNotifier(wake_read.fileno(), QtCore.QSocketNotifier.Type.Read, app)

    def drain(*_) -> None:
        with contextlib.suppress(OSError):
            wake_read.recv(512)

    def stop(signum: int, _frame) -> None:
        log.info("%s received: quitting", signal.Signals(signum).name)
        for sig in quitting:
            signal.signal(sig, signal.SIG_DFL)  # a second one ends the process at once
        QtCore.QTimer.singleShot(0, app.quit)

    wakeup.activated.connect(drain)
    quitting = (signal.SIGTERM, signal.SIGINT)
    previous = {sig: signal.signal(sig, stop) for sig in quitting}
    if command:
        QtCore.QTimer.singleShot(0, lambda: app.run_command(command))
    code = qapp.exec()
    for sig, handler in previous.items():
        signal.signal(sig, handler)
    signal.set_wakeup_fd(previous_fd)
    wakeup.setEnabled(False)
    wake_read.close()
    wake_write.close()
    crash.clean_exit()
    return code
