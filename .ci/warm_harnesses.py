"""Install the pinned harness binaries the newer end-to-end suites drive, through their own installers.

Run in the background by ``.ci/run`` so the downloads overlap the earlier suites; each installer is
flock-guarded and cached, so the tests that call it later find the work done (or wait for it).
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load(path: Path) -> object:
    sys.path.insert(0, str(path.parent))  # harness modules import their siblings by name
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module  # dataclasses look their module up while it executes
    spec.loader.exec_module(module)
    return module


def main() -> int:
    npm = shutil.which("npm") or "npm"
    tests = ROOT / "integrations"
    jobs = {
        "kimi": lambda: load(tests / "paxm-integration-kimi-code/tests/kimi_harness.py").install_kimi(),  # type: ignore[attr-defined]
        "cline": lambda: load(tests / "paxm-integration-cline/tests/cline_harness.py").install_cline(),  # type: ignore[attr-defined]
        "gemini": lambda: load(tests / "paxm-integration-gemini-cli/tests/gemini_harness.py").install_gemini(npm),  # type: ignore[attr-defined]
        "copilot": lambda: load(tests / "paxm-integration-copilot-cli/tests/copilot_harness.py").install_copilot(npm),  # type: ignore[attr-defined]
    }
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
