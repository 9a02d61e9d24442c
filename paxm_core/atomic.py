"""One atomic file write for every file paxm replaces whole (config, settings, state, metrics).

Write to a private temp file in the target's directory, then ``os.replace`` it over the target:
readers see the old file or the new one, never half of either.  The temp file is created 0600
(``O_CREAT | O_EXCL | O_NOFOLLOW``, a random name), so a secret is never world-readable, not even
briefly, whatever the umask, and its mode is set through its descriptor.  Nothing is written
through a link: a symbolic link at the target is replaced by the new file, its target untouched.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["write_atomic"]


def _refuse_special(target: Path) -> None:
    """Replacing a device or FIFO node (``/dev/null`` as a config path, run as root) would break it for everyone."""
    import stat

    from paxm_core.private_files import UnsafePathError, unsafe_file_reason

    try:
        info = target.lstat()
    except FileNotFoundError:
        return
    if not (stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode)):
        raise UnsafePathError(f"{target} {unsafe_file_reason(info)}")


def _create_temp(target: Path) -> tuple[int, str]:
    """A new file beside ``target``, mode 0600, open for writing: what ``tempfile.mkstemp``
    does, without importing ``tempfile`` (shutil, random, bz2, lzma) into every process that
    saves metrics or session state.  ``O_EXCL | O_NOFOLLOW``: never an existing file or a link."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(100):
        name = os.path.join(target.parent, f".{target.name}.{os.urandom(6).hex()}.tmp")
        try:
            return os.open(name, flags, 0o600), name
        except FileExistsError:
            continue
    raise FileExistsError(f"no unused temporary name beside {target}")


def write_atomic(path: str | os.PathLike[str], data: bytes | str, *, mode: int = 0o600, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` atomically; the file ends up with permissions ``mode``.

    :param durable: ``fsync`` before the rename (config and native settings files); files that
        are rewritten on every hook call and can be rebuilt (metrics, session state) pass
        ``False``, which costs them a torn write only on power loss, never a partial file.
    :raises OSError: the directory is not writable (the temp file is removed).
    :raises UnsafePathError: ``path`` is a directory, FIFO, socket or device (never replaced).
    """
    target = Path(path)
    _refuse_special(target)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp_name = _create_temp(target)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fchmod(handle.fileno(), mode)  # the file this call created, never one reached by name
            if durable:
                os.fsync(handle.fileno())
        os.replace(tmp_name, target)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
