"""Sync as one part of the Engine (`engine.sync`, as Anki's `col.decks`): setting it up,
a pass, status, compaction, devices. One service per Engine; the `Syncer` that does the
work is made once for a folder, device name and model, and again only when they change.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

from app.core import duties
from app.core.errors import InputError, PlainCopyRefused, StoreError
from app.core.settings import Settings
from app.core.storage.db import Database
from app.core.storage.store import Store
from app.core.sync import trust
from app.core.sync.folder import Folder
from app.core.sync.state import Pass
from app.core.sync.syncer import Syncer


class SyncService:
    """This database's sync through a shared folder (ADR 0015)."""

    def __init__(
        self,
        db: Database,
        store: Store,
        settings: Settings,
        apply_settings: Callable[[dict[str, Any]], Any],
        model_id: Callable[[], str],
        edit: Callable[..., Any],
    ):
        self._db = db
        self._store = store
        self._settings = settings
        self._apply_settings = apply_settings
        self._model_id = model_id
        self._edit = edit  # the Engine's, with every check a person's edit goes through
        self._made: tuple | None = None
        self._syncer_made: Syncer | None = None

    def _syncer(self) -> Syncer:
        """The Syncer for the folder, device name, model and sync key of now (made again
        only when one of them changed)."""
        made = (
            self._settings["sync_folder"],
            self._settings["sync_device_name"],
            self._model_id(),
            self._db.get_meta("sync_key_id"),
        )
        if made != self._made or self._syncer_made is None:
            self._syncer_made = Syncer(self._db, self._store, made[0], made[1], made[2])
            self._made = made
        return self._syncer_made

    def configured(self) -> bool:
        """Whether this device syncs through a folder."""
        return bool(self._settings["sync_folder"])

    def init(
        self,
        folder: str,
        name: str | None = None,
        plain: bool = False,
        progress: Callable[[int, int], None] | None = None,
        key: str | None = None,
        encrypt: bool | None = None,
    ) -> Pass:
        """Sync through `folder` from now on (made if missing), as this device; then a pass.

        A folder whose files are encrypted needs its sync `key`; a new folder's files are
        encrypted with a new key when `encrypt` (by default: when the database is), and
        plain ones from an encrypted database only with `plain`."""
        root = Folder.check(Path(folder))
        left = self._settings["sync_folder"]  # a folder left behind in the clear: said
        left_plain = bool(left) and left != str(root) and not self._db.get_meta("sync_key")
        mark = Folder.read_mark(root)
        if mark is not None and mark.get("sealed"):
            if not key:
                raise InputError(
                    f"the files in {root} are encrypted: give their sync key "
                    "(mnemo sync init FOLDER --key KEY; `mnemo sync key` shows it on a device "
                    "that syncs)"
                )
            secret = trust.parse_key(key)
            if trust.key_id(secret) != mark["sealed"]:
                raise InputError(f"that sync key does not open the files in {root}")
        elif mark is not None:
            if encrypt or key:
                raise InputError(
                    f"the files in {root} are not encrypted; to encrypt, sync through a new "
                    "folder (every device joins it again)"
                )
            secret = None
        else:
            wanted = encrypt if encrypt is not None else (self._db.encrypted and not plain)
            secret = (trust.parse_key(key) if key else trust.new_key()) if wanted else None
        if secret is None and plain and self._db.encrypted:
            self._db.set_meta("sync_plain", "1")
        with self._db.write():
            if secret is not None:
                self._db.set_meta("sync_key", secret.hex())
                self._db.set_meta("sync_key_id", trust.key_id(secret))
            else:
                self._db.conn.execute(
                    "DELETE FROM _metadata WHERE key IN ('sync_key', 'sync_key_id')"
                )
        self.refuse_plain()
        syncer = self._syncer()
        folder_id = str((mark or {}).get("id", "")) or secrets.token_hex(8)
        syncer.start_over_if_moved(folder_id)
        if not self._db.query(
            "SELECT 1 FROM sync_ops WHERE device NOT IN ('~', '=') AND device != ? LIMIT 1",
            (syncer.device,),
        ):  # new here: its first pass trusts the folder's founder (`trust.settle`)
            self._db.set_meta("sync_joining", "1")
        Folder.mark(
            root,
            trust.key_id(secret) if secret is not None else None,
            folder_id,
            (syncer.device, syncer.signer),
        )
        values: dict[str, Any] = {"sync_folder": str(root)}
        if name is not None:
            values["sync_device_name"] = name
        before = {key: self._settings[key] for key in values}
        self._apply_settings(values)
        try:
            result = self.now(progress)
            if left_plain and secret is not None:  # moved to encrypted files: say what stays
                result.problems.append(self.clear_folder_warning(left))
                result.kinds.append("clear")
            return result
        except BaseException:
            if before["sync_folder"] != str(root):  # a first pass that failed: not set up
                self._apply_settings(before)
            raise

    def clear_folder_warning(self, folder: str | None = None) -> str | None:
        """What to tell a person whose memories lie in the clear in a sync folder (`folder`,
        by default the one this device syncs through, when its files are not encrypted
        and the database is): None when there is nothing to say."""
        if folder is None:
            if not self.configured() or self._db.get_meta("sync_key"):
                return None
            folder = self._settings["sync_folder"]
        return (
            f"the sync folder {folder} still holds your memories in the clear (its files are "
            "not encrypted, and so are the copies of it on your other devices): sync through a "
            "new folder with encrypted files (mnemo sync init NEW-FOLDER --encrypt on each "
            "device), then delete that folder everywhere"
        )

    def key(self) -> str | None:
        """The sync folder's key to give another device (None: its files are plain)."""
        return self._syncer().key_text()

    def off(self) -> None:
        """Stop syncing on this device (the folder and what it holds are left as they are)."""
        self._apply_settings({"sync_folder": ""})

    def now(self, progress: Callable[[int, int], None] | None = None) -> Pass:
        """Write what changed here to the sync folder and apply what arrived from the others."""
        self.refuse_plain()
        try:
            return self._syncer().run(progress)
        except OSError as exc:  # the folder unwritable, full, a pipe planted in it
            raise StoreError(
                f"cannot use the sync folder {self._settings['sync_folder']}: "
                f"{exc.strerror or exc}; nothing here was lost, what changed is written at the "
                "next pass"
            ) from None

    def mark(self) -> tuple:
        """Changes when a sync pass is due (this database or the folder moved); cheap."""
        return self._syncer().mark()

    settled = staticmethod(Syncer.settled)  # `mark` as a pass that started from it leaves it

    def status(self) -> dict:
        """The sync folder, its devices, what waits, the latest problems, and which process
        does the background passes (`owner`: None when none runs)."""
        return {**self._syncer().status(), "owner": duties.owner(self._db.path)}

    def compact(self) -> Path:
        """Write this device's snapshot of the sync folder now (`sync/snapshot.py`)."""
        self.refuse_plain()
        try:
            return self._syncer().compact()
        except OSError as exc:
            raise StoreError(
                f"cannot write a snapshot to the sync folder {self._settings['sync_folder']}: "
                f"{exc.strerror or exc}"
            ) from None

    def remove(self, device: str) -> None:
        """Stop counting `device` as one of this collection's devices."""
        self._syncer().remove(device)

    def unapproved_names(self) -> set[str]:
        """The names of the devices whose words agents are not given unasked (issue 44): one
        a person refused (what it wrote while approved stays here), and one waiting for
        approval whose name no approved device bears (a key changed since)."""
        known = trust.Devices(self._db).all().values()
        approved = {d.name for d in known if d.state in ("self", "approved")}
        return {
            d.name
            for d in known
            if d.state == "refused" or (d.state == "pending" and d.name not in approved)
        }

    def devices(self) -> list[dict]:
        """Every device of the folder with whether it may write (self, approved, pending,
        refused), who decided, and its key's fingerprint."""
        return self._syncer().status()["devices"]

    def approve(self, device: str, key: str | None = None) -> None:
        """A person says `device` is theirs (having compared the key it shows with the one
        shown here; `key`: the fingerprint they compared, when its key changed since it was
        first seen): its lines are read from the next pass on, and the devices that trust
        this one follow."""
        self._syncer().decide(device, "approved", key)

    def refuse(self, device: str) -> None:
        """A person says `device` is not theirs: nothing more of it is read (what it wrote
        while approved stays), and the devices that trust this one follow."""
        self._syncer().decide(device, "refused")

    def held(self) -> list[dict]:
        """Removals held for a person: per device, how many memories and their first titles
        (a device removing many here at once, or removals here not made through Mnemo)."""
        if not self.configured():
            return []
        return self._syncer().held()

    def apply_held(self, device: str) -> Pass:
        """A person lets `device`'s held removals happen here (for this device: sends its
        own); then a pass."""
        self._syncer().decide_held(device, apply=True)
        return self.now()

    def refuse_held(self, device: str) -> Pass:
        """A person refuses `device`'s held removals: the memories stay, here and, written
        again, on every device (for this device: takes them back from the folder)."""
        self._syncer().decide_held(device, apply=False)
        return self.now()

    def conflicts(self) -> list[dict]:
        """Memories edited on two devices apart, waiting for a person: each as merged, and
        its versions (text, device, time)."""
        return self._syncer().conflicts()

    def resolve(self, memory_id: str, keep: str | None = None) -> None:
        """A person resolves a memory edited apart: as merged (`keep` None) or as one of its
        versions (`keep`: its id); either way its versions stay in the trash, unlinked (a
        synced change: every device sees it resolved). Unmerging it resolves it too."""
        found = [c for c in self.conflicts() if c["id"] == memory_id]
        if not found:
            raise InputError(
                f"memory {memory_id!r} has no versions from edits made apart waiting "
                "(mnemo sync conflicts lists them)"
            )
        versions = [v["id"] for v in found[0]["versions"]]
        if keep is not None:
            chosen = [v for v in versions if v == keep or v.startswith(keep) or v.endswith(keep)]
            if len(chosen) != 1:
                raise InputError(f"{keep!r} is not one of its versions: {', '.join(versions)}")
            version = self._store.get(chosen[0])
            self._edit(
                memory_id,
                text=version.text,
                title=version.title,
                reasoning=version.reasoning,
                tags=version.tags,
                references=version.references,
                category=version.category,
                secrets="allow",  # (its own words, already kept here)
            )
        self._store.unlink(versions)

    def refuse_plain(self) -> None:
        """The sync files are plain text: refused for an encrypted database unless the
        user said so (`mnemo sync init --plain`)."""
        if (
            self._db.encrypted
            and self._db.get_meta("sync_plain") != "1"
            and not self._db.get_meta("sync_key")
        ):
            raise PlainCopyRefused(
                "the database is encrypted and the sync folder's files are not: every memory "
                "would be readable in the folder and on every device it syncs to; say so to "
                "sync anyway (mnemo sync init FOLDER --plain), or encrypt the folder's files "
                "(mnemo sync init NEW-FOLDER --encrypt)"
                + (
                    f"; and {self._settings['sync_folder']} already holds what was written "
                    "there in the clear: delete it once your devices use the new folder"
                    if self._settings["sync_folder"]
                    else ""
                )
            )
