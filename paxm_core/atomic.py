"""One atomic file write for every file paxm replaces whole (config, settings, state, metrics).

Write to a private temp file in the target's directory, then ``os.replace`` it over the target:
readers see the old file or the new one, never half of either.  The temp file is created 0600
(``mkstemp``), so a secret is never world-readable, not even briefly, whatever the umask.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["write_atomic"]


def write_atomic(path: str | os.PathLike[str], data: bytes | str, *, mode: int = 0o600, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` atomically; the file ends up with permissions ``mode``.

    :param durable: ``fsync`` before the rename (config and native settings files); files that
        are rewritten on every hook call and can be rebuilt (metrics, session state) pass
        ``False``, which costs them a torn write only on power loss, never a partial file.
    :raises OSError: the directory is not writable (the temp file is removed).
    """
    import tempfile  # here: importing it (shutil, random) would weigh on every paxm process start

    target = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, target)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
