"""Where the database key lives, and the recovery key that brings it back (ADR 0014).

An encrypted database has one random 256-bit key, given to SQLite3 Multiple Ciphers raw (no
key derivation at each open). The key itself is kept in one of two places, which the *key
file* beside the database names (`mnemo.db.key`, JSON, 0600; it holds no secret):

- **the OS secret store** through `keyring` (Secret Service on Linux: GNOME Keyring,
  KWallet, KeePassXC; macOS Keychain; Windows Credential Locker). A backend that would keep
  it in a plain or merely obfuscated file (`keyrings.alt`), or none at all, is refused;
- **wrapped by a passphrase** (scrypt, then AES-256-GCM) in the key file, where no secret
  store answers (SSH, containers, a locked keyring without a display). The passphrase comes
  from the tray app (asked once), `MNEMO_PASSPHRASE`, or `MNEMO_PASSPHRASE_FILE`
  (`--passphrase-file`).

The *recovery key* is the key itself, written in groups of base32 letters with a checksum:
shown once at `mnemo encrypt` (and at each rotation), it opens the database and its backups
on any machine (`mnemo unlock`).

While the database is being switched to another key, the key file names both (`previous`),
so a crash at any point leaves one that opens it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import secrets
import stat
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.core.errors import (
    InputError,
    KeyringLockedError,
    LockedError,
    MnemoError,
    NewerCipherError,
    NoKeyError,
    StoreError,
    WrongKeyError,
)
from app.core.paths import open_regular, replace_file, sync

log = logging.getLogger(__name__)

KEY_BYTES = 32
CIPHER = "chacha20"  # SQLite3 Multiple Ciphers' default: ChaCha20-Poly1305, authenticated
KEY_FILE_VERSION = 1
_KEY_FILE_BYTES = 64 * 1024  # a key file is a few hundred bytes; a larger one is not ours
SERVICE = "Mnemo"  # the keyring's service name; the account names the key's id
# scrypt: 2^15 x 8 x 128 bytes = 32 MiB and about 60-100 ms, once per process
SCRYPT = {"n": 2**15, "r": 8, "p": 1}
# Backends that keep a secret where it is safe from a stolen disk (module prefixes)
SAFE_BACKENDS = (
    "keyring.backends.SecretService",
    "keyring.backends.libsecret",
    "keyring.backends.kwallet",
    "keyring.backends.macOS",
    "keyring.backends.Windows",
)
_remembered: dict[str, str] = {}  # a passphrase the tray app asked for, this process only


def key_id(key: bytes) -> str:
    """A short name for a key (it reveals nothing of it): the keyring account, and how the
    key file says which key opens the database."""
    return hashlib.sha256(b"mnemo database key\0" + key).hexdigest()[:16]


def subkey(key: bytes, purpose: str) -> bytes:
    """A key for another use derived from the database key (HMAC-SHA256, as HKDF's expand
    step): the sealed vector copy's, never the database key itself."""
    import hmac

    return hmac.new(key, f"mnemo {purpose}".encode(), hashlib.sha256).digest()


def new_key() -> bytes:
    return secrets.token_bytes(KEY_BYTES)


# ---- the recovery key -----------------------------------------------------------------
def recovery_text(key: bytes) -> str:
    """The key as a person can copy it: base32 in groups of five, with a 2-byte checksum."""
    check = hashlib.sha256(key).digest()[:2]
    letters = base64.b32encode(key + check).decode("ascii").rstrip("=")
    return "-".join(letters[i : i + 5] for i in range(0, len(letters), 5))


def parse_recovery(text: str) -> bytes:
    """The key a recovery text stands for; InputError for a typo or something else."""
    letters = "".join(ch for ch in text.upper() if ch.isalnum())
    letters = letters.replace("0", "O").replace("1", "I").replace("8", "B")
    try:
        raw = base64.b32decode(letters + "=" * (-len(letters) % 8))
    except ValueError:
        raw = b""
    key, check = raw[:KEY_BYTES], raw[KEY_BYTES:]
    if len(raw) != KEY_BYTES + 2 or hashlib.sha256(key).digest()[:2] != check:
        raise InputError(
            "that is not a Mnemo recovery key (55 letters and digits in groups of five, as "
            "`mnemo encrypt` showed it); check it for a typo"
        )
    return key


# ---- passphrases ----------------------------------------------------------------------
def forget_passphrases() -> None:
    """Forget every passphrase given in this process (the next open asks again)."""
    _remembered.clear()


def remember_passphrase(path: Path, passphrase: str) -> None:
    """Keep a passphrase the user typed for this database, for this process's life."""
    _remembered[str(path)] = passphrase


def passphrase_for(path: Path) -> str | None:
    """The passphrase for `path`: typed in this process, MNEMO_PASSPHRASE, or the first
    line of MNEMO_PASSPHRASE_FILE (None: none was given)."""
    typed = {k: v for k, v in _remembered.items() if not k.startswith("file:")}
    if typed:  # that database's, else (a snapshot of it) the one typed for another
        return typed.get(str(path)) or next(iter(typed.values()))
    if os.environ.get("MNEMO_PASSPHRASE"):
        return os.environ["MNEMO_PASSPHRASE"]
    name = os.environ.get("MNEMO_PASSPHRASE_FILE")
    if not name:
        return None
    if f"file:{name}" not in _remembered:  # read once: a pipe (<(pass show …)) gives it once
        _remembered[f"file:{name}"] = _read_passphrase_file(name)
    return _remembered[f"file:{name}"]


def _read_passphrase_file(name: str) -> str:
    """The first line of a passphrase file (or pipe); never waits for a pipe no one writes
    to for more than 10 s, never reads a device, at most 4 KB."""
    import select

    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise NoKeyError(f"cannot read the passphrase file {name}: {exc.strerror}") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode) or stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
            raise NoKeyError(f"the passphrase file {name} is not a file")
        data = b""
        while b"\n" not in data and len(data) < 4096:
            if stat.S_ISFIFO(mode) and not select.select([fd], [], [], 10.0)[0]:
                break
            try:
                chunk = os.read(fd, 4096 - len(data))
            except BlockingIOError:
                continue
            if not chunk:
                break
            data += chunk
    except OSError as exc:
        raise NoKeyError(f"cannot read the passphrase file {name}: {exc.strerror}") from None
    finally:
        os.close(fd)
    line = data.split(b"\n", 1)[0].rstrip(b"\r").decode("utf-8", "surrogateescape")
    if not line:
        raise NoKeyError(f"the passphrase file {name} is empty")
    return line


def _kek(passphrase: str, salt: bytes, params: dict) -> bytes:
    # The same words however they were typed (composed or not), any bytes the locale gave
    text = unicodedata.normalize("NFC", passphrase)
    return hashlib.scrypt(
        text.encode("utf-8", "surrogateescape"),
        salt=salt,
        n=params["n"],
        r=params["r"],
        p=params["p"],
        maxmem=256 * 1024 * 1024,
        dklen=32,
    )


def wrap(key: bytes, passphrase: str) -> dict:
    """The key sealed by a passphrase (scrypt + AES-256-GCM), as the key file keeps it."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    if not passphrase:
        raise InputError("the passphrase is empty")
    salt, nonce = secrets.token_bytes(16), secrets.token_bytes(12)
    sealed = AESGCM(_kek(passphrase, salt, SCRYPT)).encrypt(nonce, key, key_id(key).encode())
    return {
        "kdf": "scrypt",
        **SCRYPT,
        "salt": base64.b64encode(salt).decode(),
        "nonce": base64.b64encode(nonce).decode(),
        "sealed": base64.b64encode(sealed).decode(),
    }


def unwrap(entry: dict, passphrase: str, kid: str) -> bytes:
    """The key a passphrase unseals; WrongKeyError when it is not the one."""
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    try:
        params = {k: int(entry[k]) for k in ("n", "r", "p")}
        salt, nonce, sealed = (base64.b64decode(entry[k]) for k in ("salt", "nonce", "sealed"))
        if entry.get("kdf") != "scrypt" or params["n"] > 2**22 or params["r"] * params["p"] > 64:
            raise ValueError(entry.get("kdf"))
    except (KeyError, TypeError, ValueError) as exc:
        raise NewerCipherError(
            f"the key file's passphrase entry is not one this Mnemo reads ({exc}); "
            "upgrade Mnemo, or open it with the recovery key: mnemo unlock"
        ) from None
    try:
        key = AESGCM(_kek(passphrase, salt, params)).decrypt(nonce, sealed, kid.encode())
    except (ValueError, MemoryError):  # a nonce or parameters no sealing of ours has
        raise NoKeyError(
            "the key file's sealed key is damaged; open the database with its recovery key: "
            "mnemo unlock"
        ) from None
    except InvalidTag:
        raise WrongKeyError(
            "the passphrase does not open the database (MNEMO_PASSPHRASE, the passphrase "
            "file or the one typed); try again, or use the recovery key: mnemo unlock"
        ) from None
    return key


# ---- the OS secret store --------------------------------------------------------------
def secret_store() -> tuple[Any | None, str]:
    """The keyring backend to use and its name, or None and why there is none. A backend
    that keeps secrets in a file on the same disk (keyrings.alt) or nowhere is refused."""
    try:
        import keyring
        from keyring.backends import chainer
    except ImportError as exc:  # pragma: no cover - a dependency
        return None, f"the keyring library is missing ({exc})"
    try:
        backend = keyring.get_keyring()
    except Exception as exc:  # a broken backend configuration
        return None, f"the keyring cannot start ({exc})"
    candidates = backend.backends if isinstance(backend, chainer.ChainerBackend) else [backend]
    for candidate in candidates:
        if type(candidate).__module__.startswith(SAFE_BACKENDS):
            return candidate, type(candidate).__module__.rsplit(".", 1)[-1]
    unsafe = [
        type(c).__module__
        for c in candidates
        if not type(c).__module__.startswith(("keyring.backends.fail", "keyring.backends.null"))
    ]
    if unsafe:
        return None, (
            f"no secret store answers (keyring offers {', '.join(unsafe)}, which keeps secrets "
            "in a file on this disk: refused)"
        )
    if os.name == "posix" and not os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
        return None, "no secret store answers (no D-Bus session: SSH, a container?)"
    return None, "no secret store answers"


def _keyring_error(exc: Exception) -> MnemoError:
    text = f"{type(exc).__name__}: {exc}"
    if "lock" in text.lower() or "dismissed" in text.lower() or "prompt" in text.lower():
        return KeyringLockedError(
            f"the keyring is locked ({exc or type(exc).__name__}); unlock it (log in to the "
            "desktop), or open the database with its recovery key: mnemo unlock"
        )
    return NoKeyError(f"the keyring failed ({text}); open the database with mnemo unlock")


def store_in_keyring(key: bytes) -> str:
    """Keep `key` in the OS secret store; the backend's name. NoKeyError if none answers."""
    backend, name = secret_store()
    if backend is None:
        raise NoKeyError(name)
    try:
        backend.set_password(SERVICE, key_id(key), key.hex())
        if backend.get_password(SERVICE, key_id(key)) != key.hex():
            raise NoKeyError(f"the {name} keyring did not keep the key")
    except MnemoError:
        raise
    except Exception as exc:
        raise _keyring_error(exc) from None
    return name


def from_keyring(kid: str) -> bytes | None:
    """The key named `kid` from the OS secret store (None: it holds no such key)."""
    backend, why = secret_store()
    if backend is None:
        raise NoKeyError(
            f"the database is encrypted and its key is kept in the keyring, but {why}; "
            "open it with the recovery key (mnemo unlock) or log in to the desktop"
        )
    try:
        value = backend.get_password(SERVICE, kid)
    except Exception as exc:
        raise _keyring_error(exc) from None
    if value is None:
        return None
    try:
        key = bytes.fromhex(value)
    except ValueError:
        return None
    return key if key_id(key) == kid else None


# ---- the key file ---------------------------------------------------------------------
@dataclass
class Entry:
    """One key the database may be encrypted with: its id and where it is kept."""

    kid: str | None  # None: the database is not encrypted
    store: str = "keyring"  # "keyring" | "passphrase"
    sealed: dict | None = None  # the key wrapped by a passphrase (store == "passphrase")

    def as_json(self) -> dict:
        out: dict[str, Any] = {"key_id": self.kid, "store": self.store}
        if self.sealed is not None:
            out["sealed"] = self.sealed
        return out

    @classmethod
    def from_json(cls, data: Any) -> Entry:
        if not isinstance(data, dict) or data.get("store", "keyring") not in (
            "keyring",
            "passphrase",
        ):
            raise ValueError("an entry Mnemo does not know")
        kid = data.get("key_id")
        if kid is not None and not (isinstance(kid, str) and len(kid) == 16):
            raise ValueError("a key id Mnemo does not know")
        return cls(kid, data.get("store", "keyring"), data.get("sealed"))


def key_file(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + ".key")


@dataclass
class KeyFile:
    """What opens the database: the current key and, during a switch, the one before."""

    current: Entry
    previous: Entry | None = None

    @property
    def encrypted(self) -> bool:
        return self.current.kid is not None

    def entries(self) -> list[Entry]:
        return [self.current] + ([self.previous] if self.previous else [])

    @classmethod
    def read(cls, db_path: Path) -> KeyFile:
        """The key file of `db_path`; a plain one when there is none."""
        path = key_file(db_path)
        try:
            with open_regular(path) as f:  # never a pipe or a device (a read would hang)
                raw = f.read(_KEY_FILE_BYTES + 1)
        except FileNotFoundError:
            return cls(Entry(None))
        except OSError as exc:
            raise NoKeyError(f"cannot read the key file {path}: {exc}") from None
        try:
            if len(raw) > _KEY_FILE_BYTES:
                raise ValueError(f"over {_KEY_FILE_BYTES // 1024} KB")
            data = json.loads(raw.decode("utf-8"))
            if not isinstance(data, dict):
                raise ValueError("not an object")
            version = data.get("version")
            if isinstance(version, int) and version > KEY_FILE_VERSION:
                raise NewerCipherError(
                    f"the database was encrypted by a newer Mnemo (key file version {version}); "
                    "upgrade Mnemo to open it"
                )
            if data.get("cipher", CIPHER) != CIPHER:
                raise NewerCipherError(
                    f"the database is encrypted with {data.get('cipher')!r}, a cipher this "
                    "Mnemo does not use; upgrade Mnemo to open it"
                )
            current = Entry.from_json(data.get("current"))
            previous = Entry.from_json(data["previous"]) if data.get("previous") else None
        except RecursionError:
            raise NoKeyError(
                f"the key file {path} is damaged (nested too deep); open the database with its "
                "recovery key: mnemo unlock"
            ) from None
        except (UnicodeDecodeError, ValueError, TypeError) as exc:
            raise NoKeyError(
                f"the key file {path} is damaged ({exc}); open the database with its "
                "recovery key: mnemo unlock"
            ) from None
        return cls(current, previous)

    def write(self, db_path: Path) -> None:
        data = {
            "version": KEY_FILE_VERSION,
            "cipher": CIPHER,
            "current": self.current.as_json(),
            "previous": self.previous.as_json() if self.previous else None,
            "note": "Which key opens the database beside this file; it holds no secret.",
        }
        try:
            replace_file(key_file(db_path), lambda f: json.dump(data, f, indent=1))
            sync(db_path.parent)
        except OSError as exc:
            raise StoreError(
                f"cannot write the key file {key_file(db_path)}: {exc.strerror or exc}"
            ) from None


def key_for(entry: Entry, db_path: Path) -> bytes:
    """The key an entry names, from where it is kept; a LockedError saying what is
    missing and how to open the database."""
    assert entry.kid is not None
    if entry.store == "passphrase":
        passphrase = passphrase_for(db_path)
        if passphrase is None:
            raise NoKeyError(
                "the database is encrypted with a passphrase, and none was given: set "
                "MNEMO_PASSPHRASE or MNEMO_PASSPHRASE_FILE (--passphrase-file), or unlock "
                "it in the tray; lost it? mnemo unlock (with the recovery key)"
            )
        if entry.sealed is None:
            raise NoKeyError(f"the key file {key_file(db_path)} lacks the sealed key")
        return unwrap(entry.sealed, passphrase, entry.kid)
    key = from_keyring(entry.kid)
    if key is None:
        raise NoKeyError(
            "the database is encrypted and its key is not in this keyring (a new machine, "
            "or the keyring was reset); open it once with its recovery key: mnemo unlock"
        )
    return key


def candidates(db_path: Path) -> tuple[list[bytes | None], list[LockedError]]:
    """The keys that may open the database, best first (None: no key), and why any of the
    others could not be had."""
    keys: list[bytes | None] = []
    problems: list[LockedError] = []
    for entry in KeyFile.read(db_path).entries():
        if entry.kid is None:
            keys.append(None)
            continue
        try:
            keys.append(key_for(entry, db_path))
        except LockedError as exc:
            problems.append(exc)
    return keys, problems


def entry_for(key: bytes, store: str, passphrase: str | None = None) -> Entry:
    """Keep `key` where `store` says and name it in an Entry for the key file."""
    if store == "passphrase":
        if not passphrase:
            raise InputError("a passphrase is needed to keep the key without a keyring")
        sealed = wrap(key, passphrase)
        return Entry(key_id(key), "passphrase", sealed)
    store_in_keyring(key)
    return Entry(key_id(key), "keyring")


def sealed_by_passphrase(db_path: Path) -> bool:
    """Whether the database's key is sealed by a passphrase (the tray then asks for it)."""
    try:
        return KeyFile.read(db_path).current.store == "passphrase"
    except MnemoError:
        return False


def describe(db_path: Path) -> dict:
    """What `mnemo encrypt --status` and `mnemo stats` say about encryption."""
    try:
        kf = KeyFile.read(db_path)
    except MnemoError as exc:
        return {"encrypted": None, "problem": str(exc)}
    out: dict[str, Any] = {"encrypted": kf.encrypted}
    if kf.encrypted:
        out["key"] = (
            "kept in the OS keyring"
            if kf.current.store == "keyring"
            else "sealed by a passphrase (in the key file)"
        )
        out["cipher"] = CIPHER
    if kf.previous is not None:
        out["switch_unfinished"] = True
    return out
