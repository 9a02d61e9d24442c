"""The whole production path: config -> plugin manager -> providers -> Router -> DeliveryWorker."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _capture_helpers import FakeProvider, Recorder, event

from paxm_core import hookimpl
from paxm_core.capture import CaptureQueue, DeliveryWorker, routes_from_write_profiles
from paxm_core.plugins import get_plugin_manager
from paxm_core.runtime import Runtime

CONFIG = """
providers:
  flaky:
    type: flaky
    enabled: true
write_profiles:
  default:
    providers:
      - name: flaky
        required: true
        timeout: 2s
capture_queue:
  retry_min: 10ms
  max_attempts: 5
  provider_concurrency:
    flaky: 2
"""


def test_worker_delivers_through_a_runtime_built_from_config_and_plugins(tmp_path: Path) -> None:
    made: list[FakeProvider] = []

    class FakePlugin:
        @hookimpl
        def paxm_register_providers(self, register: Any) -> None:
            def factory(name: str, config: Any) -> FakeProvider:
                provider = FakeProvider(name, fail_times=2)
                made.append(provider)
                return provider

            register("flaky", factory, description="fails twice, then stores by id")

    pm = get_plugin_manager(load_entrypoints=False)
    pm.register(FakePlugin(), "capture-test-fakes")
    config_path = tmp_path / "config.yaml"
    config_path.write_text(CONFIG)
    runtime = Runtime.load(str(config_path), plugin_manager=pm, telemetry=None)
    try:
        config = runtime.config
        section = config.capture_queue
        telemetry = Recorder()
        with CaptureQueue(
            config.capture_queue_path,
            routes=routes_from_write_profiles(config.write_profiles),
            retry_min=section.retry_min,
            max_attempts=section.max_attempts,
        ) as q:
            q.append(event("e1", "s1", text="first turn", terminal=True))
            q.append(event("e2", "s1", text="second turn", terminal=True))
            worker = DeliveryWorker(q, runtime.router, section, config.write_profiles, telemetry=telemetry)
            assert worker.concurrency("flaky") == 2
            started = datetime.now(UTC)
            report = worker.flush(timeout=20)
            finished = datetime.now(UTC)
            assert report.ok, report
            status = q.status()
        (provider,) = made
        assert [i.text for i in provider.puts] == ["first turn", "second turn"]  # order kept across retries
        assert status.deliveries == {"delivered": 2} and status.dead == []
        # the router's write pipeline ran: session sequence and attribution metadata were added
        assert all("sequence" in item.metadata for item in provider.puts)
        outcomes = [(e["success"], e["provider"]) for e in telemetry.events]
        assert outcomes.count((False, "flaky")) == 2 and outcomes.count((True, "flaky")) == 2
        # each outcome is stamped when it happened (telemetry may write it later, in a batch)
        assert all(started <= e["time"] <= finished for e in telemetry.events)
    finally:
        runtime.close()
