"""GUI tests run real widgets offscreen, on a real engine worker with the real model."""

from __future__ import annotations

import json
import os
import tempfile

# Offscreen, on one screen of a laptop's size (the platform's own is 800 x 800).
_SCREEN = os.path.join(tempfile.mkdtemp(prefix="mnemo-screen-"), "screens.json")
with open(_SCREEN, "w") as _f:
    json.dump({"screens": [{"name": "laptop", "x": 0, "y": 0, "width": 1600, "height": 1000,
                            "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": 1}]}, _f)  # fmt: skip
os.environ.setdefault("QT_QPA_PLATFORM", f"offscreen:configfile={_SCREEN}")

import pytest  # noqa: E402

from app.core.engine import Engine  # noqa: E402
from app.core.settings import Settings  # noqa: E402
from app.gui.worker import Worker  # noqa: E402

MEMORIES = [
    ("k8s pod restart debugging: CrashLoopBackOff came from an OOM kill", "ops"),
    ("Parse dates with an explicit format string; guessing formats caused silent bugs", "code"),
    ("Grandma's lasagne uses nutmeg in the bechamel", "food"),
    ("The staging database password rotates monthly, ask the ops channel", "ops"),
]


@pytest.fixture(autouse=True)
def blockers_kept_alive(qtbot, monkeypatch, qapp):
    """The worker's signals come from the engine thread, so they are queued. One already
    queued when a `waitSignal` ends still reaches the blocker's slot after it disconnected
    (Qt keeps a queued call's slot object); PySide6 then called it on whatever object had
    taken the freed blocker's memory ("'Engine' object has no attribute
    'check_params_callback'", in about one run of the manager's tests in four, also before
    issue 23). Kept alive until the test's events are done, the late call is harmless."""
    kept = []
    for name in ("waitSignal", "waitSignals"):
        real = getattr(qtbot, name)

        def keeping(*args, _real=real, **kwargs):
            blocker = _real(*args, **kwargs)
            kept.append(blocker)
            return blocker

        monkeypatch.setattr(qtbot, name, keeping)
    yield
    qapp.processEvents()
    kept.clear()


@pytest.fixture
def seeded(embedder, mnemo_home):
    """A database with a few memories (one pinned); returns their ids by first word."""
    engine = Engine(embedder=embedder)
    ids = {}
    for text, tag in MEMORIES:
        ids[text.split()[0]] = engine.remember(text, tags=tag, force=True).memory.id
    engine.edit(ids["Grandma's"], pinned=True)
    engine.close()
    return ids


@pytest.fixture
def settings(mnemo_home):
    """The process's one Settings: the worker's engine owns it, the widgets read it."""
    return Settings()


@pytest.fixture
def worker(embedder, seeded, settings, qapp):
    w = Worker(lambda: Engine(settings=settings, embedder=embedder))
    yield w
    w.stop()


def close_app(app) -> None:
    """Stop a MnemoApp a test started: its hotkey, its instance socket, its engine thread."""
    if app.hotkey is not None:
        app.hotkey.unregister()
    if getattr(app, "server", None) is not None:
        app.server.close()
    app.worker.stop()


def settle(qtbot, worker, rounds: int = 2) -> None:
    """Wait until the work queued so far has run and its answers reached the GUI, instead of
    a fixed sleep: a no-op at the lowest priority runs after every call queued before it,
    and its answer arrives after theirs (queued signals keep their order). Each round also
    covers the calls those answers made (a write's refresh)."""
    from app.gui.worker import BACKGROUND

    for _ in range(rounds):
        done: list = []
        worker.call(lambda engine: None, done.append, priority=BACKGROUND)
        qtbot.waitUntil(lambda d=done: bool(d), timeout=15_000)
