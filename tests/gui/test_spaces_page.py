"""Settings → Spaces (issue 45): real widgets on real engine workers, two Mnemo homes (two
databases, two device keys) on this machine sharing one space folder, as Syncthing would
carry it. The page shows this device's id as text and as its QR code, creates a space
through its dialog, invites the other home's device and joins from there, removes a member
after asking, and says a refusal in one line with nothing changed."""

from __future__ import annotations

import pytest
import segno

from app.core.engine import Engine
from app.core.settings import Settings
from app.gui.qt import QtCore, QtGui, QtWidgets
from app.gui.settings_dialog import SettingsDialog
from app.gui.spaces_page import SpacesPage
from app.gui.worker import Worker
from tests.gui.conftest import settle


def _worker(tmp_path, word_model, name: str) -> Worker:
    return Worker(
        lambda: Engine(Settings(tmp_path / f"{name}.json"), tmp_path / f"{name}.db", word_model)
    )


@pytest.fixture
def alice(qapp, tmp_path, word_model):
    worker = _worker(tmp_path, word_model, "alice")
    yield worker
    worker.stop()


@pytest.fixture
def bob(qapp, tmp_path, word_model):
    worker = _worker(tmp_path, word_model, "bob")
    yield worker
    worker.stop()


def ask(qtbot, worker, fn):
    """What `fn(engine)` answers on that worker's engine thread."""
    got = []
    worker.call(fn, got.append)
    qtbot.waitUntil(lambda: bool(got), timeout=10_000)
    return got[0]


def page_of(qtbot, worker) -> SpacesPage:
    page = SpacesPage(worker)
    qtbot.addWidget(page)
    qtbot.waitUntil(lambda: bool(page.device_id.text()), timeout=10_000)
    return page


def rows(tree: QtWidgets.QTreeWidget) -> list[list[str]]:
    """Every row of a tree, children after their parent, as its texts."""
    out = []

    def walk(item):
        out.append([item.text(c) for c in range(tree.columnCount())])
        for i in range(item.childCount()):
            walk(item.child(i))

    for i in range(tree.topLevelItemCount()):
        walk(tree.topLevelItem(i))
    return out


def answer_when_asked(button, seen: list) -> None:
    """Press `button` (Yes, No) in the question the page is about to ask, noting its text."""

    def answer():
        box = QtWidgets.QApplication.activeModalWidget()
        if not isinstance(box, QtWidgets.QMessageBox):
            QtCore.QTimer.singleShot(50, answer)
            return
        seen.append(f"{box.windowTitle()}\n{box.text()}")
        box.button(button).click()

    QtCore.QTimer.singleShot(50, answer)


def create_through_dialog(qtbot, page: SpacesPage, folder, person: str = "alice") -> None:
    dialog = page.ask_create()
    assert not dialog.ok_button.isEnabled()  # (nothing typed yet)
    dialog.name.setText("team")
    dialog.folder.setText(str(folder))
    dialog.person.setText(person)
    with qtbot.waitSignal(page.said, timeout=10_000) as said:
        dialog.ok_button.click()
    assert said.args[0].startswith("Space team made in"), said.args[0]
    qtbot.waitUntil(lambda: page.list.topLevelItemCount() == 1, timeout=10_000)


def team(qtbot, alice_page: SpacesPage, bob_page: SpacesPage, folder) -> str:
    """Alice creates `team`, invites Bob's device through the page, Bob joins through his;
    the invitation made."""
    create_through_dialog(qtbot, alice_page, folder)
    dialog = alice_page.ask_invite()
    assert dialog is not None and not dialog.ok_button.isEnabled()
    dialog.device.setText(bob_page.device_id.text())
    dialog.person.setText("bob")
    with qtbot.waitSignal(alice_page.said, timeout=10_000) as said:
        dialog.ok_button.click()
    assert said.args[0].startswith("Invited bob to team"), said.args[0]
    invitation = alice_page.invitation.invitation
    # Bob got it as a file: the Join window loads it
    given = folder.parent.parent / "invitation.txt"
    given.write_text(invitation + "\n")
    joining = bob_page.ask_join()
    joining.load(given)
    assert joining.invitation.toPlainText() == invitation
    joining.folder.setText(str(folder))
    with qtbot.waitSignal(bob_page.said, timeout=10_000) as said:
        joining.ok_button.click()
    assert said.args[0].startswith("Joined team through"), said.args[0]
    qtbot.waitUntil(lambda: bob_page.list.topLevelItemCount() == 1, timeout=10_000)
    return invitation


def test_the_page_shows_this_devices_id_as_text_and_as_its_qr_code(qtbot, alice):
    page = page_of(qtbot, alice)
    device = ask(qtbot, alice, lambda e: e.spaces.id())
    assert page.device_id.text() == device and page.device_id.isReadOnly()
    # THEN the QR drawn is, module for module, the code segno makes of the id (with its
    # quiet zone): square, every module the same number of pixels
    image = page.qr.pixmap().toImage()
    wanted = [[bool(m) for m in row] for row in segno.make(device).matrix_iter(border=4)]
    assert not image.isNull() and image.width() == image.height()
    assert image.width() % len(wanted) == 0 and image.width() >= 2 * len(wanted)
    scale = image.width() // len(wanted)
    drawn = [
        [
            image.pixelColor(x * scale + scale // 2, y * scale + scale // 2).lightness() < 128
            for x in range(len(wanted))
        ]
        for y in range(len(wanted))
    ]
    assert drawn == wanted and any(any(row) for row in drawn)
    # the Copy button puts the id on the clipboard
    page.findChild(QtWidgets.QPushButton, "spacesCopyId").click()
    assert QtGui.QGuiApplication.clipboard().text() == device
    # with no space yet the page says how to start, and only Create and Join apply
    assert "in no space yet" in page.details.text()
    assert page.create_button.isEnabled() and page.join_button.isEnabled()
    assert not page.invite_button.isEnabled() and not page.remove_button.isEnabled()


def test_creating_a_space_through_the_dialog_makes_it(qtbot, alice, tmp_path):
    page = page_of(qtbot, alice)
    folder = tmp_path / "shared" / "team"
    create_through_dialog(qtbot, page, folder)
    listed = ask(qtbot, alice, lambda e: e.spaces.list())
    assert [(s["name"], s["folder"]) for s in listed] == [("team", str(folder))]
    assert (folder / "mnemo-space.json").is_file()
    assert rows(page.list) == [["team", str(folder), "1 person (1 device)", "member"]]
    device = page.device_id.text()
    assert rows(page.members) == [["alice", ""], ["this device", device]]
    assert "Key: epoch 1" in page.details.text()
    # this device's own row cannot be removed from here; inviting applies now
    page.members.setCurrentItem(page.members.topLevelItem(0).child(0))
    assert not page.remove_button.isEnabled() and page.invite_button.isEnabled()


def test_an_invitation_made_and_joined_through_the_pages_makes_both_list_each_other(
    qtbot, alice, bob, tmp_path
):
    # GIVEN two homes on this machine and one folder path both use (what Syncthing shares)
    alice_page, bob_page = page_of(qtbot, alice), page_of(qtbot, bob)
    folder = tmp_path / "shared" / "team"
    invitation = team(qtbot, alice_page, bob_page, folder)
    # THEN the invitation shown says what it allows, is there to copy and as a QR code
    shown = alice_page.invitation
    assert shown.text.toPlainText() == invitation and invitation.startswith("mnemo-invite:")
    about = shown.findChild(QtWidgets.QLabel, "invitationAbout").text()
    assert "valid 7 days" in about and "only their device can open it" in about
    qr = shown.qr.pixmap()
    assert not qr.isNull() and qr.width() == qr.height() > 100
    shown.findChild(QtWidgets.QPushButton, "invitationCopy").click()
    assert QtGui.QGuiApplication.clipboard().text() == invitation
    # and both homes list each other: alice and bob, each marking its own device
    alice_id, bob_id = alice_page.device_id.text(), bob_page.device_id.text()
    assert rows(bob_page.list) == [["team", str(folder), "2 people (2 devices)", "member"]]
    assert rows(bob_page.members) == [
        ["alice", ""],
        ["a device", alice_id],
        ["bob", ""],
        ["this device", bob_id],
    ]
    joined = [["bob", ""], ["a device", bob_id]]  # (not "invited, not joined yet" any more)
    qtbot.waitUntil(lambda: alice_page.refresh() or rows(alice_page.members)[2:] == joined)
    for worker in (alice, bob):
        state = ask(qtbot, worker, lambda e: e.spaces.members("team"))
        assert [p["person"] for p in state["persons"]] == ["alice", "bob"] and state["member"]


def test_removing_a_member_asks_first_then_lists_them_as_removed(qtbot, alice, bob, tmp_path):
    alice_page, bob_page = page_of(qtbot, alice), page_of(qtbot, bob)
    team(qtbot, alice_page, bob_page, tmp_path / "shared" / "team")
    alice_page.refresh()
    qtbot.waitUntil(lambda: len(rows(alice_page.members)) == 4, timeout=10_000)
    bob_row = alice_page.members.topLevelItem(1)
    assert bob_row.text(0) == "bob"
    alice_page.members.setCurrentItem(bob_row)
    assert alice_page.remove_button.isEnabled()
    # WHEN the question is answered No, nothing is removed
    asked: list[str] = []
    answer_when_asked(QtWidgets.QMessageBox.No, asked)
    alice_page.remove_button.click()
    settle(qtbot, alice)
    assert len(asked) == 1 and "Remove bob from team?" in asked[0]
    assert "key changes" in asked[0] and "stays theirs" in asked[0]
    assert not ask(qtbot, alice, lambda e: e.spaces.members("team"))["removed"]
    # WHEN it is answered Yes, bob is listed as removed, and the key moved on
    answer_when_asked(QtWidgets.QMessageBox.Yes, asked)
    with qtbot.waitSignal(alice_page.said, timeout=10_000) as said:
        alice_page.remove_button.click()
    assert said.args[0] == "Removed bob from team; the space's key was changed."
    qtbot.waitUntil(
        lambda: any(r[0] == "bob: removed by alice" for r in rows(alice_page.members)),
        timeout=10_000,
    )
    assert [r[0] for r in rows(alice_page.members)] == [
        "alice",
        "this device",
        "bob: removed by alice",
    ]
    assert "Key: epoch 2" in alice_page.details.text()
    # and on bob's device the page says it is no longer a member
    bob_page.refresh()
    qtbot.waitUntil(lambda: rows(bob_page.list)[0][3] == "not a member", timeout=10_000)
    assert not bob_page.invite_button.isEnabled()
    assert "not a member any more (alice removed it)" in bob_page.details.text()


def test_leaving_asks_first_and_forgets_the_space(qtbot, alice, tmp_path):
    page = page_of(qtbot, alice)
    create_through_dialog(qtbot, page, tmp_path / "shared" / "team")
    asked: list[str] = []
    answer_when_asked(QtWidgets.QMessageBox.Yes, asked)
    with qtbot.waitSignal(page.said, timeout=10_000):
        page.leave_button.click()
    assert "Leave team?" in asked[0] and "folder is left as it is" in asked[0]
    qtbot.waitUntil(lambda: page.list.topLevelItemCount() == 0, timeout=10_000)
    assert ask(qtbot, alice, lambda e: e.spaces.list()) == []
    assert (tmp_path / "shared" / "team" / "mnemo-space.json").is_file()  # (left as it was)


def _said_one_line(page: SpacesPage, said) -> str:
    line = said.args[0]
    assert line == page.status.text() and "\n" not in line and "Traceback" not in line
    return line


def test_a_malformed_invitation_is_one_line_and_changes_nothing(qtbot, alice, tmp_path):
    page = page_of(qtbot, alice)
    folder = tmp_path / "shared" / "team"
    dialog = page.ask_join()
    dialog.invitation.setPlainText("hello, this is not an invitation")
    dialog.folder.setText(str(folder))
    with qtbot.waitSignal(page.said, timeout=10_000) as said:
        dialog.ok_button.click()
    assert "Cannot use this invitation: not a Mnemo invitation" in _said_one_line(page, said)
    assert "nothing was written" in said.args[0]
    settle(qtbot, alice)
    assert ask(qtbot, alice, lambda e: e.spaces.list()) == [] and not folder.exists()
    assert page.list.topLevelItemCount() == 0


def test_an_invitation_for_another_device_is_refused_in_one_line(
    qtbot, alice, bob, tmp_path, word_model
):
    # GIVEN alice invited bob's device; WHEN bob pastes it cut short, or carol pastes it
    alice_page, bob_page = page_of(qtbot, alice), page_of(qtbot, bob)
    create_through_dialog(qtbot, alice_page, tmp_path / "shared" / "team")
    with qtbot.waitSignal(alice_page.said, timeout=10_000):
        alice_page.invite("team", bob_page.device_id.text(), "bob")
    invitation = alice_page.invitation.invitation
    with qtbot.waitSignal(bob_page.said, timeout=10_000) as said:
        bob_page.join(invitation[:-30], str(tmp_path / "bob-team"))  # (cut short)
    assert "invitation" in _said_one_line(bob_page, said) and "nothing was written" in said.args[0]
    assert ask(qtbot, bob, lambda e: e.spaces.list()) == [] and not (tmp_path / "bob-team").exists()
    other = tmp_path / "other"
    carol = _worker(tmp_path, word_model, "carol")
    try:
        carol_page = page_of(qtbot, carol)
        with qtbot.waitSignal(carol_page.said, timeout=10_000) as said:
            carol_page.join(invitation, str(other))
        assert "not for this device" in _said_one_line(carol_page, said)
        assert ask(qtbot, carol, lambda e: e.spaces.list()) == [] and not other.exists()
    finally:
        carol.stop()


def test_an_unwritable_folder_is_one_line_and_changes_nothing(qtbot, alice, tmp_path):
    page = page_of(qtbot, alice)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with qtbot.waitSignal(page.said, timeout=10_000) as said:
        page.create("team", str(blocker / "team"), "alice")
    assert "Cannot create the folder" in _said_one_line(page, said)
    with qtbot.waitSignal(page.said, timeout=10_000) as said:
        page.create("team", str(blocker), "alice")  # (a file, not a folder)
    assert "is a file, not a folder" in _said_one_line(page, said)
    settle(qtbot, alice)
    assert ask(qtbot, alice, lambda e: e.spaces.list()) == []
    assert page.list.topLevelItemCount() == 0 and blocker.read_text() == "not a folder"


def test_the_settings_dialog_has_the_spaces_page(qtbot, alice):
    dialog = SettingsDialog(Settings(), alice)
    qtbot.addWidget(dialog)
    tabs = [dialog.tabs.tabText(i) for i in range(dialog.tabs.count())]
    assert tabs[-1] == "Spaces" and dialog.tabs.widget(len(tabs) - 1) is dialog.spaces
    # it fits where the other pages do: the dialog is no taller for it
    others = max(dialog.tabs.widget(i).minimumSizeHint().height() for i in range(len(tabs) - 1))
    assert dialog.spaces.minimumSizeHint().height() <= others
    qtbot.waitUntil(lambda: bool(dialog.spaces.device_id.text()), timeout=10_000)


def test_a_device_id_that_is_not_one_is_refused_and_nobody_is_admitted(qtbot, alice, tmp_path):
    page = page_of(qtbot, alice)
    create_through_dialog(qtbot, page, tmp_path / "shared" / "team")
    dialog = page.ask_invite()
    dialog.device.setText("definitely-not-a-device-id")
    with qtbot.waitSignal(page.said, timeout=10_000) as said:
        dialog.ok_button.click()
    assert _said_one_line(page, said).startswith("Not a device id")
    assert page.invitation is None
    state = ask(qtbot, alice, lambda e: e.spaces.members("team"))
    assert [p["person"] for p in state["persons"]] == ["alice"]


def test_a_device_under_another_members_name_is_refused_in_one_line(qtbot, alice, bob, tmp_path):
    from app.core.space.keys import DeviceKey

    alice_page, bob_page = page_of(qtbot, alice), page_of(qtbot, bob)
    team(qtbot, alice_page, bob_page, tmp_path / "shared" / "team")
    # WHEN alice invites a device as bob's (the dialog goes through the engine's check)
    dialog = alice_page.ask_invite()
    dialog.device.setText(DeviceKey.new().public)
    dialog.person.setText("bob")
    with qtbot.waitSignal(alice_page.said, timeout=10_000) as said:
        dialog.ok_button.click()
    # THEN it is refused, one line, and nobody is admitted
    assert _said_one_line(alice_page, said).startswith(
        "Another member is named bob; a device of bob's must invite it"
    )
    state = ask(qtbot, alice, lambda e: e.spaces.members("team"))
    shown = [(p["person"], len(p["devices"])) for p in state["persons"]]
    assert shown == [("alice", 1), ("bob", 1)]


def test_one_device_of_a_person_can_be_removed_by_its_row(qtbot, alice, bob, tmp_path, word_model):
    # GIVEN bob in the space on two devices (his second one a third home)
    alice_page, bob_page = page_of(qtbot, alice), page_of(qtbot, bob)
    folder = tmp_path / "shared" / "team"
    team(qtbot, alice_page, bob_page, folder)
    second = _worker(tmp_path, word_model, "bob-desktop")
    try:
        second_page = page_of(qtbot, second)
        with qtbot.waitSignal(bob_page.said, timeout=10_000):  # (only a device of bob's
            bob_page.invite("team", second_page.device_id.text())  # adds one of his)
        with qtbot.waitSignal(second_page.said, timeout=10_000):
            second_page.join(bob_page.invitation.invitation, str(folder))
        alice_page.refresh()
        qtbot.waitUntil(lambda: len(rows(alice_page.members)) == 5, timeout=10_000)
        assert rows(alice_page.list)[0][2] == "2 people (3 devices)"
        # WHEN alice removes the row of bob's second device (not bob)
        target = second_page.device_id.text()
        row = next(i for i in alice_page.member_items() if i.text(1) == target)
        alice_page.members.setCurrentItem(row)
        asked: list[str] = []
        answer_when_asked(QtWidgets.QMessageBox.Yes, asked)
        with qtbot.waitSignal(alice_page.said, timeout=10_000):
            alice_page.remove_button.click()
        assert f"the device {target[:12]}" in asked[0]
        # THEN only that device goes: bob stays on his first
        state = ask(qtbot, alice, lambda e: e.spaces.members("team"))
        assert [d["id"] for d in state["removed"]] == [target]
        assert [p["person"] for p in state["persons"]] == ["alice", "bob"]
    finally:
        second.stop()


def test_the_page_reads_the_spaces_on_the_engine_thread(qtbot, alice, monkeypatch):
    import threading

    from app.gui import spaces_page

    threads, real = [], spaces_page.overview

    def watched(engine):
        threads.append(threading.get_ident())
        return real(engine)

    monkeypatch.setattr(spaces_page, "overview", watched)
    page = page_of(qtbot, alice)
    page.refresh()
    qtbot.waitUntil(lambda: len(threads) >= 1, timeout=10_000)
    assert set(threads) == {alice.thread_ident} and threading.get_ident() not in threads


def test_the_page_says_memories_are_shared_from_the_manager(qtbot, alice):
    # review of issue 45: "putting memories in a space comes next" was no longer true
    page = page_of(qtbot, alice)
    said = " ".join(label.text() for label in page.findChildren(QtWidgets.QLabel))
    assert "comes next" not in said and "manager" in said


def test_a_folder_under_the_home_is_shown_as_the_person_reads_it(
    qtbot, alice, tmp_path, monkeypatch
):
    # GIVEN a space made in a folder under the person's home
    from app.gui.spaces_page import shown_folder

    home = tmp_path / "home-of-alice"
    monkeypatch.setenv("HOME", str(home))
    page = page_of(qtbot, alice)
    create_through_dialog(qtbot, page, home / "Sync" / "team")
    # THEN the list says ~/Sync/team, its tooltip the whole path; one elsewhere is whole
    item = page.list.topLevelItem(0)
    assert item.text(1) == "~/Sync/team"
    assert item.toolTip(1) == str(home / "Sync" / "team")
    assert shown_folder("/srv/shared/team") == "/srv/shared/team"
