"""A real git working tree for the freshness tests."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

TAX = "def calculate_tax(amount):\n    return amount * 0.2\n\n\nclass TaxTable:\n    pass\n"


def git(root: Path, *args: str) -> str:
    """Run git in ``root`` (a fixed identity, no user config) and return its stdout."""
    env = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(root), "PATH": "/usr/bin:/bin"}
    ident = ["-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"]
    done = subprocess.run(["git", *ident, *args], cwd=root, env=env, capture_output=True, text=True, check=True)
    return done.stdout


def commit_all(root: Path, message: str) -> str:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD").strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """``src/billing/tax.py`` (``calculate_tax``, ``TaxTable``) and ``README.md``, committed."""
    root = tmp_path / "repo"
    (root / "src" / "billing").mkdir(parents=True)
    (root / "src" / "billing" / "tax.py").write_text(TAX)
    (root / "README.md").write_text("# project\n")
    git(root, "init", "-q", "-b", "main")
    commit_all(root, "initial")
    return root
