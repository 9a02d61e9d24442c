"""Run every paxm benchmark with one command and print each runner's medians and ratios.

    uv run python benchmarks/run.py            # full sizes (tens of minutes on 2 cores)
    uv run python benchmarks/run.py --quick    # small sizes: a smoke run in about two minutes
    uv run python benchmarks/run.py --only sqlite,router

Each runner is a separate process so one's corpus never warms another's caches.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

#: name -> (script, full-size args, quick args)
RUNNERS: dict[str, tuple[Path, list[str], list[str]]] = {
    "sqlite": (HERE / "sqlite_bench.py", [], ["--quick"]),
    "router": (HERE / "router_bench.py", [], ["--rounds", "300"]),
    "queue": (HERE / "queue_bench.py", [], ["--events", "200", "--episodes", "100"]),
    "hook": (HERE / "hook_bench.py", [], ["--rounds", "8", "--memories", "2000"]),
    "claude": (
        ROOT / "integrations" / "paxm-integration-claude-code" / "benchmarks" / "claude_hook_latency.py",
        [],
        ["--runs", "2"],
    ),
    "opencode": (
        ROOT / "integrations" / "paxm-integration-opencode" / "benchmarks" / "opencode_hook_latency.py",
        [],
        ["--runs", "2"],
    ),
    "qwen": (
        ROOT / "integrations" / "paxm-integration-qwen-code" / "benchmarks" / "qwen_hook_latency.py",
        [],
        ["--runs", "2"],
    ),
    "kilo": (
        ROOT / "integrations" / "paxm-integration-opencode" / "benchmarks" / "opencode_hook_latency.py",
        ["--harness", "kilo"],
        ["--harness", "kilo", "--runs", "2"],
    ),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes and few repetitions (smoke run)")
    parser.add_argument("--only", default="", help=f"comma-separated subset of: {', '.join(RUNNERS)}")
    parser.add_argument("--skip", default="", help="comma-separated runners to leave out")
    args = parser.parse_args(argv)
    chosen = [n.strip() for n in args.only.split(",") if n.strip()] or list(RUNNERS)
    skipped = {n.strip() for n in args.skip.split(",") if n.strip()}
    unknown = [n for n in [*chosen, *skipped] if n not in RUNNERS]
    if unknown:
        parser.error(f"unknown runner(s): {', '.join(unknown)}; choose from {', '.join(RUNNERS)}")
    failures: list[str] = []
    for name in chosen:
        if name in skipped:
            continue
        script, full, quick = RUNNERS[name]
        if not script.exists():
            print(f"== {name}: {script} is missing", flush=True)
            failures.append(name)
            continue
        print(f"\n== {name}: {script.relative_to(ROOT)} {' '.join(quick if args.quick else full)}", flush=True)
        started = time.monotonic()
        done = subprocess.run([sys.executable, str(script), *(quick if args.quick else full)], cwd=ROOT)
        print(f"== {name}: exit {done.returncode} after {time.monotonic() - started:.1f}s", flush=True)
        if done.returncode != 0:
            failures.append(name)
    if failures:
        print(f"\nfailed: {', '.join(failures)}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
