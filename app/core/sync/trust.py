"""What protects the sync folder's files: the sync key that seals them (encrypted folders,
ADR 0015), and which devices may write (issue 40): each device signs every line it
writes with its own Ed25519 key, and another device's lines are read only once a person
approved it (here, or on a device this one trusts: approvals travel in each device's
signed `device.json`).

- A device's key is made once per database and kept in it (encrypted with it when the
  database is); `device.json` carries its public half, the first operation it signed
  (`signed_from`: what a device wrote before this version stays readable unsigned), and
  whom it trusts and refuses, all signed.
- The folder's mark names the device that made the folder (`founder`, signed). A device
  joining a folder trusts its founder and whom the trusted ones approved; anything else
  waits for a person (`mnemo sync devices`). A folder made before this version names no
  founder: a device joining it trusts the devices there when it joins, and says which.
- A line from a device not approved is not read at all (it waits, and is read whole once
  the device is approved); a line that does not verify under the approved key is skipped
  and reported. A device whose key changes is not trusted under its new key until a person
  approves it again.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from dataclasses import dataclass

from app.core.errors import InputError
from app.core.storage.db import Database, now
from app.core.vault import keys

LINE = b"mnemo sync line\0"
DEVICE = b"mnemo sync device\0"
MARK = b"mnemo sync folder\0"
STATES = ("self", "approved", "pending", "refused")


class NotYet(Exception):  # noqa: N818 - a state, not an error
    """A signed line of a device whose key this device does not know yet (its device file
    has not arrived): left where it is, read once the key is known."""


def canonical(obj: dict) -> bytes:
    """The bytes a signature covers: the object without its signature, laid out one way."""
    body = {k: v for k, v in obj.items() if k != "sig"}
    return json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()


def snapshot_domain(device: str, number: int, line: int) -> bytes:
    """What a snapshot line's signature is bound to: its file and its place in it."""
    return f"mnemo sync snapshot {device} {number} {line}\0".encode()


def fingerprint(public: str | None) -> str:
    """A device key as a person compares it on two screens: 16 letters in groups of 4."""
    if not public:
        return "(none)"
    digest = hashlib.sha256(b"mnemo device key\0" + public.encode()).digest()
    letters = base64.b32encode(digest[:10]).decode()
    return "-".join(letters[i : i + 4] for i in range(0, 16, 4))


class Signer:
    """This device's key: signs what it writes (Ed25519 through libsodium, PyNaCl: a
    signature is checked in about a third of OpenSSL's time, which a join of 100,000
    memories does 200,000 times)."""

    def __init__(self, private: bytes):
        from nacl.signing import SigningKey

        self._key = SigningKey(private)
        self.public = base64.b64encode(bytes(self._key.verify_key)).decode()

    @staticmethod
    def new() -> bytes:
        import secrets as random

        return random.token_bytes(32)  # an Ed25519 seed: any 32 random bytes

    def sign(self, obj: dict, domain: bytes = LINE) -> dict:
        """`obj` with its signature (`sig`)."""
        sig = self._key.sign(domain + canonical(obj)).signature
        return {**obj, "sig": base64.b64encode(sig).decode()}

    def line(self, obj: dict | str, domain: bytes = LINE) -> str:
        """`obj` (a dict or its JSON) as one signed line: its canonical JSON with the
        signature last, so a reader checks the bytes as they are (`signed_part`) without
        laying them out again."""
        if isinstance(obj, str):
            obj = json.loads(obj)
        return self.canonical_line(canonical(obj).decode(), domain)

    def canonical_line(self, body: str, domain: bytes = LINE) -> str:
        """A line from an object's canonical JSON text (`canonical`), signed."""
        sig = base64.b64encode(self._key.sign(domain + body.encode()).signature).decode()
        return body[:-1] + f',"sig":"{sig}"}}'


_verifiers: dict[str, object] = {}
_TAIL = b',"sig":"'


def signed_part(line: bytes) -> tuple[bytes, bytes] | None:
    """A line as `Signer.line` writes it, split: the canonical JSON that was signed, and
    the signature; None for a line laid out otherwise (read the slow way: `verify`)."""
    at = line.rfind(_TAIL)
    end = line.rstrip()
    if at < 0 or not end.endswith(b'"}') or len(end) - at - len(_TAIL) - 2 != 88:
        return None
    return line[:at] + b"}", end[at + len(_TAIL) : -2]


def verify_part(public: str, data: bytes, sig: bytes, domain: bytes = LINE) -> bool:
    """Whether `sig` (base64) is `public`'s signature over exactly `data`."""
    from nacl.exceptions import BadSignatureError, CryptoError
    from nacl.signing import VerifyKey

    try:
        key = _verifiers.get(public)
        if key is None:
            key = VerifyKey(base64.b64decode(public, validate=True))
            if len(_verifiers) > 1000:
                _verifiers.clear()
            _verifiers[public] = key
        key.verify(domain + data, base64.b64decode(sig, validate=True))
    except (ValueError, TypeError, BadSignatureError, CryptoError):
        return False
    return True


def verify(public: str, obj: dict, domain: bytes = LINE) -> bool:
    """Whether `obj` carries a signature by `public` over what it says."""
    sig = obj.get("sig")
    if not isinstance(sig, str):
        return False
    try:
        return verify_part(public, canonical(obj), sig.encode("ascii"), domain)
    except (ValueError, TypeError, UnicodeEncodeError):
        return False


@dataclass
class Device:
    """A device as this database knows it."""

    id: str
    key: str | None  # its public key (None: a device known from before keys, none seen yet)
    state: str  # self | approved | pending | refused
    name: str = ""
    since: str = ""
    by: str = ""  # who decided: "you", "device <id>", "founder", "joined", "legacy"


class Devices:
    """The devices this database knows and whether it trusts them (`sync_devices`)."""

    def __init__(self, db: Database):
        self._db = db

    def all(self) -> dict[str, Device]:
        rows = self._db.query("SELECT id, key, state, name, since, by FROM sync_devices")
        return {r[0]: Device(*r) for r in rows}

    def put(self, device: Device) -> None:
        self._db.conn.execute(
            "INSERT INTO sync_devices(id, key, state, name, since, by) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(id) DO UPDATE SET key = excluded.key, state = excluded.state, "
            "name = excluded.name, since = excluded.since, by = excluded.by",
            (
                device.id,
                device.key,
                device.state,
                device.name[:100],
                device.since or now(),
                device.by,
            ),
        )

    def forget_all(self) -> None:
        """A new folder: nobody is known there yet (this device is added again)."""
        self._db.conn.execute("DELETE FROM sync_devices")


@dataclass
class Settled:
    """Who may write, after a look at the folder (`settle`)."""

    trusted: dict[str, str | None]  # device → the key its lines must verify under
    signed_from: dict[str, int]  # device → its first signed operation (before: unsigned)
    new: list[Device]  # devices seen for the first time, waiting for a person
    problems: list[str]  # said once each (a key that changed, a mark not signed)
    approved_here: bool  # a trusted device has approved this one (its lines are read)
    founder: dict | None = None  # the founder this device trusted as it joined


def _valid(info: dict) -> str | None:
    """A device file's key when the file is signed by it (else None)."""
    key = info.get("key")
    return key if isinstance(key, str) and verify(key, info, DEVICE) else None


def _listed(info: dict, name: str) -> dict[str, str]:
    value = info.get(name)
    if not isinstance(value, dict):
        return {}
    return {d: k for d, k in value.items() if isinstance(d, str) and isinstance(k, str)}


# Who decided, when it was a person or rooted in one (a founder this device checked when
# it joined, a device a person approved, ...): only such devices' approvals are followed
_ROOTED = ("you", "founder")


def _rooted(entry: Device) -> bool:
    return entry.by in _ROOTED or entry.by.startswith("device ")


def settle(
    devices: Devices,
    me: str,
    signer: Signer,
    name: str,
    infos: dict[str, dict],
    mark: dict | None,
    joining: bool,
    founder_seen: dict | None = None,
    record_new: bool = True,
) -> Settled:
    """Record the devices of the folder (`infos`: each one's device.json) and who is
    trusted now: this device, the ones a person approved here, the folder's founder when
    this device is joining, and whom trusted devices' persons approved (transitively, but
    only through devices whose trust is rooted in a person's decision or the founder; a
    refusal wins over an approval, a person's decision here over both). `founder_seen`:
    the founder this device trusted when it joined (a mark naming another is said).
    `record_new` False (a look, not a pass): a device seen first is not recorded, so the
    next pass says it."""
    known = devices.all()
    out = Settled({}, {}, [], [], False)
    mine = known.get(me)
    if mine is None or (mine.key, mine.state, mine.name) != (signer.public, "self", name):
        devices.put(Device(me, signer.public, "self", name, by="this device"))
    founder = (mark or {}).get("founder")
    founder_key = (mark or {}).get("founder_key")
    signed = isinstance(founder_key, str) and verify(founder_key, mark or {}, MARK)
    if founder_seen and (founder_seen.get("id"), founder_seen.get("key")) != (
        founder,
        founder_key,
    ):
        out.problems.append(
            "the sync folder's mark was changed: it names the founder "
            f"{founder or 'nobody'} ({fingerprint(founder_key)}), not "
            f"{founder_seen.get('id')} ({fingerprint(founder_seen.get('key'))}) as when this "
            "device joined; nothing was trusted because of it (check who can write the folder)"
        )
    elif joining:
        if isinstance(founder, str) and signed:
            if founder != me and founder not in known:
                devices.put(Device(founder, founder_key, "approved", by="founder"))
            out.founder = {"id": founder, "key": founder_key}
        elif founder is None and not any(_valid(info) for info in infos.values()):
            # a folder made before keys (no device there signs): the devices there now
            for device in infos:
                if device != me and device not in known:
                    devices.put(Device(device, None, "approved", by="joined"))
        else:
            out.problems.append(
                "the sync folder's mark names no founder signed by its key, though its "
                "devices sign: nothing in it is trusted by itself; approve the devices you "
                "know (mnemo sync devices, compare their keys)"
            )
    known = devices.all()
    for device, info in infos.items():  # first sight: waits for a person
        key = _valid(info)
        entry = known.get(device)
        if entry is None:
            shown = str(info.get("name", ""))[:100] if key else ""
            entry = Device(device, key, "pending", shown, by="")
            known[device] = entry
            out.new.append(entry)
            if record_new:
                devices.put(entry)
        elif entry.state == "approved" and entry.key is None and key:
            entry.key = key  # a device from before keys publishes its first
            entry.by = "legacy, key first seen " + now()[:10]
            devices.put(entry)
        elif entry.state == "pending" and key and entry.key and key != entry.key:
            out.problems.append(
                f"device {device}, waiting for you, now shows another key ({fingerprint(key)}) "
                f"than when it was first seen ({fingerprint(entry.key)}): compare again on "
                f"that device before approving it (mnemo sync devices approve {device} "
                "--key FINGERPRINT)"
            )
        elif entry.state == "pending" and key and entry.key is None:
            entry.key = key  # its signed file arrived after it was first seen
            entry.name = str(info.get("name", ""))[:100]
            devices.put(entry)
        elif entry.key and key == entry.key:  # its name as its own signed file says
            shown = str(info.get("name", ""))[:100]
            if shown != entry.name:
                entry.name = shown
                devices.put(entry)
    changed = True
    while changed:  # what trusted devices' persons approved or refused, until nothing moves
        changed = False
        for device, entry in list(known.items()):
            if (
                entry.state != "approved"
                or entry.key is None
                or device not in infos
                or not _rooted(entry)
            ):
                continue
            info = infos[device]
            if _valid(info) != entry.key:
                continue  # its file is not signed by the key approved for it
            for other, key in _listed(info, "trusts").items():
                here = known.get(other)
                if other == me or (here and here.state in ("approved", "refused", "self")):
                    continue
                known[other] = Device(
                    other, key, "approved", here.name if here else "", by=f"device {device}"
                )
                devices.put(known[other])
                changed = True
            for other, key in _listed(info, "refuses").items():
                here = known.get(other)
                if other == me or (
                    here and (here.state in ("refused", "self") or here.by == "you")
                ):
                    continue
                known[other] = Device(
                    other, key, "refused", here.name if here else "", by=f"device {device}"
                )
                devices.put(known[other])
                changed = True
    for device, entry in known.items():
        if entry.state not in ("self", "approved"):
            continue
        out.trusted[device] = entry.key
        info = infos.get(device, {})
        key = _valid(info)
        if device != me and entry.key and info.get("key") and key != entry.key:
            out.problems.append(
                f"device {device} now shows another key ({fingerprint(info.get('key'))}, "
                f"approved: {fingerprint(entry.key)}): its new lines are not read; if you "
                f"set it up again, approve it again (mnemo sync devices approve {device})"
            )
        start = info.get("signed_from") if key and key == entry.key else None
        if isinstance(start, int) and not isinstance(start, bool) and start > 0:
            out.signed_from[device] = start
        elif entry.key is not None:
            out.signed_from[device] = 1  # a key and no word of when: everything signed
        if device != me and key and key == entry.key and me in _listed(info, "trusts"):
            out.approved_here = True
    return out


# ---- sealing: an encrypted folder's lines (ADR 0015) ------------------------------
# Encrypted sync folders (ADR 0015): every operation and snapshot line sealed with
# AES-256-GCM under a sync key the user carries to each device (`mnemo sync key` shows it on
# a device that syncs; `mnemo sync init FOLDER --key KEY` on a new one).
#
# A sealed line keeps in the clear only what orders it: its device, number and revision (the
# revision is the authenticated data, so a sealed body cannot be moved to another number).
# The memory id, text and every field are inside. `device.json` (a device's name, model and
# what it applied) and a snapshot's header (what it covers) stay readable.
SEAL_KEY_BYTES = 32
_NONCE = 12


def new_key() -> bytes:
    return secrets.token_bytes(SEAL_KEY_BYTES)


def key_id(key: bytes) -> str:
    """The name the folder's mark gives its key (it reveals nothing of it)."""
    return hashlib.sha256(b"mnemo sync key\0" + key).hexdigest()[:16]


def key_text(key: bytes) -> str:
    """The key as a person copies it (base32 in groups of five, with a checksum)."""
    return keys.recovery_text(key)


def parse_key(text: str) -> bytes:
    try:
        return keys.parse_recovery(text)
    except InputError:
        raise InputError(
            "that is not a Mnemo sync key (55 letters and digits in groups of five, as "
            "`mnemo sync key` shows it on a device that syncs); check it for a typo"
        ) from None


class Sealer:
    """Seals and opens lines with one sync key."""

    def __init__(self, key: bytes):
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        self._aead = AESGCM(key)

    def seal(self, body: str, aad: str) -> str:
        """An operation's JSON text sealed: `{"v", "dev", "seq", "rev", "sealed"}`."""
        op = json.loads(body)
        nonce = secrets.token_bytes(_NONCE)
        sealed = nonce + self._aead.encrypt(nonce, body.encode("utf-8"), aad.encode())
        outer = {k: op[k] for k in ("v", "dev", "seq", "rev") if k in op}
        outer["sealed"] = base64.b64encode(sealed).decode("ascii")
        return json.dumps(outer, sort_keys=True)

    def open(self, outer: dict, aad: str) -> str:
        """The JSON text inside a sealed line; InputError when this key does not open it."""
        from cryptography.exceptions import InvalidTag

        try:
            raw = base64.b64decode(str(outer.get("sealed", "")), validate=True)
            body = self._aead.decrypt(raw[:_NONCE], raw[_NONCE:], aad.encode()).decode("utf-8")
        except (ValueError, InvalidTag, UnicodeDecodeError):
            raise InputError("it does not open with this device's sync key") from None
        inner = json.loads(body)
        if not isinstance(inner, dict) or any(
            k in outer and inner.get(k) != outer[k] for k in ("dev", "seq", "rev")
        ):
            raise InputError("its sealed body does not match its number")
        return body
