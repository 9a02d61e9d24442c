"""The generated plugin's behaviour, tested in Node (``node --test tests/node/plugin.test.mjs``).

paxm generates the plugin files under test (with the hook client replaced by the kit's
``fake_hook.mjs``, a real subprocess that records what it was sent); the hook arguments are the
ones the real OpenCode passed (``fixtures/opencode-<version>/``).
"""

from __future__ import annotations

from pathlib import Path

from paxm_contracttest.harness.harnesses import OPENCODE
from paxm_contracttest.node_plugin import run_node_file_tests
from paxm_integration_opencode import OpenCodeIntegration

HERE = Path(__file__).resolve().parent


def test_generated_plugin_in_node(tmp_path: Path) -> None:
    version = OPENCODE.packages[0].rsplit("@", 1)[1]
    run_node_file_tests(
        OpenCodeIntegration(),
        tmp_path,
        script=HERE / "node" / "plugin.test.mjs",
        events=("session_start", "user_input", "tool_use", "turn_end"),
        suffix=".js",
        fixtures=HERE / "fixtures" / f"opencode-{version}",
        min_passed=12,
    )
