"""The sandbox every real-harness end-to-end test runs paxm in.

A private HOME, workspace, temp dir and paxm config under one root, and a scrubbed environment
(nothing inherited but ``PATH``), so a test sees exactly what a fresh user would.  A harness's
test kit subclasses :class:`PaxmSandbox` and adds how to run its binary; what is the same for
every harness (running ``paxm``, reading and editing its config, the SQLite memories, the hook
daemon's lifecycle) is here.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from paxm_contracttest.harness import scrubbed_env

__all__ = ["CLI_ENTRY", "PAXM", "PaxmSandbox", "run_cli", "run_command", "run_paxm"]

#: the ``paxm`` console script of the environment running the tests
PAXM = str(Path(sys.executable).parent / "paxm")
#: ``python -c CLI_ENTRY ARGS`` runs paxm's CLI in this interpreter, with every installed plugin
CLI_ENTRY = "import sys; from paxm_core.cli import main; main(sys.argv[1:])"


def run_cli(
    *args: str, env: Mapping[str, str] | None = None, stdin: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``paxm ARGS`` in a fresh process of this interpreter, in the test's own environment (its
    isolated HOME) plus ``env``; stdin is ``stdin``, else closed."""
    return subprocess.run(
        [sys.executable, "-c", CLI_ENTRY, *args],
        capture_output=True,
        text=True,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
        timeout=timeout,
    )


def run_paxm(
    config: Path, *args: str, env: Mapping[str, str] | None = None, stdin: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``paxm --config CONFIG ARGS``, as :func:`run_cli` runs it."""
    return run_cli("--config", str(config), *args, env=env, stdin=stdin, timeout=timeout)


def run_command(
    argv: list[str], what: str, *, env: dict[str, str], cwd: Path | None, timeout: float, check: bool
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` (stdin closed, output captured as text); with ``check`` it must succeed, else
    the assertion names ``what`` and shows its output."""
    done = subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )
    if check:
        assert done.returncode == 0, f"{what} failed:\n{done.stdout}\n{done.stderr}"
    return done


class PaxmSandbox:
    """``root/home``, ``root/work``, ``root/tmp`` and ``root/paxm/config.yaml``.

    :param root: the sandbox's directory (a pytest ``tmp_path``).
    :param workspace: the project directory the harness runs in (default ``root/work``).
    :param config: the paxm config (default ``root/paxm/config.yaml``).
    """

    #: the ``agents.<name>`` whose passive recall :meth:`generous_recall_budget` widens
    agent: str = ""

    def __init__(self, root: Path, *, workspace: Path | None = None, config: Path | None = None) -> None:
        self.root = root
        self.home = root / "home"
        self.workspace = workspace or root / "work"
        self.config = config or root / "paxm" / "config.yaml"
        for path in (self.home, self.workspace, root / "tmp"):
            path.mkdir(parents=True, exist_ok=True)

    def path_prefix(self) -> str | None:
        """A directory put first on ``PATH`` (a harness's own ``bin``), or ``None``."""
        return None

    def env(self, **extra: str) -> dict[str, str]:
        """Scrubbed environment: PATH plus HOME/XDG/TMPDIR inside the sandbox, and ``extra``."""
        prefix = self.path_prefix()
        path = os.environ.get("PATH", "/usr/bin:/bin")
        return scrubbed_env(
            self.home, self.root / "tmp", path=f"{prefix}{os.pathsep}{path}" if prefix else path, **extra
        )

    def paxm(
        self, *args: str, check: bool = True, timeout: float = 120, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run ``paxm --config <sandbox config> ...`` (``check``: assert it succeeded) in ``cwd``."""
        argv = [PAXM, "--config", str(self.config), *args]
        return run_command(argv, f"paxm {' '.join(args)}", env=self.env(), cwd=cwd, timeout=timeout, check=check)

    def paxm_json(self, *args: str, timeout: float = 240, cwd: Path | None = None) -> dict[str, Any]:
        """``paxm ARGS --json``, which must succeed, as its JSON object."""
        value = json.loads(self.paxm(*args, "--json", timeout=timeout, cwd=cwd).stdout)
        assert isinstance(value, dict), value
        return value

    def recall(self, query: str) -> str:
        """``paxm recall -q QUERY`` run from the workspace (so its project scope applies); the output."""
        return self.paxm("recall", "-q", query, cwd=self.workspace).stdout

    def recall_hits(self, query: str) -> list[dict[str, Any]]:
        """``paxm recall -q QUERY --json`` run from the workspace: its hits."""
        hits: list[dict[str, Any]] = self.paxm_json("recall", "-q", query, cwd=self.workspace)["hits"]
        return hits

    def commit_workspace(self, files: dict[str, str]) -> None:
        """Write ``files`` (path in the workspace -> text) and commit them in a new git repository there."""
        for name, text in files.items():
            (self.workspace / name).parent.mkdir(parents=True, exist_ok=True)
            (self.workspace / name).write_text(text)
        ident = ["-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"]
        for argv in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "files"]):
            subprocess.run(["git", *ident, *argv], cwd=self.workspace, check=True, capture_output=True, env=self.env())

    # -- paxm state ----------------------------------------------------------------------------

    def config_data(self) -> dict[str, Any]:
        """The paxm config as plain data."""
        import yaml

        data = yaml.safe_load(self.config.read_text())
        assert isinstance(data, dict)
        return data

    def write_config_data(self, data: dict[str, Any]) -> None:
        """Replace the paxm config with ``data``."""
        import yaml

        self.config.write_text(yaml.safe_dump(data, sort_keys=False))

    def generous_recall_budget(self, seconds: str = "2s", *, agent: str = "") -> None:
        """Give the agent's passive recall an explicit budget.

        The default (longest route timeout + 100 ms = 350 ms) is what users get; a loaded CI
        machine can miss it on a cold SQLite page cache, and the tests that assert injection
        are about the integration, not the budget (the hanging-provider tests cover that).
        """
        data = self.config_data()
        recall = data["agents"][agent or self.agent]["hooks"]["user_input"]["recall"]
        recall["timeout"] = seconds
        if isinstance(recall.get("initial"), dict):
            recall["initial"]["timeout"] = seconds
        self.write_config_data(data)

    def memory_texts(self) -> list[str]:
        """Texts stored in the SQLite provider's database."""
        path = Path(self.config_data()["providers"]["sqlite"]["path"])
        if not path.exists():
            return []
        with sqlite3.connect(path) as conn:
            return [row[0] for row in conn.execute("SELECT text FROM memories")]

    def daemon_pid(self) -> int:
        """The hook daemon's pid from its lock file (0 when none)."""
        try:
            return int((self.config.parent / "hooks" / "paxm-hook.lock").read_text().strip() or 0)
        except (OSError, ValueError):
            return 0

    def wait_for_daemon(self, timeout: float = 30) -> None:
        """Wait until the hook daemon a hook client started answers ``status``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            done = self.paxm("__hook-control", "--status", "--json", check=False)
            if done.returncode == 0 and '"pid"' in done.stdout:
                return
            time.sleep(0.2)
        raise AssertionError("the hook daemon did not come up")

    def start_daemon(self, idle_timeout: str = "2m") -> subprocess.Popen[bytes]:
        """Start the hook daemon in the foreground of a child process and wait until it answers.

        For tests that want the daemon up before the harness's first hook (a warm first prompt);
        pass the returned process to :meth:`stop_daemon`.
        """
        process = subprocess.Popen(
            [PAXM, "--config", str(self.config), "__hook-daemon", "--idle-timeout", idle_timeout],
            env=self.env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.wait_for_daemon()
        return process

    def stop_daemon(self, process: subprocess.Popen[bytes] | None = None) -> None:
        """Shut down the hook daemon (by its pid if it does not answer).

        :param process: the process :meth:`start_daemon` returned: reaped, killed if it has not
            exited 15 s after the shutdown.
        """
        pid = self.daemon_pid()
        done = self.paxm("__hook-control", "--shutdown", check=False, timeout=60)
        if done.returncode != 0 and pid and is_daemon_process(pid):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        if process is not None:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def is_daemon_process(pid: int) -> bool:
    """Whether ``pid`` is (still) a paxm hook daemon; check it before signalling a pid.

    A killed daemon's lock file keeps naming its pid, and pids wrap within minutes on a busy
    machine (32,768 on Linux by default): signalling that pid blindly could kill another test's
    process, or a pytest worker.
    """
    try:
        return b"paxm_core.passive.daemon" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
