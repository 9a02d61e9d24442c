"""Tools: trusted identity, write provenance, caller metadata hygiene, telemetry (inventory §3)."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from paxm_core import ConfigError, MemoryScope, RecallError, UsageError
from paxm_core.config import AgentConfig, RouteConfig, WriteProfileConfig, load_config
from paxm_core.tools import Tools, cli_session_id, new_session_id, resolve_agent_id

NOW = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def config(tmp_path: Path) -> Any:
    cfg = load_config(tmp_path / "config.yaml")  # no file: normalized built-in defaults
    cfg.identity.user_id = "ann"
    for name, agent in cfg.agents.items():
        agent.agent_id = f"{name}-ann"
    for profile in cfg.recall_profiles.values():
        profile.providers = [RouteConfig(name="mem", required=True)]
    for profile in cfg.write_profiles.values():
        profile.providers = [RouteConfig(name="mem", required=True, timeout=5)]
    cfg.write_profiles["default"].scope.type = ""
    cfg.write_profiles["default"].scope.id = ""
    cfg.write_profiles["team-core"] = WriteProfileConfig(providers=[RouteConfig(name="mem", required=True)], tier="ltm")
    cfg.write_profiles["team-core"].scope.type = "team"
    cfg.write_profiles["team-core"].scope.id = "core"
    return cfg


class Sink:
    def __init__(self, fail: bool = False) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.fail = fail

    def on_recall(self, **fields: Any) -> None:
        self.events.append(("recall", fields))
        if self.fail:
            raise OSError("disk full")

    def on_remember(self, **fields: Any) -> None:
        self.events.append(("remember", fields))
        if self.fail:
            raise OSError("disk full")


@pytest.fixture
def tools(config: Any, fakes: Any, make_router: Any) -> Tools:
    router = make_router({"mem": fakes.MemoryProvider("mem")})
    return Tools(config, router, telemetry=Sink(), clock=lambda: NOW)


def test_cli_session_id_formula() -> None:
    digest = hashlib.sha256(b"cli\x00ann\x00/c/config.yaml\x00/work/repo").hexdigest()
    assert cli_session_id("ann", "/c/config.yaml", "/work/repo") == "paxm-cli-" + digest[:24]
    assert cli_session_id("ann", "/c/config.yaml", "/work/other") != cli_session_id(
        "ann", "/c/config.yaml", "/work/repo"
    )
    mcp = new_session_id("MCP")
    assert mcp.startswith("paxm-mcp-") and mcp != new_session_id("mcp") and mcp == mcp.lower()


def test_write_provenance_agent_rules(config: Any) -> None:
    for agent in config.agents.values():
        agent.enabled = False
    assert resolve_agent_id(config) == "unknown"
    config.agents["codex"].enabled = True
    config.agents["codex"].agent_id = "codex-ann"
    assert resolve_agent_id(config) == "codex-ann"
    config.agents["claude"].enabled = True
    config.agents["claude"].agent_id = "claude-ann"
    assert resolve_agent_id(config) == "unknown"  # two enabled agents: ambiguous
    assert resolve_agent_id(config, "claude") == "claude-ann"
    assert resolve_agent_id(config, "not-configured") == "unknown"
    config.agents["bare"] = AgentConfig(enabled=True)
    assert resolve_agent_id(config, "bare") == "unknown"


def test_remember_carries_trusted_identity_and_drops_caller_keys(tools: Tools) -> None:
    result = tools.remember(
        "  use pnpm  ",
        metadata={"paxm_user_id": "mallory", "paxm_scope_id": "victim", "session_id": "fake", "topic": "js"},
        session_id="paxm-cli-abc",
        agent_name="codex",
    )
    provider = tools.router.providers["mem"]
    stored = provider.items[result.refs[0].id]  # type: ignore[attr-defined]
    assert stored.text == "use pnpm"
    assert stored.source == "cli"
    assert stored.created_at == NOW
    assert stored.origin.user_id == "ann" and stored.origin.session_id == "paxm-cli-abc"
    assert stored.origin.agent_id == "codex-ann"
    assert stored.scope == MemoryScope("personal", "ann")  # default scope from identity
    assert stored.metadata["topic"] == "js" and "session_id" not in stored.metadata
    assert stored.metadata["paxm_user_id"] == "ann" and stored.metadata["paxm_scope_id"] == "ann"
    assert stored.metadata["paxm_session_id"] == "paxm-cli-abc"


def test_remember_profiles_scope_tier_and_expiry(tools: Tools) -> None:
    team = tools.remember("team fact", profile="team-core")
    stored = tools.router.providers["mem"].items[team.refs[0].id]  # type: ignore[attr-defined]
    assert stored.scope == MemoryScope("team", "core") and stored.tier == "ltm"
    stm = tools.remember("short fact", profile="stm")
    short = tools.router.providers["mem"].items[stm.refs[0].id]  # type: ignore[attr-defined]
    assert short.tier == "stm" and (short.expires_at - NOW).total_seconds() == 86400
    with pytest.raises(UsageError, match="write profile 'nope' is not configured"):
        tools.remember("x", profile="nope")
    with pytest.raises(UsageError, match="memory text is required"):
        tools.remember("   ")


def test_stm_without_expiry_and_ltm_with_expiry_are_rejected(tools: Tools) -> None:
    tools.config.write_profiles["stm"].expires_after = None
    with pytest.raises(ConfigError, match="stm memories need a positive expiry"):
        tools.remember("x", profile="stm")
    tools.config.write_profiles["ltm"].expires_after = 60
    with pytest.raises(ConfigError, match="ltm memories must not expire"):
        tools.remember("x", profile="ltm")


def test_recall_metadata_is_trusted_context_only(tools: Tools) -> None:
    tools.remember("deploy with make release", session_id="s")
    provider = tools.router.providers["mem"]
    result = tools.recall(
        "  deploy release ",
        metadata={"paxm_scope_id": "victim", "paxm_custom": "x", "client": "test"},
        workspace="/work/repo",
        session_id="paxm-cli-abc",
    )
    assert result.query == "deploy release" and len(result.hits) == 1
    seen = provider.queries[-1]  # type: ignore[attr-defined]
    assert seen.metadata == {"client": "test", "session_id": "paxm-cli-abc", "workspace": "/work/repo"}
    assert seen.limit == 9  # default profile max_results 3 -> pool 9
    with pytest.raises(UsageError, match="recall query is required"):
        tools.recall("  ")
    with pytest.raises(UsageError, match="recall profile 'ghost' is not configured"):
        tools.recall("x", profile="ghost")


def test_default_recall_profile_follows_codex_active_recall(tools: Tools) -> None:
    from paxm_core.config import RecallProfileConfig

    tools.config.recall_profiles["custom"] = RecallProfileConfig(providers=[RouteConfig(name="mem")], max_results=1)
    tools.config.agents["codex"].active_recall.enabled = True
    tools.config.agents["codex"].active_recall.profile = "custom"
    tools.recall("anything")
    assert tools.router.providers["mem"].queries[-1].limit == 3  # type: ignore[attr-defined]


def test_telemetry_is_called_and_never_fails_an_operation(tools: Tools, capsys: Any) -> None:
    sink = tools.telemetry
    tools.remember("telemetry fact", profile="ltm")
    tools.recall("telemetry")
    with pytest.raises(UsageError):
        tools.recall("")
    kinds = [(kind, f["command"], f["profile"], f["source"]) for kind, f in sink.events]
    assert kinds == [
        ("remember", "remember", "ltm", "cli"),
        ("recall", "recall", "default", "cli"),
        ("recall", "recall", "default", "cli"),
    ]
    assert sink.events[1][1]["result"].hits and sink.events[1][1]["error"] == ""
    assert sink.events[2][1]["error"] == "recall query is required" and sink.events[2][1]["result"] is None
    assert all(f["duration_ms"] >= 0 for _, f in sink.events)
    tools.telemetry = Sink(fail=True)
    assert tools.recall("telemetry").hits
    assert "paxm telemetry skipped: disk full" in capsys.readouterr().err


def test_recall_error_keeps_partial_result_for_telemetry(config: Any, fakes: Any, make_router: Any) -> None:
    bad = fakes.ScriptedProvider("mem", error=RuntimeError("boom"))
    sink = Sink()
    tools = Tools(config, make_router({"mem": bad}), telemetry=sink)
    with pytest.raises(RecallError, match="mem: boom"):
        tools.recall("q")
    assert sink.events[0][1]["result"].provider_errors[0].error == "boom"


def test_bind_sets_default_session_and_agent(tools: Tools) -> None:
    bound = tools.bind(session_id="paxm-mcp-xyz", agent_name="claude")
    ref = bound.remember("bound write").refs[0]
    stored = tools.router.providers["mem"].items[ref.id]  # type: ignore[attr-defined]
    assert stored.origin.session_id == "paxm-mcp-xyz"
    assert stored.origin.agent_id == "claude-ann"


def test_recall_deadline_reaches_the_provider(config: Any, fakes: Any, make_router: Any) -> None:
    from paxm_core import Deadline

    provider = fakes.ScriptedProvider("mem", [fakes.hit("mem", "1", "fast enough", 0.9)])
    tools = Tools(config, make_router({"mem": provider}))
    deadline = Deadline.after(2.0)
    result = tools.recall("fast", deadline=deadline, source="hook", command="hook")
    assert [h.id for h in result.hits] == ["1"]
    seen = provider.deadlines[0]
    assert seen.at is not None and deadline.at is not None and seen.at <= deadline.at
    assert provider.queries[0].metadata == {}
