"""How long the real Codex CLI waits for paxm's hooks (run by hand; prints medians).

    uv run --all-packages python integrations/paxm-integration-codex/benchmarks/codex_hook_latency.py [--runs 7]

Installs the pinned Codex like the end-to-end tests do, installs paxm's config.toml hooks
(trusted) with ``paxm setup`` in a temporary HOME, seeds one memory, warms the hook daemon,
then runs ``codex exec`` ``--runs`` times against the fake Responses server and reports, per
hook event, the median and max of how long Codex waited (from its ``hook: <Event>`` /
``hook: <Event> Completed`` stderr lines, stamped on arrival), plus the median wall time of a
whole turn with paxm's hooks and without them (baseline: the same config after
``paxm uninstall --agent codex``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from codex_harness import CodexBox, codex_bin  # noqa: E402

from paxm_contracttest.fake_models.responses import FakeResponses  # noqa: E402


def _summary(values: list[float]) -> str:
    if not values:
        return "n/a"
    return f"median {statistics.median(values):.0f} ms, max {max(values):.0f} ms (n={len(values)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    codex = codex_bin()
    with tempfile.TemporaryDirectory(prefix="paxm-codex-bench-") as tmp:
        box = CodexBox(Path(tmp), codex)
        with FakeResponses(Path(tmp) / "requests.jsonl") as fake:
            box.point_at(fake)
            box.paxm("setup", "--yes", "--agent", "codex", "--provider", "sqlite")
            box.paxm("remember", "--text", "The deploy window is Tuesday afternoon.")
            try:
                box.codex(fake, "warm up")
                box.wait_for_daemon()
                per_event: dict[str, list[float]] = {}
                walls: list[float] = []
                for _ in range(args.runs):
                    run = box.codex(fake, "When is the deploy window?")
                    walls.append(run.wall * 1000)
                    for hook in run.hooks:
                        per_event.setdefault(hook["hookEvent"], []).append(hook["durationMs"])
            finally:
                box.stop_daemon()
            box.paxm("uninstall", "--agent", "codex", "--yes")
            bare = [box.codex(fake, "When is the deploy window?").wall * 1000 for _ in range(args.runs)]
    print(f"codex {codex.parent.parent.parent.name}: hook latency Codex waited for (warm daemon)")
    for event, values in per_event.items():
        print(f"  {event:<17} {_summary(values)}")
    with_hooks, without = statistics.median(walls), statistics.median(bare)
    print(
        f"  codex exec turn: {with_hooks:.0f} ms with paxm hooks, {without:.0f} ms without "
        f"({with_hooks / without:.2f}x)"
    )


if __name__ == "__main__":
    main()
