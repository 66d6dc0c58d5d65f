"""Mnemo: a local-first memory that finds things again by meaning."""

import os

# numpy's OpenBLAS threads spin after every matrix product and fight llama.cpp's threads
# for the cores: a query embedding right after a search took 15 ms instead of 2. Our
# matrix-vector products are memory-bound, so one BLAS thread loses nothing.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

__version__ = "0.1.0"
