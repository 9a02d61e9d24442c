"""The real-engine Mem0 test server as a subprocess: start, stop, read its request log, inject failures."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from mem0_venv import mem0_python

from paxm_core.api.types import MemoryOrigin, MemoryScope

HERE = Path(__file__).resolve().parent

# The attribution the wire tests' items carry (both providers), and the paxm_* metadata it is sent as.
CREATED = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
ORIGIN = MemoryOrigin("todd", "codex-todd", "s1", "t1")
SCOPE = MemoryScope("personal", "todd")
ATTRIBUTION_METADATA = {
    "paxm_created_at": "2026-11-30T09:00:00Z",
    "paxm_user_id": "todd",
    "paxm_agent_id": "codex-todd",
    "paxm_session_id": "s1",
    "paxm_turn_id": "t1",
    "paxm_scope_type": "personal",
    "paxm_scope_id": "todd",
}


@dataclass
class Mem0Server:
    """The shim process: its URL, API key, request log and test controls."""

    base_url: str
    api_key: str
    log: Path
    process: subprocess.Popen[str]
    stderr: Any

    def requests(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]

    def mark(self) -> int:
        """The number of requests so far, to read only later ones with ``since``."""
        return len(self.requests())

    def since(self, mark: int) -> list[dict[str, Any]]:
        return self.requests()[mark:]

    def fail_next(self, path: str, status: int, body: Any = None, method: str = "POST") -> None:
        payload = {"path": path, "status": status, "method": method, "times": 1}
        if body is not None:
            payload["body"] = body
        httpx.post(f"{self.base_url}/_shim/fail", json=payload, timeout=5).raise_for_status()

    def legacy_search(self, on: bool) -> None:
        httpx.post(f"{self.base_url}/_shim/mode", json={"legacy_search": on}, timeout=5).raise_for_status()

    @staticmethod
    def fresh_user() -> str:
        return "todd-" + uuid.uuid4().hex[:10]


def start_mem0_server(workdir: Path, api_key: str = "") -> Mem0Server:
    """Start the shim from the cached mem0 venv and wait until it serves (a few seconds)."""
    python = mem0_python()
    workdir.mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(workdir / "home"),
        "MEM0_DIR": str(workdir / "mem0dir"),
        "MEM0_TELEMETRY": "false",
        "HF_HUB_OFFLINE": "1",
        "PYTHONUNBUFFERED": "1",
        "PAXM_SHIM_API_KEY": api_key,
    }
    stderr = open(workdir / "server.stderr", "w")  # noqa: SIM115 - lives as long as the process
    process = subprocess.Popen(
        [str(python), str(HERE / "mem0_shim.py"), "--workdir", str(workdir), "--log", str(workdir / "requests.jsonl")],
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        env=env,
        start_new_session=True,
    )
    assert process.stdout is not None
    started = time.monotonic()
    # "ready <port>" once the engine is built (about 3 s); never wait forever on a hung start
    ready, _, _ = select.select([process.stdout], [], [], 120)
    line = process.stdout.readline() if ready else ""
    if not line.startswith("ready "):
        process.kill()
        process.wait(timeout=10)
        process.stdout.close()
        stderr.close()
        log = (workdir / "server.stderr").read_text()[-2000:]
        pytest.fail(f"the mem0 test server did not start within {time.monotonic() - started:.1f}s:\n{log}")
    port = int(line.split()[1])
    return Mem0Server(f"http://127.0.0.1:{port}", api_key, workdir / "requests.jsonl", process, stderr)


def stop_mem0_server(server: Mem0Server) -> None:
    if server.process.poll() is None:
        os.killpg(server.process.pid, signal.SIGTERM)
        try:
            server.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(server.process.pid, signal.SIGKILL)
            server.process.wait(timeout=10)
    if server.process.stdout is not None:
        server.process.stdout.close()
    server.stderr.close()
