"""Session-wide test plumbing: slow, read-only work of selected tests starts when collection ends.

The suite runs one test at a time, which leaves the second core of a 2-core machine mostly idle.
Tests whose expensive part is a subprocess that only reads the repository declare it:

- ``@pytest.mark.prefetch_wheel_venv("paxm", "paxm-provider-zep")``: the venv the test installs
  from the workspace's wheels (:func:`paxm_contracttest.servers.wheel_venv`) is built in the
  background, one per requirement set;
- ``@pytest.mark.prefetch_run(argv..., timeout=...)``: the command runs in the background (from the
  repository root, with a temp HOME as :func:`~paxm_contracttest.fakes.isolated_home` gives every
  test) and the test's ``prefetched_run`` fixture is its finished ``CompletedProcess``.

Background work runs at the lowest CPU priority and is killed when the session ends.  A test
whose work was not prefetched (run alone with ``--collect-only`` first, say) runs it in place.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from paxm_contracttest import servers
from paxm_contracttest.fakes import home_env

ROOT = Path(__file__).resolve().parent

#: variables a test's own environment never carries (isolated_home and the suites' paxm_unset_env)
_UNSET = ("PAXM_CONFIG", "PAXM_LOAD_PLUGINS", "PAXM_RAISE_ERRORS", "CLAUDE_CONFIG_DIR", "CODEX_HOME")

_RUNS = pytest.StashKey[dict[str, servers.BackgroundRun]]()


def _run_spec(marker: pytest.Mark) -> tuple[list[str], float]:
    return [str(a) for a in marker.args], float(marker.kwargs.get("timeout", 1800))


def _isolated_env() -> dict[str, str]:
    home = Path(tempfile.mkdtemp(prefix="paxm-prefetch-home-"))
    atexit.register(shutil.rmtree, home, True)
    env = {k: v for k, v in os.environ.items() if k not in _UNSET}
    env.update(home_env(home))
    return env


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the background work of the selected tests (nothing for ``--collect-only``)."""
    runs: dict[str, servers.BackgroundRun] = {}
    session.config.stash[_RUNS] = runs
    if session.config.option.collectonly:
        return
    sets: list[tuple[str, ...]] = []
    for item in session.items:
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
