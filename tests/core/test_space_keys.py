"""The keys of a team space (ADR 0026): sealing to a device, lines, epochs, invitations.
Real libsodium and AES-GCM throughout."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from app.core.errors import InputError
from app.core.space import keys
from app.core.sync import trust

SPACE = {"id": "5e" * 16, "name": "team", "root": "ab" * 32}


@pytest.fixture
def alice():
    return keys.DeviceKey.new()


@pytest.fixture
def bob():
    return keys.DeviceKey.new()


def test_a_device_id_is_its_sync_signing_key_and_also_seals_to_it(alice):
    # GIVEN a seed as the sync Identity keeps it
    seed = trust.Signer.new()
    device = keys.DeviceKey(seed)
    # THEN its public id is the sync signer's, and what is sealed to that id it opens
    assert device.public == trust.Signer(seed).public
    sealed = keys.seal_to(device.public, b"epoch key")
    assert device.open_sealed(sealed) == b"epoch key"
    # AND no other device opens it
    with pytest.raises(InputError):
        alice.open_sealed(sealed)


def test_sealing_to_something_that_is_no_device_id_is_refused():
    with pytest.raises(InputError):
        keys.seal_to("not a key", b"x")
    with pytest.raises(InputError):
        keys.seal_to(keys.b64(b"\0" * 7), b"x")


def test_a_line_opens_with_its_epoch_key_and_holds_no_plain_text(alice):
    key = keys.new_epoch_key()
    body = json.dumps({"text": "the deploy password rotates on fridays"})
    outer = keys.seal_line(key, SPACE["id"], "e1", alice, 1, body)
    assert "fridays" not in json.dumps(outer)
    assert outer["author"] == alice.public and outer["epoch"] == "e1"
    assert keys.line_signed(outer)
    assert keys.open_line(key, outer) == body
    # two seals of one body differ (a fresh nonce each)
    assert keys.seal_line(key, SPACE["id"], "e1", alice, 1, body)["sealed"] != outer["sealed"]


def test_a_line_does_not_open_with_another_epochs_key(alice):
    outer = keys.seal_line(keys.new_epoch_key(), SPACE["id"], "e1", alice, 1, "{}")
    with pytest.raises(InputError):
        keys.open_line(keys.new_epoch_key(), outer)


@pytest.mark.parametrize("field,value", [("epoch", "e2"), ("space", "other"), ("seq", 2)])
def test_a_line_moved_to_another_epoch_space_or_number_does_not_open(alice, field, value):
    # GIVEN a line, its clear fields changed and signed again by its own author
    key = keys.new_epoch_key()
    outer = keys.seal_line(key, SPACE["id"], "e1", alice, 1, '{"a":1}')
    moved = alice.sign({k: v for k, v in outer.items() if k != "sig"} | {field: value}, keys.LINE)
    assert keys.line_signed(moved)
    # THEN the associated data no longer matches
    with pytest.raises(InputError, match="does not open"):
        keys.open_line(key, moved)


def test_a_line_claimed_by_another_author_is_refused(alice, bob):
    key = keys.new_epoch_key()
    outer = keys.seal_line(key, SPACE["id"], "e1", alice, 1, '{"a":1}')
    # the author field changed: alice's signature no longer covers it
    with pytest.raises(InputError, match="not signed"):
        keys.open_line(key, outer | {"author": bob.public})
    # bob signs it as his: the seal was bound to alice as author
    claimed = bob.sign(
        {k: v for k, v in outer.items() if k != "sig"} | {"author": bob.public}, keys.LINE
    )
    with pytest.raises(InputError, match="does not open"):
        keys.open_line(key, claimed)


def test_a_changed_or_unsigned_line_is_refused(alice):
    key = keys.new_epoch_key()
    outer = keys.seal_line(key, SPACE["id"], "e1", alice, 1, '{"a":1}')
    sealed = bytearray(keys.unb64(outer["sealed"]))
    sealed[-1] ^= 1
    with pytest.raises(InputError):
        keys.open_line(key, outer | {"sealed": keys.b64(bytes(sealed))})
    with pytest.raises(InputError, match="not signed"):
        keys.open_line(key, {k: v for k, v in outer.items() if k != "sig"})


def test_earlier_epoch_keys_are_wrapped_under_the_new_one_and_only_open_with_it():
    new, old1, old2 = keys.new_epoch_key(), keys.new_epoch_key(), keys.new_epoch_key()
    wrapped = keys.wrap(new, {"e1": old1, "e2": old2})
    assert keys.unwrap(new, wrapped) == {"e1": old1, "e2": old2}
    with pytest.raises(InputError):
        keys.unwrap(old2, wrapped)
    # a wrapped key moved to another epoch's name does not open
    with pytest.raises(InputError):
        keys.unwrap(new, {"e2": wrapped["e1"]})


E1, H1, H2 = "e1" * 32, "01" * 32, "02" * 32  # an epoch and two heads: events' hashes


def _invite(alice, bob, at=None):
    return keys.make_invitation(alice, bob.public, SPACE, E1, b"k" * 32, [H2, H1], at)


def test_an_invitation_opens_on_the_device_it_was_sealed_to(alice, bob):
    text = _invite(alice, bob)
    assert text.startswith(keys.PREFIX) and "\n" not in text and " " not in text
    body = keys.open_invitation(bob, text)
    assert body["space"] == SPACE["id"] and body["name"] == "team" and body["root"] == SPACE["root"]
    assert body["key"] == b"k" * 32 and body["epoch"] == E1
    assert body["from"] == alice.public and body["head"] == [H1, H2]
    # pasted with line breaks and spaces (a wrapped terminal, a mail) it still opens
    folded = "\n  ".join(text[i : i + 60] for i in range(0, len(text), 60))
    assert keys.open_invitation(bob, folded)["key"] == b"k" * 32


def test_an_invitation_opened_by_the_wrong_device_fails(alice, bob):
    carol = keys.DeviceKey.new()
    text = _invite(alice, bob)
    with pytest.raises(InputError, match="not sealed to this device"):
        keys.open_invitation(carol, text)
    with pytest.raises(InputError, match="not sealed to this device"):
        keys.open_invitation(alice, text)  # nor the inviter's own


def test_an_invitation_is_valid_for_a_week(alice, bob):
    then = datetime.now(UTC) - keys.VALID_FOR - timedelta(minutes=1)
    with pytest.raises(InputError, match="expired"):
        keys.open_invitation(bob, _invite(alice, bob, then))
    almost = datetime.now(UTC) - keys.VALID_FOR + timedelta(minutes=5)
    assert keys.open_invitation(bob, _invite(alice, bob, almost))["name"] == "team"


def test_an_invitation_forged_in_another_devices_name_is_refused(alice, bob):
    # GIVEN mallory seals to bob an invitation saying it is from alice
    mallory = keys.DeviceKey.new()
    body = {"v": 1, "to": bob.public, "from": alice.public, "space": SPACE["id"], "key": "AA=="}
    body["expires"] = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    signed = json.dumps(mallory.sign(body, keys.INVITATION)).encode()
    text = keys.PREFIX + keys.seal_to(bob.public, signed).replace("+", "-").replace("/", "_")
    # THEN bob refuses it
    with pytest.raises(InputError, match="not signed by the device it names"):
        keys.open_invitation(bob, text)


def test_an_invitation_sealed_to_one_device_but_addressed_to_another_is_refused(alice, bob):
    carol = keys.DeviceKey.new()
    body = {
        "v": 1,
        "to": carol.public,
        "from": alice.public,
        "expires": "2999-01-01T00:00:00+00:00",
    }
    signed = json.dumps(alice.sign(body, keys.INVITATION)).encode()
    text = keys.PREFIX + keys.seal_to(bob.public, signed).replace("+", "-").replace("/", "_")
    with pytest.raises(InputError, match="addressed to another device"):
        keys.open_invitation(bob, text)


def test_text_that_is_no_invitation_is_refused(bob):
    with pytest.raises(InputError):
        keys.open_invitation(bob, "hello")
    with pytest.raises(InputError):
        keys.open_invitation(bob, keys.PREFIX + "AAAA")


@pytest.mark.parametrize(
    "change",
    [{"expires": "soon"}, {"expires": "2999-01-01T00:00:00"}, {"key": 5}, {"head": "h1"}],
)
def test_an_invitation_signed_but_missing_what_it_must_hold_is_refused(alice, bob, change):
    body = {"v": 1, "space": "s", "name": "n", "root": "r", "to": bob.public}
    body |= {"from": alice.public, "epoch": "e", "key": "AA==", "head": []}
    body |= {"expires": "2999-01-01T00:00:00+00:00"} | change
    signed = json.dumps(alice.sign(body, keys.INVITATION)).encode()
    text = keys.PREFIX + keys.seal_to(bob.public, signed).replace("+", "-").replace("/", "_")
    with pytest.raises(InputError, match="missing what it must hold"):
        keys.open_invitation(bob, text)
