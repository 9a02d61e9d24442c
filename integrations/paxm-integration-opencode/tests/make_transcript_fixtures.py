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
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from paxm_contracttest.fake_models.chat_completions import FakeOpenAI  # noqa: E402
from paxm_contracttest.harness.harnesses import OPENCODE  # noqa: E402
from paxm_contracttest.harness.kit import HarnessBox, install  # noqa: E402

OPENCODE_VERSION = OPENCODE.packages[0].rsplit("@", 1)[1]

PROMPTS = (
    "RUN_TOOL: Decision: release branches are named OSPREY-42-<version> from now on.",
    "What naming scheme did we decide on for release branches?",
)
OUT = HERE / "fixtures" / f"opencode-sessions-{OPENCODE_VERSION}"


def main() -> int:
    installed = install(OPENCODE)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        box = HarnessBox(root / "box", OPENCODE, installed)
        box.paxm("setup", "--yes", "--agent", "opencode", "--provider", "sqlite")
        box.generous_recall_budget()
        try:
            with FakeOpenAI(root / "requests.jsonl", marker="OSPREY-42") as fake:
                box.point_at(fake.url)
                for prompt in PROMPTS:
                    run = box.turn(fake, prompt, timeout=400)
                    if run.returncode != 0:
                        print(run.stderr[-4000:], file=sys.stderr)
                        return 1
                    box.wait_for_daemon()
                    box.paxm("__hook-control", "--flush")
        finally:
            box.stop_daemon()
        data = box.home / ".local" / "share" / "opencode"
        print("data dir:", sorted(str(p.relative_to(data)) for p in data.rglob("*"))[:200])
        shutil.rmtree(OUT, ignore_errors=True)
        OUT.mkdir(parents=True)
        for db in data.glob("*.db"):
            # a consistent single-file copy (the WAL folded in)
            with sqlite3.connect(db) as src, sqlite3.connect(OUT / db.name) as dst:
                src.backup(dst)
            print(f"copied {db.name} ({(OUT / db.name).stat().st_size} bytes)")
        if (data / "storage").is_dir():
            shutil.copytree(data / "storage", OUT / "storage")
            print("copied storage/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
