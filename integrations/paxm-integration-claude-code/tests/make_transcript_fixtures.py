"""Regenerate ``fixtures/claude-transcripts/`` by running the real, pinned Claude Code offline.

    uv run --all-packages python integrations/paxm-integration-claude-code/tests/make_transcript_fixtures.py

Two sessions with paxm's hooks installed (so the second transcript carries a recall envelope
that the backfill reader must never store), against the fake Anthropic server.  The sandbox
HOME's ``~/.claude/projects/*/*.jsonl`` files are copied into the fixture directory.
"""

from __future__ import annotations

from pathlib import Path

from paxm_contracttest.harness.harnesses import CLAUDE
from paxm_contracttest.harness.kit import copy_fixture_files, recorded_sessions

OUT = Path(__file__).resolve().parent / "fixtures" / "claude-transcripts"
PROMPTS = (
    "Decision: release branches are named OSPREY-42-<version> from now on.",
    "What naming scheme did we decide on for release branches?",
)

if __name__ == "__main__":
    with recorded_sessions(CLAUDE, PROMPTS) as box:
        copy_fixture_files(sorted((box.home / ".claude" / "projects").glob("*/*.jsonl")), OUT)
