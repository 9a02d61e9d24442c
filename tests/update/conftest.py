"""A local package index with two releases of paxm's wheels, served on 127.0.0.1.

The workspace sources of three distributions (``paxm``, ``paxm-provider-sqlite``,
``paxm-integration-claude-code``) are copied twice to a temp dir, given the versions ``OLD`` and
``NEW`` (their ``==`` pins on each other too), and built with ``uv build``.  Their third-party
dependencies are downloaded once with pip into the same directory, so every install in these
tests resolves from the local index alone.  ``python -m http.server`` serves it as a PEP 503
simple index.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OLD = "7.0.0"
NEW = "7.1.0"
#: workspace directory of each distribution the index carries
DISTS = {
    "paxm": ".",
    "paxm-provider-sqlite": "providers/paxm-provider-sqlite",
    "paxm-integration-claude-code": "integrations/paxm-integration-claude-code",
}
_PIN = re.compile(r'"(paxm(?:-[a-z-]+)?)==[^"]*"')


@dataclass(frozen=True)
class LocalIndex:
    """The served index and the environment variables a test's installers need."""

    url: str
    wheels: Path
    caches: dict[str, str]


def _set_versions(tree: Path, version: str) -> None:
    for rel in DISTS.values():
        pyproject = tree / rel / "pyproject.toml"
        text = re.sub(r'(?m)^version = "[^"]*"', f'version = "{version}"', pyproject.read_text(), count=1)
        pyproject.write_text(_PIN.sub(lambda m: f'"{m.group(1)}=={version}"', text))
    init = tree / "paxm_core" / "__init__.py"
    init.write_text(re.sub(r'(?m)^__version__ = "[^"]*"', f'__version__ = "{version}"', init.read_text()))


def _copy_sources(dest: Path) -> None:
    shutil.copy(ROOT / "pyproject.toml", dest / "pyproject.toml")
    shutil.copy(ROOT / "README.md", dest / "README.md")
    ignore = shutil.ignore_patterns("__pycache__", "tests", "*.pyc")
    shutil.copytree(ROOT / "paxm_core", dest / "paxm_core", ignore=ignore)
    for rel in DISTS.values():
        if rel != ".":
            shutil.copytree(ROOT / rel, dest / rel, ignore=ignore)


def _build(version: str, work: Path, out: Path) -> None:
    tree = work / f"src-{version}"
    tree.mkdir()
    _copy_sources(tree)
    _set_versions(tree, version)
    uv = shutil.which("uv") or "uv"
    for rel in DISTS.values():
        subprocess.run(
            [uv, "build", "--wheel", "--no-sources", "-q", "-o", str(out), str(tree / rel)],
            check=True,
            cwd=tree,
            timeout=600,
        )


def _download_dependencies(out: Path, env: dict[str, str], work: Path) -> None:
    """The third-party wheels the OLD and NEW releases need, next to them (pip's cache keeps it quick)."""
    subprocess.run([sys.executable, "-m", "venv", str(work / "dl")], check=True, timeout=300)
    reqs = [f"{name}=={version}" for version in (OLD, NEW) for name in DISTS]
    for version in (OLD, NEW):
        subprocess.run(
            [str(work / "dl" / "bin" / "pip"), "download", "-q", "--only-binary", ":all:", "-d", str(out)]
            + ["--find-links", str(out), *(r for r in reqs if r.endswith(version))],
            check=True,
            env=env,
            timeout=600,
        )


def _write_simple_index(wheels: Path, root: Path) -> None:
    from paxm_core.cli.update_index import canonical_name

    groups: dict[str, list[str]] = {}
    for wheel in sorted(wheels.glob("*.whl")):
        groups.setdefault(canonical_name(wheel.name.split("-")[0]), []).append(wheel.name)
    simple = root / "simple"
    for name, files in groups.items():
        (simple / name).mkdir(parents=True)
        links = "".join(f'<a href="../../wheels/{f}">{f}</a><br>\n' for f in files)
        (simple / name / "index.html").write_text(f"<!DOCTYPE html><html><body>\n{links}</body></html>\n")
    listing = "".join(f'<a href="{n}/">{n}</a><br>\n' for n in sorted(groups))
    (simple / "index.html").write_text(f"<!DOCTYPE html><html><body>\n{listing}</body></html>\n")


@pytest.fixture(scope="session")
def local_index() -> Iterator[LocalIndex]:
    """Build both releases, fetch the dependencies, serve ``<root>/simple`` on 127.0.0.1."""
    work = Path(tempfile.mkdtemp(prefix="paxm-update-index-"))
    real_home = Path(os.path.expanduser("~"))
    uv_cache = subprocess.run(["uv", "cache", "dir"], capture_output=True, text=True, check=True).stdout.strip()
    caches = {"PIP_CACHE_DIR": str(real_home / ".cache" / "pip"), "UV_CACHE_DIR": uv_cache}
    wheels = work / "root" / "wheels"
    wheels.mkdir(parents=True)
    try:
        for version in (OLD, NEW):
            _build(version, work, wheels)
        _download_dependencies(wheels, {**os.environ, **caches}, work)
        _write_simple_index(wheels, work / "root")
        server = subprocess.Popen(
            [sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", str(work / "root")],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            assert server.stdout is not None
            line = server.stdout.readline()
            port = int(re.search(r"port (\d+)", line).group(1))  # type: ignore[union-attr]
            yield LocalIndex(f"http://127.0.0.1:{port}/simple", wheels, caches)
        finally:
            server.terminate()
            server.wait(timeout=10)
            if server.stdout is not None:
                server.stdout.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
