"""The daemon's import path, cached so the next daemon can start without ``site``.

``site`` costs a daemon start about 10 ms CPU: it scans every site directory, reads each
``.pth`` file (a uv workspace has one per package), and looks for ``sitecustomize`` and
``usercustomize`` along the whole path.  A daemon started the usual way (``-P -m``) writes
the ``sys.path`` that produced, and the stamps that would make it stale, to
``<hooks>/paxm-hook.path`` (0600) after its first answer; the hook client
(:func:`paxm_core.passive.client_core.daemon_command`) then starts the next daemon with
``-S`` and that path, when every stamp still holds.

The cache is written only when skipping ``site`` changes nothing but the time it takes: no
``.pth`` line runs code (``import ...``), no ``sitecustomize``/``usercustomize`` was found, no
path entry holds a newline or a tab, and the interpreter honours the environment.  A stamp
is the modification time of each site directory (installing, removing or editable-installing
a package adds or removes entries there, which changes it), the interpreter, and the
environment variables ``site`` and the path depend on.

Format (UTF-8 text, one record a line, fields separated by tabs)::

    paxm-daemon-path 1
    exe     <sys.executable>
    env     <NAME>  <value, or "-" when unset>   (one per name in ENV_KEYS)
    stamp   <site directory>  <st_mtime_ns, or "-" when absent>
    prefix  <sys.prefix>  <sys.exec_prefix>
    path    <one sys.path entry>                  (in order)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["ENV_KEYS", "MAGIC", "PATH_NAME", "path_cache_text", "write_path_cache"]

#: the cache file's name inside the hooks directory
PATH_NAME = "paxm-hook.path"
#: its first line (the version changes whenever the format does)
MAGIC = "paxm-daemon-path 1"
#: environment variables the interpreter's path depends on (``-S`` keeps PYTHONPATH's effect,
#: so a different value, like a different user site, must not reuse the cache)
ENV_KEYS = ("PYTHONPATH", "PYTHONHOME", "PYTHONNOUSERSITE", "PYTHONUSERBASE", "PYTHONPLATLIBDIR", "HOME")


def _site_dirs() -> list[str]:
    import site

    dirs = list(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        dirs.append(site.getusersitepackages())
    return dirs


def _runs_code(directory: str) -> bool:
    """Whether a ``.pth`` file in ``directory`` has a line ``site`` would execute."""
    try:
        names = sorted(name for name in os.listdir(directory) if name.endswith(".pth"))
    except OSError:
        return False
    for name in names:
        try:
            text = Path(directory, name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return True  # unreadable: cannot tell, so do not skip it
        if any(line.startswith(("import ", "import\t")) for line in text.splitlines()):
            return True
    return False


def _mtime(directory: str) -> str:
    try:
        return str(os.stat(directory).st_mtime_ns)
    except OSError:
        return "-"


def path_cache_text() -> str | None:
    """The cache for this interpreter, or ``None`` when starting without ``site`` would differ."""
    if sys.flags.no_site or sys.flags.ignore_environment or sys.flags.isolated:
        return None  # not started the usual way: its path is not the one to replay
    if "sitecustomize" in sys.modules or "usercustomize" in sys.modules:
        return None
    entries = [sys.executable, sys.prefix, sys.exec_prefix, *sys.path]
    if any("\n" in entry or "\t" in entry or "\r" in entry for entry in entries) or not sys.executable:
        return None
    dirs = _site_dirs()
    if any(_runs_code(directory) for directory in dirs):
        return None
    env = {name: os.environ.get(name, "-") for name in ENV_KEYS}
    if any("\n" in value or "\r" in value for value in env.values()):
        return None
    lines = [MAGIC, f"exe\t{sys.executable}"]
    lines += [f"env\t{name}\t{value}" for name, value in env.items()]
    lines += [f"stamp\t{directory}\t{_mtime(directory)}" for directory in dirs]
    lines.append(f"prefix\t{sys.prefix}\t{sys.exec_prefix}")
    lines += [f"path\t{entry}" for entry in sys.path]
    return "\n".join(lines) + "\n"


def write_path_cache(hooks_dir: Path) -> bool:
    """Write (or refresh) ``<hooks_dir>/paxm-hook.path``; ``False`` when there is nothing to cache.

    Never raises: a daemon that cannot write it simply starts with ``site`` next time.
    """
    if sys.flags.no_site:
        return False  # started from the cache (or by hand with -S): leave the cache as it is
    try:
        text = path_cache_text()
        target = hooks_dir / PATH_NAME
        if text is None:
            target.unlink(missing_ok=True)  # a cache from an earlier, different set-up must go
            return False
        try:
            if target.read_text(encoding="utf-8") == text:
                return True
        except OSError:
            pass
        from paxm_core.atomic import write_atomic

        write_atomic(target, text, mode=0o600, durable=False)  # a lost cache only costs ``site`` once
        return True
    except Exception:
        return False
