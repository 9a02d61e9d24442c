"""Item 3 of issue 13: every file paxm creates is 0600 and every directory 0700, whatever the umask."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

ENTRY = "import sys; from paxm_core.cli import main; main(sys.argv[1:])"


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "PAXM_"))}
    env["HOME"] = str(home)
    return env


def _paxm(home: Path, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-c", ENTRY, *args],
        input=stdin,
        capture_output=True,
        env=_env(home),
        timeout=60,
        preexec_fn=lambda: os.umask(0o022),  # noqa: PLW1509 - the umask is the point of the test
    )


def _walk(root: Path) -> list[tuple[Path, int]]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                continue
            out.append((path, mode))
    return out


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")
def test_a_full_cycle_under_umask_022_creates_nothing_readable_by_others(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o755, exist_ok=True)
    setup = _paxm(home, "setup", "--yes", "--provider", "sqlite", "--agent", "codex", "--user-id", "alice")
    assert setup.returncode == 0, setup.stderr
    assert _paxm(home, "remember", "--text", "the cache TTL is seven minutes").returncode == 0
    assert _paxm(home, "recall", "--query", "cache TTL").returncode == 0
    prompt = json.dumps({"session_id": "m1", "cwd": str(home), "prompt": "Decision: use pnpm, id kiwi-1"})
    stop = json.dumps({"session_id": "m1", "cwd": str(home), "last_assistant_message": "Noted kiwi-1."})
    assert _paxm(home, "__hook", "--target", "codex", "--event", "user_input", stdin=prompt.encode()).returncode == 0
    assert _paxm(home, "__hook", "--target", "codex", "--event", "turn_end", stdin=stop.encode()).returncode == 0
    flush = _paxm(home, "queue", "flush")
    assert flush.returncode == 0, flush.stdout + flush.stderr
    _paxm(home, "config", "doctor")
    while_running = _walk(home)  # the daemon holds the queue open: its -wal/-shm exist now
    _paxm(home, "__hook-control", "--shutdown")
    time.sleep(0.2)
    created = while_running + _walk(home)
    names = {p.name for p, _ in created}
    # the cycle really created what the issue names
    for expected in ("config.yaml", "memory.sqlite", "capture.sqlite"):
        assert expected in names, sorted(names)
    assert any(n.endswith("-wal") for n in names), sorted(names)
    bad = [(str(p.relative_to(home)), oct(stat.S_IMODE(m))) for p, m in created if stat.S_IMODE(m) & 0o077]
    assert bad == [], bad
    for path, mode in created:
        if stat.S_ISDIR(mode):
            assert stat.S_IMODE(mode) == 0o700, path
        elif stat.S_ISREG(mode) and not stat.S_IMODE(mode) & 0o100:
            assert stat.S_IMODE(mode) == 0o600, path
