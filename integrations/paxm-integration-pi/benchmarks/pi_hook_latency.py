"""How long paxm's extension makes the real Pi wait per turn (run by hand or from benchmarks/run.py).

    uv run --all-packages python integrations/paxm-integration-pi/benchmarks/pi_hook_latency.py [--runs 7]
        [--build earendil-0.74]

Installs the pinned Pi like the end-to-end tests do, installs paxm's extension with ``paxm setup``
in a temporary HOME, seeds one memory, warms the hook daemon, then runs ``pi --offline -p``
``--runs`` times against the fake Chat Completions server with ``PAXM_PI_DEBUG=1``, under which
the extension reports how long each of its handlers ran inside Pi (``session_start``: session
bootstrap; ``before_agent_start``: recall, awaited before the model request; ``agent_end``:
handing the buffered run to paxm; the buffer-only handlers ``message_end`` and
``tool_execution_*``).  Baseline: the same number of turns in a sandbox without the extension;
the report gives both medians and their ratio.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from pi_harness import PI_VERSIONS, FakeOpenAI, PiSandbox, install_pi, npm_cache_dir  # noqa: E402

TIMING = re.compile(r"paxm: timing (\S+) ([0-9.]+) ms")
HANDLERS = (
    "session_start",
    "before_agent_start",
    "message_end",
    "tool_execution_start",
    "tool_execution_end",
    "agent_end",
    "session_shutdown",
)


def _summary(values: list[float]) -> str:
    if not values:
        return "n/a"
    return f"median {statistics.median(values):7.1f} ms, max {max(values):7.1f} ms (n={len(values)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--build", default="earendil-0.74", choices=[b.key for b in PI_VERSIONS])
    parser.add_argument("--tool", action="store_true", help="every turn runs one tool call")
    args = parser.parse_args()
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("npm is needed")
    build = next(b for b in PI_VERSIONS if b.key == args.build)
    installed = install_pi(npm, npm_cache_dir(), build)
    prompt = ("RUN_TOOL: " if args.tool else "") + "What are release branches named?"
    with tempfile.TemporaryDirectory(prefix="paxm-pi-bench-") as tmp:
        root = Path(tmp)
        box = PiSandbox(root / "hooks", installed)
        box.paxm("setup", "--yes", "--agent", "pi", "--provider", "sqlite")
        box.paxm("remember", "--text", "Release branches are named release/<version>.")
        bare = PiSandbox(root / "bare", installed)
        hooks: dict[str, list[float]] = {}
        walls: list[float] = []
        bare_walls: list[float] = []
        added: list[float] = []
        injected = 0
        try:
            with FakeOpenAI(root / "requests.jsonl") as fake:
                box.configure_pi(fake.url)
                bare.configure_pi(fake.url)
                box.pi("warm up")  # starts the hook daemon
                box.wait_for_daemon()
                bare.pi("warm up")
                for _ in range(args.runs):
                    seen = len(fake.completions())
                    run = box.pi(prompt, PAXM_PI_DEBUG="1")
                    walls.append(run.wall * 1000)
                    injected += any("<paxm-recall" in s.user_text() for s in fake.completions()[seen:])
                    turn = 0.0
                    for name, ms in TIMING.findall(run.stderr):
                        hooks.setdefault(name, []).append(float(ms))
                        turn += float(ms)
                    added.append(turn)
                    bare_walls.append(bare.pi(prompt).wall * 1000)
        finally:
            box.stop_daemon()
    print(f"pi -p turns: {args.runs} with paxm's extension, {args.runs} without ({build.spec})")
    for name in HANDLERS:
        if name in hooks:
            print(f"  {name:22} {_summary(hooks[name])}")
    print(f"  {'handlers per turn (sum)':22} {_summary(added)}")
    print(f"  {'turn wall, extension':22} {_summary(walls)}")
    print(f"  {'turn wall, baseline':22} {_summary(bare_walls)}")
    if walls and bare_walls:
        print(f"  wall ratio extension/baseline: {statistics.median(walls) / statistics.median(bare_walls):.2f}")
    print(f"  recall injected in {injected}/{args.runs} turns")


if __name__ == "__main__":
    main()
