"""Fixtures for the privacy tests: real git repositories with a linked worktree."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _hooks import daemon_cleanup  # noqa: E402, F401  (the passive tests' fixture)


def _git(cwd: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env, timeout=60)


@pytest.fixture
def repo(tmp_path: Path) -> dict[str, Path]:
    """``main`` (a git repository with ``src/deep``) and ``wt``, a linked worktree of it."""
    if shutil.which("git") is None:
        if os.environ.get("CI"):
            pytest.fail("git is required in CI")
        pytest.skip("git is not installed")
    main = tmp_path / "projects" / "main"
    (main / "src" / "deep").mkdir(parents=True)
    _git(main, "init", "-q", "-b", "trunk")
    (main / "README").write_text("x\n")
    _git(main, "add", "README")
    _git(main, "commit", "-q", "-m", "init")
    wt = tmp_path / "projects" / "wt"
    _git(main, "worktree", "add", "-q", "-b", "feature", str(wt))
    (wt / "pkg").mkdir()
    outside = tmp_path / "plain" / "dir"
    outside.mkdir(parents=True)
    return {"main": main, "src": main / "src" / "deep", "wt": wt, "wt_pkg": wt / "pkg", "outside": outside}
