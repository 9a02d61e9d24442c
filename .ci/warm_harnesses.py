"""Install the pinned npm packages the real-harness suites drive, through their own installers.

Run in the background by ``.ci/run`` so the downloads overlap the earlier suites; each installer is
flock-guarded and cached, so the tests that call it later find the work done (or wait for it).
Jobs run in the order the parallel test run starts the suites that need them (the root
conftest.py hands out the longest first, ``UNIT_SECONDS``), so the earliest consumer is the least
likely to wait; a test that gets there first installs the package itself under the same lock.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def load(path: Path) -> Any:
    sys.path.insert(0, str(path.parent))  # harness modules import their siblings by name
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module  # dataclasses look their module up while it executes
    spec.loader.exec_module(module)
    return module


def main() -> int:
    from paxm_contracttest.harness.harnesses import CLAUDE_CURRENT, HARNESSES, PI_BUILDS
    from paxm_contracttest.harness.kit import Harness, install

    def kit(described: Harness) -> Callable[[], object]:
        return lambda: install(described).binary

    # the order the suites that need them start in (longest first)
    order = ("pi", "opencode", "kilo", "claude", "cline", "qwen", "codex", "gemini", "kimi", "copilot")
    jobs: dict[str, Callable[[], object]] = {name: kit(HARNESSES[name]) for name in order}
    jobs.update({f"pi-{key}": kit(build) for key, build in PI_BUILDS.items() if build is not HARNESSES["pi"]})
    jobs["claude-current"] = kit(CLAUDE_CURRENT)
    jobs["mcp-inspector"] = lambda: load(ROOT / "tests" / "mcp" / "test_inspector.py").install_inspector()
    failed = 0
    for name, job in jobs.items():
        started = time.monotonic()
        try:
            print(f"{name}: {job()} ({time.monotonic() - started:.0f}s)", flush=True)
        except BaseException as exc:  # pytest.fail/skip raise BaseException subclasses
            failed += 1
            print(f"{name}: failed: {exc!r}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
