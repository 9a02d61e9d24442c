"""How much paxm's plugin adds to a real Cline run (run by hand or from benchmarks/run.py).

    uv run python integrations/paxm-integration-cline/benchmarks/cline_hook_latency.py [--runs 5]

Installs the pinned Cline like the end-to-end tests, sets paxm up in a temporary HOME, seeds one
memory, warms the hook daemon, then times ``cline --json`` runs (local session backend, no hub
daemon) against the fake Chat Completions server.  Baseline: the same runs in a sandbox without
paxm's plugin.  Reports both medians, their difference and ratio.
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
    _HERE,
):
    sys.path.insert(0, str(_path))

from cline_harness import CLINE_VERSION, ClineSandbox, install_cline  # noqa: E402
from fake_chat import FakeChat  # noqa: E402

PROMPT = "What are release branches named?"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    cline = install_cline()
    with tempfile.TemporaryDirectory(prefix="paxm-cline-bench-") as tmp:
        root = Path(tmp)
        box, bare = ClineSandbox(root / "hooks", cline), ClineSandbox(root / "bare", cline)
        walls: list[float] = []
        bare_walls: list[float] = []
        injected = 0
        with FakeChat(root / "requests.jsonl") as fake:
            for sandbox in (box, bare):
                sandbox.authenticate(fake)
            box.setup_cline()
            box.paxm("remember", "--text", "Release branches are named release/<version>.")
            try:
                box.warm_daemon()
                box.cline("warm up")
                for _ in range(args.runs):
                    seen = len(fake.agent_steps())
                    walls.append(box.cline(PROMPT).wall * 1000)
                    injected += any("paxm-recall" in s.user_text() for s in fake.agent_steps()[seen:])
                    bare_walls.append(bare.cline(PROMPT).wall * 1000)
            finally:
                box.stop_daemon()
    hooks, base = statistics.median(walls), statistics.median(bare_walls)
    print(f"cline --json runs (Cline {CLINE_VERSION}): {args.runs} with paxm's plugin, {args.runs} without")
    print(f"  run wall, plugin     median {hooks:8.1f} ms, max {max(walls):8.1f} ms")
    print(f"  run wall, baseline   median {base:8.1f} ms, max {max(bare_walls):8.1f} ms")
    print(f"  added per run (median difference): {hooks - base:8.1f} ms; ratio plugin/baseline {hooks / base:.2f}")
    print(f"  recall injected in {injected}/{args.runs} runs")


if __name__ == "__main__":
    main()
