"""The passive tests' helpers (real config, hook client, daemon control), loaded by path."""

from __future__ import annotations

from pathlib import Path

from tests._kit import load_module

_PATH = Path(__file__).resolve().parents[1] / "passive" / "conftest.py"
helpers = load_module("paxm_tests_passive_helpers", _PATH, register=True)

write_config = helpers.write_config
run_client = helpers.run_client
memories = helpers.memories
queue_rows = helpers.queue_rows
stop_daemon = helpers.stop_daemon
wait_for = helpers.wait_for
daemon_pid = helpers.daemon_pid
daemon_cleanup = helpers.daemon_cleanup  # the fixture, shared with the privacy tests' conftest


def flush(config: Path) -> dict[str, object]:
    """Wait for the daemon the hook client spawned (a loaded box is slow to start it), then flush."""
    from paxm_core.passive.control import send_control

    wait_for(lambda: config.parent.joinpath("hooks", "paxm-hook.sock").exists())
    report = send_control(config, "flush", params={"seal_open": True})  # prompts without a turn end too
    assert report is not None and report["ok"], report
    return report
