"""The user install path: wheels built from this repo, ``pip install paxm`` into a plain venv, remember + recall."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    uv = shutil.which("uv") or str(Path(sys.executable).parent / "uv")
    dist = tmp_path_factory.mktemp("dist")
    subprocess.run([uv, "build", "--all-packages", "--wheel", "-o", str(dist), "-q"], cwd=ROOT, check=True)
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = venv / "bin" / "pip"
    subprocess.run([str(pip), "install", "-q", "--find-links", str(dist), "paxm"], check=True)
    return venv


def test_pip_install_paxm_gives_the_remember_recall_loop(wheel_venv: Path, tmp_path: Path) -> None:
    paxm = str(wheel_venv / "bin" / "paxm")
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
    }
    stored = subprocess.run(
        [paxm, "remember", "--text", "wheel install marker zebra-42"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert stored.returncode == 0, stored.stderr
    assert stored.stdout.startswith("stored memory: sqlite/")
    recalled = subprocess.run(
        [paxm, "recall", "--query", "zebra-42", "--json"], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert recalled.returncode == 0, recalled.stderr
    hits = json.loads(recalled.stdout)["hits"]
    assert hits and hits[0]["provider"] == "sqlite" and "zebra-42" in hits[0]["text"]
    plugins = json.loads(
        subprocess.run([paxm, "plugins", "--json"], env=env, capture_output=True, text=True, check=True).stdout
    )
    sqlite = next(p for p in plugins["plugins"] if p["name"] == "sqlite")
    assert sqlite["distribution"] == "paxm-provider-sqlite" and sqlite["providers"] == ["sqlite"]
    assert (tmp_path / "data" / "paxm" / "memory.sqlite").exists()
