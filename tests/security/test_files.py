"""Issue 42 item 1: paxm touches only its own files.

A provider ``path`` (or a link planted where paxm keeps a file) that names something existing
and not paxm's must never be chmod-ed, truncated or appended to; directories another user can
change are refused and reported by doctor.  Every path here is under the test's tmp dir: the
"/dev/null" of a test is a FIFO, a socket or a null device node made in it.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paxm_contracttest.sandbox import run_paxm
from paxm_core.api.errors import ConfigError, PaxmError
from paxm_core.config import load_config, save_config

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX ownership and modes")

VICTIM = b"someone else's file\n"
NOBODY = 65534


def paxm(cfg: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return run_paxm(cfg, *args, timeout=timeout)


def write_config(cfg: Path, db: Path, *, mode: int = 0o700) -> Path:
    cfg.parent.mkdir(mode=mode, exist_ok=True)
    cfg.parent.chmod(mode)  # whatever the umask
    cfg.write_text(
        "version: 1\nidentity: {user_id: alice}\nagents: {}\n"
        f"providers:\n  sqlite: {{type: sqlite, enabled: true, path: {db}}}\n"
    )
    cfg.chmod(0o600)
    return cfg


def victim(tmp_path: Path) -> Path:
    """A file of the user's somewhere else, 0644, that a planted link points at."""
    target = tmp_path / "elsewhere" / "precious.txt"
    target.parent.mkdir(exist_ok=True)
    target.write_bytes(VICTIM)
    target.chmod(0o644)
    return target


def unchanged(target: Path) -> bool:
    return target.read_bytes() == VICTIM and stat.S_IMODE(target.stat().st_mode) == 0o644


# -- a provider path naming something that is not a database file ----------------------------


def _make_special(kind: str, path: Path) -> str:
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(str(path))
    else:  # a null device node of our own, never the system's /dev/null
        try:
            os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        except PermissionError:
            pytest.skip("creating a device node needs CAP_MKNOD")
    os.chmod(path, 0o755 if kind == "directory" else 0o666)
    return {"directory": "a directory", "fifo": "a FIFO", "socket": "a socket", "device": "a device"}[kind]


@pytest.mark.parametrize("kind", ["directory", "fifo", "socket", "device"])
def test_a_provider_path_that_is_not_a_file_is_refused_and_keeps_its_mode(tmp_path: Path, kind: str) -> None:
    special = tmp_path / "data" / "memory.sqlite"
    special.parent.mkdir(mode=0o700)
    what = _make_special(kind, special)
    before = os.lstat(special)
    cfg = write_config(tmp_path / "cfg" / "config.yaml", special)
    result = paxm(cfg, "remember", "--text", "never stored", timeout=60)
    assert result.returncode != 0
    assert f"providers.sqlite.path: {special} is {what}, not a database file" in result.stderr
    after = os.lstat(special)
    assert (after.st_mode, after.st_uid, after.st_mtime_ns) == (before.st_mode, before.st_uid, before.st_mtime_ns)
    assert sorted(p.name for p in special.parent.iterdir()) == ["memory.sqlite"]  # no -wal/-shm beside it


# -- links planted where paxm keeps a file ----------------------------------------------------


def _sqlite_provider(path: Path) -> None:
    from paxm_core import Deadline
    from paxm_core.api.provider_config import ProviderConfig
    from paxm_provider_sqlite.provider import SQLiteProvider

    SQLiteProvider("local", ProviderConfig(type="sqlite", path=str(path))).health(Deadline.after(10))


def _daemon_lock(path: Path) -> None:
    from paxm_core.passive.daemon import DaemonLock

    DaemonLock(path).acquire()


def _daemon_log(path: Path) -> None:
    from paxm_core.passive.daemon import HookDaemon

    HookDaemon._log(SimpleNamespace(hooks_dir=path.parent), "a line")  # type: ignore[arg-type]  # never raises


def _telemetry(name: str) -> Callable[[Path], None]:
    def run(path: Path) -> None:
        from paxm_core.telemetry.settings import TelemetrySettings
        from paxm_core.telemetry.store import TelemetryStore

        store = TelemetryStore(TelemetrySettings(dir=path.parent, events_file=name))
        with store.locked():
            store.append_many([{"type": "probe"}])

    return run


def _inbox(path: Path) -> None:
    from paxm_core.capture import _inbox

    _inbox.connect(path).close()


def _session_sequences(path: Path) -> None:
    from paxm_core.session_sequence import SessionSequenceStore

    SessionSequenceStore(path, lazy=False).close()


def _checkpoint(path: Path) -> None:
    from paxm_core.backfill.checkpoint import CheckpointStore

    CheckpointStore(path).close()


WRITERS: dict[str, tuple[str, Callable[[Path], None]]] = {
    "database": ("memory.sqlite", _sqlite_provider),
    "database -wal": ("memory.sqlite-wal", _sqlite_provider),
    "daemon lock": ("paxm-hook.lock", _daemon_lock),
    "daemon log": ("paxm-hook-daemon.log", _daemon_log),
    "telemetry events": ("events.jsonl", _telemetry("events.jsonl")),
    "telemetry lock": ("telemetry.lock", _telemetry("events.jsonl")),
    "inbox": ("capture.sqlite", _inbox),
    "inbox -shm": ("capture.sqlite-shm", _inbox),
    "session sequences": ("session-sequences.sqlite", _session_sequences),
    "backfill checkpoint": ("checkpoint.sqlite", _checkpoint),
}


@pytest.mark.parametrize("writer", list(WRITERS))
def test_a_link_planted_where_paxm_keeps_a_file_is_not_followed(tmp_path: Path, writer: str) -> None:
    name, run = WRITERS[writer]
    target = victim(tmp_path)
    home = tmp_path / "paxm"
    home.mkdir(mode=0o700)
    link = home / name
    link.symlink_to(target)
    if writer == "daemon log":  # the daemon's log swallows its errors: the line is dropped
        run(link)
    else:
        with pytest.raises((OSError, PaxmError), match="symbolic link") as caught:
            run(home / name.removesuffix("-wal").removesuffix("-shm"))
        assert str(link) in str(caught.value)
    assert unchanged(target)
    assert link.is_symlink() and os.readlink(link) == str(target)


def test_write_atomic_never_replaces_a_device_or_fifo(tmp_path: Path) -> None:
    from paxm_core.atomic import write_atomic

    fifo = tmp_path / "config.yaml"
    os.mkfifo(fifo, 0o644)
    with pytest.raises(OSError, match="is a FIFO"):
        write_atomic(fifo, "version: 1\n")
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".config.yaml")] == []  # no temp file left


# -- existing directories keep their mode -----------------------------------------------------


def test_an_existing_directory_given_as_a_data_dir_is_not_chmod_ed(tmp_path: Path) -> None:
    from paxm_core.backfill.checkpoint import CheckpointStore
    from paxm_core.telemetry.settings import TelemetrySettings
    from paxm_core.telemetry.store import TelemetryStore

    shared = tmp_path / "project"
    shared.mkdir()
    shared.chmod(0o755)
    store = TelemetryStore(TelemetrySettings(dir=shared))
    with store.locked():
        store.append_many([{"type": "probe"}])
    CheckpointStore(shared / "checkpoint.sqlite").close()
    save_config(
        load_config(str(write_config(tmp_path / "cfg" / "config.yaml", shared / "m.sqlite"))), shared / "c.yaml"
    )
    _sqlite_provider(shared / "memory.sqlite")
    assert stat.S_IMODE(shared.stat().st_mode) == 0o755
    for name in ("events.jsonl", "telemetry.lock", "checkpoint.sqlite", "c.yaml", "memory.sqlite"):
        assert stat.S_IMODE((shared / name).stat().st_mode) == 0o600, name


def test_an_existing_paxm_file_with_a_widened_mode_is_reported_not_chmod_ed(tmp_path: Path) -> None:
    db = tmp_path / "cfg" / "memory.sqlite"
    cfg = write_config(tmp_path / "cfg" / "config.yaml", db)
    assert paxm(cfg, "remember", "--text", "a memory").returncode == 0
    db.chmod(0o644)
    assert paxm(cfg, "remember", "--text", "another").returncode == 0
    assert stat.S_IMODE(db.stat().st_mode) == 0o644
    rows = json.loads(paxm(cfg, "config", "doctor", "--json").stdout)
    assert any(r.get("subject") == str(db) and r.get("fix") == f"chmod 600 {db}" for r in rows)


# -- directories another user can change ------------------------------------------------------


def _doctor_error(cfg: Path, directory: Path) -> dict[str, str]:
    result = paxm(cfg, "config", "doctor", "--json")
    assert result.returncode == 1, result.stdout + result.stderr
    rows = [r for r in json.loads(result.stdout) if r.get("check") == "file_modes" and r["level"] == "error"]
    return next(r for r in rows if r["subject"] == str(directory))


def _refuses_writes(cfg: Path, directory: Path, reason: str) -> None:
    before = sorted(p.name for p in directory.iterdir())
    with pytest.raises(ConfigError, match=reason):
        save_config(load_config(str(cfg)), cfg)
    assert paxm(cfg, "remember", "--text", "never stored").returncode != 0
    assert sorted(p.name for p in directory.iterdir()) == before


def test_a_config_dir_others_can_write_is_a_doctor_error_and_never_written(tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "shared" / "config.yaml", tmp_path / "shared" / "memory.sqlite", mode=0o777)
    row = _doctor_error(cfg, cfg.parent)
    assert "is writable by other users (mode 0777)" in row["message"] and "does not write in it" in row["message"]
    assert row["fix"] == f"chmod go-w {cfg.parent}"
    _refuses_writes(cfg, cfg.parent, "writable by other users")
    assert stat.S_IMODE(cfg.parent.stat().st_mode) == 0o777
    subprocess.run(row["fix"], shell=True, check=True)  # noqa: S602 - the fix is a shell command on purpose
    assert paxm(cfg, "remember", "--text", "now it works").returncode == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_a_dir_owned_by_another_user_is_a_doctor_error_and_never_written(tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "theirs" / "config.yaml", tmp_path / "theirs" / "memory.sqlite")
    os.chown(cfg.parent, NOBODY, -1)
    row = _doctor_error(cfg, cfg.parent)
    assert f"is owned by uid {NOBODY}, not by you (uid 0)" in row["message"]
    assert row["fix"] == f"chown root {cfg.parent}"
    _refuses_writes(cfg, cfg.parent, f"owned by uid {NOBODY}")
    assert cfg.parent.stat().st_uid == NOBODY


def test_a_data_dir_others_can_write_is_refused_by_the_provider(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    data.chmod(0o777)
    cfg = write_config(tmp_path / "cfg" / "config.yaml", data / "memory.sqlite")
    result = paxm(cfg, "remember", "--text", "never stored")
    assert result.returncode != 0
    assert f"providers.sqlite.path: {data} is writable by other users (mode 0777)" in result.stderr
    assert list(data.iterdir()) == [] and stat.S_IMODE(data.stat().st_mode) == 0o777
    row = _doctor_error(cfg, data)
    assert row["fix"] == f"chmod go-w {data}"


def test_doctor_names_a_link_at_the_database_path(tmp_path: Path) -> None:
    target = victim(tmp_path)
    db = tmp_path / "cfg" / "memory.sqlite"
    cfg = write_config(tmp_path / "cfg" / "config.yaml", db)
    db.symlink_to(target)
    row = _doctor_error(cfg, db)
    assert row["message"].startswith(f"providers.sqlite.path: {db} is a symbolic link to {target}")
    assert row["fix"] == f"rm {db}"
    assert unchanged(target)


# -- the directory rule, for every mode -------------------------------------------------------


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mode=st.integers(min_value=0, max_value=0o1777))
def test_the_directory_rule_for_every_mode_and_private_dir_never_chmods(tmp_path: Path, mode: int) -> None:
    from paxm_core.private_files import UnsafePathError, private_dir, untrusted_dir_reason

    directory = tmp_path / "d"
    directory.mkdir(exist_ok=True)
    directory.chmod(mode)
    try:
        others_can_write = bool(mode & 0o022) and not mode & 0o1000
        assert (untrusted_dir_reason(directory) is not None) == others_can_write
        if others_can_write:
            with pytest.raises(UnsafePathError, match=f"is writable by other users \\(mode {mode:04o}\\)"):
                private_dir(directory / "new" / "deeper")
            assert not (directory / "new").exists()
        else:
            private_dir(directory)
        assert stat.S_IMODE(directory.stat().st_mode) == mode
    finally:
        directory.chmod(0o700)


def test_doctor_never_offers_a_chmod_through_a_link_in_the_hooks_dir(tmp_path: Path) -> None:
    target = victim(tmp_path)
    cfg = write_config(tmp_path / "cfg" / "config.yaml", tmp_path / "cfg" / "memory.sqlite")
    hooks = cfg.parent / "hooks"
    hooks.mkdir(mode=0o700)
    planted = hooks / "paxm-hook-daemon.log"
    planted.symlink_to(target)
    row = _doctor_error(cfg, planted)
    assert row["fix"] == f"rm {planted}" and "symbolic link" in row["message"]
    rows = json.loads(paxm(cfg, "config", "doctor", "--json").stdout)
    assert not any("chmod" in r.get("fix", "") for r in rows), rows
    subprocess.run(row["fix"], shell=True, check=True)  # noqa: S602
    assert unchanged(target) and not planted.exists()
