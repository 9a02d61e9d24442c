"""The generated extension's behaviour, tested in Node (``node --test tests/node/extension.test.mjs``).

paxm generates the extension files under test (with the hook client replaced by the OpenCode
tests' ``node/fake_hook.mjs``, a real subprocess that records what it was sent); the event and
ctx shapes are the ones the real Pi passed (``fixtures/pi-<version>/``, one run per tested build).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from paxm_integration_pi.extension import render_extension

HERE = Path(__file__).resolve().parent
FAKE_HOOK = HERE.parents[1] / "paxm-integration-opencode" / "tests" / "node" / "fake_hook.mjs"
#: captured from each tested Pi build (``capture_fixtures.py <build key>``)
FIXTURE_DIRS = sorted(
    d for d in (HERE / "fixtures").glob("pi-*") if not d.name.startswith("pi-sessions-")
)  # not transcripts
EVENTS = ("session_start", "user_input", "turn_end")


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        if os.environ.get("CI"):
            pytest.fail("node is not installed: the extension's unit tests run in Node")
        pytest.skip("node is not installed: the extension's unit tests run in Node")
    return node


@pytest.mark.parametrize("fixtures", FIXTURE_DIRS, ids=[d.name for d in FIXTURE_DIRS])
def test_generated_extension_in_node(fixtures: Path, tmp_path: Path) -> None:
    node = _node()
    full = {event: [node, str(FAKE_HOOK), event] for event in EVENTS}
    cases = {
        "full": render_extension(full),
        "prompt-only": render_extension({e: full[e] for e in ("session_start", "user_input")}),
        "missing": render_extension({e: ["/nonexistent/python3", "-I", "/nonexistent/client.py", e] for e in EVENTS}),
        "short-timeout": render_extension(full, timeout_ms=1500),
        "empty": render_extension({}),
    }
    paths = {}
    for name, source in cases.items():
        # the generated TypeScript is plain JavaScript: Node 20 runs it as a module unchanged
        path = tmp_path / "extensions" / f"{name}.mjs"
        path.parent.mkdir(exist_ok=True)
        path.write_text(source)
        paths[name] = str(path)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "PAXM_PI_EXTENSIONS": json.dumps(paths),
        "PAXM_PI_FIXTURES": str(fixtures),
        "FAKE_HOOK_LOG": str(tmp_path / "hook-log"),
    }
    done = subprocess.run(
        [node, "--test", "--test-concurrency=1", str(HERE / "node" / "extension.test.mjs")],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, f"node --test failed:\n{done.stdout[-8000:]}\n{done.stderr[-4000:]}"
    assert "# fail 0" in done.stdout, done.stdout[-4000:]
    passed = int(done.stdout.rsplit("# pass ", 1)[1].split()[0])
    assert passed >= 15, done.stdout[-4000:]
