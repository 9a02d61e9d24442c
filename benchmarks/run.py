"""Run every paxm benchmark with one command and print each runner's medians and ratios.

    uv run python benchmarks/run.py            # full sizes (tens of minutes on 2 cores)
    uv run python benchmarks/run.py --quick    # small sizes: a smoke run in about a minute
    uv run python benchmarks/run.py --only sqlite,router

Each runner is a separate process so one's corpus never warms another's caches.  At the end
the budget table is printed: every row users feel (and the floors kept for the router and the
queue), each with the baseline it was measured against in this run and its budget.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

#: name -> (script, full-size args, quick args).  The quick sizes keep the whole smoke run (harness
#: runners skipped) about a minute on an idle 2-core machine: each row is still measured against
#: its baseline, on corpora small enough that setup does not dominate.
RUNNERS: dict[str, tuple[Path, list[str], list[str]]] = {
    "sqlite": (HERE / "sqlite_bench.py", [], ["--quick"]),
    "postgres": (HERE / "postgres_bench.py", [], ["--quick", "--memories", "3000", "--rounds", "4"]),
    "scale": (HERE / "scale_bench.py", [], ["--memories", "10000", "--repeat", "20"]),
    "router": (HERE / "router_bench.py", [], ["--rounds", "300"]),
    "queue": (HERE / "queue_bench.py", [], ["--events", "200", "--episodes", "100"]),
    "hybrid": (HERE / "hybrid_bench.py", [], ["--quick", "--sizes", "1000"]),
    "hook": (HERE / "hook_bench.py", [], ["--rounds", "6", "--memories", "1000"]),
    "claude-prompt": (HERE / "claude_prompt_bench.py", [], ["--rounds", "6", "--memories", "1000"]),
    "dashboard": (HERE / "dashboard_bench.py", [], ["--quick"]),
    "backfill": (HERE / "backfill_bench.py", [], ["--turns", "2000", "--baseline-turns", "200"]),
    "startup": (HERE / "startup_bench.py", [], ["--runs", "3"]),
    "sdebench": (HERE / "sdebench.py", ["--provider", "sqlite"], ["--quick", "--provider", "sqlite"]),
    # the hybrid embeds every stored turn (seconds per dozen on 2 busy cores): a smaller smoke slice
    "sdebench-hybrid": (
        HERE / "sdebench.py",
        ["--provider", "sqlite-hybrid"],
        ["--quick", "--tasks", "3", "--decoys", "5", "--provider", "sqlite-hybrid"],
    ),
    # LoCoMo is CC BY-NC and not shipped: measured only when PAXM_LOCOMO names a copy
    "locomo": (HERE / "locomo_bench.py", [], []),
    **{
        name: (HERE / "harness_latency.py", ["--harness", name, *full], ["--harness", name, "--runs", "2", *quick])
        for name, full, quick in (
            ("claude", ["--runs", "7", "--memories", "100000"], ["--memories", "2000"]),
            ("codex", ["--runs", "7"], []),
            ("opencode", ["--runs", "7"], []),
            ("pi", ["--runs", "7"], []),
            ("qwen", [], []),
            ("kimi", [], []),
            ("cline", [], []),
            ("kilo", [], []),
            ("gemini", [], []),
            ("copilot", [], []),
        )
    },
}


#: The budget table in its order: (row, budget).  A runner records a row with ``results.record``
#: under a key starting with the row's first words.
TABLE: list[tuple[str, str]] = [
    ("UserPromptSubmit as the real Claude Code", "<= 1.5x sh -c + python -I -S -c pass"),
    ("first prompt after the daemon is down", "<= 250 ms (3 providers)"),
    ("SQLite recall hit", "<= 0.5 ms at 1M"),
    ("300-word prompt", "<= 30 ms at 1M"),
    ("backfill into SQLite", "100k turns in <= 60 s"),
    ("daemon resident memory, 3 providers loaded", "<= 40 MB"),
    ("paxm recall, cold", "<= 1.5x paxm --version"),
    ("paxm mcp serve answers initialize, cold", "<= 500 ms"),
    ("router overhead per recall, 3 providers", "<= 0.5 ms (floor)"),
    ("queue delivery into SQLite", ">= 1,000 episodes/s (floor)"),
    ("write-only hook, daemon down", "<= 2.5x python -I -S -c pass (floor)"),
    ("sde-bench passive deciding chat", "every deciding chat; amended rule >= 5/6 (issue 46)"),
    ("LoCoMo recall@10, sqlite-hybrid", ">= 0.65, >= sqlite per conversation"),
]
#: Rows measured on data paxm cannot ship: "not run" unless the user points the runner at a copy.
OPTIONAL = frozenset({"LoCoMo recall@10, sqlite-hybrid"})

_QUEUE_SQLITE = re.compile(
    r"delivery via queue, sqlite (provider|write process)\s+(\d+) episodes:\s+([\d.]+) episodes/s"
    r".*?loop\s+([\d.]+) items/s"
)


def rows_from_output(name: str, text: str) -> list[dict[str, object]]:
    """Rows of runners that do not record their own (their printed lines are parsed)."""
    out: list[dict[str, object]] = []
    if name == "queue":
        for m in _QUEUE_SQLITE.finditer(text):
            rate = float(m.group(3))
            # "provider": every write in the daemon; "write process": large batches in a child
            how = ", writes in a child process" if m.group(1) == "write process" else ""
            out.append(
                {
                    "key": f"queue delivery into SQLite ({m.group(2)} episodes{how})",
                    "value": rate,
                    "unit": "episodes/s",
                    "baseline": f"Router.put_to_provider loop {float(m.group(4)):.0f} items/s",
                    "ok": rate >= 1000,
                }
            )
    if name == "claude":
        for line in text.splitlines():
            if line.startswith("{") and "hooks_ms" in line:
                wait = json.loads(line)["hooks_ms"].get("UserPromptSubmit")
                if wait is not None:
                    meta = json.loads(line)
                    out.append(
                        {
                            "key": f"UserPromptSubmit as the real Claude Code waits for it "
                            f"({meta.get('memories', '?')} memories)",
                            "value": float(wait),
                            "unit": "ms",
                            "baseline": "the same turn without paxm's hooks: "
                            + (f"{meta['bare_turn_ms']:.0f} ms" if "bare_turn_ms" in meta else "see above"),
                            "ok": None,  # the budget is a ratio: claude_prompt_bench measures it
                        }
                    )
    return out


def print_table(rows: list[dict[str, object]]) -> None:
    """The budget table: every row, measured or not, with this run's figure, baseline and budget."""
    print("\n== budgets; wall-clock medians on this machine, baselines measured in the same run", flush=True)
    print(f"  {'measure':<58} {'now':>12}  {'verdict':<7} {'budget':<38} baseline")
    for prefix, budget in TABLE:
        found = [r for r in rows if str(r["key"]).startswith(prefix)]
        if not found:
            why = "needs PAXM_LOCOMO (dataset not shipped)" if prefix in OPTIONAL else "-"
            print(f"  {prefix:<58} {'not run':>12}  {'-':<7} {budget:<38} {why}")
        for r in found:
            value = float(r["value"])  # type: ignore[arg-type]
            shown = f"{value:.3f} {r['unit']}" if value < 10 else f"{value:.1f} {r['unit']}"
            verdict = {True: "ok", False: "MISSED", None: "-"}[r.get("ok")]  # type: ignore[index]
            print(f"  {str(r['key']):<58} {shown:>12}  {verdict:<7} {budget:<38} {r['baseline']}")


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
    results = Path(tempfile.mkstemp(prefix="paxm-bench-", suffix=".jsonl")[1])
    env = {**os.environ, "PAXM_BENCH_RESULTS": str(results)}
    parsed: list[dict[str, object]] = []
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
        proc = subprocess.Popen(
            [sys.executable, str(script), *(quick if args.quick else full)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        lines = []
        for line in proc.stdout:  # echoed as it comes: a full run takes a while
            print(line, end="", flush=True)
            lines.append(line)
        returncode = proc.wait()
        parsed.extend(rows_from_output(name, "".join(lines)))
        print(f"== {name}: exit {returncode} after {time.monotonic() - started:.1f}s", flush=True)
        if returncode != 0:
            failures.append(name)
    recorded = [json.loads(line) for line in results.read_text().splitlines() if line.strip()]
    results.unlink()
    print_table(recorded + parsed)
    if failures:
        print(f"\nfailed: {', '.join(failures)}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
