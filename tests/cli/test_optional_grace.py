"""A hung optional provider does not hold the active path (issue 42 item 8).

A required SQLite provider and an optional JSON-RPC plugin that hangs for 60 s, with the
default 10 s route timeout and 20 s deadline: ``paxm recall`` (CLI and MCP) returns once SQLite
has answered plus ``limits.optional_grace`` and reports the plugin skipped; ``paxm remember``
writes SQLite and hands the plugin's copy to the capture queue, which delivers it once the
plugin answers again.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from scripted_kit import PAXM, paxm_timed, scripted_config

#: the grace the tests configure (the default, 1 s, is checked below without a process)
GRACE = "500ms"
#: what a call may cost on top of the same call without the hung plugin: the grace, starting
#: the plugin, and a busy machine (the bug cost 10 s for a recall, 20 s for a write)
FAST = 2.0


def _config(tmp_path: Path, mode: str = "hang") -> Path:
    return scripted_config(tmp_path, "slow", mode=mode, limits={"optional_grace": GRACE})


def test_the_default_grace_is_one_second() -> None:
    from paxm_core.config import LimitsConfig

    assert LimitsConfig().optional_grace_seconds == 1.0
    assert LimitsConfig(optional_grace=0.25).optional_grace_seconds == 0.25


def _sqlite_only(tmp_path: Path) -> Path:
    """The same setup without the plugin: what the call costs when nothing hangs."""
    config = _config(tmp_path / "plain")
    data = json.loads(config.read_text())
    data["providers"]["sqlite"]["path"] = str(tmp_path / "memory.sqlite")
    del data["providers"]["slow"]
    for kind in ("recall_profiles", "write_profiles"):
        data[kind]["default"]["providers"] = [{"name": "sqlite", "required": True}]
    config.write_text(json.dumps(data))
    return config


def _seed(tmp_path: Path, text: str) -> Path:
    """Store ``text`` in SQLite only; the SQLite-only config."""
    config = _sqlite_only(tmp_path)
    stored, _ = paxm_timed(config, "remember", "--text", text)
    assert stored.returncode == 0, stored.stderr
    return config


def test_recall_skips_a_hung_optional_provider_after_the_grace(tmp_path: Path) -> None:
    plain = _seed(tmp_path, "the cache TTL is seven minutes")
    config = _config(tmp_path)
    _, floor = paxm_timed(plain, "recall", "--query", "cache TTL", "--json")
    recalled, took = paxm_timed(config, "recall", "--query", "cache TTL", "--json")
    assert recalled.returncode == 0, recalled.stderr
    assert took < FAST + floor, f"recall took {took:.1f}s (without the plugin {floor:.1f}s)"
    result = json.loads(recalled.stdout)
    assert [hit["provider"] for hit in result["hits"]] == ["sqlite"]
    assert "seven minutes" in result["hits"][0]["text"]
    outcomes = {r["provider"]: r["outcome"] for r in result["provider_recalls"]}
    assert outcomes == {"sqlite": "success", "slow": "skipped"}
    waited = {r["provider"]: r["duration_ms"] for r in result["provider_recalls"]}["slow"]
    assert 450 <= waited < 1500  # limits.optional_grace, not the 10 s route timeout
    (error,) = result["provider_errors"]
    assert error["provider"] == "slow" and error["required"] is False and "skipped" in error["error"]

    text, took = paxm_timed(config, "recall", "--query", "cache TTL")
    assert text.returncode == 0 and took < FAST + floor
    assert "seven minutes" in text.stdout
    assert "slow skipped" in text.stderr

    logs, _ = paxm_timed(config, "logs", "--json")
    assert logs.returncode == 0, logs.stderr
    events = [json.loads(line) for line in logs.stdout.splitlines() if line.strip()]
    recalls = [event for event in events if event.get("kind") == "recall"]
    assert len(recalls) == 2  # telemetry records the provider's outcome as skipped
    for event in recalls:
        details = {d["provider"]: d["outcome"] for d in event["provider_recall_details"]}
        assert details == {"sqlite": "success", "slow": "skipped"}


def test_remember_queues_the_optional_copy_and_the_queue_delivers_it_later(tmp_path: Path) -> None:
    config = _config(tmp_path)
    _, floor = paxm_timed(_sqlite_only(tmp_path), "remember", "--text", "a warm-up write")
    stored, took = paxm_timed(config, "remember", "--text", "deploys go out on Fridays", "--json")
    assert stored.returncode == 0, stored.stderr
    assert took < FAST + floor, f"remember took {took:.1f}s (without the plugin {floor:.1f}s)"
    result = json.loads(stored.stdout)
    assert [ref["provider"] for ref in result["refs"]] == ["sqlite"]
    assert result["queued"] == ["slow"]

    text, _ = paxm_timed(config, "remember", "--text", "the release train leaves at noon")
    assert text.returncode == 0 and "stored memory: sqlite/" in text.stdout
    assert "queued for slow" in text.stderr

    status, _ = paxm_timed(config, "queue", "status", "--json")
    assert status.returncode == 0, status.stderr
    state = json.loads(status.stdout)
    assert state["deliveries"].get("pending") == 2, state

    healthy = _config(tmp_path, mode="ok")  # the plugin answers again
    flushed, _ = paxm_timed(healthy, "queue", "flush", "--timeout", "30s", "--json")
    assert flushed.returncode == 0, flushed.stderr + flushed.stdout
    delivered = json.loads((tmp_path / "slow.json").read_text())
    assert sorted(item["text"] for item in delivered.values()) == [
        "deploys go out on Fridays",
        "the release train leaves at noon",
    ]
    # the queued copy says who wrote it: the CLI, not a hook
    assert {item.get("source") for item in delivered.values()} == {"cli"}, delivered

    recalled, _ = paxm_timed(healthy, "recall", "--query", "Fridays", "--json")
    providers = {hit["provider"] for hit in json.loads(recalled.stdout)["hits"]}
    assert providers == {"sqlite", "slow"} or providers == {"sqlite"}  # same text and scope: deduped
    assert {r["provider"]: r["outcome"] for r in json.loads(recalled.stdout)["provider_recalls"]} == {
        "slow": "success",
        "sqlite": "success",
    }


def test_a_required_failure_still_fails_the_write_and_queues_nothing(tmp_path: Path) -> None:
    config = _config(tmp_path)
    data = json.loads(config.read_text())
    broken = dict(data["providers"]["slow"], env={"SCRIPTED_MODE": "stderr_exit"})
    data["providers"] = {"broken": broken, "slow": data["providers"]["slow"]}
    data["write_profiles"]["default"]["providers"][0]["name"] = "broken"
    data["recall_profiles"]["default"]["providers"][0]["name"] = "broken"
    config.write_text(json.dumps(data))
    stored, took = paxm_timed(config, "remember", "--text", "never half written")
    assert stored.returncode != 0 and "broken" in stored.stderr and "Traceback" not in stored.stderr
    status, _ = paxm_timed(config, "queue", "status", "--json")
    assert json.loads(status.stdout)["deliveries"].get("pending", 0) == 0


async def _mcp_call(config: Path, tool: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], float]:
    params = StdioServerParameters(
        command=PAXM[0], args=[*PAXM[1:], "--config", str(config), "mcp", "serve"], env=dict(os.environ)
    )
    with open(config.parent / "server-stderr.log", "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            started = time.monotonic()
            result = await client.call_tool(tool, arguments)
            took = time.monotonic() - started
            assert not result.is_error, result
            assert result.structured_content is not None
            return result.structured_content, took


def test_mcp_recall_skips_a_hung_optional_provider_after_the_grace(tmp_path: Path) -> None:
    _seed(tmp_path, "the staging database is db-stg-2")
    config = _config(tmp_path)
    content, took = anyio.run(_mcp_call, config, "paxm_recall", {"query": "staging database"})
    assert took < FAST, f"paxm_recall took {took:.1f}s"
    assert any("db-stg-2" in hit["text"] for hit in content["hits"])
    outcomes = {r["provider"]: r["outcome"] for r in content.get("provider_recalls", [])}
    assert outcomes.get("slow") == "skipped", content


def test_mcp_remember_writes_the_required_provider_and_queues_the_optional_one(tmp_path: Path) -> None:
    config = _config(tmp_path)
    content, took = anyio.run(_mcp_call, config, "paxm_remember", {"text": "the VPN gateway is vpn-3"})
    assert took < FAST, f"paxm_remember took {took:.1f}s"
    assert [ref["provider"] for ref in content["refs"]] == ["sqlite"]
    assert content["queued"] == ["slow"]
    status, _ = paxm_timed(config, "queue", "status", "--json")
    assert json.loads(status.stdout)["deliveries"].get("pending") == 1


def test_an_unusable_queue_is_reported_for_the_optional_provider_not_as_a_failed_write(tmp_path: Path) -> None:
    config = _config(tmp_path)
    data = json.loads(config.read_text())
    (tmp_path / "not-a-dir").write_text("a file where the queue's directory should be")
    data["capture_queue"] = {"path": str(tmp_path / "not-a-dir" / "capture.sqlite")}
    config.write_text(json.dumps(data))
    stored, _ = paxm_timed(config, "remember", "--text", "kept in SQLite anyway", "--json")
    assert stored.returncode == 0, stored.stderr
    result = json.loads(stored.stdout)
    assert [ref["provider"] for ref in result["refs"]] == ["sqlite"] and "queued" not in result
    (error,) = result["provider_errors"]
    assert error["provider"] == "slow" and not error["required"] and "capture queue" in error["error"]


def test_a_healthy_optional_provider_stores_the_write_at_once_and_nothing_is_queued(tmp_path: Path) -> None:
    config = _config(tmp_path, mode="ok")
    data = json.loads(config.read_text())
    for profile in ("recall_profiles", "write_profiles"):  # every route optional, as upstream's defaults
        data[profile]["default"]["providers"] = [{"name": "sqlite"}, {"name": "slow"}]
    config.write_text(json.dumps(data))
    stored, _ = paxm_timed(config, "remember", "--text", "the cache TTL is 90 seconds", "--json")
    assert stored.returncode == 0, stored.stderr
    result = json.loads(stored.stdout)
    assert sorted(ref["provider"] for ref in result["refs"]) == ["slow", "sqlite"] and "queued" not in result
    recalled, _ = paxm_timed(config, "recall", "--query", "cache TTL", "--json")  # at once, no delivery needed
    assert json.loads(recalled.stdout)["hits"], recalled.stdout
    status, _ = paxm_timed(config, "queue", "status", "--json")
    assert not json.loads(status.stdout)["deliveries"].get("pending"), status.stdout
