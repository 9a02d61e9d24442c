"""Give the heap pages a large load freed back to the system.

glibc's ``malloc`` keeps freed memory in its arenas for reuse, and a load that allocates and
frees a lot (ONNX Runtime folding the model's int8 weights into float32 ones and dropping the
copies; the vector cache's row batches) leaves the process ~60 MB larger than what it holds.
``malloc_trim(0)`` returns those pages; elsewhere than glibc it is not there and nothing is done.
"""

from __future__ import annotations

import ctypes
import ctypes.util

__all__ = ["trim"]


def trim() -> None:
    """Return free heap pages to the system (glibc ``malloc_trim``; a no-op elsewhere)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim(ctypes.c_size_t(0))
    except (OSError, AttributeError):
        pass
