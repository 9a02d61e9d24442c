"""Regenerate ``fixtures/pi-sessions-<version>/`` by running the real, pinned Pi offline.

    uv run --all-packages python integrations/paxm-integration-pi/tests/make_transcript_fixtures.py [BUILD-KEY]

Two ``pi -p`` sessions with paxm's extension installed (``paxm setup --agent pi``), against the
fake Chat Completions server: the first runs a tool (``RUN_TOOL:``) and states a decision, the
second asks about it, so its session file carries paxm's recall as a ``paxm-memory-recall``
custom message that the backfill reader must never store.  The sandbox's
``~/.pi/agent/sessions/*/*.jsonl`` files are copied into the fixture directory.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from paxm_contracttest.fake_models.chat_completions import FakeOpenAI  # noqa: E402
from paxm_contracttest.harness.harnesses import PI_BUILDS  # noqa: E402
from paxm_contracttest.harness.kit import HarnessBox, install  # noqa: E402

PROMPTS = (
    "RUN_TOOL: Decision: release branches are named OSPREY-42-<version> from now on.",
    "What naming scheme did we decide on for release branches?",
)


def main(key: str) -> int:
    build = PI_BUILDS[key]
    installed = install(build)
    out = HERE / "fixtures" / f"pi-sessions-{build.packages[0].rsplit('@', 1)[1]}"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        box = HarnessBox(root / "box", build, installed)
        box.paxm("setup", "--yes", "--agent", "pi", "--provider", "sqlite")
        box.generous_recall_budget()
        try:
            with FakeOpenAI(root / "requests.jsonl", marker="OSPREY-42") as fake:
                box.point_at(fake.url)
                for prompt in PROMPTS:
                    run = box.turn(fake, prompt)
                    if run.returncode != 0:
                        print(run.stderr, file=sys.stderr)
                        return 1
                    box.wait_for_daemon()
                    box.paxm("__hook-control", "--flush")
        finally:
            box.stop_daemon()
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        for path in sorted(((box.home / ".pi" / "agent") / "sessions").rglob("*.jsonl")):
            shutil.copy(path, out / path.name)
            print(f"copied {path.name} ({path.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "earendil-1.x"))
