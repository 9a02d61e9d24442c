"""How much paxm's hooks add to a real Qwen Code turn (run by hand or from benchmarks/run.py).

    uv run python integrations/paxm-integration-qwen-code/benchmarks/qwen_hook_latency.py [--runs 5]

Installs the pinned Qwen Code like the end-to-end tests, sets paxm up in a temporary HOME, seeds
one memory, warms the hook daemon, then times ``qwen -p`` turns against the fake Chat Completions
server.  Baseline: the same turns in a sandbox with the same settings but no paxm hooks.  Reports
both medians, their difference and ratio.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

_HERE = Path(__file__).resolve().parents[1] / "tests"
for _path in (
    _HERE.parents[1] / "paxm-integration-opencode" / "tests",
    _HERE.parents[1] / "paxm-integration-claude-code" / "tests",
    _HERE,
):
    sys.path.insert(0, str(_path))

from qwen_harness import QWEN_VERSION, QwenSandbox, install_qwen  # noqa: E402

from paxm_contracttest.fake_models.chat_completions import FakeOpenAI  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("npm is needed")
    qwen = install_qwen(npm)
    with tempfile.TemporaryDirectory(prefix="paxm-qwen-bench-") as tmp:
        root = Path(tmp)
        box, bare = QwenSandbox(root / "hooks", qwen), QwenSandbox(root / "bare", qwen)
        for sandbox in (box, bare):
            sandbox.write_user_settings()
        box.paxm("setup", "--yes", "--agent", "qwen", "--provider", "sqlite")
        box.paxm("remember", "--text", "Release branches are named release/<version>.")
        walls: list[float] = []
        bare_walls: list[float] = []
        injected = 0
        try:
            with FakeOpenAI(root / "requests.jsonl") as fake:
                box.qwen(fake, "warm up")  # starts the hook daemon
                box.wait_for_daemon()
                for _ in range(args.runs):
                    seen = len(fake.agent_steps())
                    walls.append(box.qwen(fake, "What are release branches named?").wall * 1000)
                    injected += any("paxm-recall" in s.user_text() for s in fake.agent_steps()[seen:])
                    bare_walls.append(bare.qwen(fake, "What are release branches named?").wall * 1000)
        finally:
            box.stop_daemon()
    hooks, base = statistics.median(walls), statistics.median(bare_walls)
    print(f"qwen -p turns (Qwen Code {QWEN_VERSION}): {args.runs} with paxm's hooks, {args.runs} without")
    print(f"  turn wall, hooks     median {hooks:8.1f} ms, max {max(walls):8.1f} ms")
    print(f"  turn wall, baseline  median {base:8.1f} ms, max {max(bare_walls):8.1f} ms")
    print(f"  added per turn (median difference): {hooks - base:8.1f} ms; ratio hooks/baseline {hooks / base:.2f}")
    print(f"  recall injected in {injected}/{args.runs} turns")


if __name__ == "__main__":
    main()
