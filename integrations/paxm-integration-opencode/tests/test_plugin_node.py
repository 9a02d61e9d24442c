"""The generated plugin's behaviour, tested in Node (``node --test tests/node/plugin.test.mjs``).

paxm generates the plugin files under test (with the hook client replaced by
``node/fake_hook.mjs``, a real subprocess that records what it was sent); the hook arguments
are the ones the real OpenCode passed (``fixtures/opencode-<version>/``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from paxm_contracttest.harness.harnesses import OPENCODE
from paxm_integration_opencode.plugin import render_plugin

HERE = Path(__file__).resolve().parent
EVENTS = ("session_start", "user_input", "tool_use", "turn_end")


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        if os.environ.get("CI"):
            pytest.fail("node is not installed: the plugin's unit tests run in Node")
        pytest.skip("node is not installed: the plugin's unit tests run in Node")
    return node


def test_generated_plugin_in_node(tmp_path: Path) -> None:
    node = _node()
    fake = str(HERE / "node" / "fake_hook.mjs")
    full = {event: [node, fake, event] for event in EVENTS}
    cases = {
        "full": render_plugin(full),
        "prompt-only": render_plugin({e: full[e] for e in ("session_start", "user_input")}),
        "missing": render_plugin({e: ["/nonexistent/python3", "-I", "/nonexistent/client.py", e] for e in EVENTS}),
        "short-timeout": render_plugin(full, timeout_ms=1500),
        "empty": render_plugin({}),
    }
    paths = {}
    for name, source in cases.items():
        path = tmp_path / "plugins" / f"{name}.js"
        path.parent.mkdir(exist_ok=True)
        path.write_text(source)
        paths[name] = str(path)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "PAXM_OC_PLUGINS": json.dumps(paths),
        "PAXM_OC_FIXTURES": str(HERE / "fixtures" / f"opencode-{OPENCODE.packages[0].rsplit('@', 1)[1]}"),
        "FAKE_HOOK_LOG": str(tmp_path / "hook-log"),
    }
    done = subprocess.run(
        [node, "--test", "--test-concurrency=1", str(HERE / "node" / "plugin.test.mjs")],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, f"node --test failed:\n{done.stdout[-8000:]}\n{done.stderr[-4000:]}"
    assert "# fail 0" in done.stdout, done.stdout[-4000:]
    passed = int(done.stdout.rsplit("# pass ", 1)[1].split()[0])
    assert passed >= 12, done.stdout[-4000:]
