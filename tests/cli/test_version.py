"""`mnemo --version`: Mnemo's version, the llama.cpp build and whether the GPU can be used."""

from __future__ import annotations

import os
import subprocess
import sys

import llama_cpp
import pytest

from app import __version__
from tests.conftest import REPO


def test_version_names_the_llama_cpp_build_and_gpu_offload():
    done = subprocess.run(
        [sys.executable, "-m", "app", "--version"], cwd=REPO, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"mnemo {__version__}"
    llama = next(line for line in lines if line.startswith("llama.cpp: "))
    # the commit llama-cpp-python was built from, read from ggml itself
    assert "ggml " in llama and f"llama-cpp-python {llama_cpp.__version__}" in llama, llama
    gpu = next(line for line in lines if line.startswith("GPU offload: "))
    if llama_cpp.llama_supports_gpu_offload():
        assert "not available" not in gpu
    else:  # this machine's CPU build
        assert gpu.startswith("GPU offload: not available"), gpu


def test_version_names_the_vector_scan_kernel():
    import numkong

    done = subprocess.run(
        [sys.executable, "-m", "app", "--version"], cwd=REPO, capture_output=True, text=True
    )
    scan = next(line for line in done.stdout.splitlines() if line.startswith("vector scan: "))
    assert scan.startswith(f"vector scan: int8 in large collections (NumKong {numkong.__version__}")


def test_version_says_numpy_runs_one_blas_thread():
    # Issue 24: two OpenBLAS threads wait on each other under load (10k hybrid p95 64 ms
    # against 13 with one). `mnemo --version` shows what this installation runs.
    done = subprocess.run(
        [sys.executable, "-m", "app", "--version"], cwd=REPO, capture_output=True, text=True
    )
    blas = next(line for line in done.stdout.splitlines() if line.startswith("BLAS: "))
    assert blas.endswith(", 1 thread"), blas


@pytest.mark.parametrize("first", ["numpy", "app"])
def test_one_blas_thread_whoever_loads_numpy_first(first):
    # A host program or a benchmark that imported numpy before Mnemo got numpy's default (a
    # thread per core): the environment is read only when OpenBLAS loads. A user's own
    # OPENBLAS_NUM_THREADS still stands.
    script = (
        f"import {first}, numpy, app\n"
        "from threadpoolctl import threadpool_info\n"
        "print([i['num_threads'] for i in threadpool_info() if i['user_api'] == 'blas'])\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    run = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, env=env
    )
    assert run.stdout.strip() == "[1]", run.stderr
    mine = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**env, "OPENBLAS_NUM_THREADS": "2"},
    )
    assert mine.stdout.strip() == "[2]", mine.stderr
