"""Fixtures for the Cline integration tests: an isolated HOME, and the helper dirs on ``sys.path``."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

_HERE = Path(__file__).parent
_INTEGRATIONS = _HERE.parents[1]
# this directory; the Claude sandbox and the OpenCode tests' Recorded
for _path in (
    _INTEGRATIONS / "paxm-integration-opencode" / "tests",
    _INTEGRATIONS / "paxm-integration-claude-code" / "tests",
    _HERE,
):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point HOME, XDG dirs and PAXM_* at a fresh temp dir so no test touches the real home."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    for var in (
        "PAXM_CONFIG",
        "PAXM_LOAD_PLUGINS",
        "PAXM_RAISE_ERRORS",
        "PAXM_CLINE_PLUGINS_DIR",
        "PAXM_CLINE_HOOKS_DIR",
        "CLINE_HOOKS_DIR",
        "CLINE_DIR",
    ):
        monkeypatch.delenv(var, raising=False)
    return home


def cline_processes() -> list[int]:
    """PIDs of running processes started from the pinned cline install (``/proc`` scan)."""
    from paxm_contracttest.harness import npm_cache_dir
    from paxm_contracttest.harness.harnesses import CLINE

    root = str(npm_cache_dir() / CLINE.cache).encode()
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(root in part for part in cmdline[:2]):
            out.append(int(entry.name))
    return out


def kill_cline(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


@pytest.fixture(autouse=True)
def no_cline_left_behind() -> Iterator[None]:
    """Every test ends with no Cline process of its own alive (Cline's hub daemon outlives runs)."""
    before = set(cline_processes())
    yield
    leftover = [pid for pid in cline_processes() if pid not in before]
    kill_cline(leftover)
    assert not leftover, f"cline processes left running: {leftover}"
