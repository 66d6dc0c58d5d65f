"""Crash safety and concurrency with real processes on one real database file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import apsw
import pytest

from app.core import paths
from app.core.storage import transfer
from tests.conftest import REPO

N_IMPORT = 5000


def _count(db_path) -> int:
    if not db_path.exists():
        return 0
    conn = apsw.Connection(str(db_path), flags=apsw.SQLITE_OPEN_READONLY)
    conn.set_busy_timeout(5000)
    try:
        return conn.execute("SELECT count(*) FROM memories").fetchall()[0][0]
    except apsw.SQLError:  # tables not created yet
        return 0
    finally:
        conn.close()


@pytest.mark.slow
def test_sigkill_during_import_loses_nothing_and_rerun_has_no_duplicates(mnemo_home, tmp_path):
    source = tmp_path / "big.jsonl"
    lines = [
        {
            "text": f"Imported memory {i}: " + ("lorem ipsum dolor sit amet " * 40),
            "title": f"Memory {i}",
            "tags": ["bulk", f"t{i % 7}"],
        }
        for i in range(N_IMPORT)
    ]
    source.write_text("\n".join(json.dumps(x) for x in lines))
    db_path = paths.database_path()
    proc = subprocess.Popen(
        [sys.executable, "-m", "app", "import", str(source), "--no-embed"],
        cwd=REPO,
        env=os.environ.copy(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while _count(db_path) < transfer.BATCH and time.monotonic() < deadline:
        time.sleep(0.002)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    killed_at = _count(db_path)
    assert 0 < killed_at < N_IMPORT, "the import finished before it could be killed"

    conn = apsw.Connection(str(db_path))
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    conn.execute("INSERT INTO memories_fts(memories_fts, rank) VALUES('integrity-check', 1)")
    assert killed_at % transfer.BATCH == 0  # whole batches only: no half-written memory
    by_title = {x["title"]: x for x in lines}
    for title, text, tags in conn.execute("SELECT title, text, tags FROM memories"):
        assert by_title[title]["text"].strip() == text  # stored text is trimmed
        assert json.loads(tags) == by_title[title]["tags"]
    conn.close()

    rerun = subprocess.run(
        [sys.executable, "-m", "app", "import", str(source), "--no-embed"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert rerun.returncode == 0, rerun.stderr
    assert (
        f"Imported {N_IMPORT - killed_at} new memories ({killed_at} already known)" in rerun.stdout
    )
    conn = apsw.Connection(str(db_path))
    assert conn.execute(
        "SELECT count(*), count(DISTINCT content_hash) FROM memories"
    ).fetchall() == [(N_IMPORT, N_IMPORT)]


WRITER = """
import sys
from app.core.engine import Engine
worker = int(sys.argv[1])
engine = Engine()
for i in range(250):
    engine.remember(f"Worker {worker} note {i}: the build of module {i * 7 + worker} passed",
                    source="cli", force=True)
engine.close()
"""


@pytest.mark.slow
def test_four_processes_storing_250_each_lose_nothing(mnemo_home):
    from app.core.engine import Engine
    from app.core.settings import Settings

    Engine().close()  # create and migrate the database first, like an installed app would
    settings = Settings()
    settings.set("model_threads", 1)  # four processes on two cores: don't oversubscribe
    settings.save()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(w)],
            cwd=REPO,
            env=os.environ.copy(),
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(4)
    ]
    errors = [p.communicate(timeout=600)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], errors
    assert not any("locked" in e for e in errors)
    conn = apsw.Connection(str(paths.database_path()))
    assert conn.execute("SELECT count(*), count(DISTINCT id) FROM memories").fetchall() == [
        (1000, 1000)
    ]
    assert conn.execute("SELECT count(DISTINCT memory_id) FROM embeddings").fetchall() == [(1000,)]
