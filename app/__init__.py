"""Mnemo: a local-first memory that finds things again by meaning."""

import os
import sys

# numpy's OpenBLAS threads spin after every matrix product and fight llama.cpp's threads
# for the cores: a query embedding right after a search took 15 ms instead of 2, and a 10k
# hybrid search with a core busy 34 / 64 ms p50 / p95 instead of 9 / 13 (issue 24). Our
# matrix-vector products are memory-bound, so one BLAS thread loses nothing. Set before
# numpy loads (every entry point imports this package first); a user's own value stands.
_USER_SET = "OPENBLAS_NUM_THREADS" in os.environ or "MKL_NUM_THREADS" in os.environ
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
if "numpy" in sys.modules and not _USER_SET:  # loaded before Mnemo (a host program, a bench)
    from threadpoolctl import threadpool_limits

    threadpool_limits(1, user_api="blas")

__version__ = "0.1.0"
