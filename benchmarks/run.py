"""Run every paxm benchmark with one command and print each runner's medians and ratios.

    uv run python benchmarks/run.py            # full sizes (tens of minutes on 2 cores)
    uv run python benchmarks/run.py --quick    # small sizes: a smoke run in about a minute
    uv run python benchmarks/run.py --only sqlite,router

Each runner is a separate process so one's corpus never warms another's caches.  At the end
the rows of the scale-and-fan-out table (issue #23) are printed together, each with the figure
the issue started from, the baseline it was measured against in this run, and its target.
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
    "dataclasses": (HERE / "dataclass_bench.py", [], ["--rounds", "3"]),
    "claude-prompt": (HERE / "claude_prompt_bench.py", [], ["--rounds", "6", "--memories", "1000"]),
    "dashboard": (HERE / "dashboard_bench.py", [], ["--quick"]),
    "backfill": (HERE / "backfill_bench.py", [], ["--turns", "2000", "--baseline-turns", "200"]),
    "sdebench": (HERE / "sdebench.py", ["--provider", "sqlite"], ["--quick", "--provider", "sqlite"]),
    # the hybrid embeds every stored turn (seconds per dozen on 2 busy cores): a smaller smoke slice
    "sdebench-hybrid": (
        HERE / "sdebench.py",
        ["--provider", "sqlite-hybrid"],
        ["--quick", "--tasks", "3", "--decoys", "5", "--provider", "sqlite-hybrid"],
    ),
    "claude": (
        ROOT / "integrations" / "paxm-integration-claude-code" / "benchmarks" / "claude_hook_latency.py",
        [],
        ["--runs", "2", "--memories", "2000"],
    ),
    "codex": (
        ROOT / "integrations" / "paxm-integration-codex" / "benchmarks" / "codex_hook_latency.py",
        [],
        ["--runs", "2"],
    ),
    "opencode": (
        ROOT / "integrations" / "paxm-integration-opencode" / "benchmarks" / "opencode_hook_latency.py",
        [],
        ["--runs", "2"],
    ),
    "pi": (
        ROOT / "integrations" / "paxm-integration-pi" / "benchmarks" / "pi_hook_latency.py",
        [],
        ["--runs", "2"],
    ),
    "qwen": (
        ROOT / "integrations" / "paxm-integration-qwen-code" / "benchmarks" / "qwen_hook_latency.py",
        [],
        ["--runs", "2"],
    ),
    "kimi": (
        ROOT / "integrations" / "paxm-integration-kimi-code" / "benchmarks" / "kimi_hook_latency.py",
        [],
        ["--runs", "2"],
    ),
    "cline": (
        ROOT / "integrations" / "paxm-integration-cline" / "benchmarks" / "cline_hook_latency.py",
        [],
        ["--runs", "2"],
    ),
    "kilo": (
        ROOT / "integrations" / "paxm-integration-opencode" / "benchmarks" / "opencode_hook_latency.py",
        ["--harness", "kilo"],
        ["--harness", "kilo", "--runs", "2"],
    ),
    "gemini": (
        ROOT / "integrations" / "paxm-integration-gemini-cli" / "benchmarks" / "gemini_hook_latency.py",
        [],
        ["--runs", "2"],
    ),
    "copilot": (
        ROOT / "integrations" / "paxm-integration-copilot-cli" / "benchmarks" / "copilot_hook_latency.py",
        [],
        ["--runs", "2"],
    ),
}


#: The issue #23 table in its order: (row, figure before the work, target).  A runner records
#: a row with ``results.record`` under a key starting with the row's first words.
TABLE: list[tuple[str, str, str]] = [
    ("SQLite recall hit", "not measured", "<= 0.5 ms, <= 3x raw FTS5"),
    ("300-word prompt", "not measured", "<= 30 ms"),
    ("on-disk size per memory", "not measured", "<= 3x the raw text"),
    ("SQLite put_batch", "1,500 items/s (700-char)", ">= 10k/s 256 B, 4k/s 700-char"),
    ("router overhead per recall, 3 providers", "0.75 ms (direct 0.1 ms)", "<= 0.15 ms"),
    ("queue delivery into SQLite", "560 episodes/s", ">= 5,000 episodes/s"),
    ("first prompt after the daemon is down", "about 280 ms", "<= 200 ms"),
    ("UserPromptSubmit as the real Claude Code waits for it", "22 ms median", "<= 15 ms median"),
    ("daemon resident memory, 3 providers loaded", "29.5 MB with one", "<= 40 MB"),
    ("backfill into SQLite", "230 turns/s (435.6 s at 100k)", "100k turns in <= 45 s"),
    ("sde-bench passive deciding chat", "27/33 (issue 46)", "every deciding chat; amended rule >= 5/6"),
]

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
                    "ok": rate >= 5000,
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
                            "ok": float(wait) <= 15,
                        }
                    )
    return out


def print_table(rows: list[dict[str, object]]) -> None:
    """The issue #23 table: every row, measured or not, with before, baseline and target."""
    print("\n== scale and fan-out (issue #23); wall-clock medians on a shared machine", flush=True)
    print(f"  {'measure':<58} {'before':<24} {'now':>12}  {'verdict':<7} {'target':<26} baseline")
    for prefix, before, target in TABLE:
        found = [r for r in rows if str(r["key"]).startswith(prefix)]
        if not found:
            print(f"  {prefix:<58} {before:<24} {'not run':>12}  {'-':<7} {target:<26} -")
        for r in found:
            value = float(r["value"])  # type: ignore[arg-type]
            shown = f"{value:.3f} {r['unit']}" if value < 10 else f"{value:.1f} {r['unit']}"
            verdict = {True: "ok", False: "MISSED", None: "-"}[r.get("ok")]  # type: ignore[index]
            print(f"  {str(r['key']):<58} {before:<24} {shown:>12}  {verdict:<7} {target:<26} {r['baseline']}")


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
