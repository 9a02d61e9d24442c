"""Runtime: config -> plugin manager -> enabled providers -> router -> tools (inventory §3 registry)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from paxm_core import ConfigError, MemoryScope, ProviderConfig, ProviderNotInstalled
from paxm_core.config import RecallProfileConfig, RouteConfig, ThresholdsConfig, load_config
from paxm_core.router import Route
from paxm_core.runtime import Runtime, session_sequence_path


def _fakes() -> ModuleType:
    from paxm_contracttest import fakes

    return fakes


@pytest.fixture
def plugin() -> Any:
    return _fakes().FakesPlugin()


@pytest.fixture
def config(tmp_path: Path) -> Any:
    cfg = load_config(tmp_path / "config.yaml")
    cfg.providers = {
        "mem": ProviderConfig(type="memory", enabled=True),
        "extra": ProviderConfig(type="batch", enabled=True),
        "off": ProviderConfig(type="hanging", enabled=False),
    }
    for profile in cfg.recall_profiles.values():
        profile.providers = [RouteConfig(name="mem", required=True), RouteConfig(name="extra", required=False)]
    for profile in cfg.write_profiles.values():
        profile.providers = [RouteConfig(name="mem", required=True, timeout=30.0)]
    return cfg


def test_builds_only_enabled_providers_with_required_set(config: Any, plugin: Any) -> None:
    pm = _fakes().plugin_manager(plugin)
    with Runtime.load(config=config, plugin_manager=pm, telemetry=None) as runtime:
        assert sorted(runtime.router.providers) == ["extra", "mem"]
        assert runtime.router.required == {"mem"}
        assert runtime.plugin_manager is pm and runtime.config is config
        ref = runtime.tools.remember("runtime fact about widgets").refs[0]
        assert ref.provider == "mem"
        hits = runtime.tools.recall("widgets").hits
        assert [h.provider for h in hits] == ["mem"]
    assert plugin.instances["mem"].closed and plugin.instances["extra"].closed


def test_unknown_provider_type_names_the_package(config: Any, plugin: Any) -> None:
    config.providers["z"] = ProviderConfig(type="zep", enabled=True)
    with pytest.raises(ProviderNotInstalled, match="pip install paxm-provider-zep"):
        Runtime.load(config=config, plugin_manager=_fakes().plugin_manager(plugin), telemetry=None)


def test_factory_failure_closes_what_was_built(config: Any, plugin: Any) -> None:
    def broken(name: str, cfg: ProviderConfig) -> Any:
        raise RuntimeError("no credentials")

    plugin.factories["boom"] = broken
    config.providers["zz"] = ProviderConfig(type="boom", enabled=True)
    with pytest.raises(ConfigError, match="cannot start provider 'zz' \\(type boom\\): no credentials"):
        Runtime.load(config=config, plugin_manager=_fakes().plugin_manager(plugin), telemetry=None)
    assert plugin.instances["mem"].closed


def test_profile_to_policy_conversion(config: Any, plugin: Any) -> None:
    config.recall_profiles["tuned"] = RecallProfileConfig(
        providers=[
            RouteConfig(name="mem", required=True, weight=2.0, timeout=0.25, thresholds=ThresholdsConfig(0.2, 0.3))
        ],
        max_results=4,
        thresholds=ThresholdsConfig(0.5, 0.6),
        tiers=["LTM", "ltm"],
    )
    config.recall_profiles["tuned"].ranking.recency_boost = 0.4
    with Runtime.load(config=config, plugin_manager=_fakes().plugin_manager(plugin), telemetry=None) as runtime:
        policy = runtime.search_policy("tuned")
        assert policy.routes == [Route("mem", True, 2.0, 0.25, 0.2, 0.3)]
        assert (policy.limit, policy.min_relevance, policy.min_score, policy.recency_boost, policy.tiers) == (
            4,
            0.5,
            0.6,
            0.4,
            ("ltm",),
        )
        assert runtime.search_policy("tuned", limit=9).limit == 9
        stm = runtime.put_policy("stm")
        assert stm.tier == "stm" and stm.expires_after == 86400
        assert stm.scope == MemoryScope("personal", config.identity.user_id)
        assert runtime.put_policy().tier == "ltm" and runtime.put_policy().expires_after is None


def test_session_sequence_store_location(tmp_path: Path, config: Any) -> None:
    assert session_sequence_path(config) == Path(config.telemetry.dir) / "session-sequences.sqlite"
    config.telemetry.dir = ""
    assert session_sequence_path(config) == tmp_path / "state" / "session-sequences.sqlite"


def test_cli_session_is_stable_per_workspace(config: Any, plugin: Any, tmp_path: Path) -> None:
    with Runtime.load(config=config, plugin_manager=_fakes().plugin_manager(plugin), telemetry=None) as runtime:
        first = runtime.cli_session_id("/repo/a")
        assert first == runtime.cli_session_id("/repo/a") != runtime.cli_session_id("/repo/b")
        assert first.startswith("paxm-cli-") and len(first) == len("paxm-cli-") + 24


def test_telemetry_sink_is_built_when_available(config: Any, plugin: Any) -> None:
    with Runtime.load(config=config, plugin_manager=_fakes().plugin_manager(plugin)) as runtime:
        if importlib.util.find_spec("paxm_core.telemetry") is None:
            assert runtime.tools.telemetry is None
        else:
            assert type(runtime.tools.telemetry).__name__ == "Telemetry"


def test_real_entry_points_and_sqlite_default(tmp_path: Path) -> None:
    """With no config file the runtime runs on the built-in SQLite default."""
    with Runtime.load(str(tmp_path / "config.yaml")) as runtime:
        assert list(runtime.router.providers) == ["sqlite"]
        ref = runtime.tools.remember("the staging database is called pelican", session_id="s").refs[0]
        result = runtime.tools.recall("staging database", workspace=str(tmp_path))
        assert [(h.provider, h.id) for h in result.hits] == [("sqlite", ref.id)]
        assert result.hits[0].origin.session_id == "s"
        assert [s.ok for s in runtime.router.health()] == [True]
    assert (tmp_path / "memory.sqlite").exists()
    assert (tmp_path / "state" / "session-sequences.sqlite").exists()


def test_team_scope_end_to_end_on_sqlite(tmp_path: Path) -> None:
    """A team write profile (as ``setup --team-id core`` creates) keeps the same text apart per scope."""
    from paxm_core.config import ScopeConfig, WriteProfileConfig, save_config
    from paxm_core.envelope import render_recall_text

    path = tmp_path / "config.yaml"
    cfg = load_config(path)
    ltm = cfg.write_profiles["ltm"]
    cfg.write_profiles["team-core"] = WriteProfileConfig(
        providers=list(ltm.providers), tier="ltm", scope=ScopeConfig(type="team", id="core")
    )
    save_config(cfg, path)
    with Runtime.load(str(path), telemetry=None) as runtime:
        personal = runtime.tools.remember("freeze merges on release day").refs[0]
        team = runtime.tools.remember("Freeze merges on release day", profile="team-core").refs[0]
        assert personal.id != team.id  # the fingerprint includes the scope
        again = runtime.tools.remember("freeze  merges on release day", profile="team-core").refs[0]
        assert again.id == team.id
        result = runtime.tools.recall("freeze merges release")
        scopes = sorted(f"{h.scope.type}:{h.scope.id}" for h in result.hits)
        assert scopes == [f"personal:{cfg.identity.user_id}", "team:core"]
        team_hit = next(h for h in result.hits if h.scope.type == "team")
        assert team_hit.metadata["paxm_occurrences"] == "2"
        text = render_recall_text(result)
        assert "Scope: team:core" in text and f"Scope: personal:{cfg.identity.user_id}" in text


def test_every_fake_provider_type_through_the_plugin_manager(config: Any, plugin: Any) -> None:
    """Flat, graded, out-of-range, slow and string-metadata providers behind one recall profile."""
    config.providers = {
        "flat": ProviderConfig(type="flat", enabled=True),
        "graded": ProviderConfig(type="graded", enabled=True),
        "odd": ProviderConfig(type="outofrange", enabled=True),
        "slow": ProviderConfig(type="slow", enabled=True, extra={"delay": 0.05}),
        "strings": ProviderConfig(type="strmeta", enabled=True),
    }
    config.recall_profiles["zoo"] = RecallProfileConfig(
        providers=[RouteConfig(name=n, timeout=5.0) for n in config.providers],
        max_results=6,
        thresholds=ThresholdsConfig(0.25, 0.25),
    )
    for profile in config.write_profiles.values():
        profile.providers = [RouteConfig(name="strings", required=True, timeout=5.0)]
    with Runtime.load(config=config, plugin_manager=_fakes().plugin_manager(plugin), telemetry=None) as runtime:
        runtime.tools.remember("strings provider keeps graded flat notes", session_id="s-1")
        result = runtime.tools.recall("graded flat notes", profile="zoo")
        order = [f"{h.provider}/{h.id}" for h in result.hits]
        # rank 1 of every provider first (flat 1.0, odd clamped to 1.0, strings 1.0, slow and graded 0.9) ...
        assert {o.split("/")[0] for o in order[:5]} == {"flat", "odd", "strings", "slow", "graded"}
        assert {"flat/f0", "odd/o1", "slow/s1", "graded/g0"} <= set(order[:5])
        # ... then rank 2: flat's second 1.0 scores 1/4, graded's 0.8 only 0.8/4
        assert order[5] == "flat/f1"
        assert {r.provider: r.outcome for r in result.provider_recalls} == dict.fromkeys(config.providers, "success")
        odd = {r.provider: r for r in result.provider_recalls}["odd"]
        assert (odd.candidate_count, odd.eligible_count) == (3, 1)  # -0.3 and NaN clamp to 0 and fall below 0.25
        strings_hit = next(h for h in result.hits if h.provider == "strings")
        assert strings_hit.origin.session_id == "s-1" and strings_hit.scope.type == "personal"


def test_unwritable_state_dir_only_affects_session_writes(config: Any, plugin: Any, tmp_path: Path) -> None:
    from paxm_core import PaxmError

    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    config.telemetry.dir = str(blocker / "state")
    with Runtime.load(config=config, plugin_manager=_fakes().plugin_manager(plugin), telemetry=None) as runtime:
        runtime.tools.remember("no session, no sequence needed", session_id="")
        assert runtime.tools.recall("sequence needed").hits
        with pytest.raises(PaxmError, match="cannot open session sequence store"):
            runtime.tools.remember("with a session", session_id="paxm-cli-x")
