"""``paxm config doctor`` finds widened file modes and a corrupt capture queue, with fixes that work."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from paxm_core import MemoryItem
from paxm_core.capture import CaptureEvent, CaptureQueue, routes_from_write_profiles
from paxm_core.config import load_config

ENTRY = "import sys; from paxm_core.cli import main; main(sys.argv[1:])"

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")


def paxm(cfg: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", ENTRY, "--config", str(cfg), *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env=dict(os.environ),
        timeout=120,
    )


def doctor_rows(cfg: Path) -> tuple[int, list[dict[str, Any]]]:
    result = paxm(cfg, "config", "doctor", "--json")
    return result.returncode, json.loads(result.stdout)


@pytest.fixture
def cfg(tmp_path: Path) -> Path:
    """A private installation: config, memory database, state, and a capture queue with one turn."""
    path = tmp_path / "cfg" / "config.yaml"
    path.parent.mkdir(mode=0o700)
    path.write_text(
        f"version: 1\nidentity: {{user_id: alice}}\nagents: {{}}\n"
        f"providers:\n  sqlite: {{type: sqlite, enabled: true, path: {path.parent / 'memory.sqlite'}}}\n"
        "  zep: {type: zep, enabled: false, api_key: z-literal-key-123}\n"
    )
    path.chmod(0o600)
    config = load_config(str(path))
    with CaptureQueue(config.capture_queue_path, routes=routes_from_write_profiles(config.write_profiles)) as q:
        q.append(CaptureEvent("evt_" + "a" * 32, "t/workspace/w/session/s", MemoryItem(text="a turn"), terminal=True))
    assert paxm(path, "remember", "--text", "a memory").returncode == 0
    return path


def test_a_private_installation_passes(cfg: Path) -> None:
    result = paxm(cfg, "config", "doctor")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "file_modes" not in result.stdout + result.stderr and "chmod" not in result.stdout


def test_a_world_readable_config_is_an_error_and_its_fix_works(cfg: Path) -> None:
    cfg.chmod(0o644)
    result = paxm(cfg, "config", "doctor")
    assert result.returncode == 1
    assert f"error: config file {cfg} is 0644 and holds credentials (providers.zep.api_key)" in result.stdout
    assert "z-literal-key-123" not in result.stdout + result.stderr
    assert f"  fix: chmod 600 {cfg}" in result.stdout
    assert f"installation problem(s): file_modes:{cfg}" in result.stderr
    status, rows = doctor_rows(cfg)
    assert status == 1
    row = next(r for r in rows if r.get("check") == "file_modes" and r["level"] == "error")
    assert row["subject"] == str(cfg) and row["ok"] is False and row["fix"] == f"chmod 600 {cfg}"
    subprocess.run(row["fix"], shell=True, check=True)  # noqa: S602 - the fix is a shell command on purpose
    assert paxm(cfg, "config", "doctor").returncode == 0


def test_a_readable_config_without_credentials_is_a_warning(cfg: Path) -> None:
    cfg.write_text(cfg.read_text().replace("z-literal-key-123", "env:ZEP_API_KEY"))
    cfg.chmod(0o644)
    result = paxm(cfg, "config", "doctor")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"warn: config file {cfg} is 0644: others can read it (no credentials in it now" in result.stdout
    assert f"  fix: chmod 600 {cfg}" in result.stdout


def test_open_directories_and_databases_are_named(cfg: Path) -> None:
    hooks = cfg.parent / "hooks"
    queue = hooks / "capture.sqlite"
    memory = cfg.parent / "memory.sqlite"
    hooks.chmod(0o755)
    queue.chmod(0o640)
    memory.chmod(0o604)
    status, rows = doctor_rows(cfg)
    assert status == 1
    errors = {r["subject"]: r["fix"] for r in rows if r.get("check") == "file_modes" and r["level"] == "error"}
    assert errors == {
        str(hooks): f"chmod 700 {hooks}",
        str(queue): f"chmod 600 {queue}",
        str(memory): f"chmod 600 {memory}",
    }
    for fix in errors.values():
        subprocess.run(fix, shell=True, check=True)  # noqa: S602
    assert doctor_rows(cfg)[0] == 0


def test_a_corrupt_queue_header_is_an_error_until_fixed(cfg: Path) -> None:
    queue = cfg.parent / "hooks" / "capture.sqlite"
    with open(queue, "r+b") as handle:
        handle.write(b"this is not sqlite" * 8)
    damaged = queue.read_bytes()
    result = paxm(cfg, "config", "doctor")
    assert result.returncode == 1
    assert f"error: the capture queue {queue} is corrupt: file is not a database" in result.stdout
    assert "  fix: paxm queue status" in result.stdout
    assert queue.read_bytes() == damaged  # doctor only looked
    status, rows = doctor_rows(cfg)
    row = next(r for r in rows if r["provider"] == "capture:queue")
    assert status == 1 and row["level"] == "error" and row["fix"] == "paxm queue status"
    assert paxm(cfg, *row["fix"].split()[1:]).returncode == 0
    fixed = paxm(cfg, "config", "doctor")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "warn: a corrupt queue was moved aside to" in fixed.stdout


def test_a_corrupt_queue_page_is_an_error_with_a_working_fix(cfg: Path) -> None:
    queue = cfg.parent / "hooks" / "capture.sqlite"
    size = queue.stat().st_size
    assert size >= 3 * 4096
    with open(queue, "r+b") as handle:  # keep the header, wreck the b-tree pages after it
        handle.seek(4096)
        handle.write(b"\xff" * (size - 4096))
    status, rows = doctor_rows(cfg)
    row = next(r for r in rows if r["provider"] == "capture:queue")
    assert status == 1 and row["level"] == "error"
    assert row["message"].startswith(f"the capture queue {queue} is corrupt: ")
    assert "mv " in row["fix"]
    subprocess.run(["bash", "-c", row["fix"]], check=True)
    assert not queue.exists()
    status, rows = doctor_rows(cfg)
    assert status == 0, rows
    assert any(r["provider"] == "capture:queue" and r["level"] == "warn" for r in rows)


def test_a_readable_config_directory_without_credentials_is_a_warning_not_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Upstream's documented set-up (``mkdir -p ~/.config/paxm``, umask 022) passes doctor."""
    from paxm_core.doctor.modes import check_file_modes

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))  # the standard location is judged
    config_dir = tmp_path / "paxm"
    config_dir.mkdir()
    config_dir.chmod(0o755)
    path = config_dir / "config.yaml"
    path.write_text(f"providers:\n  sqlite:\n    type: sqlite\n    enabled: true\n    path: {tmp_path / 'm.sqlite'}\n")
    path.chmod(0o600)
    findings = [f for f in check_file_modes(load_config(path)) if f.subject == str(config_dir)]
    assert [f.level for f in findings] == ["warn"], findings
    config_dir.chmod(0o775)  # others in the group can change it: still an error
    findings = [f for f in check_file_modes(load_config(path)) if f.subject == str(config_dir)]
    assert "error" in [f.level for f in findings], findings
