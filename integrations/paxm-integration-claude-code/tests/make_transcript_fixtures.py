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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from claude_harness import Sandbox, install_claude, npm_cache_dir  # noqa: E402

from paxm_contracttest.fake_models.anthropic import FakeAnthropic  # noqa: E402

OUT = HERE / "fixtures" / "claude-transcripts"


def main() -> int:
    npm = shutil.which("npm")
    if npm is None:
        print("npm is required", file=sys.stderr)
        return 1
    binary = install_claude(npm, npm_cache_dir())
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        box = Sandbox(root / "box", binary)
        box.paxm("setup", "--yes", "--agent", "claude", "--provider", "sqlite")
        box.generous_recall_budget()
        try:
            with FakeAnthropic(root / "requests.jsonl", marker="OSPREY-42") as fake:
                for prompt in (
                    "Decision: release branches are named OSPREY-42-<version> from now on.",
                    "What naming scheme did we decide on for release branches?",
                ):
                    run = box.claude(fake, prompt)
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
