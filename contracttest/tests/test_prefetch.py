"""Background work of the test kit (paxm_contracttest.servers): results, failures, timeouts, cleanup."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from paxm_contracttest import servers


def _script(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_background_run_returns_what_the_command_printed_and_its_exit_code(tmp_path: Path) -> None:
    code = "import os, sys; print(os.getcwd()); print(os.environ['MARK'], file=sys.stderr); sys.exit(3)"
    run = servers.BackgroundRun(_script(code), cwd=tmp_path, env={**os.environ, "MARK": "m-42"}, timeout=60)
    done = run.result()
    assert done.returncode == 3
    assert done.stdout.strip() == str(tmp_path) and done.stderr.strip() == "m-42"
    assert run.result() is done  # collected once, answered again


def test_background_run_runs_niced_until_a_test_waits_for_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(servers, "_NICED", [True])  # the default (a parallel run's prefetching worker turns it off)
    first, go = tmp_path / "first", tmp_path / "go"
    code = (
        "import os, pathlib, time; "
        f"pathlib.Path({str(first)!r}).write_text(str(os.nice(0))); "
        f"[time.sleep(0.01) for _ in iter(lambda: pathlib.Path({str(go)!r}).exists(), True)]; "
        "print(os.nice(0))"
    )
    run = servers.BackgroundRun(_script(code), cwd=tmp_path, env=dict(os.environ), timeout=120)
    _wait_for(first)
    mine = os.nice(0)
    assert int(first.read_text()) == (min(mine + 19, 19) if servers._NICE else mine)
    go.touch()
    done = run.result()  # boosted first, then waited for
    assert done.returncode == 0, done.stderr
    if os.geteuid() == 0:  # raising priority back needs privilege
        assert int(done.stdout) == mine


def test_background_run_is_not_niced_when_background_work_runs_at_the_tests_priority(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(servers, "_NICED", [True])
    servers.set_background_niced(False)  # what a parallel run's prefetching worker does
    assert servers._NICED == [False]
    run = servers.BackgroundRun(
        _script("import os; print(os.nice(0))"), cwd=tmp_path, env=dict(os.environ), timeout=120
    )
    done = run.result()
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) == os.nice(0)


def test_background_run_past_its_timeout_is_killed_with_its_children(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    code = (
        "import subprocess, sys, time; "
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)']); "
        f"open({str(pid_file)!r}, 'w').write(str(child.pid)); time.sleep(120)"
    )
    run = servers.BackgroundRun(_script(code), cwd=tmp_path, env=dict(os.environ), timeout=5)
    _wait_for(pid_file)
    with pytest.raises(subprocess.TimeoutExpired):
        run.result()
    _gone_or_zombie(int(pid_file.read_text()))


def test_cancelled_background_run_reports_the_kill(tmp_path: Path) -> None:
    run = servers.BackgroundRun(
        _script("import time; time.sleep(120)"), cwd=tmp_path, env=dict(os.environ), timeout=120
    )
    run.cancel()
    assert run.result().returncode == -9


def test_a_job_runs_once_for_every_caller_and_keeps_its_error() -> None:
    calls: list[int] = []
    gate = threading.Event()

    def work() -> int:
        gate.wait(10)
        calls.append(1)
        return len(calls)

    job = servers._Job(work)
    job.start()
    assert not job.done
    gate.set()
    assert job.result() == 1 and job.result() == 1 and calls == [1] and job.done

    def broken() -> int:
        raise RuntimeError("install failed")

    failing = servers._Job(broken)
    failing.start()
    for _ in range(2):  # every test sharing it sees the same failure
        with pytest.raises(RuntimeError, match="install failed"):
            failing.result()


def _wait_for(path: Path) -> None:
    """Until ``path`` has content (a started interpreter may take seconds on a loaded machine)."""
    for _ in range(12000):
        if path.exists() and path.read_text():
            return
        time.sleep(0.01)
    raise AssertionError(f"{path} never written")


def _gone_or_zombie(pid: int) -> None:
    """The process has exited (reaped, or a zombie where no init reaps); SIGKILL lands asynchronously."""
    state = "?"
    for _ in range(3000):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return
        if state == "Z":
            return
        time.sleep(0.01)
    raise AssertionError(f"child {pid} still running (state {state})")
