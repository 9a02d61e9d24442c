"""The user install path for OpenViking: built wheels, plain pip, setup against the real server, then use."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from ov_server import OpenVikingServer  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.slow


def _paxm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    uv = shutil.which("uv") or str(Path(sys.executable).parent / "uv")
    dist = tmp_path_factory.mktemp("dist")
    for package in ("paxm", "paxm-provider-sqlite", "paxm-provider-openviking"):
        subprocess.run([uv, "build", "--package", package, "--wheel", "-o", str(dist), "-q"], cwd=ROOT, check=True)
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "pip"), "install", "-q", "--find-links", str(dist)]
    subprocess.run([*pip, "paxm", "paxm-provider-openviking"], check=True, timeout=600)
    return venv / "bin" / "paxm"


def test_pip_install_setup_remember_recall_doctor(
    openviking: OpenVikingServer, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    paxm = str(_paxm(tmp_path_factory))
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
    }
    config = tmp_path / "config.yaml"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [paxm, "--config", str(config), *args], env=env, capture_output=True, text=True, timeout=120
        )

    listing = run("plugins", "--json")
    assert listing.returncode == 0, listing.stderr
    plugin = next(p for p in json.loads(listing.stdout)["plugins"] if p["name"] == "openviking")
    assert plugin["distribution"] == "paxm-provider-openviking" and plugin["providers"] == ["openviking"]

    refused = run("setup", "--yes", "--provider", "openviking", "--base-url", "http://127.0.0.1:9")
    assert refused.returncode != 0 and not config.exists(), refused.stdout + refused.stderr

    setup = run("setup", "--yes", "--provider", "openviking", "--user-id", "todd", "--base-url", openviking.url)
    assert setup.returncode == 0, setup.stdout + setup.stderr
    assert "ensured openviking" in setup.stdout
    stored = run("remember", "--text", "wheel install marker pelican openviking")
    assert stored.returncode == 0, stored.stderr
    recalled = run("recall", "--query", "wheel install marker pelican", "--json")
    assert recalled.returncode == 0, recalled.stderr
    hits = [h for h in json.loads(recalled.stdout)["hits"] if h["provider"] == "openviking"]
    assert hits and hits[0]["text"] == "wheel install marker pelican openviking", recalled.stdout
    doctor = run("config", "doctor", "--json")
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert any(r.get("provider") == "openviking" and r.get("ok") for r in json.loads(doctor.stdout)), doctor.stdout
