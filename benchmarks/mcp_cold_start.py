"""Cold start of ``paxm mcp serve``: spawn it, send ``initialize``, time until the answer line.

Usage: ``uv run python benchmarks/mcp_cold_start.py [RUNS]`` (default 5); prints every run and
the median.  The budget is 500 ms (issues 41/43).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}},
}


def once(config: Path) -> float:
    """Seconds from spawning the server to reading its ``initialize`` answer."""
    script = Path(sys.executable).with_name("paxm")
    command = [str(script)] if script.exists() else [sys.executable, "-c", "from paxm_core.cli import main; main()"]
    started = time.perf_counter()
    server = subprocess.Popen(
        [*command, "--config", str(config), "mcp", "serve"],
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


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "config.yaml"
        sqlite = f"  sqlite:\n    type: sqlite\n    enabled: true\n    path: {Path(tmp) / 'm.sqlite'}\n"
        config.write_text("version: 1\nproviders:\n" + sqlite)
        times = [once(config) for _ in range(runs)]
    print("initialize answered in (s):", " ".join(f"{t:.3f}" for t in times))
    print(f"median {statistics.median(times):.3f} s (budget 0.500 s)")


if __name__ == "__main__":
    main()
