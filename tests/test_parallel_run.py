"""The whole-suite run is parallel (root conftest.py): which runs are distributed, and how tests are handed out.

The scheduler is driven here with fake workers through xdist's own scheduling interface, so an
xdist upgrade that changes what it relies on fails here rather than as a hung or lopsided CI run.
"""

from __future__ import annotations

from collections import deque
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]

PI = "integrations/paxm-integration-pi/tests/test_e2e_pi.py"
PG = "providers/paxm-provider-postgres/tests/"
COLLECTION = [
    *(f"tests/core/test_small_{n}.py::test_{i}" for n in range(6) for i in range(3)),
    "tests/test_wheels.py::test_pip_install",
    "tests/test_quality_gates.py::test_mypy",
    f"{PG}test_forget.py::test_a",
    f"{PG}test_forget.py::test_b",
    f"{PG}test_wheels.py::test_two_users",
    f"{PG}test_plans.py::test_indexes",
    *(f"{PI}::test_{i}" for i in range(4)),
    "tests/passive/test_crash.py::test_sigkill",
    "tests/backfill/test_parallel.py::test_workers[a]",
    "tests/backfill/test_parallel.py::test_workers[b]",
]
PINNED = {"tests/test_wheels.py", "tests/test_quality_gates.py", PG}


@pytest.fixture
def suite(request: pytest.FixtureRequest) -> ModuleType:
    """The root conftest.py as pytest loaded it."""
    module = request.config.pluginmanager.get_plugin(str(ROOT / "conftest.py"))
    assert isinstance(module, ModuleType)
    return module


def _config(args_source: pytest.Config.ArgsSource, *, worker: bool = False, **option: Any) -> Any:
    options = {"dist": "no", "numprocesses": None, "collectonly": False, "usepdb": False, **option}
    config = SimpleNamespace(
        option=SimpleNamespace(**options),
        args_source=args_source,
        stash=pytest.Stash(),
        pluginmanager=SimpleNamespace(hasplugin=lambda name: name == "xdist"),
    )
    if worker:
        config.workerinput = {"workerid": "gw1"}
    return config


@pytest.mark.parametrize(
    ("source", "option", "workers", "suite_scheduling"),
    [
        ("TESTPATHS", {}, "PARALLEL", True),  # the README's command
        ("TESTPATHS", {"numprocesses": 0}, 0, False),  # -n 0: serial
        ("TESTPATHS", {"numprocesses": 4}, 4, True),
        ("TESTPATHS", {"numprocesses": 2, "dist": "loadfile"}, 2, False),  # xdist's own mode
        ("TESTPATHS", {"collectonly": True}, None, False),
        ("TESTPATHS", {"usepdb": True}, None, False),
        ("ARGS", {}, None, False),  # pytest tests/router/test_x.py: serial
        ("ARGS", {"numprocesses": 3}, 3, True),
        ("INVOCATION_DIR", {}, None, False),  # run from a subdirectory
    ],
)
def test_only_a_whole_suite_run_is_distributed_unless_asked(
    suite: ModuleType, source: str, option: dict[str, Any], workers: Any, suite_scheduling: bool
) -> None:
    config = _config(pytest.Config.ArgsSource[source], **option)
    suite.pytest_cmdline_main(config)
    assert config.option.numprocesses == (suite.PARALLEL_WORKERS if workers == "PARALLEL" else workers)
    assert config.stash.get(suite._SUITE_SCHEDULING, False) is suite_scheduling


def test_a_worker_never_distributes_again(suite: ModuleType) -> None:
    config = _config(pytest.Config.ArgsSource.TESTPATHS, worker=True)
    suite.pytest_cmdline_main(config)
    assert config.option.numprocesses is None


def test_units_are_files_and_server_directories(suite: ModuleType) -> None:
    assert suite.unit_of(f"{PI}::test_0") == PI
    assert suite.unit_of("tests/backfill/test_parallel.py::test_workers[a::b]") == "tests/backfill/test_parallel.py"
    for directory in suite.SHARED_SERVER_DIRS:
        assert suite.unit_of(f"{directory}test_contract.py::TestX::test_name") == directory
    assert {suite.unit_of(path) for path in suite.PREFETCH_FILES} == set(suite._PREFETCH_UNITS)
    for path in suite.PREFETCH_FILES:
        assert (ROOT / path).is_file(), path
    for unit in suite.UNIT_SECONDS:
        assert (ROOT / unit).exists(), f"{unit} is gone: drop it from UNIT_SECONDS"


class FakeWorker:
    """What the scheduler uses of an xdist ``WorkerController``."""

    def __init__(self, name: str) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.queue: deque[int] = deque()
        self.shutting_down = False

    def send_runtest_some(self, indices: list[int]) -> None:
        assert not self.shutting_down
        self.queue.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


def _scheduler(suite: ModuleType, workers: list[FakeWorker]) -> Any:
    config = SimpleNamespace(
        getvalue=lambda name: [f"{len(workers)}*popen"] if name == "tx" else None,
        option=SimpleNamespace(loadscopereorder=True),
    )
    sched = suite._make_scheduler(config, None)
    for worker in workers:
        sched.add_node(worker)
    for worker in workers:
        sched.add_node_collection(worker, COLLECTION)
    sched.schedule()
    return sched


def _run(sched: Any, workers: list[FakeWorker], ran: list[tuple[str, str]], steps: int | None = None) -> None:
    """Each worker in turn runs its next test, as xdist reports them, until all are idle (or ``steps``)."""
    while any(w.queue for w in workers) and steps != 0:
        for worker in workers:
            if worker.queue:
                index = worker.queue.popleft()
                ran.append((worker.gateway.id, COLLECTION[index]))
                sched.mark_test_complete(worker, index)
        steps = None if steps is None else steps - 1


def test_units_go_longest_first_and_prefetched_ones_only_to_the_prefetching_worker(suite: ModuleType) -> None:
    workers = [FakeWorker("gw1"), FakeWorker("gw0"), FakeWorker("gw2")]  # workers come up in any order
    sched = _scheduler(suite, workers)
    first = {w.gateway.id: suite.unit_of(COLLECTION[w.queue[0]]) for w in workers}
    assert first["gw1"] == PI  # the longest unit
    assert first["gw0"] == PG  # the prefetching worker: its units first, the longest first
    assert first["gw2"] == "tests/backfill/test_parallel.py"

    ran: list[tuple[str, str]] = []
    _run(sched, workers, ran)
    assert sorted(nodeid for _, nodeid in ran) == sorted(COLLECTION)  # each test once
    assert all(w.shutting_down for w in workers) and sched.tests_finished
    runs_on: dict[str, set[str]] = {}
    for worker, nodeid in ran:
        runs_on.setdefault(suite.unit_of(nodeid), set()).add(worker)
    assert all(len(on) == 1 for on in runs_on.values()), runs_on  # a unit stays on one worker
    assert all(runs_on[unit] == {"gw0"} for unit in PINNED)
    assert [nodeid for _, nodeid in ran if nodeid.startswith(PI)] == [f"{PI}::test_{i}" for i in range(4)]


def test_prefetched_units_go_to_any_worker_once_the_prefetching_worker_is_gone(suite: ModuleType) -> None:
    workers = [FakeWorker("gw0"), FakeWorker("gw1")]
    sched = _scheduler(suite, workers)
    ran: list[tuple[str, str]] = []
    _run(sched, workers, ran, steps=1)
    gw0, gw1 = workers
    crashed = sched.remove_node(gw0)  # gw0 crashed with work left: it goes back to the queue
    assert crashed is not None
    gw0.queue.clear()
    _run(sched, [gw1], ran)
    assert {nodeid for _, nodeid in ran} == set(COLLECTION)
    assert gw1.shutting_down and not sched.has_pending
    assert any(worker == "gw1" and suite.unit_of(nodeid) in PINNED for worker, nodeid in ran)


def test_a_worker_left_without_work_it_may_take_is_shut_down_when_the_queue_empties(suite: ModuleType) -> None:
    workers = [FakeWorker("gw0"), FakeWorker("gw1")]
    sched = _scheduler(suite, workers)
    gw0, gw1 = workers
    ran: list[tuple[str, str]] = []
    while gw1.queue:  # gw1 finishes everything it may take while gw0 is still on its first test
        _run(sched, [gw1], ran)
    assert not gw1.shutting_down and sched.workqueue  # idle: only gw0's units are left
    assert all(unit in suite._PREFETCH_UNITS for unit in sched.workqueue)
    _run(sched, [gw0], ran)
    assert gw1.shutting_down and gw0.shutting_down
    assert sorted(nodeid for _, nodeid in ran) == sorted(COLLECTION)
