"""How long paxm's plugin makes the real OpenCode wait per turn (run by hand or from benchmarks/run.py).

    uv run python integrations/paxm-integration-opencode/benchmarks/opencode_hook_latency.py [--runs 7]

Installs the pinned OpenCode like the end-to-end tests do, installs paxm's plugin with
``paxm setup`` in a temporary HOME, seeds one memory, warms the hook daemon, then runs
``opencode run`` ``--runs`` times against the fake Chat Completions server with
``PAXM_OPENCODE_DEBUG=1``, under which the plugin reports how long each of its hooks ran inside
OpenCode (``chat.message``: session bootstrap + recall, awaited before the model request;
``transform``: the injection, once per agent-loop step; ``session.idle``: reading the turn and
handing it to paxm).  Baseline: the same number of turns in a sandbox without the plugin; the
report gives both medians and their ratio.  ``--harness kilo`` does the same with the real Kilo
Code CLI (same plugin, config dir ``~/.config/kilo``).
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

from opencode_harness import OpenCodeSandbox, install_opencode, npm_cache_dir  # noqa: E402

from paxm_contracttest.fake_models.chat_completions import FakeOpenAI  # noqa: E402

TIMING = re.compile(r"paxm: timing (\S+) ([0-9.]+) ms")


def _summary(values: list[float]) -> str:
    if not values:
        return "n/a"
    return f"median {statistics.median(values):7.1f} ms, max {max(values):7.1f} ms (n={len(values)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--harness", choices=("opencode", "kilo"), default="opencode")
    args = parser.parse_args()
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("npm is needed")
    sandbox: type[OpenCodeSandbox] = OpenCodeSandbox
    if args.harness == "kilo":
        from kilo_harness import KiloSandbox, install_kilo

        opencode, deps = install_kilo(npm)
        sandbox = KiloSandbox
    else:
        opencode, deps = install_opencode(npm, npm_cache_dir())
    with tempfile.TemporaryDirectory(prefix=f"paxm-{args.harness}-bench-") as tmp:
        root = Path(tmp)
        box = sandbox(root / "hooks", opencode, deps)
        box.paxm("setup", "--yes", "--agent", args.harness, "--provider", "sqlite")
        box.paxm("remember", "--text", "Release branches are named release/<version>.")
        bare = sandbox(root / "bare", opencode, deps)
        hooks: dict[str, list[float]] = {}
        walls: list[float] = []
        bare_walls: list[float] = []
        added: list[float] = []
        injected = 0
        try:
            with FakeOpenAI(root / "requests.jsonl") as fake:
                box.configure_opencode(fake.url)
                bare.configure_opencode(fake.url)
                box.opencode(fake, "warm up")  # starts the hook daemon
                box.wait_for_daemon()
                for _ in range(args.runs):
                    seen = len(fake.agent_steps())
                    run = box.opencode(fake, "What are release branches named?", PAXM_OPENCODE_DEBUG="1")
                    walls.append(run.wall * 1000)
                    injected += any("<paxm-recall" in s.user_text() for s in fake.agent_steps()[seen:])
                    turn = 0.0
                    for name, ms in TIMING.findall(run.stderr):
                        hooks.setdefault(name, []).append(float(ms))
                        turn += float(ms)
                    added.append(turn)
                    bare_walls.append(bare.opencode(fake, "What are release branches named?").wall * 1000)
        finally:
            box.stop_daemon()
    print(f"{args.harness} run turns: {args.runs} with paxm's plugin, {args.runs} without (OpenCode {opencode.parent})")
    for name in ("chat.message", "transform", "session.idle", "tool.execute.after"):
        if name in hooks:
            print(f"  {name:22} {_summary(hooks[name])}")
    print(f"  {'hooks per turn (sum)':22} {_summary(added)}")
    print(f"  {'turn wall, plugin':22} {_summary(walls)}")
    print(f"  {'turn wall, baseline':22} {_summary(bare_walls)}")
    if walls and bare_walls:
        print(f"  wall ratio plugin/baseline: {statistics.median(walls) / statistics.median(bare_walls):.2f}")
    print(f"  recall injected in {injected}/{args.runs} turns")


if __name__ == "__main__":
    main()
