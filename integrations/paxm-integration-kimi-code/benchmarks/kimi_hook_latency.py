"""How much paxm's hooks add to a real Kimi Code turn (run by hand or from benchmarks/run.py).

    uv run python integrations/paxm-integration-kimi-code/benchmarks/kimi_hook_latency.py [--runs 5]

Installs the pinned Kimi Code (and Node 24) like the end-to-end tests, sets paxm up in a
temporary HOME, seeds one memory, warms the hook daemon, then times ``kimi -p`` turns against the
fake Chat Completions server.  Baseline: the same turns in a sandbox with the same config.toml but
no paxm hooks.  Reports both medians, their difference and ratio.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

_HERE = Path(__file__).resolve().parents[1] / "tests"
for _path in (
    _HERE.parents[1] / "paxm-integration-opencode" / "tests",
    _HERE.parents[1] / "paxm-integration-claude-code" / "tests",
    _HERE.parents[1] / "paxm-integration-cline" / "tests",
    _HERE,
):
    sys.path.insert(0, str(_path))

from fake_chat import FakeChat  # noqa: E402
from kimi_harness import KIMI_VERSION, KimiSandbox, install_kimi  # noqa: E402

PROMPT = "What are release branches named?"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    kimi, node = install_kimi()
    with tempfile.TemporaryDirectory(prefix="paxm-kimi-bench-") as tmp:
        root = Path(tmp)
        box, bare = KimiSandbox(root / "hooks", kimi, node), KimiSandbox(root / "bare", kimi, node)
        walls: list[float] = []
        bare_walls: list[float] = []
        injected = 0
        with FakeChat(root / "requests.jsonl") as fake:
            for sandbox in (box, bare):
                sandbox.write_user_config(fake)
            box.paxm("setup", "--yes", "--agent", "kimi-code", "--provider", "sqlite")
            box.paxm("remember", "--text", "Release branches are named release/<version>.")
            try:
                box.kimi("warm up")  # starts the hook daemon
                box.wait_for_daemon()
                for _ in range(args.runs):
                    seen = len(fake.agent_steps())
                    walls.append(box.kimi(PROMPT).wall * 1000)
                    injected += any("paxm-recall" in s.user_text() for s in fake.agent_steps()[seen:])
                    bare_walls.append(bare.kimi(PROMPT).wall * 1000)
            finally:
                box.stop_daemon()
    hooks, base = statistics.median(walls), statistics.median(bare_walls)
    print(f"kimi -p turns (Kimi Code {KIMI_VERSION}): {args.runs} with paxm's hooks, {args.runs} without")
    print(f"  turn wall, hooks     median {hooks:8.1f} ms, max {max(walls):8.1f} ms")
    print(f"  turn wall, baseline  median {base:8.1f} ms, max {max(bare_walls):8.1f} ms")
    print(f"  added per turn (median difference): {hooks - base:8.1f} ms; ratio hooks/baseline {hooks / base:.2f}")
    print(f"  recall injected in {injected}/{args.runs} turns")


if __name__ == "__main__":
    main()
