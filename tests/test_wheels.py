"""The user install path: wheels built from this repo installed with plain pip into fresh venvs (one per set)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def _paxm(*requirements: str) -> str:
    """The ``paxm`` of a venv holding ``requirements`` (one per set per session, see wheel_venv)."""
    from paxm_contracttest.servers import wheel_venv

    return str(wheel_venv(ROOT, requirements) / "bin" / "paxm")


def _env(home: Path) -> dict[str, str]:
    from paxm_contracttest.servers import user_env

    return user_env(home)


@pytest.mark.prefetch_wheel_venv("paxm")
def test_pip_install_paxm_gives_the_remember_recall_loop(tmp_path: Path) -> None:
    paxm = _paxm("paxm")
    env = _env(tmp_path)
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
    listing = subprocess.run([paxm, "plugins", "--json"], env=env, capture_output=True, text=True, check=True)
    sqlite = next(p for p in json.loads(listing.stdout)["plugins"] if p["name"] == "sqlite")
    assert sqlite["distribution"] == "paxm-provider-sqlite" and sqlite["providers"] == ["sqlite"]
    assert (tmp_path / "data" / "paxm" / "memory.sqlite").exists()
    # the MCP server runs from the wheel without the MCP SDK (a test dependency only)
    recall = {"name": "paxm_recall", "arguments": {"query": "zebra-42"}}
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": recall},
    ]
    served = subprocess.run(
        [paxm, "mcp", "serve"],
        input="".join(json.dumps(r) + "\n" for r in requests),
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert served.returncode == 0, served.stderr
    init, found = (json.loads(line) for line in served.stdout.splitlines())
    assert init["result"]["serverInfo"]["name"] == "paxm" and found["result"]["isError"] is False
    python = Path(paxm).with_name("python")
    no_sdk = subprocess.run([str(python), "-c", "import mcp"], capture_output=True, text=True)
    assert no_sdk.returncode != 0 and "ModuleNotFoundError" in no_sdk.stderr


@pytest.mark.prefetch_wheel_venv("paxm", "paxm-provider-zep")
def test_pip_install_paxm_and_the_zep_provider(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "providers" / "paxm-provider-zep" / "tests"))
    from zep_fake import ZepFake

    paxm = _paxm("paxm", "paxm-provider-zep")
    env = _env(tmp_path)
    listing = subprocess.run([paxm, "plugins", "--json"], env=env, capture_output=True, text=True, check=True)
    zep_plugin = next(p for p in json.loads(listing.stdout)["plugins"] if p["name"] == "zep")
    assert zep_plugin["distribution"] == "paxm-provider-zep" and zep_plugin["providers"] == ["zep"]
    fake = ZepFake()
    try:
        config = tmp_path / "config.yaml"
        setup = subprocess.run(
            [
                paxm,
                "--config",
                str(config),
                "setup",
                "--yes",
                "--provider",
                "zep",
                "--provider",
                "sqlite",
                "--user-id",
                "todd",
                "--base-url",
                fake.base_url,
            ],
            env={**env, "PAXM_API_KEY": fake.state.api_key},
            capture_output=True,
            text=True,
        )
        assert setup.returncode == 0, setup.stderr
        doctor = subprocess.run(
            [paxm, "--config", str(config), "config", "doctor", "--json"], env=env, capture_output=True, text=True
        )
        assert doctor.returncode == 0, doctor.stderr
        assert {"provider": "zep", "required": True, "ok": True} in json.loads(doctor.stdout)
    finally:
        fake.close()


@pytest.mark.prefetch_wheel_venv("paxm")
def test_pip_installed_dashboard_serves_its_page_and_assets(tmp_path: Path) -> None:
    import re

    import httpx

    paxm = _paxm("paxm")
    process = subprocess.Popen(
        [paxm, "dashboard", "--addr", "127.0.0.1:0"], env=_env(tmp_path), stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        match = re.search(r"(http://127\.0\.0\.1:\d+)/\?token=(\S+)", process.stdout.readline())
        assert match, "paxm dashboard printed no URL"
        base, token = match.groups()
        headers = {"x-paxm-token": token}
        page = httpx.get(base + "/", headers=headers)
        assert page.status_code == 200 and "/static/app.js" in page.text
        for asset in ("app.js", "style.css", "favicon.svg"):  # shipped in the wheel, no build step
            assert httpx.get(f"{base}/static/{asset}", headers=headers).status_code == 200, asset
        assert httpx.get(base + "/api/summary", headers=headers).json()["totals"] == {"events": 0}
    finally:
        process.send_signal(2)
        process.wait(timeout=15)
        if process.stdout is not None:
            process.stdout.close()
