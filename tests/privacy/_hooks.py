"""The passive tests' helpers (real config, hook client, daemon control), loaded by path."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_PATH = Path(__file__).resolve().parents[1] / "passive" / "conftest.py"
_NAME = "paxm_tests_passive_helpers"
if _NAME not in sys.modules:
    _spec = importlib.util.spec_from_file_location(_NAME, _PATH)
    assert _spec is not None and _spec.loader is not None
    _module = importlib.util.module_from_spec(_spec)
    sys.modules[_NAME] = _module
    _spec.loader.exec_module(_module)
helpers = sys.modules[_NAME]

write_config = helpers.write_config
run_client = helpers.run_client
memories = helpers.memories
queue_rows = helpers.queue_rows
stop_daemon = helpers.stop_daemon
wait_for = helpers.wait_for
daemon_pid = helpers.daemon_pid


def flush(config: Path) -> dict[str, object]:
    """Wait for the daemon the hook client spawned (a loaded box is slow to start it), then flush."""
    from paxm_core.passive.control import send_control

    wait_for(lambda: config.parent.joinpath("hooks", "paxm-hook.sock").exists())
    report = send_control(config, "flush", params={"seal_open": True})  # prompts without a turn end too
    assert report is not None and report["ok"], report
    return report
