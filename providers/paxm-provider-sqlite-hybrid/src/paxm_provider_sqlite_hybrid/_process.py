"""Process-wide tuning: single-threaded BLAS, set before numpy is first imported, and giving the
heap pages a large load freed back to the system."""

from __future__ import annotations

import ctypes
import ctypes.util
import os

__all__ = ["trim"]

# One query vector against the matrix is a memory-bound mat-vec: BLAS worker threads add
# nothing but wake-up and spin costs (13 ms instead of 0.2 ms for 3k vectors on a busy
# 2-core machine).  Only effective if numpy is not imported yet, so the embedder and
# the vector cache import this module first (neither is imported by the hook client).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")


def trim() -> None:
    """Return free heap pages to the system (glibc ``malloc_trim``; a no-op elsewhere).

    glibc's ``malloc`` keeps freed memory in its arenas for reuse, and a load that allocates and
    frees a lot (ONNX Runtime folding the model's int8 weights into float32 ones and dropping the
    copies; the vector cache's row batches) leaves the process ~60 MB larger than what it holds.
    """
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim(ctypes.c_size_t(0))
    except (OSError, AttributeError):
        pass
