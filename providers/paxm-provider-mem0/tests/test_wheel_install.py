"""The user install path: ``pip install paxm paxm-provider-mem0`` from wheels built from this repo,
then ``paxm setup --yes --provider mem0`` against the real-engine test server, then remember /
recall / config doctor."""

from __future__ import annotations

import json
import subprocess
import zipfile
from pathlib import Path

import pytest
from mem0_fixtures import Mem0Server

ROOT = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheels() -> Path:
    from paxm_contracttest.servers import workspace_wheels

    return workspace_wheels(ROOT)  # one build shared with the other wheel-install suites


@pytest.mark.prefetch_wheel_venv("paxm", "paxm-provider-mem0")
def test_pip_install_then_setup_remember_recall_doctor(wheels: Path, mem0_server: Mem0Server, tmp_path: Path) -> None:
    [core] = wheels.glob("paxm-0.1.0-*.whl")
    with zipfile.ZipFile(core) as whl:
        metadata = whl.read("paxm-0.1.0.dist-info/METADATA").decode()
    assert "Provides-Extra: mem0" in metadata and "paxm-provider-mem0==0.1.0; extra == 'mem0'" in metadata

    from paxm_contracttest.servers import user_env, wheel_venv

    paxm = str(wheel_venv(ROOT, ("paxm", "paxm-provider-mem0")) / "bin" / "paxm")  # plain pip, built early
    env = user_env(tmp_path)

    def run(*args: str, extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [paxm, *args], env={**env, **(extra or {})}, capture_output=True, text=True, timeout=120, cwd=tmp_path
        )

    listing = run("plugins", "--json")
    mem0 = next(p for p in json.loads(listing.stdout)["plugins"] if p["name"] == "mem0")
    assert mem0["distribution"] == "paxm-provider-mem0" and mem0["providers"] == ["mem0", "mem0-cloud"]
    user = mem0_server.fresh_user()
    setup = run(
        "setup", "--yes", "--provider", "mem0", "--base-url", mem0_server.base_url, "--user-id", user,
        extra={"PAXM_API_KEY": mem0_server.api_key},
    )  # fmt: skip
    assert setup.returncode == 0, setup.stderr
    assert f"ensured mem0 (mem0) target: user_id={user} (exists)" in setup.stdout
    stored = run("remember", "--text", "wheel install probe: the staging cluster is called heron")
    assert stored.returncode == 0, stored.stderr
    assert stored.stdout.startswith("stored memory: mem0/")
    recalled = run("recall", "--query", "what is the staging cluster called", "--json")
    assert recalled.returncode == 0, recalled.stderr
    hits = json.loads(recalled.stdout)["hits"]
    assert hits and hits[0]["provider"] == "mem0" and "heron" in hits[0]["text"]
    doctor = run("config", "doctor", "--json")
    assert doctor.returncode == 0, doctor.stderr
    assert {"provider": "mem0", "required": True, "ok": True} in json.loads(doctor.stdout)
    everything = setup.stdout + setup.stderr + stored.stdout + recalled.stdout + doctor.stdout
    assert mem0_server.api_key not in everything
