"""A second connection to the queue must not cost the first its SQLite locks.

Closing any descriptor of a file drops every POSIX lock the process holds on it.  The queue's
``connect`` used to open-and-close the database file to fix its mode, so a daemon opening the
queue twice lost its locks; the hook client's inbox append (whose connection really closes)
then found the database unused, checkpointed and deleted the WAL the daemon was still
committing to, and everything the daemon committed afterwards vanished with a SIGKILL.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

DAEMON = r"""
import os, signal, subprocess, sys
from paxm_core.capture import _inbox

db = sys.argv[1]
first = _inbox.connect(db)            # the queue's own connection
first.execute("CREATE TABLE probe(x INTEGER)")
first.execute("INSERT INTO probe VALUES (1)")
second = _inbox.connect(db)           # the daemon's read connection, opened later
# a hook client storing a raw event: its connection is closed for real when it returns
subprocess.run([sys.executable, "-c",
    "import sys; from paxm_core.capture import _inbox;"
    " _inbox.append_raw(sys.argv[1], 'evt_1', 'claude', 'user_input', b'{}')", db], check=True)
print("wal" if os.path.exists(db + "-wal") else "no-wal", flush=True)
first.execute("INSERT INTO probe VALUES (2)")  # committed: must survive the kill
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_second_connection_keeps_the_first_ones_commits_through_a_sigkill(tmp_path: Path) -> None:
    db = tmp_path / "hooks" / "capture.sqlite"
    run = subprocess.run([sys.executable, "-c", DAEMON, str(db)], capture_output=True, timeout=60)
    assert run.returncode == -9, run.stderr.decode()
    assert run.stdout.decode().strip() == "wal", "another process deleted the WAL this one was using"
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("SELECT x FROM probe ORDER BY x").fetchall() == [(1,), (2,)]
        assert conn.execute("SELECT event_id FROM capture_inbox").fetchall() == [("evt_1",)]
    finally:
        conn.close()
    assert db.stat().st_mode & 0o777 == 0o600


def test_connect_still_creates_the_queue_private(tmp_path: Path) -> None:
    from paxm_core.capture import _inbox

    db = tmp_path / "a" / "b" / "capture.sqlite"
    _inbox.connect(db).close()
    assert db.stat().st_mode & 0o777 == 0o600
    assert db.parent.stat().st_mode & 0o777 == 0o700
    db.chmod(0o640)
    _inbox.connect(db).close()  # an existing file is never chmod-ed (doctor reports a widened mode)
    assert db.stat().st_mode & 0o777 == 0o640
