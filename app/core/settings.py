"""Settings declared once as data; the settings file, the GUI dialog and CLI read this."""

from __future__ import annotations

import errno
import json
import logging
import math
import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.core import paths
from app.core.errors import InputError
from app.core.origin import INJECTABLE, INJECTED_BY_DEFAULT

log = logging.getLogger(__name__)


# Qt names ⌘ "Ctrl" on macOS, where ⌘⌥Space opens Finder's search (and Carbon would not say
# the key is taken); ⌥Space is what macOS launchers (Alfred, Raycast) default to.
DEFAULT_HOTKEY = "Alt+Space" if sys.platform == "darwin" else "Ctrl+Alt+Space"
# ⌥⌘C is Finder's "Copy as Pathname"; ⌃⌥⌘C is free.
DEFAULT_CLIPBOARD_HOTKEY = "Ctrl+Alt+Meta+C" if sys.platform == "darwin" else "Ctrl+Alt+C"


TYPE_WORDS = {
    int: "a whole number",
    float: "a number",
    bool: "true or false",
    list: "a list",
    str: "text",
}


HOTKEY_SETTINGS = ("hotkey", "clipboard_hotkey")
PASTE_KEYS = ("Ctrl+V", "Ctrl+Shift+V", "Shift+Insert")  # what applications paste with


def checked_paste_windows(entries: list[str]) -> list[str]:
    """`paste_by_window` entries as `WINDOW_CLASS=KEYS`, KEYS one of PASTE_KEYS."""
    out = []
    for entry in entries:
        name, _, keys = entry.partition("=")
        keys = next((k for k in PASTE_KEYS if k.lower() == keys.strip().lower()), None)
        if not name.strip() or keys is None:
            raise InputError(
                f"setting paste_by_window: {entry!r} is not WINDOW_CLASS=KEYS "
                f"(KEYS: {', '.join(PASTE_KEYS)}; `xprop WM_CLASS` names a window's class)"
            )
        out.append(f"{name.strip()}={keys}")
    return out


_MODIFIERS = {"ctrl", "alt", "shift", "meta", "super", "win", "cmd"}
_FUNCTION_KEY = re.compile(r"F([1-9]|[12][0-9]|3[0-5])", re.I)
_NAMED_KEYS = {  # as Qt writes them
    name.lower(): name
    for name in (
        "Space Return Enter Tab Esc Escape Backspace Del Delete Ins Insert Home End PgUp "
        "PgDown PageUp PageDown Print Pause Up Down Left Right Menu"
    ).split()
}


def checked_hotkey(key: str, value: str) -> str:
    """A global key as written ("Ctrl+Alt+Space"), or InputError: one combination (not a
    sequence), and Ctrl, Alt or Super with it unless it is a function key. A plain key
    ("G", "Shift+Q", "Backspace") would be taken from every window: typing it anywhere
    would open Mnemo instead of reaching the window it was typed in. Empty means no key
    (the dialog asks for `hotkey_backend` = none instead of an empty search key)."""
    value = value.strip()
    if not value:
        return value
    if "," in value:
        raise InputError(f"setting {key}: {value!r} is a sequence of keys; press one combination")
    parts = [p.strip() for p in value.split("+")]
    if not all(parts):
        raise InputError(f"setting {key}: {value!r} is not a key combination")
    mods = {p.lower() for p in parts[:-1]}
    unknown = mods - _MODIFIERS
    if unknown:
        raise InputError(f"setting {key}: unknown modifier {', '.join(sorted(unknown))}")
    if not mods - {"shift"} and not _FUNCTION_KEY.fullmatch(parts[-1]):
        raise InputError(
            f"setting {key}: {value!r} needs Ctrl, Alt or Super with it (a plain key would "
            "be taken from every window you type in)"
        )
    # as the tray and Settings show it: "ctrl+alt+space" is Ctrl+Alt+Space (a key name not
    # known here stays as written: "eacute" is é, "Eacute" another key)
    last = parts[-1]
    if len(last) == 1 or _FUNCTION_KEY.fullmatch(last):
        last = last.upper()
    last = _NAMED_KEYS.get(last.lower(), last)
    return "+".join([*(m.capitalize() for m in (p.lower() for p in parts[:-1])), last])


@dataclass(frozen=True)
class Setting:
    """One user setting: its key, type, default, a help line, and optional bounds/choices."""

    key: str
    type: type
    default: Any
    help: str
    group: str = "General"
    choices: tuple = ()
    minimum: float | None = None
    maximum: float | None = None

    def coerce(self, value: Any) -> Any:
        """`value` converted to this setting's type, or InputError if it cannot be."""
        try:
            if self.type is bool:
                if isinstance(value, str):
                    if value.lower() not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
                        raise ValueError(value)
                    value = value.lower() in ("1", "true", "yes", "on")
                elif not isinstance(value, bool):
                    raise ValueError(value)
            elif self.type is list:
                if isinstance(value, str):
                    value = [v.strip() for v in value.split(",") if v.strip()]
                elif not isinstance(value, list):
                    raise ValueError(value)
                value = [str(v) for v in value]
            else:
                value = self.type(value)
        except (TypeError, ValueError):
            raise InputError(
                f"setting {self.key}: {value!r} is not {TYPE_WORDS.get(self.type, 'valid')}"
            ) from None
        if self.key in HOTKEY_SETTINGS:
            value = checked_hotkey(self.key, value)
        if self.key == "paste_by_window":
            value = checked_paste_windows(value)
        if self.type is float and not math.isfinite(value):
            raise InputError(f"setting {self.key}: must be a finite number, not {value!r}")
        if self.choices and any(v not in self.choices for v in _items(value, self.type)):
            raise InputError(f"setting {self.key}: choose from {', '.join(self.choices)}")
        if self.minimum is not None and value < self.minimum:
            raise InputError(f"setting {self.key}: must be at least {self.minimum}")
        if self.maximum is not None and value > self.maximum:
            raise InputError(f"setting {self.key}: must be at most {self.maximum}")
        return value


def _items(value: Any, kind: type) -> list:
    return value if kind is list else [value]


CAPTURE_RULES = (
    "remember",
    "from-now-on",
    "always-never",
    "prefer",
    "correction",
    "fixed-command",
    "plain",
)

SETTINGS: tuple[Setting, ...] = (
    # Model
    Setting(
        "model_path",
        str,
        "",
        "GGUF embedding model file; empty uses the bundled "
        "all-MiniLM-L6-v2 (MNEMO_MODEL overrides)",
        "Model",
    ),
    Setting(
        "query_prefix",
        str,
        "auto",
        "Text put before every query; 'auto' picks the model family's prefix, '' none",
        "Model",
    ),
    Setting(
        "document_prefix",
        str,
        "auto",
        "Text put before every memory when embedding; 'auto' picks the model family's prefix",
        "Model",
    ),
    Setting(
        "model_threads",
        int,
        0,
        "CPU threads for the model; 0 = all cores",
        "Model",
        minimum=0,
        maximum=256,
    ),
    Setting(
        "model_gpu_layers",
        int,
        -1,
        "Model layers run on the GPU when llama.cpp was built with one (Metal on macOS); "
        "-1 = all, 0 = CPU only. If the GPU fails, the model runs on the CPU",
        "Model",
        minimum=-1,
        maximum=1000,
    ),
    # Search
    Setting(
        "weight_vector",
        float,
        0.5,
        "How much meaning counts (cosine similarity), against keywords",
        "Search",
        minimum=0.0,
        maximum=1.0,
    ),
    Setting(
        "weight_keyword",
        float,
        0.5,
        "How much keywords count (FTS5 BM25), against meaning",
        "Search",
        minimum=0.0,
        maximum=1.0,
    ),
    Setting(
        "weight_prominence",
        float,
        0.3,
        "Prominence (recency, confidence, use): 0.3 lets it reorder results within 10 %",
        "Search",
        minimum=0.0,
        maximum=1.0,
    ),
    Setting(
        "min_similarity",
        float,
        0.15,
        "Cosine below which a memory is not a candidate by meaning (scores are calibrated)",
        "Search",
        minimum=-1.0,
        maximum=1.0,
    ),
    Setting(
        "duplicate_threshold",
        float,
        0.85,
        "Cosine similarity from which a new memory counts as a near-duplicate",
        "Search",
        minimum=0.0,
        maximum=1.0,
    ),
    Setting(
        "related_threshold",
        float,
        0.5,
        "Cosine similarity from which a memory is listed as related",
        "Search",
        minimum=0.0,
        maximum=1.0,
    ),
    Setting("default_limit", int, 10, "Results shown by recall", "Search", minimum=1, maximum=1000),
    # Desktop
    Setting("hotkey", str, DEFAULT_HOTKEY, "Global hotkey that opens the recall popup", "Desktop"),
    Setting(
        "clipboard_hotkey",
        str,
        DEFAULT_CLIPBOARD_HOTKEY,
        "Global hotkey that remembers what is on the clipboard (empty: no key)",
        "Desktop",
    ),
    Setting(
        "clipboard_source",
        str,
        "clipboard",
        "What Remember clipboard reads: the clipboard (what you copied) or the primary "
        "selection (what you last selected, on Linux)",
        "Desktop",
        choices=("clipboard", "selection"),
    ),
    Setting(
        "hotkey_backend",
        str,
        "auto",
        "Which global hotkey backend to use: auto, x11, portal, windows, macos or none",
        "Desktop",
        choices=("auto", "x11", "portal", "windows", "macos", "none"),
    ),
    Setting(
        "popup_results",
        int,
        20,
        "Results the popup lists (eight at a time; scroll for the rest)",
        "Desktop",
        minimum=1,
        maximum=50,
    ),
    Setting(
        "popup_preview",
        bool,
        True,
        "Show the selected memory whole beside the popup's results",
        "Desktop",
    ),
    Setting(
        "popup_hide_on_blur",
        bool,
        True,
        "Hide the search popup when another window takes the focus",
        "Desktop",
    ),
    Setting(
        "popup_enter_pastes",
        bool,
        False,
        "Enter pastes the memory into the window you were in (X11); Alt+Enter then only "
        "copies. Off: Enter copies and Alt+Enter pastes",
        "Desktop",
    ),
    Setting(
        "paste_keys",
        str,
        "auto",
        "The keys Mnemo types to paste: auto = a terminal's own paste key in terminals "
        "(known by their window class), Ctrl+V in other windows",
        "Desktop",
        choices=("auto", *PASTE_KEYS),
    ),
    Setting(
        "paste_by_window",
        list,
        [],
        "Paste keys for some windows by window class, before paste_keys: "
        "XTerm=Shift+Insert, Emacs=Ctrl+Shift+V (`xprop WM_CLASS` names a window's class)",
        "Desktop",
    ),
    Setting("start_at_login", bool, False, "Start Mnemo when you log in", "Desktop"),
    # Memories
    Setting(
        "mirror_dir",
        str,
        "",
        "Folder where every new or changed memory is also appended as markdown (an audit "
        "trail `mnemo import` can rebuild the database from); empty = off",
        "Memories",
    ),
    Setting(
        "sync_folder",
        str,
        "",
        "Folder shared with your other devices (Syncthing, Nextcloud, Dropbox…) through which "
        "memories sync; set up with `mnemo sync init FOLDER`; empty = off",
        "Sync",
    ),
    Setting(
        "sync_device_name",
        str,
        "",
        "This device's name as the others see it; empty = the host name",
        "Sync",
    ),
    Setting(
        "backup_every_hours",
        int,
        24,
        "How often the running app (or an agent's server) snapshots the database into the "
        "backups folder, encrypted when the database is; 0 = never",
        "Memories",
        minimum=0,
        maximum=24 * 365,
    ),
    Setting(
        "backups_kept",
        int,
        3,
        "How many snapshots are kept (the oldest go first; each is about the database's size)",
        "Memories",
        minimum=1,
        maximum=1000,
    ),
    Setting(
        "categories",
        list,
        ["note", "anti-patterns", "patterns", "heuristics"],
        "Known categories (the MCP server accepts only these)",
        "Memories",
    ),
    # Agents
    Setting(
        "capture",
        bool,
        True,
        'Agents\' hooks propose what you state as lasting ("remember that …", "from now '
        'on …", a command that failed and then worked) for your review in the inbox',
        "Capture",
    ),
    Setting(
        "capture_auto_accept",
        list,
        [],
        "Rules whose captures become memories without review (comma-separated: "
        + ", ".join(CAPTURE_RULES)
        + ")",
        "Capture",
        choices=CAPTURE_RULES,
    ),
    Setting(
        "inject_origins",
        list,
        list(INJECTED_BY_DEFAULT),
        "Whose memories agents are given without asking, in the session's and each prompt's "
        "block (a search they make finds every memory, marked by who wrote it): person, "
        "capture (accepted by you), import, device (your approved devices), unknown (older "
        "memories whose source says nothing), agent, auto-capture (stored without review). "
        "A merge goes in only when all its writers do; a pinned memory always",
        "Capture",
        choices=INJECTABLE,
    ),
)

BY_KEY = {s.key: s for s in SETTINGS}
# What the settings dialog calls each setting, in plain words (the key is for the CLI).
LABELS = {
    "model_path": "Embedding model file",
    "query_prefix": "Text put before a query",
    "document_prefix": "Text put before a memory",
    "model_threads": "Cores the model may use",
    "model_gpu_layers": "Model layers on the GPU",
    "weight_vector": "How much meaning counts",
    "weight_keyword": "How much matching words count",
    "weight_prominence": "How much recent and often-used memories count",
    "min_similarity": "Least similarity for a match by meaning",
    "duplicate_threshold": "Similarity that makes a near-duplicate",
    "related_threshold": "Similarity that makes a related memory",
    "default_limit": "Results of a command-line search",
    "hotkey": "Key that opens the search",
    "clipboard_hotkey": "Key that remembers the clipboard",
    "clipboard_source": "Remember clipboard reads",
    "hotkey_backend": "How the key is registered",
    "popup_results": "Results in the search popup",
    "popup_preview": "Preview the selected memory",
    "popup_hide_on_blur": "Hide when another window is used",
    "popup_enter_pastes": "Enter pastes into the previous window",
    "paste_keys": "Paste with",
    "paste_by_window": "Paste keys by window class",
    "start_at_login": "Start at login",
    "mirror_dir": "Also write memories as Markdown to",
    "backup_every_hours": "Snapshot the database every (hours)",
    "sync_folder": "Sync folder",
    "sync_device_name": "This device's name",
    "backups_kept": "Snapshots kept",
    "categories": "Categories",
    "capture": "Capture from agents' prompts",
    "capture_auto_accept": "Store without review",
    "inject_origins": "Given to agents unasked",
}
# Keys whose change means another model (or the same one loaded differently).
MODEL_KEYS = ("model_path", "query_prefix", "document_prefix", "model_threads", "model_gpu_layers")


def _not_a_number(name: str) -> object:
    """NaN and Infinity in the file: no setting's value (that setting takes its default)."""
    return _NOT_A_NUMBER


_NOT_A_NUMBER = object()


@dataclass
class SettingsChange:
    """What `Engine.apply_settings` did: the keys that changed and the model's state after."""

    changed: list[str]
    model_reloaded: bool = False
    model_error: str | None = None
    model_name: str = ""


class Settings:
    """The user's settings: declared defaults overlaid with the settings file.

    One instance per process, owned by the Engine: front ends read values from it and
    change them only through `Engine.apply_settings` (the GUI through its worker).
    """

    def __init__(self, path: Path | None = None):
        self.path = path or paths.settings_path()
        self._values: dict[str, Any] = {}
        self._stamp: tuple[int, int] | None = None
        # Why the file could not be read, if it could not: it is then kept aside (never
        # overwritten) when a setting is next saved, and doctor and `mnemo settings` say so
        self.problem: str | None = None
        self.load()

    def _file_stamp(self) -> tuple[int, int] | None:
        try:
            st = self.path.stat()
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size)

    def load(self) -> None:
        """Read the settings file; a bad value falls back to its default with a warning."""
        values: dict[str, Any] = {}
        self._stamp = self._file_stamp()
        self.problem = None
        try:
            text = paths.read_regular(self.path).decode("utf-8")
            raw = json.loads(text, parse_constant=_not_a_number)
        except FileNotFoundError:
            raw = {}
        except (OSError, ValueError, RecursionError) as exc:
            why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
            self.problem = f"the settings file {self.path} cannot be read ({why[:120]})"
            log.warning("%s; using the defaults", self.problem)
            raw = {}
        if not isinstance(raw, dict):
            self.problem = f"the settings file {self.path} is not a JSON object"
            log.warning("%s; using the defaults", self.problem)
            raw = {}
        for key, value in raw.items():
            if key not in BY_KEY:
                continue
            if value is _NOT_A_NUMBER:
                log.warning("setting %s: NaN or Infinity is not a value; using the default", key)
                continue
            try:
                values[key] = BY_KEY[key].coerce(value)
            except InputError as exc:
                log.warning("%s; using the default", exc)
        self._values = values  # one assignment: readers on other threads see old or new

    def reload_if_changed(self) -> list[str]:
        """Re-read the file if another process changed it (mtime); the keys that changed."""
        if self._file_stamp() == self._stamp:
            return []
        before = self.as_dict()
        self.load()
        after = self.as_dict()
        return [k for k in after if after[k] != before[k]]

    def __getitem__(self, key: str) -> Any:
        if key == "model_path" and os.environ.get("MNEMO_MODEL"):
            return os.environ["MNEMO_MODEL"]
        return self._values.get(key, BY_KEY[key].default)

    def validate(self, values: dict[str, Any]) -> dict[str, Any]:
        """These values checked and converted (InputError names the first bad one)."""
        out = {}
        for key, value in values.items():
            if key not in BY_KEY:
                raise InputError(f"unknown setting {key!r}")
            out[key] = BY_KEY[key].coerce(value)
        return out

    def apply(self, values: dict[str, Any], save: bool = True) -> list[str]:
        """Validate all of `values`, then take them at once and save; the keys that changed.

        Nothing changes if any value is bad.
        """
        checked = self.validate(values)
        before = self.as_dict()
        merged = {**self._values, **checked}
        if save:
            self._write(merged)
        self._values = merged
        after = self.as_dict()
        return [k for k in after if after[k] != before[k]]

    def set(self, key: str, value: Any) -> None:
        """Validate and store one setting in memory (call `save` to write the file)."""
        self._values = {**self._values, **self.validate({key: value})}

    def as_dict(self) -> dict[str, Any]:
        """Every setting's current value."""
        return {s.key: self[s.key] for s in SETTINGS}

    def save(self) -> None:
        """Write the non-default settings atomically."""
        self._write(self._values)

    def _write(self, values: dict[str, Any]) -> None:
        data = {k: v for k, v in values.items() if v != BY_KEY[k].default}
        if self.problem is not None and self.path.exists():
            # What the user wrote is never overwritten: the unreadable file is kept beside
            aside = self.path.with_name(
                f"{self.path.name}.unreadable-{time.strftime('%Y%m%d-%H%M%S')}"
            )
            try:
                os.replace(self.path, aside)
            except OSError as exc:
                raise InputError(
                    f"settings not saved: {self.problem}, and it could not be kept aside "
                    f"({exc.strerror}); fix or move it first"
                ) from None
            log.warning("%s: kept as %s", self.problem, aside)
            self.problem = f"{self.problem}; it was kept as {aside}"
        try:
            text = json.dumps(data, indent=2, sort_keys=True) + "\n"
            paths.replace_file(self.path, lambda f: f.write(text))
        except OSError as exc:
            why = "the disk is full" if exc.errno == errno.ENOSPC else exc.strerror
            raise InputError(f"settings not saved to {self.path}: {why}") from None
        self._stamp = self._file_stamp()
