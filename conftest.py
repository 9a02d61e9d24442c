"""Session-wide test plumbing: the parallel whole-suite run, and slow work started at collection.

**Parallel run.** ``uv run --all-packages pytest`` with no test paths (the README's command, which
``.ci/run`` runs) runs the suite on ``PARALLEL_WORKERS`` pytest-xdist worker processes.  Given test
paths (``pytest tests/router/test_x.py``), or ``-n`` (``-n 0``: serial), pytest runs as asked;
``-n N`` without ``--dist`` schedules as below, ``--dist MODE`` is xdist's own.  Workers take
*units* of tests (:func:`unit_of`), the longest first (``UNIT_SECONDS``):

- each test file is a unit, so a file's tests run in order on one worker and its module fixtures
  are set up once;
- the tests of a provider with real servers (``SHARED_SERVER_DIRS``) are one unit, so each server
  starts once per run (session fixtures start once per worker);
- the units whose tests use prefetched work (``PREFETCH_FILES``) all run on the first worker,
  which alone prefetches, and it takes them before any other.

**Prefetch.** Tests whose expensive part is a subprocess that only reads the repository declare it:

- ``@pytest.mark.prefetch_wheel_venv("paxm", "paxm-provider-zep")``: the venv the test installs
  from the workspace's wheels (:func:`paxm_contracttest.servers.wheel_venv`) is built in the
  background, one per requirement set;
- ``@pytest.mark.prefetch_run(argv..., timeout=...)``: the command runs in the background (from the
  repository root, with a temp HOME as :func:`~paxm_contracttest.fakes.isolated_home` gives every
  test) and the test's ``prefetched_run`` fixture is its finished ``CompletedProcess``.

Background work starts when collection ends and is killed when the session ends.  In a serial run
it runs at the lowest CPU priority, on the core the one-at-a-time run leaves idle (raised to the
test's when a test waits for it).  In the parallel run only the first worker starts it, and at
normal priority: every core runs a worker, so niced work would get almost no CPU (and the
benchmark smoke run would miss its own time limits).  Since that worker alone runs the tests that
use it, nothing is built twice.  A test whose work was not prefetched (run alone with
``--collect-only`` first, say, or on a worker that replaced a crashed first worker) runs it in
place.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from paxm_contracttest import servers
from paxm_contracttest.fakes import home_env

ROOT = Path(__file__).resolve().parent

#: workers of the parallel whole-suite run.  Measured on the 2-core CI box (pytest's time in a
#: clean-clone ``.ci/run``; the box's speed varied by up to 1.8x between runs): serial 1,726 s,
#: 2 workers 681 s, 3 workers 495 and 716 s, 4 workers 512 and 558 s.  The end-to-end suites
#: wait on their agent binaries part of the time, so one worker more than cores keeps both busy;
#: a fourth gained about 5% at the same speed, for more load on the timing-sensitive tests.
PARALLEL_WORKERS = 3

#: directories whose tests share session-scoped real servers: one scheduling unit each
SHARED_SERVER_DIRS = (
    "providers/paxm-provider-mem0/tests/",
    "providers/paxm-provider-memos/tests/",
    "providers/paxm-provider-openviking/tests/",
    "providers/paxm-provider-postgres/tests/",
)

#: the test files that use ``prefetch_wheel_venv`` / ``prefetch_run`` (checked at collection):
#: their units run on the prefetching worker
PREFETCH_FILES = (
    "tests/test_benchmarks_smoke.py",
    "tests/test_quality_gates.py",
    "tests/test_wheels.py",
    "providers/paxm-provider-mem0/tests/test_wheel_install.py",
    "providers/paxm-provider-memos/tests/test_wheels_memos.py",
    "providers/paxm-provider-openviking/tests/test_wheels_openviking.py",
    "providers/paxm-provider-postgres/tests/test_wheels.py",
)

#: the worker that prefetches (xdist names workers gw0, gw1, ...)
PREFETCH_WORKER = "gw0"

#: seconds the longest units took in a serial run (JUnit ``--junitxml`` times summed per unit, on
#: the 2-core box): they are handed out first, longest first, so the run does not end waiting
#: for one of them.  Only the order depends on these figures, so they need not be exact or current.
UNIT_SECONDS = {
    "contracttest/tests/test_e2e_harnesses.py": 190,
    "integrations/paxm-integration-pi/tests/test_e2e_pi.py": 170,
    "integrations/paxm-integration-opencode/tests/test_e2e_backfill.py": 80,
    "integrations/paxm-integration-claude-code/tests/test_e2e_claude.py": 75,
    "integrations/paxm-integration-opencode/tests/test_e2e_opencode.py": 70,
    "providers/paxm-provider-mem0/tests/": 55,
    "providers/paxm-provider-openviking/tests/": 50,
    "providers/paxm-provider-postgres/tests/": 45,
    "tests/backfill/test_parallel.py": 45,
    "tests/update/test_update_install.py": 150,
    "tests/evals/test_locomo_e2e.py": 35,
    "tests/evals/test_locomo_runner.py": 28,
    "tests/passive/test_daemon_errors.py": 40,
    "tests/backfill/test_backfill_cli.py": 40,
    "integrations/paxm-integration-codex/tests/test_e2e_codex.py": 40,
    "tests/passive/test_daemon.py": 35,
    "tests/passive/test_crash.py": 30,
    "providers/paxm-provider-sqlite-hybrid/tests/test_eval_suites.py": 30,
    "providers/paxm-provider-memos/tests/": 30,
    "integrations/paxm-integration-codex/tests/test_cross_harness.py": 25,
    "tests/dashboard/test_api.py": 25,
    "integrations/paxm-integration-pi/tests/test_extension_node.py": 20,
    "integrations/paxm-integration-ide/tests/test_cli.py": 15,
    "tests/capture/test_crash.py": 15,
    "integrations/paxm-integration-claude-code/tests/test_cli.py": 15,
}
#: what a test of a unit not listed above is expected to take (the rest of the suite's average)
OTHER_TEST_SECONDS = 0.2

#: variables a test's own environment never carries (isolated_home and the suites' paxm_unset_env)
_UNSET = ("PAXM_CONFIG", "PAXM_LOAD_PLUGINS", "PAXM_RAISE_ERRORS", "CLAUDE_CONFIG_DIR", "CODEX_HOME")

_RUNS = pytest.StashKey[dict[str, servers.BackgroundRun]]()
#: set in the controller when this suite's scheduler distributes the run
_SUITE_SCHEDULING = pytest.StashKey[bool]()


def unit_of(nodeid: str) -> str:
    """The scheduling unit of a test: its server directory, else its file."""
    path = nodeid.split("::", 1)[0]
    for directory in SHARED_SERVER_DIRS:
        if path.startswith(directory):
            return directory
    return path


_PREFETCH_UNITS = frozenset(unit_of(path) for path in PREFETCH_FILES)


#: options under which pytest runs no tests (or, ``--pdb``, runs them in this process)
_NOT_A_TEST_RUN = ("collectonly", "usepdb", "showfixtures", "show_fixtures_per_test", "markers", "help", "version")


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """Distribute a whole-suite run; leave a run of chosen paths, or with ``-n``/``--dist``, as asked.

    Runs before pytest-xdist's own ``pytest_cmdline_main``, which turns ``numprocesses`` into workers.
    """
    if not config.pluginmanager.hasplugin("xdist") or hasattr(config, "workerinput"):
        return
    option = config.option
    if option.dist != "no" or any(getattr(option, name, False) for name in _NOT_A_TEST_RUN):
        return  # an explicit distribution mode, or no test run to distribute
    if option.numprocesses is None:
        if config.args_source is not pytest.Config.ArgsSource.TESTPATHS:
            return  # test paths given: a plain serial run
        option.numprocesses = PARALLEL_WORKERS
    if option.numprocesses:  # "-n N" without "--dist": this suite's scheduling
        config.stash[_SUITE_SCHEDULING] = True


def pytest_configure(config: pytest.Config) -> None:
    if config.stash.get(_SUITE_SCHEDULING, False):
        config.pluginmanager.register(_XdistHooks(), "paxm-suite-scheduling")


class _XdistHooks:
    """pytest-xdist hooks of the controller (registered only when it distributes with this scheduler)."""

    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput["paxm_prefetch"] = node.gateway.id == PREFETCH_WORKER

    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        return _make_scheduler(config, log)


def _make_scheduler(config: pytest.Config, log: Any) -> Any:
    from xdist.scheduler import LoadScopeScheduling

    class SuiteScheduling(LoadScopeScheduling):
        """xdist's per-scope load balancing with this suite's units, heaviest unit first.

        A unit holding prefetched tests goes only to the prefetching worker while it is up (it
        takes them before any other unit); after it crashed, any worker takes them.
        """

        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

        def _prefetcher_up(self) -> bool:
            return any(n.gateway.id == PREFETCH_WORKER and not n.shutting_down for n in self.nodes)

        def _assign_work_unit(self, node: Any) -> None:
            if not self.workqueue:
                return
            mine = node.gateway.id == PREFETCH_WORKER
            pinned = self._prefetcher_up()
            allowed = [s for s in self.workqueue if mine or not pinned or s not in _PREFETCH_UNITS]
            if not allowed:
                return  # only the prefetching worker's units are left
            if mine and any(s in _PREFETCH_UNITS for s in allowed):
                allowed = [s for s in allowed if s in _PREFETCH_UNITS]
            scope = max(allowed, key=lambda s: unit_seconds(s, list(self.workqueue[s])))
            self.workqueue.move_to_end(scope, last=False)
            super()._assign_work_unit(node)

        def _reschedule(self, node: Any) -> None:
            super()._reschedule(node)
            if not self.workqueue:
                # everything is handed out: a worker left idle by a pinned unit is done too
                for other in self.nodes:
                    if not other.shutting_down and not self._pending_of(self.assigned_work[other]):
                        other.shutdown()

    return SuiteScheduling(config, log)


def unit_seconds(unit: str, nodeids: Sequence[str]) -> float:
    """How long a unit is expected to take (its tests left to run are ``nodeids``)."""
    return UNIT_SECONDS.get(unit, OTHER_TEST_SECONDS * len(nodeids))


def _run_spec(marker: pytest.Mark) -> tuple[list[str], float]:
    return [str(a) for a in marker.args], float(marker.kwargs.get("timeout", 1800))


def _isolated_env() -> dict[str, str]:
    home = Path(tempfile.mkdtemp(prefix="paxm-prefetch-home-"))
    atexit.register(shutil.rmtree, home, True)
    env = {k: v for k, v in os.environ.items() if k not in _UNSET}
    env.update(home_env(home))
    return env


def _prefetches(config: pytest.Config) -> bool:
    """This process prefetches: a serial run, or the parallel run's prefetching worker."""
    workerinput = getattr(config, "workerinput", None)
    return workerinput is None or bool(workerinput.get("paxm_prefetch"))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the background work of the selected tests (nothing for ``--collect-only``)."""
    runs: dict[str, servers.BackgroundRun] = {}
    session.config.stash[_RUNS] = runs
    prefetched = [
        item
        for item in session.items
        if item.get_closest_marker("prefetch_wheel_venv") or item.get_closest_marker("prefetch_run")
    ]
    stray = sorted({item.nodeid for item in prefetched if unit_of(item.nodeid) not in _PREFETCH_UNITS})
    if stray:
        raise pytest.UsageError(f"add the files of {stray} to PREFETCH_FILES in {__file__}")
    if session.config.option.collectonly or not _prefetches(session.config):
        return
    if hasattr(session.config, "workerinput"):
        servers.set_background_niced(False)  # every core runs a worker: niced work would starve
    sets: list[tuple[str, ...]] = []
    for item in prefetched:
        for marker in item.iter_markers("prefetch_wheel_venv"):
            if tuple(marker.args) not in sets:
                sets.append(tuple(marker.args))
        run = item.get_closest_marker("prefetch_run")
        if run is not None:
            argv, timeout = _run_spec(run)
            runs[item.nodeid] = servers.BackgroundRun(argv, cwd=ROOT, env=_isolated_env(), timeout=timeout)
    if sets:
        factory = getattr(session.config, "_tmp_path_factory", None)  # what tmp_path_factory returns
        if isinstance(factory, pytest.TempPathFactory):
            servers.set_wheel_venv_root(factory.getbasetemp())
        servers.prefetch_wheel_venvs(ROOT, sets)


def pytest_sessionfinish(session: pytest.Session) -> None:
    servers.cancel_prefetch()


@pytest.fixture
def prefetched_run(request: pytest.FixtureRequest) -> subprocess.CompletedProcess[str]:
    """The finished command of the test's ``prefetch_run`` marker (run here if it was not started)."""
    marker = request.node.get_closest_marker("prefetch_run")
    if marker is None:
        raise pytest.UsageError("prefetched_run needs @pytest.mark.prefetch_run(argv..., timeout=...)")
    runs = request.config.stash.get(_RUNS, {})
    started = runs.get(request.node.nodeid)
    if started is not None:
        return started.result()
    argv, timeout = _run_spec(marker)
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
