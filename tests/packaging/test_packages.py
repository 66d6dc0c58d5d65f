"""The Linux packages as a user gets them: `scripts/package` builds the wheel, the folder
bundle and the .deb from this checkout; the .deb is installed with apt-get into this machine
and used as a person would (CLI, meaning, MCP, the tray and the hotkey), then removed.

Slow (a few minutes: PyInstaller and a fresh virtual environment), run by CI like the rest.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from app import __version__
from tests.conftest import REPO
from tests.e2e import session

pytestmark = [pytest.mark.slow, pytest.mark.package]

MEANING = (
    ("Kubernetes pods restart when the liveness probe times out", "k8s"),
    ("Grandma's lasagne uses nutmeg in the bechamel sauce", "food"),
    ("Parse dates with an explicit format string, never guess", "code"),
)
# Shares no word with its answer (the Kubernetes note): only meaning finds it.
MEANING_QUERY = "container health check keeps rebooting"


def _sh(*args, env=None, timeout=900, check=True, **kw) -> subprocess.CompletedProcess:
    done = subprocess.run(
        args, env=env, capture_output=True, text=True, timeout=timeout, check=False, **kw
    )
    if check and done.returncode != 0:
        raise AssertionError(f"{args} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done


@pytest.fixture(scope="module")
def built() -> Path:
    """dist/ after `scripts/package` (wheel, bundle, .deb), built once for this module
    (MNEMO_TEST_PREBUILT=1 takes what dist/ holds, when iterating on these tests)."""
    if os.environ.get("MNEMO_TEST_PREBUILT") == "1":
        return REPO / "dist"
    started = time.monotonic()
    done = _sh(str(REPO / "scripts" / "package"), cwd=REPO, timeout=1800)
    print(done.stdout, f"built in {time.monotonic() - started:.0f} s")
    return REPO / "dist"


def _user_env(home: Path) -> dict:
    """A user's environment: no virtual environment, no checkout on the path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["PATH"] = ":".join(
        p for p in env.get("PATH", "").split(":") if ".venv" not in p and p != str(REPO)
    )
    env["MNEMO_HOME"] = str(home)
    env.pop("MNEMO_MODEL", None)
    return env


def _check_meaning(mnemo: list[str], env: dict, cwd: Path) -> None:
    """remember three notes, then a query sharing no word with its answer finds it first."""
    for text, tags in MEANING:
        _sh(*mnemo, "remember", text, "--tags", tags, env=env, cwd=cwd)
    found = _sh(*mnemo, "recall", MEANING_QUERY, "--json", env=env, cwd=cwd)
    results = json.loads(found.stdout)["results"]
    assert results and results[0]["text"] == MEANING[0][0], results
    # Time words are read by dateparser (its language data must have come along)
    today = _sh(*mnemo, "recall", "what did I note today", "--json", env=env, cwd=cwd)
    assert json.loads(today.stdout)["window"]["words"] == "today", today.stdout
    since = _sh(*mnemo, "list", "--since", "last week", "--json", env=env, cwd=cwd)
    assert len(json.loads(since.stdout)) == len(MEANING), since.stdout


def _check_encryption(mnemo: list[str], env: dict, cwd: Path, tmp_path: Path) -> None:
    """Encrypt with the key in a real Secret Service (gnome-keyring on a private D-Bus: the
    keyring backends came along), recall through it, snapshot; then the same home without
    the keyring says so in one line (issue 26)."""
    from tests.secret_service import has_secret_service, secret_service

    if not has_secret_service():
        pytest.skip("needs dbus-daemon and gnome-keyring-daemon (apt: dbus-daemon gnome-keyring)")
    with secret_service(tmp_path / "keyring") as bus:
        keyed = {**env, **bus}
        done = _sh(*mnemo, "encrypt", env=keyed, cwd=cwd)
        assert "kept in the OS keyring" in done.stdout, done.stdout
        found = _sh(*mnemo, "recall", MEANING_QUERY, "--json", env=keyed, cwd=cwd)
        assert json.loads(found.stdout)["results"][0]["text"] == MEANING[0][0]
        assert "Snapshot written (encrypted" in _sh(*mnemo, "backup", env=keyed, cwd=cwd).stdout
    db = Path(env["MNEMO_HOME"]) / "data" / "mnemo.db"
    assert db.read_bytes()[:16] != b"SQLite format 3\x00"
    locked = subprocess.run([*mnemo, "list"], env=env, cwd=cwd, capture_output=True, text=True)
    assert locked.returncode == 1 and "mnemo unlock" in locked.stderr, locked.stderr


def _check_sync(mnemo: list[str], env: dict, cwd: Path, tmp_path: Path) -> None:
    """Two homes sync through one folder with sealed files (issue 27: app.core.sync and
    the cipher came along)."""
    folder = tmp_path / "sync-folder"
    first = {**env, "MNEMO_HOME": str(tmp_path / "sync-a")}
    second = {**env, "MNEMO_HOME": str(tmp_path / "sync-b")}
    _sh(*mnemo, "remember", MEANING[0][0], env=first, cwd=cwd)
    _sh(*mnemo, "sync", "init", str(folder), "--encrypt", "--no-embed", env=first, cwd=cwd)
    key = _sh(*mnemo, "sync", "key", env=first, cwd=cwd).stdout.strip()
    _sh(*mnemo, "sync", "init", str(folder), "--key", key, env=second, cwd=cwd)
    listed = json.loads(_sh(*mnemo, "list", "--json", env=second, cwd=cwd).stdout)
    assert [m["text"] for m in listed] == [MEANING[0][0]], listed


def test_the_wheel_carries_the_model_and_works_in_a_fresh_environment(built, tmp_path):
    (wheel,) = built.glob(f"mnemo-{__version__}-py3-none-any.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "app/resources/models/all-MiniLM-L6-v2.F16.gguf" in names
    assert "app/resources/icons/mnemo.svg" in names
    # GIVEN a fresh virtual environment with the locked versions (llama-cpp-python comes
    # from pip's wheel cache, as pipx would take it), outside the checkout
    venv = tmp_path / "venv"
    _sh(sys.executable, "-m", "venv", str(venv))
    constraints = tmp_path / "constraints.txt"
    lock = (REPO / "requirements.lock").read_text().splitlines()
    constraints.write_text(
        "\n".join(line.rstrip(" \\") for line in lock if line and line[0].isalnum()) + "\n"
    )
    # llama.cpp compiled once per machine: scripts/setup's cached wheel, never a second build
    # inside pip (on a busy machine that took past the 900 s timeout)
    built_llama = REPO / ".venv" / ".mnemo-llama-wheel"
    links = []
    if built_llama.exists():
        links = ["--find-links", str(Path(built_llama.read_text().strip()).parent)]
    _sh(str(venv / "bin" / "pip"), "install", "-q", *links, "-c", str(constraints), str(wheel))
    env, cwd = _user_env(tmp_path / "home"), tmp_path
    mnemo = [str(venv / "bin" / "mnemo")]
    # THEN its mnemo runs from site-packages with the bundled model, nothing fetched
    version = _sh(*mnemo, "--version", env=env, cwd=cwd).stdout
    assert version.startswith(f"mnemo {__version__}") and "llama.cpp" in version
    assert "vector scan: int8" in version, version
    assert "BLAS: " in version and ", 1 thread" in version, version  # issue 24
    model = json.loads(_sh(*mnemo, "model", "info", "--json", env=env, cwd=cwd).stdout)
    assert str(venv) in model["path"] and model["default"], model
    _check_meaning(mnemo, env, cwd)
    _check_sync(mnemo, env, cwd, tmp_path)
    _check_encryption(mnemo, env, cwd, tmp_path)


def test_the_bundle_runs_without_python_or_the_checkout(built, tmp_path):
    bundle = built / "mnemo"
    assert (bundle / "mnemo").is_file()
    assert not list(bundle.rglob("*.py")), "the bundle ships no sources to compile"
    env = _user_env(tmp_path / "home")
    env["PATH"] = "/usr/bin:/bin"  # no python3 needed
    started = time.monotonic()
    version = _sh(str(bundle / "mnemo"), "--version", env=env, cwd=tmp_path).stdout
    print(f"bundle --version in {time.monotonic() - started:.2f} s")
    assert version.startswith(f"mnemo {__version__}"), version
    assert "vector scan: int8" in version, version  # NumKong's kernels came along
    assert "BLAS: " in version and ", 1 thread" in version, version  # issue 24
    _check_meaning([str(bundle / "mnemo")], env, tmp_path)
    _check_sync([str(bundle / "mnemo")], env, tmp_path, tmp_path)
    _check_encryption([str(bundle / "mnemo")], env, tmp_path, tmp_path)


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="x86-64 instruction sets")
def test_the_shipped_llama_cpp_runs_on_any_x86_64_v3_cpu(built):
    # A build for the packaging machine (-march=native) dies with SIGILL on a user's CPU
    # without AVX-512 or AMX: no instruction of the bundle's llama.cpp may use their registers.
    libraries = [p for p in (built / "mnemo").rglob("libggml*.so*") if not p.is_symlink()]
    assert any("ggml-cpu" in p.name for p in libraries), libraries
    for library in libraries:
        code = _sh("objdump", "-d", "--no-show-raw-insn", str(library)).stdout
        wide = [line for line in code.splitlines() if "%zmm" in line or "%tmm" in line]
        assert not wide, f"{library.name}: {len(wide)} AVX-512/AMX instructions, e.g. {wide[0]}"


def _apt(*args) -> subprocess.CompletedProcess:
    sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    return _sh(*sudo, "apt-get", *args, env=env, timeout=600)


@pytest.fixture(scope="module")
def installed(built):
    """The .deb installed with apt-get; removed again (and checked) by the last test."""
    if os.geteuid() != 0 and _sh("sudo", "-n", "true", check=False).returncode != 0:
        pytest.skip("installing the .deb needs root or password-less sudo")
    (deb,) = built.glob(f"mnemo_{__version__}_*.deb")
    control = _sh("dpkg-deb", "--field", str(deb)).stdout
    assert "libxcb-cursor0" in control or "libxcb" in control, control  # what Qt needs
    _apt("install", "-y", "-q", str(deb))
    files = _sh("dpkg", "-L", "mnemo").stdout.split()
    yield files
    if _sh("dpkg", "-s", "mnemo", check=False).returncode == 0:
        _apt("remove", "-y", "-q", "mnemo")


def test_the_deb_installs_a_launcher_an_icon_and_mnemo_on_the_path(installed, tmp_path):
    assert "/opt/mnemo/mnemo" in installed
    assert Path("/usr/bin/mnemo").resolve() == Path("/opt/mnemo/mnemo")
    launcher = Path("/usr/share/applications/mnemo.desktop").read_text()
    assert "Exec=/usr/bin/mnemo\n" in launcher and "Icon=mnemo\n" in launcher
    assert "Exec=/usr/bin/mnemo popup" in launcher and "Exec=/usr/bin/mnemo manager" in launcher
    assert Path("/usr/share/icons/hicolor/scalable/apps/mnemo.svg").is_file()
    env = _user_env(tmp_path / "home")
    version = _sh("mnemo", "--version", env=env, cwd=tmp_path).stdout
    assert version.startswith(f"mnemo {__version__}") and "GPU offload" in version, version
    _check_meaning(["mnemo"], env, tmp_path)


def test_the_installed_mcp_server_answers_an_mcp_client(installed, tmp_path):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = _user_env(tmp_path / "home")
    params = StdioServerParameters(command="/usr/bin/mnemo", args=["mcp"], env=env)

    async def talk() -> tuple[list[str], str]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            tools = [t.name for t in (await client.list_tools()).tools]
            stored = await client.call_tool(
                "store_memory",
                {
                    "name": "Liveness probe restarts",
                    "description": MEANING[0][0],
                    "reasoning": "seen in production",
                    "category": "note",
                },
            )
            assert not stored.is_error, stored.content
            found = await client.call_tool("search_memory", {"query": MEANING_QUERY})
            assert not found.is_error, found.content
            return tools, json.dumps([c.model_dump() for c in found.content])

    tools, found = asyncio.run(asyncio.wait_for(talk(), 120))
    assert {"store_memory", "search_memory"} <= set(tools), tools
    assert "liveness probe" in found, found


def test_the_installed_app_docks_in_the_tray_and_the_hotkey_opens_the_popup(installed, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    with session.desktop(home, ["/usr/bin/mnemo"], MEANING, cwd=tmp_path) as (env, _app):
        assert any('"Mnemo"' in line for line in session.tray_children(env))
        session.run(env, "xdotool", "key", "ctrl+alt+space")
        session.wait(lambda: session.visible_windows(env, "Mnemo search"), 10, "the popup")
        session.run(env, "xdotool", "type", "--delay", "30", "liveness probe")
        time.sleep(1.0)
        session.run(env, "xdotool", "key", "Return")
        copied = session.wait(
            lambda: session.run(env, "xclip", "-o", "-selection", "clipboard", check=False).stdout,
            10,
            "the clipboard",
        )
        assert copied == MEANING[0][0]
        session.run(env, "/usr/bin/mnemo", "quit", check=False)


def test_apt_get_remove_leaves_nothing_outside_the_users_data(installed):
    # Runs last in this module (pytest keeps file order): the app and CLI have run from
    # /opt/mnemo, so anything they wrote there would be left behind.
    _apt("remove", "-y", "-q", "mnemo")
    left = [f for f in installed if Path(f).exists() and not Path(f).is_dir()]
    assert left == [], left
    assert not Path("/opt/mnemo").exists(), list(Path("/opt/mnemo").rglob("*"))[:20]
    assert shutil.which("mnemo", path="/usr/bin:/bin") is None
