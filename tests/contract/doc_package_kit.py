"""A third-party package built from the files of a docs page, as its reader would: each fenced
block with a ``title="..."`` is a file.  The paxm distributions come from wheels built from this
checkout, everything else from uv's cache pinned to the workspace's versions (no network needed;
with an incomplete cache uv falls back to the package index)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
UV = shutil.which("uv")
# Read at import, before the autouse fixture points HOME at a temp dir: uv's cache lives there.
UV_CACHE = os.environ.get("UV_CACHE_DIR") or str(
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "uv"
)


def doc_files(doc: Path) -> dict[str, str]:
    """The page's titled code blocks: path -> text."""
    return dict(re.findall(r'```\w+ title="([^"]+)"\n(.*?)```', doc.read_text(), flags=re.S))


def run(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run a command outside this test run's uv project and pytest environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "VIRTUAL_ENV", "UV_PROJECT"))}
    env["UV_CACHE_DIR"] = UV_CACHE
    return subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


def installed_project(doc: Path, name: str, tmp_path: Path) -> Path:
    """Write the page's files under ``tmp_path``, install project ``name`` with its test extra
    into its own ``.venv``; returns the project directory."""
    assert UV is not None, "uv is required"
    wheels = tmp_path / "wheels"
    for package in ("paxm", "paxm-provider-sqlite", "paxm-contracttest"):
        built = run(UV, "build", "--offline", "--wheel", "--package", package, "--out-dir", str(wheels), cwd=ROOT)
        assert built.returncode == 0, built.stderr
    frozen = run(UV, "pip", "freeze", "--python", sys.executable, cwd=ROOT)
    constraints = tmp_path / "constraints.txt"
    constraints.write_text(
        "\n".join(line for line in frozen.stdout.splitlines() if not line.startswith(("-e", "paxm")))
    )
    work = tmp_path / "third-party"
    for path_name, body in doc_files(doc).items():
        path = work / path_name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
    project = work / name
    venv = project / ".venv"
    created = run(UV, "venv", "-q", str(venv), "--python", sys.executable, cwd=project)
    assert created.returncode == 0, created.stderr
    base = [UV, "pip", "install", "-q", "--python", str(venv / "bin" / "python"), "--find-links", str(wheels)]
    offline = run(*base, "--offline", "-c", str(constraints), "-e", ".[test]", cwd=project)
    if offline.returncode != 0:  # cache incomplete: let uv use the package index
        online = run(*base, "-e", ".[test]", cwd=project)
        assert online.returncode == 0, offline.stderr + online.stderr
    return project


def fails_once_broken(project: Path, module: Path, good: str, bad: str) -> str:
    """Put ``bad`` where ``module`` has ``good`` and run the project's tests again: they fail; their output."""
    source = module.read_text()
    assert good in source
    module.write_text(source.replace(good, bad))
    failed = run(str(project / ".venv" / "bin" / "pytest"), "-q", "-p", "no:cacheprovider", cwd=project)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    return failed.stdout
