"""Regenerate ``fixtures/opencode-sessions-<version>/`` by running the real, pinned OpenCode offline.

    uv run --all-packages python integrations/paxm-integration-opencode/tests/make_transcript_fixtures.py

Two ``opencode run`` sessions with paxm's plugin installed (``paxm setup --agent opencode``),
against the fake Chat Completions server: the first runs a tool (``RUN_TOOL:``) and states a
decision, the second asks about it (paxm's recall rides in that session's model requests).
OpenCode's stored sessions (``$XDG_DATA_HOME/opencode``: the ``opencode.db`` SQLite database
and any ``storage/`` JSON tree) are copied into the fixture directory.  Expect each run to take
a minute or more offline (OpenCode's start-up stall).
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from paxm_contracttest.harness.harnesses import OPENCODE
from paxm_contracttest.harness.kit import recorded_sessions

OPENCODE_VERSION = OPENCODE.packages[0].rsplit("@", 1)[1]

PROMPTS = (
    "RUN_TOOL: Decision: release branches are named OSPREY-42-<version> from now on.",
    "What naming scheme did we decide on for release branches?",
)
OUT = Path(__file__).resolve().parent / "fixtures" / f"opencode-sessions-{OPENCODE_VERSION}"


def copy_sessions(data: Path) -> None:
    """OpenCode's session database (WAL folded in) and any ``storage/`` tree into :data:`OUT`."""
    print("data dir:", sorted(str(p.relative_to(data)) for p in data.rglob("*"))[:200])
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    for db in data.glob("*.db"):
        with sqlite3.connect(db) as src, sqlite3.connect(OUT / db.name) as dst:
            src.backup(dst)
        print(f"copied {db.name} ({(OUT / db.name).stat().st_size} bytes)")
    if (data / "storage").is_dir():
        shutil.copytree(data / "storage", OUT / "storage")
        print("copied storage/")


if __name__ == "__main__":
    with recorded_sessions(OPENCODE, PROMPTS, turn_timeout=400) as box:
        copy_sessions(box.home / ".local" / "share" / "opencode")
