"""Settings → Spaces as a new user meets it (issue 45, a new user's findings): a refusal
reads as the app's and keeps the window open with what was pasted; the line goes when the
context changes; a device only invited is told apart, and counted; a second space of a
name already used joins under another name; a space is renamed and pointed at its moved
folder from the page."""

from __future__ import annotations

from app.core.space import keys
from tests.gui.test_spaces_page import (  # noqa: F401 (fixtures)
    alice,
    ask,
    bob,
    create_through_dialog,
    page_of,
    rows,
)


def test_a_refused_join_keeps_the_window_and_reads_as_the_apps(qtbot, alice, bob, tmp_path):  # noqa: F811
    alice_page, bob_page = page_of(qtbot, alice), page_of(qtbot, bob)
    folder = tmp_path / "shared" / "team"
    create_through_dialog(qtbot, alice_page, folder)
    with qtbot.waitSignal(alice_page.said, timeout=10_000):
        alice_page.invite("team", bob_page.device_id.text(), "bob")
    invitation = alice_page.invitation.invitation
    # WHEN Bob joins through a folder that does not exist (mistyped)
    dialog = bob_page.ask_join()
    dialog.invitation.setPlainText(invitation)
    dialog.folder.setText(str(tmp_path / "shraed"))
    with qtbot.waitSignal(bob_page.said, timeout=10_000) as said:
        dialog.ok_button.click()
    # THEN the window stays open with what he pasted and says why, as the app says it
    line = said.args[0]
    assert dialog.isVisible() and dialog.invitation.toPlainText() == invitation
    assert dialog.refusal.isVisible() and dialog.refusal.text() == line
    assert line[0].isupper() and line.endswith(".") and "--" not in line and "`" not in line
    assert "holds nothing of the space yet" in line
    # AND Cancel takes the line away
    dialog.reject()
    assert bob_page.status.text() == ""
    # WHEN he gives the right folder THEN the window closes; the count and rows say who
    # only was invited
    dialog = bob_page.ask_join()
    dialog.invitation.setPlainText(invitation)
    dialog.folder.setText(str(folder))
    with qtbot.waitSignal(bob_page.said, timeout=10_000):
        dialog.ok_button.click()
    assert not dialog.isVisible()
    with qtbot.waitSignal(alice_page.said, timeout=10_000):
        alice_page.invite("team", keys.DeviceKey.new().public, "carol")
    want = "3 people (3 devices, 1 invited)"
    qtbot.waitUntil(lambda: alice_page.refresh() or rows(alice_page.list)[0][2] == want)
    labels = [r[0] for r in rows(alice_page.members)]
    assert labels.count("invited, not joined yet") == 1 and labels.count("a device") == 1


def test_a_second_team_joins_under_another_name_and_is_renamed(qtbot, alice, bob, tmp_path):  # noqa: F811
    alice_page, bob_page = page_of(qtbot, alice), page_of(qtbot, bob)
    create_through_dialog(qtbot, alice_page, tmp_path / "a" / "team")
    create_through_dialog(qtbot, bob_page, tmp_path / "b" / "team", "bob")
    with qtbot.waitSignal(alice_page.said, timeout=10_000):
        alice_page.invite("team", bob_page.device_id.text(), "bob")
    invitation = alice_page.invitation.invitation
    dialog = bob_page.ask_join()
    dialog.invitation.setPlainText(invitation)
    dialog.folder.setText(str(tmp_path / "a" / "team"))
    with qtbot.waitSignal(bob_page.said, timeout=10_000) as said:
        dialog.ok_button.click()
    assert "already here" in said.args[0] and dialog.isVisible()
    dialog.local_name.setText("alices")
    with qtbot.waitSignal(bob_page.said, timeout=10_000) as said:
        dialog.ok_button.click()
    assert said.args[0].startswith("Joined alices"), said.args[0]
    # WHEN another space is selected THEN the line goes
    qtbot.waitUntil(lambda: bob_page.list.topLevelItemCount() == 2, timeout=10_000)
    bob_page.status.setText("something said")
    other = [bob_page.list.topLevelItem(i) for i in range(2)]
    bob_page.list.setCurrentItem(next(i for i in other if i is not bob_page.list.currentItem()))
    assert bob_page.status.text() == ""
    # AND a space is renamed from the page
    with qtbot.waitSignal(bob_page.said, timeout=10_000):
        bob_page.rename("team", "mine")
    names = sorted(s["name"] for s in ask(qtbot, bob, lambda e: e.spaces.list()))
    assert names == ["alices", "mine"]
