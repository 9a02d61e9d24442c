"""Regenerate ``fixtures/pi-sessions-<version>/`` by running the real, pinned Pi offline.

    uv run --all-packages python integrations/paxm-integration-pi/tests/make_transcript_fixtures.py [BUILD-KEY]

Two ``pi -p`` sessions with paxm's extension installed (``paxm setup --agent pi``), against the
fake Chat Completions server: the first runs a tool (``RUN_TOOL:``) and states a decision, the
second asks about it, so its session file carries paxm's recall as a ``paxm-memory-recall``
custom message that the backfill reader must never store.  The sandbox's
``~/.pi/agent/sessions/*/*.jsonl`` files are copied into the fixture directory.
"""

from __future__ import annotations

import sys
from pathlib import Path

from paxm_contracttest.harness.harnesses import PI_BUILDS
from paxm_contracttest.harness.kit import copy_fixture_files, recorded_sessions

HERE = Path(__file__).resolve().parent
PROMPTS = (
    "RUN_TOOL: Decision: release branches are named OSPREY-42-<version> from now on.",
    "What naming scheme did we decide on for release branches?",
)

if __name__ == "__main__":
    build = PI_BUILDS[sys.argv[1] if len(sys.argv) > 1 else "earendil-1.x"]
    out = HERE / "fixtures" / f"pi-sessions-{build.packages[0].rsplit('@', 1)[1]}"
    with recorded_sessions(build, PROMPTS) as box:
        copy_fixture_files(sorted((box.home / ".pi" / "agent" / "sessions").rglob("*.jsonl")), out)
