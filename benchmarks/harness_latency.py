"""What paxm's hooks add to a real harness turn, for every harness (run by hand or from run.py).

    uv run python benchmarks/harness_latency.py --harness claude,codex [--runs 5] [--memories N]

For each harness (``paxm_contracttest.harness.harnesses``: claude, codex, opencode, pi, qwen,
kimi, cline, kilo, gemini, copilot) the pinned release is installed the way the end-to-end tests
install it, paxm is set up in a temporary HOME with one memory to recall (plus ``--memories``
generated ones, written straight through the SQLite provider), the hook daemon is warmed, and
``--runs`` turns run against the harness's fake model server.  Baseline: the same turns in a
sandbox with the same harness config and no paxm.  Printed per harness: the median and max turn
wall with and without paxm, their difference and ratio, how often the recall reached the
model, and, for harnesses that report their hooks (Claude Code's hook event stream, Codex's
``hook:`` lines), how long the harness waited for each hook event.  The last line of each
harness is a JSON summary (``hooks_ms``: per-event medians) that ``run.py`` reads.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path
from typing import Any

from paxm_contracttest.harness.harnesses import HARNESSES
from paxm_contracttest.harness.kit import Harness, HarnessBox, Turn, install, model_inputs

PROMPT = "What are release branches named?"


def _summary(values: list[float]) -> str:
    if not values:
        return "n/a"
    return f"median {statistics.median(values):8.1f} ms, max {max(values):8.1f} ms (n={len(values)})"


def _ran(turn: Turn) -> Turn:
    """``turn``, which must have finished: a failed run would time nothing."""
    if turn.returncode != 0 or not turn.reply:
        raise RuntimeError(f"the turn failed ({turn.returncode}): {turn.stderr[-2000:]}")
    return turn


def seed(config: Path, count: int) -> None:
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


def measure(harness: Harness, runs: int, memories: int, *, tool: bool = False) -> dict[str, Any]:
    """Time ``runs`` turns of ``harness`` with and without paxm; print and return the summary.

    :param tool: every turn runs one tool call (the fake models answer ``RUN_TOOL:`` prompts with one).
    """
    prompt = ("RUN_TOOL: " if tool else "") + PROMPT
    installed = install(harness)
    waits: dict[str, list[float]] = {}
    walls: list[float] = []
    bare_walls: list[float] = []
    injected = 0
    with tempfile.TemporaryDirectory(prefix=f"paxm-{harness.name}-bench-") as tmp:
        box = HarnessBox(Path(tmp) / "hooks", harness, installed)
        bare = HarnessBox(Path(tmp) / "bare", harness, installed)
        box.setup()
        box.paxm("remember", "--global", "--text", "Release branches are named release/<version>.")  # every project
        if memories > 0:
            seed(box.config, memories)
        try:
            with box.fake() as fake:
                _ran(box.turn(fake, "warm up"))  # starts the hook daemon
                box.wait_for_daemon()
                _ran(bare.turn(fake, "warm up"))
                for _ in range(runs):
                    seen = len(model_inputs(fake))
                    turn = _ran(box.turn(fake, prompt))
                    walls.append(turn.wall * 1000)
                    injected += any("paxm-recall" in text for text in model_inputs(fake)[seen:])
                    for hook in turn.hooks:
                        if hook.get("timing") != "unknown":
                            waits.setdefault(str(hook["hookEvent"]), []).append(float(hook["durationMs"]))
                    bare_walls.append(_ran(bare.turn(fake, prompt)).wall * 1000)
        finally:
            box.stop_daemon()
    with_hooks, without = statistics.median(walls), statistics.median(bare_walls)
    print(f"{harness.name} ({' '.join(harness.packages)}): {runs} turns with paxm's hooks, {runs} without")
    for event, values in waits.items():
        print(f"  {event:<22} {_summary(values)}")
    print(f"  {'turn wall, hooks':<22} {_summary(walls)}")
    print(f"  {'turn wall, baseline':<22} {_summary(bare_walls)}")
    print(f"  added per turn (median difference): {with_hooks - without:.1f} ms; ratio {with_hooks / without:.2f}")
    print(f"  recall injected in {injected}/{runs} turns")
    summary = {
        "harness": harness.name,
        "hooks_ms": {event: statistics.median(values) for event, values in waits.items()},
        "memories": memories + 1,
        "turn_ms": with_hooks,
        "bare_turn_ms": without,
        "injected": injected,
        "runs": runs,
    }
    print(json.dumps(summary), flush=True)
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--harness", required=True, help=f"comma-separated: {', '.join(HARNESSES)}")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--memories", type=int, default=0, help="generated memories in the store (plus one to recall)")
    parser.add_argument("--tool", action="store_true", help="every turn runs one tool call (RUN_TOOL: prompts)")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.harness.split(",") if n.strip()]
    unknown = [n for n in names if n not in HARNESSES]
    if unknown:
        parser.error(f"unknown harness(es): {', '.join(unknown)}; choose from {', '.join(HARNESSES)}")
    failed = 0
    for name in names:
        try:
            measure(HARNESSES[name], args.runs, args.memories, tool=args.tool)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # the kit's installer skips or fails the way pytest does
            failed += 1
            print(f"{name}: not measured: {exc}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
