"""Dashboard test helpers (loaded by conftest as ``_dashboard_helpers``).

A store filled through the real runtime, and a real ``paxm dashboard`` process.

The activity is generated the way a user makes it: ``paxm remember``/``paxm recall`` as
subprocesses, agent turns through the real hook client (which starts the real hook daemon), and
capture deliveries to the real SQLite provider plus a JSON-RPC provider whose command does not
exist, so its deliveries die (``capture_queue.max_attempts: 1``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from paxm_contracttest.fakes import home_env

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "paxm_core" / "hooks" / "client.py"


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAXM_")}
    env.update(home_env(home))
    return env


def paxm(config: Path, *args: str, stdin: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run the real CLI against ``config``."""
    return subprocess.run(
        [sys.executable, "-c", "from paxm_core.cli import main; main()", "--config", str(config), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=_env(config.parent / "home"),
    )


def write_config(directory: Path, *, previews: bool, state_dir: Path | None = None, queue: Path | None = None) -> Path:
    """A default config with codex enabled, SQLite in ``directory`` and a provider that always fails."""
    from paxm_core.config import load_config, save_config
    from paxm_core.config.model import ProviderConfig, RouteConfig

    directory.mkdir(parents=True, exist_ok=True)
    (directory / "home").mkdir(exist_ok=True)
    path = directory / "config.yaml"
    config = load_config(path)
    config.identity.user_id = "alice"
    config.providers["sqlite"].path = str(directory / "memory.sqlite")
    # The command does not exist: every delivery to "broken" fails and, with one attempt, dies.
    config.providers["broken"] = ProviderConfig(type="jsonrpc", enabled=True, command=str(directory / "no-such-cmd"))
    config.write_profiles["ltm"].providers.append(RouteConfig(name="broken", required=False, timeout=5.0))
    config.capture_queue.max_attempts = 1
    config.telemetry.capture_query_preview = previews
    if state_dir is not None:
        config.telemetry.dir = str(state_dir)
    if queue is not None:
        config.capture_queue.path = str(queue)
    config.agents["codex"].enabled = True
    config.agents["codex"].agent_id = "codex-alice"
    for profile in ("passive", "passive_initial"):  # a loaded CI box must not miss the hook budget
        for route in config.recall_profiles[profile].providers:
            route.timeout = 10.0
    save_config(config, path)
    return path


def hook(config: Path, event: str, payload: dict[str, Any]) -> subprocess.CompletedProcess[bytes]:
    """Run the real hook client exactly as an integration installs it."""
    argv = [sys.executable, "-I", "-S", str(CLIENT), "--config", str(config), "--target", "codex", "--event", event]
    return subprocess.run(
        argv, input=json.dumps(payload).encode(), capture_output=True, timeout=30, env=_env(config.parent / "home")
    )


def mcp_recall(config: Path, query: str) -> None:
    """One ``paxm_recall`` through the real MCP server over stdio (telemetry source ``mcp``)."""
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", "from paxm_core.cli import main; main()", "--config", str(config), "mcp", "serve"],
        env=_env(config.parent / "home"),
    )

    async def main() -> None:
        with open(config.parent / "mcp-stderr.log", "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as client:
                await client.initialize()
                result = await client.call_tool("paxm_recall", {"query": query})
                assert not result.is_error, result

    anyio.run(main)


def _start_daemon(config: Path) -> subprocess.Popen[bytes]:
    """Start the real hook daemon and wait until it answers, so every hook reaches it.

    (A hook that finds no daemon parks its payload in the inbox and starts one; that path is
    tested with the hooks.  Here each turn must be recalled and recorded the same way.)
    """
    from paxm_core.api.errors import PaxmError
    from paxm_core.passive.control import send_control

    process = subprocess.Popen(
        [sys.executable, "-c", "from paxm_core.cli import main; main()", "--config", str(config), "__hook-daemon"]
        + ["--idle-timeout", "10m"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=_env(config.parent / "home"),
    )
    deadline = time.monotonic() + 90  # a loaded 2-core CI box can take a while to import providers
    while True:
        try:
            if send_control(config, "status") is not None:
                return process
        except PaxmError:
            pass  # lock held, socket not ready yet
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            process.wait(timeout=10)
            raise AssertionError("the hook daemon did not start")
        time.sleep(0.2)


def _stop_daemon(config: Path, process: subprocess.Popen[bytes]) -> None:
    """Shut the daemon down (it flushes the queue first) and reap it."""
    paxm(config, "__hook-control", "--shutdown", timeout=60)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


@dataclass
class Store:
    """A config whose telemetry, capture queue and memory hold generated activity."""

    config: Path
    directory: Path


def record_past_days(config: Path, days: int) -> None:
    """Record active recalls and writes on each of the ``days`` previous days (oldest first).

    Through the real telemetry recorder, with the event time set in the past: the runtime only
    records "now", and the overview's per-day chart needs more than one day to show anything.
    """
    from datetime import UTC, datetime, timedelta

    from paxm_core.config import load_config
    from paxm_core.telemetry import Telemetry

    telemetry = Telemetry(load_config(config))
    now = datetime.now(UTC)
    for back in range(days, 0, -1):
        day = now - timedelta(days=back)
        for i in range(2 + (back * 3) % 5):
            hits = (i + back) % 3
            telemetry.record(
                {
                    "time": day.replace(hour=9, minute=i),
                    "kind": "recall",
                    "source": "cli",
                    "command": "recall",
                    "profile": "default",
                    "duration_ms": 4 + i,
                    "hit_count": hits,
                    "provider_recalls": {"sqlite": 1},
                    "provider_hits": {"sqlite": hits} if hits else {},
                    "query": f"earlier question {back}-{i}",
                }
            )
        for i in range(1 + back % 3):
            telemetry.record(
                {
                    "time": day.replace(hour=10, minute=i),
                    "kind": "remember",
                    "source": "cli",
                    "command": "remember",
                    "profile": "default",
                    "duration_ms": 6,
                    "item_count": 1,
                    "ref_count": 1,
                    "provider_writes": {"sqlite": 1},
                    "provider_refs": {"sqlite": 1},
                }
            )


def generate_activity(directory: Path, *, past_days: int = 0) -> Store:
    """Fill a fresh store through the real CLI, hook client, hook daemon and capture queue.

    ``past_days`` first records some activity on earlier days (see :func:`record_past_days`).
    """
    config = write_config(directory, previews=True)
    if past_days:
        record_past_days(config, past_days)
    work = directory / "work"
    (work / "billing").mkdir(parents=True)
    (work / "ingest").mkdir(parents=True)
    for args in (
        ("remember", "--global", "--text", "The billing service deploys on Tuesdays after the freeze review."),
        ("remember", "--global", "--text", "Ingest uses the NATS JetStream queue library.", "--profile", "stm"),
        ("remember", "--global", "--text", "Postgres row level security guards the billing tables."),
        ("recall", "--query", "when does billing deploy"),
        ("recall", "--query", "zebra migration paperwork"),
    ):
        result = paxm(config, *args)
        assert result.returncode == 0, result.stderr
    mcp_recall(config, "postgres security for billing")
    failed = paxm(config, "recall", "--query", "billing", "--profile", "no-such-profile")
    assert failed.returncode == 1  # recorded as an error event
    turns = (
        ("sess-billing", work / "billing", "When do we deploy the billing service?", "On Tuesdays, after review."),
        ("sess-ingest", work / "ingest", "Which queue library does ingest use?", "NATS JetStream."),
    )
    daemon = _start_daemon(config)
    try:
        for session, cwd, prompt, answer in turns:
            base = {"session_id": session, "cwd": str(cwd)}
            for event, payload in (
                ("user_input", {**base, "prompt": prompt}),
                ("turn_end", {**base, "prompt": prompt, "last_assistant_message": answer}),
            ):
                result = hook(config, event, payload)
                assert result.returncode == 0, result.stderr
    finally:
        _stop_daemon(config, daemon)  # shutdown flushes: deliveries to sqlite succeed, to "broken" die
    status = json.loads(paxm(config, "queue", "status", "--json").stdout)
    assert status["deliveries"].get("dead", 0) >= 2, status
    assert status["deliveries"].get("delivered", 0) >= 2, status
    return Store(config=config, directory=directory)


@dataclass
class Dashboard:
    """A running ``paxm dashboard`` subprocess."""

    process: subprocess.Popen[str]
    url: str
    base: str
    token: str
    port: int

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        headers = {"x-paxm-token": self.token, **kwargs.pop("headers", {})}
        return httpx.get(self.base + path, headers=headers, timeout=30, **kwargs)

    def post(self, path: str, **kwargs: Any) -> httpx.Response:
        headers = {"x-paxm-token": self.token, **kwargs.pop("headers", {})}
        return httpx.post(self.base + path, headers=headers, timeout=30, **kwargs)


_URL = re.compile(r"paxm dashboard: (http://(\S+?):(\d+)/\?token=(\S+))")


def start_dashboard(config: Path, *extra: str, env: dict[str, str] | None = None) -> Dashboard:
    """Start ``paxm dashboard --addr 127.0.0.1:0`` and wait for the URL it prints."""
    process = subprocess.Popen(
        [sys.executable, "-c", "from paxm_core.cli import main; main()", "--config", str(config), "dashboard"]
        + ["--addr", "127.0.0.1:0", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**_env(config.parent / "home"), **(env or {})},
    )
    assert process.stdout is not None
    line = process.stdout.readline()  # printed once the server accepts connections
    match = _URL.search(line)
    if match is None:
        process.kill()
        _, err = process.communicate(timeout=10)
        raise AssertionError(f"no URL from paxm dashboard: {line!r} {err}")
    url, host, port, token = match.groups()
    return Dashboard(process, url, f"http://{host}:{port}", token, int(port))


def stop_dashboard(dashboard: Dashboard) -> None:
    """Stop the server the way a user does (Ctrl-C / SIGINT) and reap it."""
    if dashboard.process.poll() is None:
        dashboard.process.send_signal(2)
        try:
            dashboard.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            dashboard.process.kill()
            dashboard.process.wait(timeout=10)
    for pipe in (dashboard.process.stdout, dashboard.process.stderr):
        if pipe is not None:
            pipe.close()
