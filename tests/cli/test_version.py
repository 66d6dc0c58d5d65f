"""`mnemo --version`: Mnemo's version, the llama.cpp build and whether the GPU can be used."""

from __future__ import annotations

import subprocess
import sys

import llama_cpp

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
