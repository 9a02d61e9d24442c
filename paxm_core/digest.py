"""``sha256_hex``: a SHA-256 digest without importing :mod:`hashlib`.

:mod:`hashlib` loads OpenSSL's ``libcrypto`` on import (about 11M instructions, 5% of a cold
``paxm recall``), though the CLI session id and the telemetry query hash only need SHA-256,
which CPython also builds in as a small C module (``_sha256`` in 3.11, ``_sha2`` from 3.12).
The digest is the same; a build without those modules falls back to :mod:`hashlib`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

__all__ = ["sha256_hex"]


class _Hash(Protocol):
    def hexdigest(self) -> str: ...


def _constructor() -> Callable[[bytes], _Hash]:
    try:
        from _sha256 import sha256  # type: ignore[import-not-found,unused-ignore]  # CPython 3.11
    except ImportError:
        try:
            from _sha2 import sha256  # type: ignore[import-not-found,no-redef,unused-ignore]  # CPython 3.12+
        except ImportError:
            from hashlib import sha256  # type: ignore[assignment,unused-ignore]
    return sha256  # type: ignore[no-any-return,unused-ignore]


_SHA256 = _constructor()


def sha256_hex(data: bytes) -> str:
    """The hex SHA-256 digest of ``data``."""
    return _SHA256(data).hexdigest()
