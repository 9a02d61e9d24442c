"""How long the real Claude Code waits for paxm's hooks (run by hand; prints medians).

    uv run python integrations/paxm-integration-claude-code/benchmarks/claude_hook_latency.py [--runs 7]

Installs the pinned Claude Code like the end-to-end tests do, installs paxm's hooks with
``paxm setup`` in a temporary HOME, seeds one memory, warms the hook daemon, then runs
``claude -p`` ``--runs`` times against the fake Anthropic server and reports, per hook event,
the median and max of how long Claude waited (``SessionStart`` from Claude's transcript, the
others from its ``--include-hook-events`` stream), plus the median wall time of a whole
``claude -p`` turn with and without paxm's hooks (the same number of runs with an empty
settings file).  ``--memories N`` first fills the store with N generated memories (written
straight through the SQLite provider), so the recall Claude waits for searches a real-sized store.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from claude_harness import Sandbox, install_claude, npm_cache_dir  # noqa: E402

from paxm_contracttest.fake_models.anthropic import FakeAnthropic  # noqa: E402


def _summary(values: list[float]) -> str:
    if not values:
        return "n/a"
    return f"median {statistics.median(values):.0f} ms, max {max(values):.0f} ms (n={len(values)})"


def _seed(config: Path, count: int) -> None:
    """Fill the sandbox's SQLite store with ``count`` generated notes, in batches."""
    from paxm_core import Deadline, MemoryItem
    from paxm_core.runtime import Runtime

    words = "deploy cache queue schema migration index replica shard token session rollout canary".split()
    with Runtime.load(str(config), telemetry=None) as runtime:
        provider = runtime.router.providers["sqlite"]
        for base in range(0, count, 2000):
            batch = [
                MemoryItem(
                    text=f"Note {i}: the {' '.join(words[(i * k) % len(words)] for k in (1, 3, 7))} decision {i}",
                    id=f"seed{i}",
                    tier="ltm",
                )
                for i in range(base, min(count, base + 2000))
            ]
            provider.put_batch(batch, Deadline.none())  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--memories", type=int, default=100_000, help="memories in the store (plus one to recall)")
    args = parser.parse_args()
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("npm is needed")
    claude = install_claude(npm, npm_cache_dir())
    with tempfile.TemporaryDirectory(prefix="paxm-claude-bench-") as tmp:
        root = Path(tmp)
        box = Sandbox(root / "hooks", claude)
        box.paxm("setup", "--yes", "--agent", "claude", "--provider", "sqlite")
        box.paxm("remember", "--text", "Release branches are named release/<version>.")
        if args.memories > 0:
            _seed(box.config, args.memories)
        bare = Sandbox(root / "bare", claude)
        bare.settings.parent.mkdir(parents=True)
        bare.settings.write_text("{}")
        waits: dict[str, list[float]] = {}
        walls: list[float] = []
        bare_walls: list[float] = []
        injected = 0
        try:
            with FakeAnthropic(root / "requests.jsonl") as fake:
                box.claude(fake, "warm up")  # starts the hook daemon
                box.wait_for_daemon()
                for _ in range(args.runs):
                    run = box.claude(fake, "What are release branches named?")
                    walls.append(run.wall * 1000)
                    injected += any(
                        h["hookEvent"] == "UserPromptSubmit" and "<paxm-recall" in str(h.get("stdout"))
                        for h in run.hooks
                    )
                    for hook in run.hooks:
                        if hook.get("timing") != "unknown":
                            waits.setdefault(str(hook["hookEvent"]), []).append(float(hook["durationMs"]))
                    bare_walls.append(bare.claude(fake, "What are release branches named?").wall * 1000)
        finally:
            box.stop_daemon()
    print(f"claude -p turns: {args.runs} with paxm hooks, {args.runs} without")
    for event, values in waits.items():
        print(f"  {event:20} {_summary(values)}")
    print(f"  {'turn wall, hooks':20} {_summary(walls)}")
    print(f"  {'turn wall, no hooks':20} {_summary(bare_walls)}")
    print(f"  recall injected in {injected}/{args.runs} turns")
    summary = {
        "hooks_ms": {e: statistics.median(v) for e, v in waits.items()},
        "memories": args.memories + 1,
        "bare_turn_ms": statistics.median(bare_walls) if bare_walls else None,
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
