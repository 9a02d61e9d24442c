"""Regenerate ``fixtures/claude-transcripts/`` by running the real, pinned Claude Code offline.

    uv run --all-packages python integrations/paxm-integration-claude-code/tests/make_transcript_fixtures.py

Two sessions with paxm's hooks installed (so the second transcript carries a recall envelope
that the backfill reader must never store), against the fake Anthropic server.  The sandbox
HOME's ``~/.claude/projects/*/*.jsonl`` files are copied into the fixture directory.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from paxm_contracttest.fake_models.anthropic import FakeAnthropic
from paxm_contracttest.harness.harnesses import CLAUDE
from paxm_contracttest.harness.kit import HarnessBox, install

HERE = Path(__file__).resolve().parent

OUT = HERE / "fixtures" / "claude-transcripts"


def main() -> int:
    installed = install(CLAUDE)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        box = HarnessBox(root / "box", CLAUDE, installed)
        box.paxm("setup", "--yes", "--agent", "claude", "--provider", "sqlite")
        box.generous_recall_budget()
        try:
            with FakeAnthropic(root / "requests.jsonl", marker="OSPREY-42") as fake:
                for prompt in (
                    "Decision: release branches are named OSPREY-42-<version> from now on.",
                    "What naming scheme did we decide on for release branches?",
                ):
                    run = box.turn(fake, prompt)
                    if run.returncode != 0:
                        print(run.stderr, file=sys.stderr)
                        return 1
                    box.wait_for_daemon()
                    box.paxm("__hook-control", "--flush")
        finally:
            box.stop_daemon()
        shutil.rmtree(OUT, ignore_errors=True)
        OUT.mkdir(parents=True)
        for path in sorted((box.home / ".claude" / "projects").glob("*/*.jsonl")):
            shutil.copy(path, OUT / path.name)
            print(f"copied {path.name} ({path.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
