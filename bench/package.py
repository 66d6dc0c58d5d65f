"""The Linux packages: their sizes, and how fast the bundled binary starts next to the
checkout's virtual environment (its peer in the same run), quiet and with one core busy.

    scripts/package                       # builds dist/ first
    .venv/bin/python -m bench.package     # writes docs/benchmarks.md

Cold start here is the whole process, as a user meets it: `--version` (Python and llama.cpp
loaded), a one-shot `recall` (model loaded, one query), and the desktop app from launch
until its icon is docked in a real tray (Xvfb + openbox + trayer).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from bench.report import busy_core, record

REPO = Path(__file__).resolve().parent.parent
DIST = REPO / "dist"
NOTES = (
    "Kubernetes pods restart when the liveness probe times out",
    "Grandma's lasagne uses nutmeg in the bechamel sauce",
    "Parse dates with an explicit format string, never guess",
)


def _size(path: Path) -> str:
    if path.is_dir():
        # PyInstaller links some libraries twice by name: count each file once
        total = sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())
    else:
        total = path.stat().st_size
    return f"{total / 1e6:.0f} MB"


def _env(home: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env.update(MNEMO_HOME=str(home), **extra)
    env.pop("MNEMO_MODEL", None)
    return env


def _timed(cmd: list[str], env: dict, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(cmd, env=env, cwd="/", check=True, capture_output=True, timeout=120)
        times.append((time.perf_counter() - started) * 1000)
    return times


def _docked(env: dict) -> bool:
    """Whether a window named Mnemo sits in trayer's panel (xwininfo, ~5 ms a look)."""
    tree = subprocess.run(
        ["xwininfo", "-root", "-tree"], env=env, capture_output=True, text=True
    ).stdout.splitlines()
    panel = next((i for i, line in enumerate(tree) if '("panel" "trayer")' in line), None)
    if panel is None:
        return False
    depth = len(tree[panel]) - len(tree[panel].lstrip())
    for line in tree[panel + 1 :]:
        if len(line) - len(line.lstrip()) <= depth:
            return False
        if '"Mnemo"' in line:
            return True
    return False


def _tray_start(mnemo: str, home: Path, runs: int) -> list[float]:
    """ms from launching the app to its icon docked in trayer (watched with xwininfo)."""
    display = next(n for n in range(420, 600) if not Path(f"/tmp/.X{n}-lock").exists())
    env = _env(home, DISPLAY=f":{display}", QT_QPA_PLATFORM="xcb")
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    xvfb = subprocess.Popen(["Xvfb", f":{display}", "-screen", "0", "1280x800x24"], **quiet)
    helpers = [xvfb]
    times = []
    try:
        while not Path(f"/tmp/.X11-unix/X{display}").exists():
            time.sleep(0.05)
        helpers.append(subprocess.Popen(["openbox", "--sm-disable"], env=env, **quiet))
        helpers.append(subprocess.Popen(["trayer", "--edge", "top"], env=env, **quiet))
        time.sleep(1.0)
        for _ in range(runs):
            started = time.perf_counter()
            app = subprocess.Popen([mnemo], env=env, cwd="/", **quiet)
            try:
                while not _docked(env):
                    if time.perf_counter() - started > 60:
                        raise RuntimeError(f"{mnemo} did not dock in the tray within 60 s")
                    time.sleep(0.01)
                times.append((time.perf_counter() - started) * 1000)
            finally:
                subprocess.run([mnemo, "quit"], env=env, cwd="/", capture_output=True)
                try:
                    app.wait(10)
                except subprocess.TimeoutExpired:
                    app.kill()
                while _docked(env):
                    time.sleep(0.05)
    finally:
        for proc in reversed(helpers):
            proc.terminate()
            proc.wait(10)
    return times


def main() -> None:
    bundle = DIST / "mnemo" / "mnemo"
    wheels = sorted(DIST.glob("mnemo-*.whl"))
    debs = sorted(DIST.glob("mnemo_*.deb"))
    if not bundle.exists() or not wheels or not debs:
        raise SystemExit("build the packages first: scripts/package")
    sizes = [
        ("wheel (with the 46 MB model)", _size(wheels[-1])),
        ("folder bundle dist/mnemo/", _size(bundle.parent)),
        (".deb (gzip)", _size(debs[-1])),
    ]
    print("\n".join(f"{what}: {size}" for what, size in sizes))
    peers = {"bundle": str(bundle), "venv (peer)": str(REPO / ".venv" / "bin" / "mnemo")}
    rows = []
    gui = shutil.which("Xvfb") and shutil.which("trayer") and shutil.which("openbox")
    for load in ("quiet", "one core busy"):
        for name, mnemo in peers.items():
            with tempfile.TemporaryDirectory() as tmp:
                home = Path(tmp)
                env = _env(home)
                for note in NOTES:
                    subprocess.run([mnemo, "remember", note], env=env, cwd="/", check=True,
                                   capture_output=True)  # fmt: skip
                query = [mnemo, "recall", "container health check keeps rebooting", "--no-track"]
                busy = busy_core() if load != "quiet" else contextlib.nullcontext()
                with busy:
                    version = _timed([mnemo, "--version"], env, 7)
                    recall = _timed(query, env, 7)
                    tray = _tray_start(mnemo, home, 3) if gui else []
            for what, times in (("--version", version), ("recall (one shot)", recall),
                                ("launch → icon docked in the tray", tray)):  # fmt: skip
                if times:
                    med = statistics.median(times)
                    rows.append((what, name, load, f"{med:.0f}", f"{max(times):.0f}"))
                    print(f"{what:36} {name:12} {load:14} {med:6.0f} ms (max {max(times):.0f})")
    size_line = "; ".join(f"{what} {size}" for what, size in sizes)
    record(
        "Packages: size and cold start",
        ["what", "program", "load", "median ms", "max ms"],
        rows,
        note=f"Sizes: {size_line}. Whole processes started from `/` with a fresh MNEMO_HOME "
        "of 3 memories; 7 runs (tray: 3, under Xvfb + openbox + trayer). The peer is the "
        "same code from the checkout's `.venv`, in the same run.",
    )


if __name__ == "__main__":
    main()
