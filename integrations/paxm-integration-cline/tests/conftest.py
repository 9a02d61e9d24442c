"""Fixtures for the Cline integration tests: the kit's isolated HOME, and no Cline process left behind."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from paxm_contracttest.fakes import isolated_home  # noqa: F401  (autouse: no test touches the real home)


@pytest.fixture
def paxm_unset_env() -> tuple[str, ...]:
    """Cline's variables a developer may have set."""
    return ("PAXM_CLINE_PLUGINS_DIR", "PAXM_CLINE_HOOKS_DIR", "CLINE_HOOKS_DIR", "CLINE_DIR")


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
