"""Single-threaded BLAS for this process, set before numpy is first imported."""

from __future__ import annotations

import os

# One query vector against the matrix is a memory-bound mat-vec: BLAS worker threads add
# nothing but wake-up and spin costs (13 ms instead of 0.2 ms for 3k vectors on a busy
# 2-core machine).  Only effective if numpy is not imported yet, so the embedder and
# the vector cache import this module first (neither is imported by the hook client).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
