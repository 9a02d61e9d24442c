"""Backfill fixtures: a private HOME with paxm set up for Claude Code on the real SQLite provider."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests._kit import load_module

synthetic = load_module("_backfill_synthetic", Path(__file__).with_name("_synthetic.py"), register=True)

PAXM = str(Path(sys.executable).parent / "paxm")


class Home:
    """A sandbox HOME: ``paxm`` runs inside it, Claude transcripts live in ``projects``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "box-home"
        self.home.mkdir(parents=True)
        self.projects = self.home / ".claude" / "projects"
        self.config = self.home / ".config" / "paxm" / "config.yaml"

    def env(self) -> dict[str, str]:
        """Scrubbed environment: nothing of the real HOME leaks in."""
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_DATA_HOME": str(self.home / ".local" / "share"),
            "XDG_STATE_HOME": str(self.home / ".local" / "state"),
            "XDG_CACHE_HOME": str(self.home / ".cache"),
            "TMPDIR": str(self.root),
        }

    def paxm(
        self, *args: str, check: bool = True, timeout: float = 300, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run the real ``paxm`` CLI in the sandbox."""
        done = subprocess.run(
            [PAXM, *args], env=self.env(), capture_output=True, text=True, timeout=timeout, cwd=cwd or self.root
        )
        if check and done.returncode != 0:
            raise AssertionError(f"paxm {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
        return done

    def popen(self, *args: str) -> subprocess.Popen[str]:
        """Start ``paxm`` without waiting."""
        return subprocess.Popen(
            [PAXM, *args], env=self.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )

    @property
    def memory_db(self) -> Path:
        return self.home / ".local" / "share" / "paxm" / "memory.sqlite"

    @property
    def backfill_dir(self) -> Path:
        return self.config.parent / "backfill"

    def memories(self) -> list[tuple[str, str]]:
        """``(text, metadata_json)`` of every stored memory."""
        if not self.memory_db.exists():
            return []
        conn = sqlite3.connect(self.memory_db)
        try:
            return [(r[0], r[1]) for r in conn.execute("SELECT text, metadata_json FROM memories ORDER BY rowid")]
        except sqlite3.OperationalError:  # a run killed (or still starting) before the schema existed
            return []
        finally:
            conn.close()

    def kill_runs(
        self,
        args: tuple[str, ...],
        total: int,
        rng: Any,
        *,
        first_delay: float,
        after_kill: Any = None,
    ) -> tuple[int, int]:
        """Start ``paxm *args`` up to six times and SIGKILL each run at a random point.

        The first run is killed ``first_delay`` seconds in (still starting); later ones once they
        have stored something (however loaded the machine), then after a random 0-0.3 s.
        ``after_kill()`` runs after each run has ended.  Stops once ``total`` memories are
        stored; returns ``(kills, kills that left part of the turns stored)``.
        """
        kills = midway = 0
        for attempt in range(6):
            before = len(self.memories())
            process = self.popen(*args)
            if attempt == 0:
                time.sleep(first_delay)
            else:
                deadline = time.monotonic() + 60
                while process.poll() is None and len(self.memories()) <= before and time.monotonic() < deadline:
                    time.sleep(0.05)
                time.sleep(rng.uniform(0.0, 0.3))
            if process.poll() is None:
                os.kill(process.pid, signal.SIGKILL)
                kills += 1
            process.communicate(timeout=60)
            if after_kill is not None:
                after_kill()
            stored = len(self.memories())
            midway += int(0 < stored < total)
            if stored >= total:
                break
        return kills, midway


@pytest.fixture()
def home(tmp_path: Path) -> Home:
    box = Home(tmp_path)
    box.paxm("setup", "--yes", "--agent", "claude", "--provider", "sqlite")
    return box


@pytest.fixture()
def synth() -> Any:
    return synthetic
