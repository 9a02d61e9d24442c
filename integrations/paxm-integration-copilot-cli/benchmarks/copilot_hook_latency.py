"""How much paxm's hooks add to a real GitHub Copilot CLI turn (run by hand or from benchmarks/run.py).

    uv run python integrations/paxm-integration-copilot-cli/benchmarks/copilot_hook_latency.py [--runs 5]

Installs the pinned Copilot CLI like the end-to-end tests, sets paxm up in a temporary HOME,
seeds one memory, warms the hook daemon, then times ``copilot -p`` turns against the fake Chat
Completions server.  Baseline: the same turns in a sandbox without paxm's hooks, interleaved
with the hooked ones.  Besides the turn walls (noisy: Copilot's own start-up dominates), the
time Copilot itself waited for each of paxm's hooks is read from the session's ``events.jsonl``
(``hook.start`` to ``hook.end`` timestamps): the direct measure of what the hooks cost.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from datetime import datetime
from pathlib import Path

_HERE = Path(__file__).resolve().parents[1] / "tests"
for _path in (
    _HERE.parents[1] / "paxm-integration-opencode" / "tests",
    _HERE.parents[1] / "paxm-integration-claude-code" / "tests",
    _HERE,
):
    sys.path.insert(0, str(_path))

from copilot_harness import COPILOT_VERSION, CopilotSandbox, install_copilot  # noqa: E402

from paxm_contracttest.fake_models.chat_completions import FakeOpenAI  # noqa: E402

PROMPT = "What are release branches named?"
HOOKS = ("sessionStart", "userPromptSubmitted", "agentStop")


def _stamp(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def hook_waits(session_state: Path, seen: set[Path]) -> dict[str, list[float]]:
    """hookType -> ms Copilot waited, for every session log not in ``seen`` (added to it)."""
    out: dict[str, list[float]] = {}
    for log in sorted(session_state.glob("*/events.jsonl")):
        if log in seen:
            continue
        seen.add(log)
        started: dict[str, tuple[str, float]] = {}
        for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            data = event.get("data") or {}
            ident = str(data.get("hookInvocationId", ""))
            if event.get("type") == "hook.start":
                started[ident] = (str(data.get("hookType")), _stamp(event["timestamp"]))
            elif event.get("type") == "hook.end" and ident in started:
                kind, begin = started.pop(ident)
                out.setdefault(kind, []).append((_stamp(event["timestamp"]) - begin) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("npm is needed")
    copilot = install_copilot(npm)
    with tempfile.TemporaryDirectory(prefix="paxm-copilot-bench-") as tmp:
        root = Path(tmp)
        box, bare = CopilotSandbox(root / "hooks", copilot), CopilotSandbox(root / "bare", copilot)
        box.paxm("setup", "--yes", "--agent", "copilot-cli", "--provider", "sqlite")
        box.paxm("remember", "--text", "Release branches are named release/<version>.")
        walls: list[float] = []
        bare_walls: list[float] = []
        waits: dict[str, list[float]] = {}
        seen: set[Path] = set()
        injected = 0
        try:
            with FakeOpenAI(root / "requests.jsonl") as fake:
                box.copilot(fake, "warm up")  # starts the hook daemon
                box.wait_for_daemon()
                bare.copilot(fake, "warm up")
                hook_waits(box.copilot_home / "session-state", seen)  # the warm-up's cold hooks are not counted
                for _ in range(args.runs):
                    before = len(fake.agent_steps())
                    walls.append(box.copilot(fake, PROMPT).wall * 1000)
                    injected += any("paxm-recall" in s.user_text() for s in fake.agent_steps()[before:])
                    bare_walls.append(bare.copilot(fake, PROMPT).wall * 1000)
                    for kind, values in hook_waits(box.copilot_home / "session-state", seen).items():
                        waits.setdefault(kind, []).extend(values)
        finally:
            box.stop_daemon()
    hooks, base = statistics.median(walls), statistics.median(bare_walls)
    print(f"copilot -p turns (Copilot CLI {COPILOT_VERSION}): {args.runs} with paxm's hooks, {args.runs} without")
    print(f"  turn wall, hooks     median {hooks:8.1f} ms, max {max(walls):8.1f} ms")
    print(f"  turn wall, baseline  median {base:8.1f} ms, max {max(bare_walls):8.1f} ms")
    print(f"  added per turn (median difference): {hooks - base:8.1f} ms; ratio hooks/baseline {hooks / base:.2f}")
    for kind in HOOKS:
        values = waits.get(kind, [])
        if values:
            median, worst = statistics.median(values), max(values)
            print(f"  Copilot waited for paxm's {kind:<20} median {median:6.1f} ms, max {worst:6.1f} ms")
    print(f"  recall injected in {injected}/{args.runs} turns")


if __name__ == "__main__":
    main()
