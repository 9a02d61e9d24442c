"""Cold start of the commands users and agents start most: ``paxm recall`` and ``paxm mcp serve``.

    uv run python benchmarks/startup_bench.py [--runs N]

Each run is a new process, timed from spawn to its answer:

- ``paxm --version`` (the baseline: the interpreter, click and paxm's CLI module);
- ``paxm recall --query …`` against a small SQLite store (budget: at most 1.5× the baseline);
- ``paxm mcp serve`` from spawn to its answer to ``initialize`` (budget: 500 ms).

The three are interleaved, run by run, so a busy minute slows all of them alike; medians are
printed and recorded for ``run.py``'s budget table.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import record  # noqa: E402

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}},
}


def paxm_command() -> list[str]:
    """The installed ``paxm`` console script beside this interpreter (what a user runs)."""
    script = Path(sys.executable).with_name("paxm")
    return [str(script)] if script.exists() else [sys.executable, "-c", "from paxm_core.cli import main; main()"]


def timed_run(argv: list[str]) -> float:
    """Seconds for one command to run to completion (its output must say it succeeded)."""
    started = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def timed_initialize(config: Path) -> float:
    """Seconds from spawning ``paxm mcp serve`` to reading its ``initialize`` answer."""
    started = time.perf_counter()
    server = subprocess.Popen(
        [*paxm_command(), "--config", str(config), "mcp", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write((json.dumps(INITIALIZE) + "\n").encode())
    server.stdin.flush()
    answer = server.stdout.readline()
    elapsed = time.perf_counter() - started
    server.stdin.close()
    server.wait(timeout=60)
    assert json.loads(answer)["id"] == 1, answer
    return elapsed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=9, help="runs of each command (interleaved)")
    args = parser.parse_args(argv)
    paxm = paxm_command()
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "config.yaml"
        store = Path(tmp) / "m.sqlite"
        config.write_text(
            f"version: 1\nproviders:\n  sqlite:\n    type: sqlite\n    enabled: true\n    path: {store}\n"
        )
        base = [*paxm, "--config", str(config)]
        subprocess.run([*base, "remember", "--text", "We deploy with blue-green releases"], check=True)
        version, recall, mcp = [], [], []
        for _ in range(args.runs):
            version.append(timed_run([*paxm, "--version"]))
            recall.append(timed_run([*base, "recall", "--query", "how do we deploy"]))
            mcp.append(timed_initialize(config))
    v, r, m = (statistics.median(x) * 1000 for x in (version, recall, mcp))
    print(f"paxm --version   median {v:.1f} ms  runs " + " ".join(f"{t * 1000:.0f}" for t in version))
    print(f"paxm recall      median {r:.1f} ms  runs " + " ".join(f"{t * 1000:.0f}" for t in recall))
    print(f"mcp initialize   median {m:.1f} ms  runs " + " ".join(f"{t * 1000:.0f}" for t in mcp))
    print(f"recall / --version: {r / v:.2f}x (budget 1.5x); initialize {m:.0f} ms (budget 500 ms)")
    record(
        "paxm recall, cold",
        r,
        "ms",
        f"paxm --version {v:.1f} ms ({r / v:.2f}x)",
        "<= 1.5x paxm --version",
        r / v <= 1.5,
    )
    record("paxm mcp serve answers initialize, cold", m, "ms", f"paxm --version {v:.1f} ms", "<= 500 ms", m <= 500)


if __name__ == "__main__":
    main()
