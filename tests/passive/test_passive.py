"""The passive runtime over a real Runtime (SQLite provider) and a real capture queue, in-process."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from paxm_core import Deadline, MemoryHit, MemoryItem, MemoryRef, ProviderType, SearchQuery, hookimpl
from paxm_core.capture import CaptureQueue, DeliveryWorker, default_queue_path, routes_from_write_profiles
from paxm_core.config import RouteConfig
from paxm_core.integration import HookResult, IntegrationBase
from paxm_core.passive.processor import HookProcessor
from paxm_core.plugins import get_plugin_manager
from paxm_core.runtime import Runtime

from .conftest import dumps, fixture_bytes, write_config

RELEASE = threading.Event()


class HangingProvider:
    """A provider stuck in a call that ignores its deadline: the worst case for the hook budget."""

    def __init__(self, name: str) -> None:
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    def search(self, query: SearchQuery, deadline: Deadline) -> list[MemoryHit]:
        RELEASE.wait(10)
        return []

    def put(self, item: MemoryItem, deadline: Deadline) -> MemoryRef:
        return MemoryRef(self._name, item.id or "x")

    def health(self, deadline: Deadline) -> None:
        return None


class HangingPlugin:
    @hookimpl
    def paxm_register_providers(self, register: Any) -> None:
        register(ProviderType(type="hanging", factory=lambda name, cfg: HangingProvider(name)))


class Env:
    def __init__(self, config: Path, runtime: Runtime, queue: CaptureQueue, processor: HookProcessor) -> None:
        self.config, self.runtime, self.queue, self.processor = config, runtime, queue, processor

    def hook(
        self, target: str, event: str, raw: bytes | dict[str, Any], owner: str = "", mode: str = "text"
    ) -> dict[str, Any]:
        payload = raw if isinstance(raw, bytes) else dumps(raw)
        return self.processor.handle_hook(
            {
                "target": target,
                "event": event,
                "raw": payload.decode(),
                "owner": owner,
                "mode": mode,
                "captured_at": time.time(),
            }
        )

    def deliver(self) -> None:
        worker = DeliveryWorker(
            self.queue, self.runtime.router, self.runtime.config.capture_queue, self.runtime.config.write_profiles
        )
        report = worker.flush(timeout=10, seal_open=True)  # the tests' turns may still be open
        assert report.ok, report

    def close(self) -> None:
        self.processor.close()
        self.queue.close()
        self.runtime.close()


def open_env(config: Path, clock: Any = None, extra_plugins: tuple[Any, ...] = ()) -> Env:
    import paxm_provider_sqlite

    pm = get_plugin_manager(load_entrypoints=False)
    pm.register(paxm_provider_sqlite, name="sqlite")
    pm.register(HangingPlugin(), name="hanging")
    for i, plugin in enumerate(extra_plugins):
        pm.register(plugin, name=f"extra-{i}")
    runtime = Runtime.load(str(config), plugin_manager=pm, telemetry=None)
    queue = CaptureQueue(
        default_queue_path(runtime.config), routes=routes_from_write_profiles(runtime.config.write_profiles)
    )
    processor = HookProcessor(
        runtime, queue, session_state_path=config.parent / "hooks" / "session_state.json", clock=clock
    )
    return Env(config, runtime, queue, processor)


@contextlib.contextmanager
def opened(config: Path, clock: Any = None, extra_plugins: tuple[Any, ...] = ()) -> Iterator[Env]:
    """:func:`open_env`, closed when the block ends."""
    env = open_env(config, clock=clock, extra_plugins=extra_plugins)
    try:
        yield env
    finally:
        env.close()


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    with opened(write_config(tmp_path / "cfg")) as e:
        yield e


def test_session_start_prints_identity_and_local_time(env: Env) -> None:
    answer = env.hook("claude", "session_start", fixture_bytes("claude_session_start.json"))
    assert answer["ok"] and answer["buffered"]
    out = answer["output"]
    ident = out.split('<paxm-session-identity version="1">\n')[1].split("\n")[0]
    assert json.loads(ident) == {
        "user_id": "alice",
        "agent_id": "claude-alice",
        "session_id": "0b7c3f2e-1111-4d2a-9c55-5d0f6e2a7a01",
    }
    assert '<paxm-local-time version="1">' in out


def test_turn_is_captured_delivered_and_recalled_next_session(env: Env) -> None:
    env.hook(
        "claude",
        "user_input",
        {"session_id": "s1", "cwd": "/w", "prompt": "We decided: queue library is brisk-queue-4417."},
    )
    env.hook(
        "claude", "turn_end", {"session_id": "s1", "cwd": "/w", "last_assistant_message": "Recorded brisk-queue-4417."}
    )
    env.deliver()
    hits = env.runtime.tools.recall("brisk-queue-4417", profile="default").hits
    assert len(hits) == 1
    text = hits[0].text
    # no integration is registered here: the stored text names the harness by its target
    assert "claude user input:\nWe decided: queue library is brisk-queue-4417." in text
    assert "claude assistant response:\nRecorded brisk-queue-4417." in text
    assert hits[0].metadata["hook_target"] == "claude" and hits[0].metadata["session_id"] == "s1"
    # a new session's first prompt gets the memory injected (initial phase: relaxed insertion)
    answer = env.hook(
        "claude", "user_input", {"session_id": "s2", "cwd": "/w", "prompt": "which queue library? brisk-queue-4417"}
    )
    assert '<paxm-recall version="1" mode="passive">' in answer["output"]
    assert "brisk-queue-4417" in answer["output"]


def test_captured_turn_keeps_its_workspace_and_stays_in_it(env: Env) -> None:
    # the workspace is trusted context decoded from the payload's cwd; a capture that lost it
    # would be visible from every workspace
    env.hook(
        "claude", "user_input", {"session_id": "ws1", "cwd": "/w/alpha", "prompt": "Decision: kestrel-cache-5521."}
    )
    env.hook("claude", "turn_end", {"session_id": "ws1", "cwd": "/w/alpha", "last_assistant_message": "Noted."})
    env.deliver()
    hits = env.runtime.tools.recall("kestrel-cache-5521", profile="default", workspace="/w/alpha").hits
    assert len(hits) == 1 and hits[0].metadata["workspace"] == "/w/alpha"
    assert env.runtime.tools.recall("kestrel-cache-5521", profile="default", workspace="/w/beta").hits == []


def test_insertion_requires_query_terms_after_first_input(env: Env) -> None:
    env.runtime.tools.remember("Ingest service uses brisk-queue-9001 for jobs", profile="ltm")
    first = env.hook("claude", "user_input", {"session_id": "s9", "prompt": "brisk-queue-9001 ingest jobs"})
    assert "brisk-queue-9001" in first["output"]
    later = env.hook("claude", "user_input", {"session_id": "s9", "prompt": "thanks, looks good"})
    assert "<paxm-recall" not in later["output"]


def test_recall_envelope_in_prompt_is_not_written_back(env: Env) -> None:
    env.runtime.tools.remember("Original fact: port 7311 for staging", profile="ltm")
    first = env.hook("claude", "user_input", {"session_id": "e1", "prompt": "staging port 7311"})
    injected = first["output"]
    assert "port 7311" in injected
    echoed = injected + "\nso which port again?"
    env.hook("claude", "user_input", {"session_id": "e1", "prompt": echoed})
    env.hook("claude", "turn_end", {"session_id": "e1", "last_assistant_message": "See above."})
    env.deliver()
    stored = [h.text for h in env.runtime.tools.recall("which port again", profile="default", limit=10).hits]
    turn = [t for t in stored if "which port again" in t]
    assert turn and all("Original fact" not in t and "paxm-recall" not in t for t in turn)


def test_ownership_gate(tmp_path: Path) -> None:
    def owned(config: Any) -> None:
        config.agents["claude"].integration.owner = "claude-plugin"

    with opened(write_config(tmp_path / "cfg", mutate=owned)) as e:
        ignored = e.hook("claude", "session_start", {"session_id": "o1"})
        assert ignored["ignored"] and ignored["output"] == "" and not ignored["buffered"]
        accepted = e.hook("claude", "session_start", {"session_id": "o1"}, owner="claude-plugin")
        assert accepted["buffered"] and "paxm-session-identity" in accepted["output"]


def test_passive_budget_is_enforced_against_a_hanging_provider(tmp_path: Path) -> None:
    def add_hanging(config: Any) -> None:
        from paxm_core.api.provider_config import ProviderConfig

        config.providers["stuck"] = ProviderConfig(type="hanging", enabled=True)
        for name in ("passive", "passive_initial"):
            for route in config.recall_profiles[name].providers:
                route.timeout = 0.2
            config.recall_profiles[name].providers.append(RouteConfig(name="stuck", required=False, timeout=0.2))
        config.agents["claude"].hooks["user_input"].recall.timeout_extra = 0.1

    e = open_env(write_config(tmp_path / "cfg", mutate=add_hanging))
    RELEASE.clear()
    try:
        started = time.monotonic()
        answer = e.hook("claude", "user_input", {"session_id": "b1", "prompt": "anything about budgets"})
        elapsed = time.monotonic() - started
        assert answer["ok"]
        # budget = route 0.2 s + extra 0.1 s; the provider would hold the call for 10 s.  The
        # bound leaves room for a loaded CI machine while still proving the cut-off.
        assert elapsed < 2.0
        assert answer["buffered"]  # the write did not wait for recall
    finally:
        RELEASE.set()
        e.close()


def test_broken_recall_profile_fails_open(tmp_path: Path) -> None:
    def bad_profile(config: Any) -> None:
        config.agents["claude"].hooks["user_input"].recall.profile = "default"
        config.agents["claude"].hooks["user_input"].recall.initial = None
        config.agents["claude"].hooks["user_input"].recall.query_template = "{{ printf .prompt }}"

    with opened(write_config(tmp_path / "cfg", mutate=bad_profile)) as e:
        answer = e.hook("claude", "user_input", {"session_id": "x", "prompt": "hello there friend"})
        assert answer["ok"] and answer["buffered"] and answer["output"] == ""
        assert any("recall skipped" in err and "unsupported template action" in err for err in answer["errors"])


def test_local_time_refresh_after_12_hours(tmp_path: Path) -> None:
    now = [datetime(2026, 3, 1, 9, 0, tzinfo=UTC)]
    with opened(write_config(tmp_path / "cfg"), clock=lambda: now[0]) as e:
        e.hook("claude", "session_start", {"session_id": "t1"})
        assert "paxm-local-time" not in e.hook("claude", "user_input", {"session_id": "t1", "prompt": "hi"})["output"]
        now[0] += timedelta(hours=12, seconds=1)
        assert "paxm-local-time" in e.hook("claude", "user_input", {"session_id": "t1", "prompt": "hi again"})["output"]


def test_generic_json_output(env: Env) -> None:
    generic = json.loads(
        env.hook("claude", "user_input", {"session_id": "g1", "prompt": "zzz qqq"}, mode="json")["output"]
    )
    assert generic["target"] == "claude" and generic["event"] == "user_input" and generic["query"] == "zzz qqq"


class LabelledIntegration(IntegrationBase):
    """A registered integration: its label names the harness in stored text, its output is its own."""

    name = "claude"
    label = "Test Harness"

    def hook_output(self, result: HookResult, mode: str) -> str:
        return f"[{mode}:{result.event}]"


class LabelledPlugin:
    @hookimpl
    def paxm_register_integrations(self, register: Any) -> None:
        register(LabelledIntegration())


def test_registered_integration_labels_writes_and_owns_output(tmp_path: Path) -> None:
    with opened(write_config(tmp_path / "cfg"), extra_plugins=[LabelledPlugin()]) as e:
        answer = e.hook("claude", "user_input", {"session_id": "l1", "prompt": "label-check-5521"}, mode="custom")
        assert answer["output"] == "[custom:user_input]"
        e.deliver()
        hits = e.runtime.tools.recall("label-check-5521", profile="default").hits
        assert hits and hits[0].text.startswith("Test Harness user input:\nlabel-check-5521")


def test_disabled_agent_writes_nothing(env: Env) -> None:
    answer = env.hook("pi", "turn_end", {"session_id": "p", "last_assistant_message": "x"})
    assert answer["ok"] and not answer["buffered"] and answer["output"] == ""


def test_one_shot_drain_closes_its_connection(env: Env) -> None:
    from paxm_core.capture import _inbox

    raw = json.dumps({"session_id": "d", "last_assistant_message": "one-shot-drain-8812"}).encode()
    _inbox.append_raw(env.queue.path, "evt_" + "e" * 32, "claude", "turn_end", raw, time.time())
    report = HookProcessor(env.runtime, env.queue).drain_inbox()  # what `paxm queue flush` does
    assert report.events == 1
    env.deliver()
    assert any("one-shot-drain-8812" in h.text for h in env.runtime.tools.recall("one-shot-drain-8812").hits)


def test_a_required_provider_timing_out_still_injects_the_healthy_hits(tmp_path: Path) -> None:
    def add_required_hanging(config: Any) -> None:
        from paxm_core.api.provider_config import ProviderConfig

        config.providers["stuck"] = ProviderConfig(type="hanging", enabled=True)
        for name in ("passive", "passive_initial"):
            config.recall_profiles[name].providers.append(RouteConfig(name="stuck", required=True, timeout=0.3))

    e = open_env(write_config(tmp_path / "cfg", mutate=add_required_hanging))
    RELEASE.clear()
    try:
        e.runtime.tools.remember("Decision: the staging cluster is plum-7781", profile="ltm")
        answer = e.hook("claude", "user_input", {"session_id": "r1", "prompt": "which staging cluster plum-7781"})
        assert answer["ok"]
        assert '<paxm-recall version="1" mode="passive">' in answer["output"]
        assert "plum-7781" in answer["output"]
    finally:
        RELEASE.set()
        e.close()


def test_passive_memories_are_scoped_to_the_git_project_of_their_events(env: Env, tmp_path: Path) -> None:
    # ``workspace`` is reserved caller metadata: the decoded event's workspace must reach the
    # stored episode through the trusted path, or passive memories recall in every project
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    cwd = str(repo / "src")
    env.hook("claude", "user_input", {"session_id": "ws1", "cwd": cwd, "prompt": "Decision: lint with tarn-7731."})
    env.hook("claude", "turn_end", {"session_id": "ws1", "cwd": cwd, "last_assistant_message": "Using tarn-7731."})
    env.deliver()
    hits = env.runtime.tools.recall("tarn-7731", profile="default", workspace=str(repo)).hits
    assert len(hits) == 1 and hits[0].metadata["workspace"] == str(repo)
    assert "Decision: lint with tarn-7731." in hits[0].text
    assert env.runtime.tools.recall("tarn-7731", profile="default", workspace=str(tmp_path / "other")).hits == []


def test_a_prompts_write_and_recall_overlap_and_the_write_commits_before_the_answer(tmp_path: Path) -> None:
    """The prompt's queue write and its recall run side by side; the answer still waits for the write."""
    from paxm_core.config import load_config
    from paxm_core.passive.passive import PassiveRuntime

    recall_started = threading.Event()
    write_done = threading.Event()
    seen: dict[str, Any] = {}

    def sink(write: Any) -> bool:
        # with a sequential write this waits the full 10 s and sees no recall
        seen["recall_ran_during_write"] = recall_started.wait(10)
        time.sleep(0.05)  # still writing after the recall returned: the answer must wait
        write_done.set()
        return True

    def recall(query: str, profile: str, limit: int, metadata: Any, workspace: str, budget: float) -> Any:
        recall_started.set()
        return None, False

    config = load_config(write_config(tmp_path / "cfg"))
    passive = PassiveRuntime(config, recall=recall, sink=sink)
    event = passive.decode("claude", "user_input", dumps({"session_id": "s", "cwd": "/w", "prompt": "deploy plan"}))
    result = passive.handle(event)
    assert seen["recall_ran_during_write"] is True
    assert write_done.is_set() and result.buffered and result.recall_ran
    # a turn end (no recall) still writes in line
    end = passive.decode("claude", "turn_end", dumps({"session_id": "s", "cwd": "/w", "last_assistant_message": "ok"}))
    write_done.clear()
    recall_started.set()
    passive.handle(end)
    assert write_done.is_set()
