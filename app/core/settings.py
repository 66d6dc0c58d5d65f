"""Settings declared once as data; the settings file, the GUI dialog and CLI read this."""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.core import paths
from app.core.errors import InputError

log = logging.getLogger(__name__)


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
                f"setting {self.key}: {value!r} is not a {self.type.__name__}"
            ) from None
        if self.choices and value not in self.choices:
            raise InputError(f"setting {self.key}: choose one of {', '.join(self.choices)}")
        if self.minimum is not None and value < self.minimum:
            raise InputError(f"setting {self.key}: must be at least {self.minimum}")
        if self.maximum is not None and value > self.maximum:
            raise InputError(f"setting {self.key}: must be at most {self.maximum}")
        return value


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
    # Search
    Setting(
        "weight_vector",
        float,
        0.4,
        "Hybrid weight of meaning (cosine similarity)",
        "Search",
        minimum=0.0,
        maximum=1.0,
    ),
    Setting(
        "weight_keyword",
        float,
        0.3,
        "Hybrid weight of keywords (FTS5 BM25)",
        "Search",
        minimum=0.0,
        maximum=1.0,
    ),
    Setting(
        "weight_prominence",
        float,
        0.3,
        "Hybrid weight of prominence (recency, confidence, observations, recalls)",
        "Search",
        minimum=0.0,
        maximum=1.0,
    ),
    Setting(
        "min_similarity",
        float,
        0.15,
        "Cosine similarity below which a memory is not relevant by meaning",
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
    Setting(
        "hotkey", str, "Ctrl+Alt+Space", "Global hotkey that opens the recall popup", "Desktop"
    ),
    Setting(
        "popup_results", int, 8, "Results shown in the popup", "Desktop", minimum=1, maximum=50
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
        "categories",
        list,
        ["note", "anti-patterns", "patterns", "heuristics"],
        "Known categories (the MCP server accepts only these)",
        "Memories",
    ),
)

BY_KEY = {s.key: s for s in SETTINGS}


class Settings:
    """The user's settings: declared defaults overlaid with the settings file."""

    def __init__(self, path: Path | None = None):
        self.path = path or paths.settings_path()
        self._values: dict[str, Any] = {}
        self.load()

    def load(self) -> None:
        """Read the settings file; a bad value falls back to its default with a warning."""
        self._values = {}
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:
            log.warning("ignoring unreadable settings file %s: %s", self.path, exc)
            return
        if not isinstance(raw, dict):
            log.warning("ignoring settings file %s: not an object", self.path)
            return
        for key, value in raw.items():
            if key not in BY_KEY:
                continue
            try:
                self._values[key] = BY_KEY[key].coerce(value)
            except InputError as exc:
                log.warning("%s; using the default", exc)

    def __getitem__(self, key: str) -> Any:
        if key == "model_path" and os.environ.get("MNEMO_MODEL"):
            return os.environ["MNEMO_MODEL"]
        return self._values.get(key, BY_KEY[key].default)

    def set(self, key: str, value: Any) -> None:
        """Validate and store one setting (call `save` to write the file)."""
        if key not in BY_KEY:
            raise InputError(f"unknown setting {key!r}")
        self._values[key] = BY_KEY[key].coerce(value)

    def as_dict(self) -> dict[str, Any]:
        """Every setting's current value."""
        return {s.key: self[s.key] for s in SETTINGS}

    def save(self) -> None:
        """Write the non-default settings atomically."""
        data = {k: v for k, v in self._values.items() if v != BY_KEY[k].default}
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        tmp.replace(self.path)
