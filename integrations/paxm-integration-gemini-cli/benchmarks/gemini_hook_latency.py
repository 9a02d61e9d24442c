"""How much paxm's hooks add to a real Gemini CLI turn (run by hand or from benchmarks/run.py).

    uv run python integrations/paxm-integration-gemini-cli/benchmarks/gemini_hook_latency.py [--runs 5]

Installs the pinned Gemini CLI like the end-to-end tests, sets paxm up in a temporary HOME,
seeds one memory, warms the hook daemon, then times ``gemini -p`` turns against the fake Gemini
API.  Baseline: the same turns in a sandbox with the same settings but no paxm hooks, run
interleaved with the hooked ones so machine load hits both alike.  Reports both medians, their
difference and ratio.  Gemini does not record how long it waited for a hook, so the installed
``BeforeAgent`` and ``AfterAgent`` commands are also timed directly, run as Gemini runs them
(``sh -c`` with the captured payload on stdin, warm daemon, the seeded memory recalled).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parents[1] / "tests"
for _path in (_HERE.parents[1] / "paxm-integration-claude-code" / "tests", _HERE):
    sys.path.insert(0, str(_path))

from fake_gemini import FakeGemini  # noqa: E402
from gemini_harness import GEMINI_VERSION, GeminiSandbox, install_gemini  # noqa: E402

PROMPT = "What are release branches named?"
FIXTURES = _HERE / "fixtures"


def time_hook(box: GeminiSandbox, native: str, runs: int) -> list[float]:
    """Wall ms of the installed ``native`` hook command, ``runs`` times, with a captured payload."""
    settings = json.loads(box.gemini_settings.read_text())
    command = next(
        h["command"] for g in settings["hooks"][native] for h in g["hooks"] if h.get("name") == f"paxm-{native}"
    )
    payload = json.loads((FIXTURES / f"{native}.json").read_text())
    payload.update(cwd=str(box.workspace), prompt=PROMPT)
    walls = []
    for _ in range(runs):
        started = time.monotonic()
        subprocess.run(command, shell=True, input=json.dumps(payload).encode(), env=box.env(), capture_output=True)
        walls.append((time.monotonic() - started) * 1000)
    return walls


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("npm is needed")
    gemini = install_gemini(npm)
    with tempfile.TemporaryDirectory(prefix="paxm-gemini-bench-") as tmp:
        root = Path(tmp)
        box, bare = GeminiSandbox(root / "hooks", gemini), GeminiSandbox(root / "bare", gemini)
        for sandbox in (box, bare):
            sandbox.write_user_settings()
        box.paxm("setup", "--yes", "--agent", "gemini-cli", "--provider", "sqlite")
        box.paxm("remember", "--text", "Release branches are named release/<version>.")
        walls: list[float] = []
        bare_walls: list[float] = []
        injected = 0
        try:
            with FakeGemini(root / "requests.jsonl") as fake:
                box.gemini(fake, "warm up")  # starts the hook daemon
                box.wait_for_daemon()
                bare.gemini(fake, "warm up")
                for _ in range(args.runs):
                    seen = len(fake.agent_steps())
                    walls.append(box.gemini(fake, PROMPT).wall * 1000)
                    injected += any("paxm-recall" in s.user_text() for s in fake.agent_steps()[seen:])
                    bare_walls.append(bare.gemini(fake, PROMPT).wall * 1000)
            direct = {native: time_hook(box, native, max(5, args.runs * 2)) for native in ("BeforeAgent", "AfterAgent")}
        finally:
            box.stop_daemon()
    hooks, base = statistics.median(walls), statistics.median(bare_walls)
    print(f"gemini -p turns (Gemini CLI {GEMINI_VERSION}): {args.runs} with paxm's hooks, {args.runs} without")
    print(f"  turn wall, hooks     median {hooks:8.1f} ms, max {max(walls):8.1f} ms")
    print(f"  turn wall, baseline  median {base:8.1f} ms, max {max(bare_walls):8.1f} ms")
    print(f"  added per turn (median difference): {hooks - base:8.1f} ms; ratio hooks/baseline {hooks / base:.2f}")
    for native, values in direct.items():
        print(f"  {native} hook command alone  median {statistics.median(values):6.1f} ms, max {max(values):6.1f} ms")
    print(f"  recall injected in {injected}/{args.runs} turns")


if __name__ == "__main__":
    main()
