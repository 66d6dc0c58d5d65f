"""A database that cannot be written (issue 40, item 13): reading and searching work, as
the README says; writes are refused in one line. The read-only folder is a real read-only
bind mount (a mount namespace), since the tests run as root, whom file modes do not stop."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import REPO, run_cli


def _can_mount() -> bool:
    if not shutil.which("unshare") or sys.platform != "linux":
        return False
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", "mount --bind /tmp /tmp && mount -o remount,ro,bind /tmp"],
        capture_output=True,
    )
    return done.returncode == 0


@pytest.mark.skipif(not _can_mount(), reason="needs a mount namespace (root, unshare)")
def test_a_database_on_a_read_only_mount_is_searched_and_refuses_writes(mnemo_home):
    """Before: every command said "cannot create the folder … Read-only file system" or
    "cannot open the database", `recall` included."""
    assert run_cli("remember", "The ferry leaves at nine from pier four.").returncode == 0
    data = mnemo_home / "data"
    data.chmod(0o755)  # (an older, wider folder: narrowing it is not possible there)

    def read_only(*args: str) -> subprocess.CompletedProcess:
        script = f'mount --bind {data} {data} && mount -o remount,ro,bind {data} && exec "$@"'
        return subprocess.run(
            ["unshare", "-m", "sh", "-c", script, "sh", sys.executable, "-m", "app", *args],
            capture_output=True,
            cwd=REPO,
            env={**os.environ},
            timeout=120,
        )

    found = read_only("recall", "ferry", "--json")
    assert found.returncode == 0, found.stderr.decode()
    assert b"pier four" in found.stdout
    assert read_only("list").returncode == 0
    refused = read_only("remember", "Another note.")
    err = refused.stderr.decode()
    assert refused.returncode == 1 and "read-only" in err and "Traceback" not in err, err


@pytest.mark.skipif(not _can_mount(), reason="needs a mount namespace (root, unshare)")
def test_a_read_only_database_whose_last_changes_are_in_its_wal_says_so(mnemo_home):
    """Review of issue 40: read as it is (immutable), a database left with committed
    changes in its WAL (the app killed, then the disk mounted read-only) showed none of
    them, without a word."""
    kill = (
        "import os\n"
        "from app.core.engine import Engine\n"
        "from tests.word_model import WordModel\n"
        "e = Engine(embedder=WordModel())\n"
        "for n in range(5):\n"
        "    e.remember(f'note {n} about the quiet lighthouse keeper', embed=False)\n"
        "os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", kill], cwd=REPO, env={**os.environ}, check=True)
    data = mnemo_home / "data"
    assert (data / "mnemo.db-wal").stat().st_size > 0
    (data / "mnemo.db-shm").unlink()
    script = f'mount --bind {data} {data} && mount -o remount,ro,bind {data} && exec "$@"'
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", script, "sh", sys.executable, "-m", "app", "list"],
        capture_output=True,
        cwd=REPO,
        env={**os.environ},
        timeout=120,
    )
    err = done.stderr.decode()
    assert done.returncode == 1 and "not yet folded" in err and "Traceback" not in err, err
    assert run_cli("list").stdout.decode().count("lighthouse keeper") == 5  # all there
