"""The capture spool: durable, private, torn-record tolerant, imported exactly once by event id."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paxm_core.capture import CaptureQueue, _spool
from paxm_core.config.model import Config

SPOOL_FILE = Path(__file__).resolve().parents[2] / "paxm_core" / "capture" / "_spool.py"


def _queue_file(tmp_path: Path) -> Path:
    hooks = tmp_path / "hooks"
    hooks.mkdir(mode=0o700)
    return hooks / "capture.sqlite"


def _inbox(queue: Path) -> list[tuple[object, ...]]:
    import sqlite3

    conn = sqlite3.connect(queue)
    try:
        return conn.execute("SELECT event_id, target, event, raw, state FROM capture_inbox ORDER BY rowid").fetchall()
    finally:
        conn.close()


@settings(max_examples=80, deadline=None)
@given(
    event_id=st.from_regex(r"evt_[0-9a-f]{1,32}", fullmatch=True),
    target=st.text(max_size=20),
    event=st.text(max_size=30),
    raw=st.binary(max_size=300),
    received=st.floats(min_value=0, max_value=4e9, allow_nan=False),
)
def test_a_record_round_trips_any_payload(event_id: str, target: str, event: str, raw: bytes, received: float) -> None:
    line = _spool.encode_record(event_id, target, event, raw, received)
    assert line.startswith(b"\n") and line.endswith(b"\n") and line.count(b"\n") == 2
    record = _spool.decode_record(line.strip(b"\n"))
    assert record == (event_id, target, event, raw, received)
    # any cut of the line is a torn record, never a different one
    for cut in (1, len(line) // 2, len(line) - 3):
        assert _spool.decode_record(line.strip(b"\n")[:cut]) is None


def test_append_is_private_and_a_torn_last_record_is_skipped(tmp_path: Path) -> None:
    queue = _queue_file(tmp_path)
    _spool.append_record(queue, "evt_1", "claude", "user_input", b'{"prompt": "one"}', 1000.0)
    _spool.append_record(queue, "evt_2", "claude", "turn_end", b"\xff not utf-8", 1001.0)
    path = Path(_spool.spool_path(queue))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    # a crash in the middle of a third record
    whole = _spool.encode_record("evt_3", "claude", "user_input", b"three", 1002.0)
    with open(path, "ab") as handle:
        handle.write(whole[: len(whole) // 2])
    records, torn = _spool.read_records(path)
    assert [r[0] for r in records] == ["evt_1", "evt_2"] and torn == 1
    # a later record is whole again: each record starts on a line of its own
    _spool.append_record(queue, "evt_4", "claude", "user_input", b"four", 1003.0)
    records, torn = _spool.read_records(path)
    assert [r[0] for r in records] == ["evt_1", "evt_2", "evt_4"] and torn == 1
    assert _spool.pending_count(queue) == 3


def test_import_is_idempotent_by_event_id_and_removes_the_spool(tmp_path: Path) -> None:
    queue = _queue_file(tmp_path)
    with CaptureQueue(queue) as q:
        _spool.append_record(queue, "evt_a", "codex", "user_input", b"a", 1000.0)
        _spool.append_record(queue, "evt_a", "codex", "user_input", b"a", 1000.0)  # the daemon's copy too
        _spool.append_record(queue, "evt_b", "codex", "turn_end", b"b", 1001.0)
        assert q.status().spooled == 3 and q.spool_pending()
        assert q.import_spool() == 2
        assert not q.spool_pending() and q.status().spooled == 0
        # a crash after the commit and before the delete: the taken file is imported again
        _spool.append_record(queue, "evt_b", "codex", "turn_end", b"b", 1001.0)
        taken = _spool.take(queue)
        assert len(taken) == 1
        assert q.import_spool() == 0
    assert _inbox(queue) == [
        ("evt_a", "codex", "user_input", b"a", "pending"),
        ("evt_b", "codex", "turn_end", b"b", "pending"),
    ]
    assert not list(queue.parent.glob("capture.sqlite.spool*"))


def test_a_symlinked_spool_is_never_followed(tmp_path: Path) -> None:
    queue = _queue_file(tmp_path)
    target = tmp_path / "elsewhere"
    target.write_bytes(b"")
    os.symlink(target, _spool.spool_path(queue))
    with pytest.raises(OSError):
        _spool.append_record(queue, "evt_x", "claude", "user_input", b"x", 1.0)
    assert target.read_bytes() == b""


def test_another_users_spool_is_refused(tmp_path: Path) -> None:
    queue = _queue_file(tmp_path)
    path = Path(_spool.spool_path(queue))
    path.write_bytes(b"")
    path.chmod(0o644)  # not private: not ours to use (and never chmodded back)
    with pytest.raises(PermissionError):
        _spool.append_record(queue, "evt_x", "claude", "user_input", b"x", 1.0)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_loads_by_path_with_nothing_but_the_stdlib(tmp_path: Path) -> None:
    code = (
        "import importlib.util, sys, json\n"
        f"spec = importlib.util.spec_from_file_location('spool', {str(SPOOL_FILE)!r})\n"
        "import hashlib, os, time\n"
        "before = set(sys.modules)\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "print(json.dumps(sorted(set(sys.modules) - before)))\n"
    )
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, check=True).stdout
    assert set(json.loads(out)) <= {"spool", "__future__"}


def _saved_config(tmp_path: Path) -> tuple[Path, Config, Path]:
    """A default config saved under ``tmp_path``, loaded back, with its queue's directory made."""
    from paxm_core.config import load_config, save_config

    config_path = tmp_path / "cfg" / "config.yaml"
    config_path.parent.mkdir()
    save_config(load_config(config_path), config_path)
    config = load_config(config_path)
    queue = config.capture_queue_path
    queue.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    return config_path, config, queue


def test_status_and_doctor_show_spooled_events(tmp_path: Path) -> None:
    from paxm_core.doctor.capture import check_capture

    config_path, config, queue = _saved_config(tmp_path)
    CaptureQueue(queue).close()
    _spool.append_record(queue, "evt_s", "claude", "user_input", b"s", 1.0)
    findings = [f for f in check_capture(config) if f.subject == "spool"]
    assert len(findings) == 1 and findings[0].level == "warn" and "1 hook event" in findings[0].message
    cli = [sys.executable, "-c", "from paxm_core.cli import main; main()", "--config", str(config_path)]
    cli += ["queue", "status"]
    text = subprocess.run(cli, capture_output=True, text=True, check=True).stdout
    assert "Spooled: 1 event(s)" in text
    report = json.loads(subprocess.run(cli + ["--json"], capture_output=True, text=True, check=True).stdout)
    assert report["spooled"] == 1


def test_an_unreadable_spool_never_blocks_the_inbox_and_doctor_reports_it(tmp_path: Path) -> None:
    from paxm_core.doctor.capture import check_capture

    config_path, config, queue = _saved_config(tmp_path)
    with CaptureQueue(queue) as q:
        _spool.append_record(queue, "evt_u", "claude", "user_input", b"u", 1.0)
        Path(_spool.spool_path(queue)).chmod(0o640)  # not private any more: not read, not chmodded back
        assert q.import_spool() == 0
        report = q.drain_inbox(lambda entry: [])
        assert report.failed == []
    (finding,) = [f for f in check_capture(config) if f.subject == "spool" and f.level == "error"]
    assert "cannot be read" in finding.message
