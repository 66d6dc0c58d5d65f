"""The keys of a space (ADR 0026): what seals its lines, and how a key reaches a device.

- **A device's keys.** A device's Ed25519 signing key (the seed `Identity` keeps) also
  gives its sealing key: libsodium converts an Ed25519 key pair to X25519, so the public
  id a person passes around (`mnemo space id`) is all another member needs both to check
  this device's signatures and to seal a key to it. No second key pair to publish, bind
  or lose.
- **A key per epoch.** A space's lines are sealed with AES-256-GCM under the key of the
  epoch they were written in. An epoch starts with the space, and again with each removal
  or rotation; its key is random and reaches each member device sealed to it
  (`seal_to`, libsodium's sealed box: only that device opens it). A new epoch's key also
  seals the keys of the epochs before it (`wrap`), so a member admitted later reads the
  space's history with the current key alone; nothing seals a newer key under an older.
- **A line** carries its space, epoch and author in the clear and as associated data, so
  a body cannot be moved to another space, epoch or author; the author then signs the
  sealed form (as sync lines are signed, ADR 0018).
- **An invitation** is sealed to the invited device and signed by the inviter inside
  the seal: text a person pastes (`mnemo-invite:` and base64url), useless to any other
  device, valid for a week.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
from datetime import UTC, datetime, timedelta

from app.core.errors import InputError
from app.core.sync import trust

KEY_BYTES = 32  # AES-256
NONCE_BYTES = 12  # AES-GCM's nonce, random per line (2^32 lines per key stay safe)
LINE = b"mnemo space line\0"  # the associated data's domain
WRAP = b"mnemo space wrap\0"
INVITATION = b"mnemo space invitation\0"  # the inviter's signature's domain
PREFIX = "mnemo-invite:"
VALID_FOR = timedelta(days=7)
SEALED_MIN = 32 + 16 + 60  # a sealed box's key and tag, and the least a signed body takes


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def unb64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (ValueError, TypeError) as e:
        raise InputError("not base64") from e


def new_epoch_key() -> bytes:
    """A fresh key for an epoch: 32 random bytes."""
    return secrets.token_bytes(KEY_BYTES)


class DeviceKey:
    """One device's key pair: signs as `trust.Signer` does (the same seed, the same public
    id) and opens what was sealed to the X25519 key libsodium derives from it."""

    def __init__(self, seed: bytes):
        from nacl.signing import SigningKey

        self._signing = SigningKey(seed)
        self.signer = trust.Signer(seed)
        self.public = self.signer.public  # base64 of the Ed25519 public key

    @staticmethod
    def new() -> DeviceKey:
        return DeviceKey(trust.Signer.new())

    def sign(self, obj: dict, domain: bytes) -> dict:
        """`obj` with this device's signature (`sig`) over its canonical form."""
        return self.signer.sign(obj, domain)

    def open_sealed(self, sealed: str) -> bytes:
        """What `seal_to(self.public, ...)` sealed; InputError when it was sealed to
        another device or changed."""
        from nacl.exceptions import CryptoError
        from nacl.public import SealedBox

        try:
            return SealedBox(self._signing.to_curve25519_private_key()).decrypt(unb64(sealed))
        except CryptoError as e:
            raise InputError("not sealed to this device") from e


def seal_to(public: str, data: bytes) -> str:
    """`data` sealed to the device whose public id is `public` (base64): an anonymous
    X25519 box only that device's key opens."""
    from nacl.exceptions import CryptoError
    from nacl.public import SealedBox
    from nacl.signing import VerifyKey

    try:
        box = SealedBox(VerifyKey(unb64(public)).to_curve25519_public_key())
    except (CryptoError, ValueError, TypeError) as e:
        raise InputError(f"not a device id: {public[:60]!r}") from e
    return b64(box.encrypt(data))


def line_aad(space: str, epoch: str, author: str, seq: int) -> bytes:
    """What binds a sealed line to its place: the space, the epoch, the author and the
    author's number for it (what a removal's `upto` is compared with)."""
    return LINE + f"{space}\0{epoch}\0{author}\0{seq}".encode()


def seal_line(key: bytes, space: str, epoch: str, author: DeviceKey, seq: int, body: str) -> dict:
    """`body` (a line's JSON text), the `seq`-th its author writes in the space, sealed
    under an epoch's key and signed by its author: `{"space", "epoch", "author", "seq",
    "sealed", "sig"}` (the signature covers the sealed form, so checking it needs no key;
    whether the author may write there is `Members.may_write(author, epoch, seq)`)."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    nonce = secrets.token_bytes(NONCE_BYTES)
    aad = line_aad(space, epoch, author.public, seq)
    sealed = nonce + AESGCM(key).encrypt(nonce, body.encode("utf-8"), aad)
    outer = {"space": space, "epoch": epoch, "author": author.public, "seq": seq}
    outer["sealed"] = b64(sealed)
    return author.sign(outer, LINE)


def line_signed(outer: dict) -> bool:
    """Whether a sealed line carries its author's signature over what it says."""
    author = outer.get("author")
    return isinstance(author, str) and trust.verify(author, outer, LINE)


def open_line(key: bytes, outer: dict) -> str:
    """The JSON text inside a sealed line; InputError when it is not signed by the author
    it names, or this key does not open it for that space, epoch and author. Whether the
    author may write at that epoch is the membership's to say (`Membership.may_write`)."""
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    if not line_signed(outer):
        raise InputError("a space line not signed by its author")
    try:
        sealed = unb64(outer["sealed"])
        aad = line_aad(outer["space"], outer["epoch"], outer["author"], int(outer["seq"]))
        body = AESGCM(key).decrypt(sealed[:NONCE_BYTES], sealed[NONCE_BYTES:], aad)
    except (InvalidTag, KeyError, TypeError, ValueError) as e:
        raise InputError("this key does not open the line") from e
    return body.decode("utf-8")


def wrap(key: bytes, older: dict[str, bytes]) -> dict[str, str]:
    """The keys of earlier epochs (by epoch id) sealed under a newer epoch's `key`."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    out = {}
    for epoch, old in sorted(older.items()):
        nonce = secrets.token_bytes(NONCE_BYTES)
        out[epoch] = b64(nonce + AESGCM(key).encrypt(nonce, old, WRAP + epoch.encode()))
    return out


def unwrap(key: bytes, wrapped: dict[str, str]) -> dict[str, bytes]:
    """What `wrap` sealed, by epoch id; InputError when `key` does not open one."""
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    out = {}
    for epoch, text in wrapped.items():
        data = unb64(text)
        try:
            out[epoch] = AESGCM(key).decrypt(
                data[:NONCE_BYTES], data[NONCE_BYTES:], WRAP + epoch.encode()
            )
        except (InvalidTag, ValueError) as e:
            raise InputError("this key does not open an earlier epoch's key") from e
    return out


def make_invitation(
    inviter: DeviceKey,
    to: str,
    space: dict,
    epoch: str,
    key: bytes,
    head: list[str],
    at: datetime | None = None,
) -> str:
    """An invitation to the device `to` (its public id): the space (`id`, `name`, `root`,
    the hash of its signed create event), the epoch it is admitted at and that epoch's
    key, the membership record's heads the inviter had (the admit event among them), when
    it stops being valid, all signed by the inviter and sealed to `to`. Printed as
    `mnemo-invite:` and base64url, one line a person pastes (and a QR code carries)."""
    at = at or datetime.now(UTC)
    body = {
        "v": 1,
        "space": space["id"],
        "name": space["name"],
        "root": space["root"],
        "to": to,
        "from": inviter.public,
        "epoch": epoch,
        "key": b64(key),
        "head": sorted(head),
        "expires": (at + VALID_FOR).isoformat(timespec="seconds"),
    }
    signed = json.dumps(inviter.sign(body, INVITATION), sort_keys=True, separators=(",", ":"))
    sealed = unb64(seal_to(to, signed.encode()))
    return (
        PREFIX + _check(sealed) + "." + base64.urlsafe_b64encode(sealed).decode("ascii").rstrip("=")
    )


def _check(sealed: bytes) -> str:
    """An invitation's check, before its sealed bytes: one cut short or changed on the way
    is told from one sealed to another device (review of issue 45)."""
    return hashlib.sha256(sealed).hexdigest()[:8]


def open_invitation(device: DeviceKey, text: str, at: datetime | None = None) -> dict:
    """An invitation this device was sent, opened and checked: sealed to it, addressed to
    it, signed by the inviter it names, not past its time. InputError otherwise. (That the
    inviter is a member who admitted this device is the membership record's to show.)"""
    text = "".join(text.split())
    if not text.startswith(PREFIX):
        raise InputError("not a Mnemo invitation")
    data = text[len(PREFIX) :]
    check, _, data = data.rpartition(".")  # (no check: an invitation made before it)
    damaged = "a damaged invitation (cut short or changed on the way: copy it whole)"
    try:
        sealed = base64.b64decode(data + "=" * (-len(data) % 4), altchars=b"-_", validate=True)
    except (ValueError, TypeError) as e:
        raise InputError(damaged) from e
    if len(sealed) < SEALED_MIN or (check and check != _check(sealed)):
        raise InputError(damaged)
    opened = device.open_sealed(b64(sealed))
    try:
        body = json.loads(opened)
    except ValueError as e:
        raise InputError("an invitation that is not JSON") from e
    if not isinstance(body, dict) or body.get("to") != device.public:
        raise InputError("an invitation addressed to another device")
    if not isinstance(body.get("from"), str) or not trust.verify(body["from"], body, INVITATION):
        raise InputError("an invitation not signed by the device it names")
    try:
        expires = datetime.fromisoformat(body["expires"])
        late = (at or datetime.now(UTC)) > expires
        for name in ("space", "name", "root", "epoch", "key"):
            if not isinstance(body[name], str):
                raise TypeError(name)
        if not isinstance(body["head"], list):
            raise TypeError("head")
    except (KeyError, TypeError, ValueError) as e:
        raise InputError("an invitation missing what it must hold") from e
    why = _invitation_problem(body)  # (an inviter's device may be anyone's: review of issue 45)
    if why:
        raise InputError(f"an invitation with {why}")
    if late:
        raise InputError(f"an invitation that expired at {str(body['expires'])[:40]}")
    body["key"] = unb64(body["key"])
    return {k: v for k, v in body.items() if k != "sig"}


_HEX = re.compile(r"[0-9a-f]+")
MAX_HEAD = 64  # heads an invitation names (as an event's parents: membership.MAX_PARENTS)


def _invitation_problem(body: dict) -> str:
    """What is wrong with a signed invitation's fields ("" when nothing): every one is
    checked before anything is kept, whoever signed it."""

    def hex_of(value: str, size: int) -> bool:
        return len(value) == size and _HEX.fullmatch(value) is not None

    if not hex_of(body["space"], 32):
        return "a space id that is not one"
    if not hex_of(body["root"], 64) or not hex_of(body["epoch"], 64):
        return "a root or an epoch that is not an event's hash"
    name = body["name"]
    if not 0 < len(name) <= 100 or not name.isprintable() or name != " ".join(name.split()):
        return "a space's name that is not one line of at most 100 printable characters"
    head = body["head"]
    if len(head) > MAX_HEAD or not all(isinstance(h, str) and hex_of(h, 64) for h in head):
        return "heads that are not events' hashes"
    try:
        if len(unb64(body["key"])) != KEY_BYTES:
            return "a key that is not one"
    except InputError:
        return "a key that is not one"
    if not isinstance(body.get("expires"), str):
        return "no time it expires"
    return ""
