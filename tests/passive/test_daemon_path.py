"""The daemon's path cache: the next daemon starts with ``-S`` only when that changes nothing.

A daemon started the usual way writes ``hooks/paxm-hook.path`` after its first answer; the
hook client starts the next daemon without ``site`` from it while its stamps hold (site
directories' mtimes, the interpreter, the path's environment variables), and a cache that
no longer finds paxm restarts the daemon the usual way in the same process.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from paxm_core.passive import client_core as C
from paxm_core.passive import daemon_path as D
from tests.passive.conftest import control, daemon_pid, run_client, stop_daemon, wait_for, write_config


def _cmdline(pid: int) -> list[str]:
    return [part.decode() for part in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") if part]


def _start_and_ping(config: Path) -> int:
    payload = json.dumps({"session_id": "p1", "cwd": str(config.parent), "prompt": "path cache marker"}).encode()
    assert run_client(config, "claude", "user_input", payload).returncode == 0
    wait_for(lambda: daemon_pid(config) and (config.parent / "hooks" / "paxm-hook.sock").exists())
    assert wait_for(lambda: (control(config, "ping") or {}).get("ok"))
    return daemon_pid(config)


def test_the_next_daemon_starts_without_site_from_the_cache(tmp_path: Path, daemon_cleanup: list[Path]) -> None:
    config = write_config(tmp_path / "cfg")
    daemon_cleanup.append(config)
    cache = config.parent / "hooks" / D.PATH_NAME
    first = _start_and_ping(config)
    assert "-m" in _cmdline(first) and "-S" not in _cmdline(first)
    wait_for(cache.exists)
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    lines = cache.read_text().splitlines()
    assert lines[0] == D.MAGIC and f"exe\t{sys.executable}" in lines
    import paxm_core

    root = str(Path(paxm_core.__file__).resolve().parents[1])
    assert f"path\t{root}" in lines  # where the daemon found paxm
    stop_daemon(config)
    wait_for(lambda: not (config.parent / "hooks" / "paxm-hook.sock").exists() or not daemon_pid(config))
    second = _start_and_ping(config)
    assert second != first
    argv = _cmdline(second)
    assert argv[1:4] == ["-S", "-P", "-c"] and argv[argv.index("--config") + 1] == str(config)
    # the -S daemon leaves the cache alone
    before = cache.read_text()
    assert control(config, "status") is not None
    assert cache.read_text() == before


def _write_cache(hooks: Path, stamped: Path, *, path: list[str], exe: str = sys.executable) -> None:
    hooks.mkdir(mode=0o700, parents=True, exist_ok=True)  # as paxm makes it: the daemon refuses a looser one
    lines = [D.MAGIC, f"exe\t{exe}"]
    lines += [f"env\t{name}\t{os.environ.get(name, '-')}" for name in D.ENV_KEYS]
    lines += [f"stamp\t{stamped}\t{stamped.stat().st_mtime_ns}", f"prefix\t{sys.prefix}\t{sys.exec_prefix}"]
    lines += [f"path\t{entry}" for entry in path]
    (hooks / D.PATH_NAME).write_text("\n".join(lines) + "\n")


def test_the_client_uses_only_a_cache_whose_stamps_hold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hooks, site_dir = tmp_path / "hooks", tmp_path / "site"
    site_dir.mkdir()
    _write_cache(hooks, site_dir, path=["/a", "/b c"])
    assert C.cached_daemon_path(str(hooks)) == "\n".join([sys.prefix, sys.exec_prefix, "/a", "/b c"])
    assert C.daemon_command(str(tmp_path / "config.yaml"))[1:3] == ["-S", "-P"]
    # a package installed (an entry added to a site directory): stale
    (site_dir / "new.pth").write_text("/x\n")
    os.utime(site_dir, ns=(1, site_dir.stat().st_mtime_ns + 1_000_000))
    assert C.cached_daemon_path(str(hooks)) == ""
    assert C.daemon_command(str(tmp_path / "config.yaml"))[1:4] == ["-P", "-m", "paxm_core.passive.daemon"]
    # another interpreter, another PYTHONPATH, a damaged file, no file
    _write_cache(hooks, site_dir, path=["/a"], exe="/usr/bin/python9")
    assert C.cached_daemon_path(str(hooks)) == ""
    _write_cache(hooks, site_dir, path=["/a"])
    monkeypatch.setenv("PYTHONPATH", "/somewhere/else")
    assert C.cached_daemon_path(str(hooks)) == ""
    monkeypatch.delenv("PYTHONPATH")
    assert C.cached_daemon_path(str(hooks)) != ""
    (hooks / D.PATH_NAME).write_text("garbage\n")
    assert C.cached_daemon_path(str(hooks)) == ""
    (hooks / D.PATH_NAME).unlink()
    assert C.cached_daemon_path(str(hooks)) == ""


def test_a_cache_that_no_longer_finds_paxm_restarts_the_daemon_the_usual_way(
    tmp_path: Path, daemon_cleanup: list[Path]
) -> None:
    config = write_config(tmp_path / "cfg")
    daemon_cleanup.append(config)
    hooks = config.parent / "hooks"
    site_dir = tmp_path / "site"
    site_dir.mkdir()
    stdlib = [entry for entry in sys.path if entry.startswith(sys.base_prefix) and "site-packages" not in entry]
    _write_cache(hooks, site_dir, path=stdlib)  # valid stamps, but paxm is not on this path
    pid = _start_and_ping(config)
    assert _cmdline(pid)[1:4] == ["-P", "-m", "paxm_core.passive.daemon"]  # exec'd in place
    # ... and that daemon replaced the cache with its own path
    wait_for(lambda: f"stamp\t{site_dir}\t" not in (hooks / D.PATH_NAME).read_text())


def test_no_cache_when_skipping_site_would_change_something(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site_dir = tmp_path / "site"
    site_dir.mkdir()
    monkeypatch.setattr(D, "_site_dirs", lambda: [str(site_dir)])
    (site_dir / "plain.pth").write_text("/some/src\n")
    assert D.path_cache_text() is not None
    (site_dir / "hook.pth").write_text("import certifi_patch; certifi_patch.install()\n")
    assert D.path_cache_text() is None  # a .pth that runs code: -S would skip it
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / D.PATH_NAME).write_text("old\n")
    assert D.write_path_cache(hooks) is False
    assert not (hooks / D.PATH_NAME).exists()  # an earlier cache goes with it
    (site_dir / "hook.pth").unlink()
    monkeypatch.setenv("PYTHONPATH", "/a\n/b")
    assert D.path_cache_text() is None
