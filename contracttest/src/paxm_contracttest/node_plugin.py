"""Run a generated JS/TS hook file's own tests in Node (``node --test``), for plugin-file integrations.

OpenCode's plugin and Pi's extension are files paxm generates from a template
(:class:`paxm_core.generated_file.GeneratedFileIntegration`); their behaviour inside the harness
is tested by a ``*.test.mjs`` script that loads generated files.  :func:`run_node_file_tests`
renders the same five cases for each integration (every event, prompt-only, a missing hook
client, a short spawn timeout, no commands) with the hook client replaced by the kit's
``node/fake_hook.mjs`` (a real subprocess that records what it was sent), and runs the script on
them.  The script imports ``node/kit.mjs`` (the generated files, its fixtures, the fake hook's
log) from the URL in ``PAXM_NODE_KIT``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from paxm_contracttest.harness import require
from paxm_core.generated_file import GeneratedFileIntegration

__all__ = ["node_or_skip", "run_node_file_tests"]

#: the kit's Node modules: ``kit.mjs`` (what the test scripts share) and ``fake_hook.mjs``
_NODE = Path(__file__).with_name("node")


def node_or_skip() -> str:
    """The ``node`` executable; the test fails in CI without one and is skipped elsewhere."""
    node = shutil.which("node")
    if node is None:
        require("node is not installed: the generated file's unit tests run in Node")
    return node


def _cases(integration: GeneratedFileIntegration, node: str, fake_hook: Path, events: Sequence[str]) -> dict[str, str]:
    full = {event: [node, str(fake_hook), event] for event in events}
    missing = {e: ["/nonexistent/python3", "-I", "/nonexistent/client.py", e] for e in events}
    return {
        "full": integration.render(full),
        "prompt-only": integration.render({e: full[e] for e in ("session_start", "user_input")}),
        "missing": integration.render(missing),
        "short-timeout": integration.render(full, timeout_ms=1500),
        "empty": integration.render({}),
    }


def run_node_file_tests(
    integration: GeneratedFileIntegration,
    tmp_path: Path,
    *,
    script: Path,
    events: Sequence[str],
    suffix: str,
    fixtures: Path,
    min_passed: int,
) -> None:
    """Write the five generated cases under ``tmp_path`` and run ``node --test script`` on them.

    :param suffix: the files' ending (``.mjs`` lets Node run generated TypeScript that is plain JS).
    :param fixtures: the captured hook arguments the script reads (``PAXM_NODE_FIXTURES``).
    :param min_passed: the fewest passing Node tests accepted (a script that loses tests fails).
    """
    node = node_or_skip()
    paths = {}
    for name, source in _cases(integration, node, _NODE / "fake_hook.mjs", events).items():
        path = tmp_path / "generated" / f"{name}{suffix}"
        path.parent.mkdir(exist_ok=True)
        path.write_text(source)
        paths[name] = str(path)
    done = subprocess.run(
        [node, "--test", "--test-concurrency=1", str(script)],
        env={
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(tmp_path),
            "PAXM_GENERATED_FILES": json.dumps(paths),
            "PAXM_NODE_FIXTURES": str(fixtures),
            "PAXM_NODE_KIT": (_NODE / "kit.mjs").as_uri(),
            "FAKE_HOOK_LOG": str(tmp_path / "hook-log"),
        },
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, f"node --test failed:\n{done.stdout[-8000:]}\n{done.stderr[-4000:]}"
    assert "# fail 0" in done.stdout, done.stdout[-4000:]
    passed = int(done.stdout.rsplit("# pass ", 1)[1].split()[0])
    assert passed >= min_passed, done.stdout[-4000:]
