"""Encrypted sync folders (ADR 0015): every operation and snapshot line sealed with
AES-256-GCM under a sync key the user carries to each device (`mnemo sync key` shows it on
a device that syncs; `mnemo sync init FOLDER --key KEY` on a new one).

A sealed line keeps in the clear only what orders it: its device, number and revision (the
revision is the authenticated data, so a sealed body cannot be moved to another number).
The memory id, text and every field are inside. `device.json` (a device's name, model and
what it applied) and a snapshot's header (what it covers) stay readable.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets

from app.core.errors import InputError
from app.core.vault import keys

KEY_BYTES = 32
_NONCE = 12


def new_key() -> bytes:
    return secrets.token_bytes(KEY_BYTES)


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
