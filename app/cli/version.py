"""What this installation runs on: Mnemo's version, the llama.cpp build and its devices.

`mnemo --version` prints it, so a bug report names the llama.cpp build and whether the
model can run on a GPU (Metal on macOS, CUDA/Vulkan builds elsewhere) or only the CPU.
"""

from __future__ import annotations

import contextlib
import ctypes
import platform
import sys
from dataclasses import dataclass, field
from pathlib import Path

from app import __version__

# ggml_backend_dev_type: which devices count as a GPU for offloading layers.
_GPU_TYPES = {1: "GPU", 2: "integrated GPU"}


@dataclass
class LlamaBuild:
    """The llama.cpp library llama-cpp-python loaded, or why it could not be loaded."""

    binding: str = ""  # llama-cpp-python's version
    ggml: str = ""  # ggml's version and the llama.cpp commit it was built from
    gpu_offload: bool = False
    devices: list[str] = field(default_factory=list)  # e.g. ["Metal (GPU)", "CPU"]
    error: str | None = None


def _ggml_library(package_dir: Path, stem: str):
    """One of the ggml shared libraries llama-cpp-python ships (already loaded by it)."""
    for pattern in (f"lib{stem}.so", f"lib{stem}.dylib", f"{stem}.dll", f"lib{stem}.*"):
        for path in sorted((package_dir / "lib").glob(pattern)):
            return ctypes.CDLL(str(path))
    return None


def llama_build() -> LlamaBuild:
    """Load llama.cpp (as a search would) and describe its build; never raises."""
    try:
        import llama_cpp

        # the package's __init__ may run only now (app.core.model.llama defers it)
        build = LlamaBuild(binding=getattr(llama_cpp, "__version__", "?"))
    except Exception as exc:  # a broken or missing native library: report, don't crash
        return LlamaBuild(error=f"cannot load llama.cpp: {exc}")
    with contextlib.suppress(Exception):  # an older binding without the function
        build.gpu_offload = bool(llama_cpp.llama_supports_gpu_offload())
    package_dir = Path(llama_cpp.__file__).resolve().parent
    try:
        base = _ggml_library(package_dir, "ggml-base")
        if base is not None:
            base.ggml_version.restype = ctypes.c_char_p
            base.ggml_commit.restype = ctypes.c_char_p
            commit = base.ggml_commit().decode().removesuffix("-dirty")
            build.ggml = f"ggml {base.ggml_version().decode()}, llama.cpp {commit}"
    except (AttributeError, OSError):
        pass
    try:
        ggml = _ggml_library(package_dir, "ggml")
        if ggml is not None:
            ggml.ggml_backend_dev_get.restype = ctypes.c_void_p
            ggml.ggml_backend_dev_get.argtypes = [ctypes.c_size_t]
            ggml.ggml_backend_dev_name.restype = ctypes.c_char_p
            ggml.ggml_backend_dev_name.argtypes = [ctypes.c_void_p]
            ggml.ggml_backend_dev_type.argtypes = [ctypes.c_void_p]
            for i in range(ggml.ggml_backend_dev_count()):
                dev = ggml.ggml_backend_dev_get(i)
                kind = _GPU_TYPES.get(ggml.ggml_backend_dev_type(dev), "")
                name = ggml.ggml_backend_dev_name(dev).decode()
                build.devices.append(f"{name} ({kind})" if kind else name)
    except (AttributeError, OSError):
        pass
    return build


def vector_scan() -> str:
    """Which kernel scans a large collection's vectors (NumKong's int8 SIMD, or float32)."""
    try:
        import numkong
    except Exception as exc:  # a platform without its wheel: the float32 scan still works
        return f"vector scan: float32 (NumKong unavailable: {exc})"
    try:
        caps = [name for name, on in numkong.get_capabilities().items() if on and name != "serial"]
    except Exception:  # noqa: BLE001 - only a description
        caps = []
    return (
        "vector scan: int8 in large collections (NumKong "
        f"{getattr(numkong, '__version__', '?')}, {', '.join(caps) or 'no SIMD'})"
    )


def blas() -> str:
    """numpy's BLAS library and its threads (one: see app/__init__.py)."""
    try:
        import numpy  # noqa: F401 - loaded to be described
        from threadpoolctl import threadpool_info

        found = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    except Exception as exc:  # noqa: BLE001 - only a description
        return f"BLAS: unknown ({type(exc).__name__})"
    if not found:
        return "BLAS: none found"
    return "BLAS: " + ", ".join(
        f"{i.get('internal_api', '?')} {i.get('version') or ''}".rstrip()
        + f", {i['num_threads']} thread{'s' if i['num_threads'] != 1 else ''}"
        for i in found
    )


def version_text() -> str:
    """The lines `mnemo --version` prints."""
    build = llama_build()
    lines = [
        f"mnemo {__version__}",
        f"Python {platform.python_version()} on {sys.platform} ({platform.machine()})"
        + (", bundled" if getattr(sys, "frozen", False) else ""),
    ]
    lines.append(vector_scan())
    lines.append(blas())
    if build.error:
        lines.append(f"llama.cpp: unavailable ({build.error})")
        return "\n".join(lines)
    lines.append(f"llama.cpp: {build.ggml or 'build unknown'} (llama-cpp-python {build.binding})")
    gpus = [d for d in build.devices if d.endswith("GPU)")]
    if build.gpu_offload and gpus:
        lines.append(f"GPU offload: available ({', '.join(gpus)})")
    elif build.gpu_offload:
        lines.append("GPU offload: built in, but no GPU found")
    else:
        lines.append("GPU offload: not available (this llama.cpp build runs on the CPU only)")
    return "\n".join(lines)
