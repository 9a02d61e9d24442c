"""Large batch writes in a child process (``paxm_core.write_process``), with the real SQLite provider.

Real child processes, real SQLite files, real kills.  What must hold: the child stores exactly
what the in-process call would; a provider error comes back as the same error; a lost, stuck
or unstartable child never loses a batch (it is written in process, or fails by its
deadline for the queue to retry); the child never outlives its parent or its provider.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from paxm_core import Deadline, MemoryItem, SearchQuery
from paxm_core.errors import DeadlineExceeded, ProviderError
from paxm_core.plugins import get_plugin_manager
from paxm_core.processes import pid_alive
from paxm_core.provider_config import ProviderConfig
from paxm_core.write_process import WriteProcessProvider

_T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def _sqlite(path: Path, name: str = "store") -> tuple[Any, ProviderConfig]:
    config = ProviderConfig(type="sqlite", enabled=True, path=str(path))
    provider = get_plugin_manager().provider_type("sqlite").factory(name, config)
    provider.health(Deadline.after(30))
    return provider, config


def _wrapped(tmp_path: Path, **options: Any) -> WriteProcessProvider:
    provider, config = _sqlite(tmp_path / "memories.sqlite")
    return WriteProcessProvider(provider, "sqlite", config, **options)


def _items(prefix: str, n: int = 80) -> list[MemoryItem]:
    return [
        MemoryItem(
            text=f"{prefix} decision {i}: keep the billing API stable, version v2.{i} (see BILL-{i})",
            id=f"{prefix}-{i}",
            source="test",
            metadata={"session_id": f"s{i % 3}", "paxm_session_sequence": str(i + 1)},
            created_at=_T0 + timedelta(seconds=i),
        )
        for i in range(n)
    ]


def _ready(wrapper: WriteProcessProvider, timeout: float = 60.0) -> int:
    """Write warm-up batches until one went through the child; returns the child's pid."""
    started = time.monotonic()
    round_ = 0
    while wrapper.remote_batches == 0:
        assert time.monotonic() - started < timeout, f"the write process never came up: {wrapper.last_failure}"
        warm = [MemoryItem(text=f"warm-up filler {round_} {i}", id=f"warm{round_}-{i}") for i in range(64)]
        wrapper.put_batch(warm, Deadline.after(30))
        round_ += 1
        time.sleep(0.05)
    pid = wrapper.child_pid()
    assert pid is not None
    return pid


def _rows(path: Path, prefix: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            "SELECT id, text, source, metadata_json, created_at, tier, expires_at, terms, extras, nterms"
            " FROM memories WHERE id LIKE ? ORDER BY id",
            (f"{prefix}-%",),
        ).fetchall()
    finally:
        conn.close()


def _gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_small_batches_stay_in_process_and_start_no_child(tmp_path: Path) -> None:
    wrapper = _wrapped(tmp_path)
    try:
        refs = wrapper.put_batch(_items("small", 10), Deadline.after(30))
        assert [r.id for r in refs] == [f"small-{i}" for i in range(10)]
        assert (wrapper.local_batches, wrapper.remote_batches) == (1, 0)
        assert wrapper.child_pid() is None
    finally:
        wrapper.close()


def test_the_child_stores_exactly_what_the_in_process_write_stores(tmp_path: Path) -> None:
    wrapper = _wrapped(tmp_path)
    plain, _ = _sqlite(tmp_path / "plain.sqlite", "store")
    try:
        _ready(wrapper)
        items = _items("same", 100)
        refs = wrapper.put_batch(items, Deadline.after(30))
        assert wrapper.remote_batches == 2  # the warm-up that proved it, and this one
        assert [(r.provider, r.id) for r in refs] == [("store", f"same-{i}") for i in range(100)]
        assert [(r.provider, r.id) for r in plain.put_batch(items, Deadline.after(30))] == [
            (r.provider, r.id) for r in refs
        ]
        written = _rows(tmp_path / "memories.sqlite", "same")
        assert len(written) == 100
        assert written == _rows(tmp_path / "plain.sqlite", "same")
        # and this process reads what the child wrote (recall stays in process)
        hits = wrapper.search(SearchQuery("BILL-42", limit=5), Deadline.after(10))
        assert any(h.id == "same-42" for h in hits)
    finally:
        wrapper.close()
        plain.close()


def test_a_provider_error_in_the_child_is_raised_here_as_the_same_error(tmp_path: Path) -> None:
    wrapper = _wrapped(tmp_path)
    plain, _ = _sqlite(tmp_path / "plain.sqlite", "store")
    try:
        _ready(wrapper)
        items = _items("bad", 70)
        items[5] = MemoryItem(text="   ", id="bad-blank")
        with pytest.raises(ProviderError) as remote:
            wrapper.put_batch(items, Deadline.after(30))
        with pytest.raises(ProviderError) as local:
            plain.put_batch(items, Deadline.after(30))
        assert str(remote.value) == str(local.value)
        assert "item 5" in str(remote.value)
        assert _rows(tmp_path / "memories.sqlite", "bad") == []  # all or nothing, as in process
        # the child survives a provider error and keeps writing
        pid = wrapper.child_pid()
        wrapper.put_batch(_items("after", 70), Deadline.after(30))
        assert wrapper.child_pid() == pid
        assert len(_rows(tmp_path / "memories.sqlite", "after")) == 70
    finally:
        wrapper.close()
        plain.close()


def test_a_child_killed_between_batches_loses_nothing_and_is_not_restarted_at_once(tmp_path: Path) -> None:
    wrapper = _wrapped(tmp_path)
    try:
        pid = _ready(wrapper)
        os.kill(pid, signal.SIGKILL)
        assert _gone(pid)
        local_before = wrapper.local_batches
        refs = wrapper.put_batch(_items("after-kill", 90), Deadline.after(30))
        assert len(refs) == 90
        assert wrapper.local_batches == local_before + 1
        assert len(_rows(tmp_path / "memories.sqlite", "after-kill")) == 90
        assert "status" in wrapper.last_failure or "lost" in wrapper.last_failure
        # within the restart delay every batch is written here, and no child runs
        wrapper.put_batch(_items("later", 90), Deadline.after(30))
        assert wrapper.child_pid() is None
        assert len(_rows(tmp_path / "memories.sqlite", "later")) == 90
    finally:
        wrapper.close()


def _hold_write_lock(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    return conn


def test_a_child_killed_mid_batch_leaves_the_batch_to_this_process(tmp_path: Path) -> None:
    wrapper = _wrapped(tmp_path)
    try:
        pid = _ready(wrapper)
        blocker = _hold_write_lock(tmp_path / "memories.sqlite")  # the child's write waits on it
        result: dict[str, Any] = {}

        def write() -> None:
            try:
                result["refs"] = wrapper.put_batch(_items("mid", 100), Deadline.after(60))
            except BaseException as exc:
                result["error"] = exc

        writer = threading.Thread(target=write)
        writer.start()
        time.sleep(0.5)  # the batch is in the child, which waits for the lock
        os.kill(pid, signal.SIGKILL)
        time.sleep(0.3)
        blocker.execute("ROLLBACK")
        blocker.close()
        writer.join(60)
        assert "error" not in result, result
        assert len(result["refs"]) == 100
        assert len(_rows(tmp_path / "memories.sqlite", "mid")) == 100
        assert wrapper.child_pid() is None
        assert "lost during a batch" in wrapper.last_failure
    finally:
        wrapper.close()


def test_a_cancelled_write_kills_the_stuck_child_and_raises(tmp_path: Path) -> None:
    wrapper = _wrapped(tmp_path)
    try:
        pid = _ready(wrapper)
        blocker = _hold_write_lock(tmp_path / "memories.sqlite")
        deadline = Deadline.none()  # the child's own wait has no end: only the cancel stops it
        threading.Timer(0.5, deadline.cancel).start()
        with pytest.raises(DeadlineExceeded):
            wrapper.put_batch(_items("stuck", 100), deadline)
        assert _gone(pid)  # killed: its open transaction rolled back
        blocker.execute("ROLLBACK")
        blocker.close()
        assert _rows(tmp_path / "memories.sqlite", "stuck") == []
        # a deadline is not a failure of the child: the next large batch starts another at once
        wrapper.put_batch(_items("next", 100), Deadline.after(30))
        assert wrapper.child_pid() not in (None, pid)
    finally:
        wrapper.close()


def test_a_child_that_cannot_start_is_reported_and_writes_stay_in_process(tmp_path: Path) -> None:
    provider, config = _sqlite(tmp_path / "memories.sqlite")
    wrapper = WriteProcessProvider(provider, "no-such-provider-type", config)
    try:
        started = time.monotonic()
        round_ = 0
        while not wrapper.last_failure:
            assert time.monotonic() - started < 60, "the start failure was never seen"
            wrapper.put_batch(_items(f"try{round_}", 64), Deadline.after(30))
            round_ += 1
            time.sleep(0.05)
        assert "could not start" in wrapper.last_failure
        assert "no-such-provider-type" in wrapper.last_failure
        assert wrapper.remote_batches == 0
        assert all(len(_rows(tmp_path / "memories.sqlite", f"try{r}")) == 64 for r in range(round_))
    finally:
        wrapper.close()


def test_an_idle_child_exits_and_the_next_backlog_starts_another(tmp_path: Path) -> None:
    wrapper = _wrapped(tmp_path, idle_exit=0.5)
    try:
        pid = _ready(wrapper)
        assert _gone(pid)  # idle for longer than idle_exit
        wrapper.put_batch(_items("again", 70), Deadline.after(30))  # written here while a new child starts
        assert wrapper.last_failure == ""  # an idle exit is not a failure
        assert wrapper.child_pid() not in (None, pid)
        assert len(_rows(tmp_path / "memories.sqlite", "again")) == 70
    finally:
        wrapper.close()


def test_close_stops_the_child(tmp_path: Path) -> None:
    wrapper = _wrapped(tmp_path)
    pid = _ready(wrapper)
    wrapper.close()
    assert _gone(pid)
    # closed: a late batch is still written (in process is all there is), no child starts
    assert wrapper.child_pid() is None


def test_the_child_ends_with_its_parent(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import sys, time
        sys.path[:0] = {sys.path!r}
        from paxm_core import Deadline, MemoryItem, SearchQuery
        from paxm_core.plugins import get_plugin_manager
        from paxm_core.provider_config import ProviderConfig
        from paxm_core.write_process import WriteProcessProvider
        config = ProviderConfig(type="sqlite", enabled=True, path={str(tmp_path / "m.sqlite")!r})
        provider = get_plugin_manager().provider_type("sqlite").factory("store", config)
        wrapper = WriteProcessProvider(provider, "sqlite", config)
        n = 0
        while wrapper.remote_batches == 0:
            wrapper.put_batch([MemoryItem(text=f"warm {{n}} {{i}}", id=f"w{{n}}-{{i}}") for i in range(64)],
                              Deadline.after(30))
            n += 1
            time.sleep(0.05)
        print(wrapper.child_pid(), flush=True)
        time.sleep(120)
        """
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert pid_alive(child)
        parent.kill()
        parent.wait()
        assert _gone(child), "the write process outlived its parent"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        if parent.stdout is not None:
            parent.stdout.close()


def test_delivery_through_a_write_process_that_keeps_being_killed_delivers_every_episode_once(
    tmp_path: Path,
) -> None:
    from _capture_helpers import event

    from paxm_core.capture import CaptureQueue, DeliveryWorker
    from paxm_core.router import Router

    wrapper = _wrapped(tmp_path, restart_after=0.1)
    pid = _ready(wrapper)
    queue = CaptureQueue(tmp_path / "queue.sqlite", routes={"default": ["store"]})
    episodes = 1200
    for n in range(episodes):
        session = f"s{n % 7}"
        queue.append(event(f"u{n}", session=session, text=f"episode {n} about invoices and the ledger"))
        queue.append(event(f"e{n}", session=session, text=f"answer {n}", terminal=True))
    router = Router({"store": wrapper})
    worker = DeliveryWorker(queue, router, batch_size=128)
    killed: list[int] = [pid]
    stop = threading.Event()

    def killer() -> None:
        while not stop.is_set():
            child = wrapper.child_pid()
            if child is not None and child not in killed:
                time.sleep(0.05)
                try:
                    os.kill(child, signal.SIGKILL)
                    killed.append(child)
                except ProcessLookupError:
                    pass
            time.sleep(0.02)

    os.kill(pid, signal.SIGKILL)
    thread = threading.Thread(target=killer)
    thread.start()
    try:
        report = worker.flush(timeout=120)
    finally:
        stop.set()
        thread.join()
    try:
        assert report.ok, report
        assert queue.owed(include_open=True) == 0
        conn = sqlite3.connect(tmp_path / "memories.sqlite")
        stored = conn.execute("SELECT count(*), count(DISTINCT id) FROM memories WHERE id LIKE 'ep_%'").fetchone()
        conn.close()
        assert stored == (episodes, episodes)
        assert len(killed) >= 2  # the child was killed during the run, not only before it
    finally:
        router.close()
        queue.close()


@pytest.mark.parametrize(("setting", "wrapped"), [("", True), ("  write_in_process: true\n", False)])
def test_the_runtime_wraps_shared_store_providers_unless_the_config_turns_it_off(
    tmp_path: Path, setting: str, wrapped: bool
) -> None:
    from paxm_core.runtime import Runtime

    config = tmp_path / "config.yaml"
    config.write_text(
        "providers:\n"
        "  sqlite:\n"
        "    type: sqlite\n"
        "    enabled: true\n"
        f"    path: {tmp_path / 'memories.sqlite'}\n"
        "capture_queue:\n"
        f"  retry_min: 1s\n{setting}"
    )
    runtime = Runtime.load(str(config), telemetry=None)
    try:
        provider = runtime.router.providers["sqlite"]
        assert isinstance(provider, WriteProcessProvider) is (wrapped and (os.cpu_count() or 1) >= 2)
        # wrapped or not, the router sees the provider's own capabilities
        assert {"put_batch", "delete", "deadline_bound", "shared_store"} <= runtime.router.capabilities("sqlite")
        refs = runtime.router.put_to_provider("sqlite", _items("rt", 70), 30.0)
        assert len(refs) == 70
    finally:
        runtime.close()


def test_the_child_outlives_the_thread_that_started_it(tmp_path: Path) -> None:
    # delivery threads come and go; the child must serve the next batch from any thread
    wrapper = _wrapped(tmp_path)
    try:
        started: dict[str, int] = {}
        thread = threading.Thread(target=lambda: started.setdefault("pid", _ready(wrapper)))
        thread.start()
        thread.join()
        time.sleep(0.3)
        assert wrapper.child_pid() == started["pid"]
        wrapper.put_batch(_items("other-thread", 70), Deadline.after(30))
        assert wrapper.remote_batches == 2
        assert wrapper.child_pid() == started["pid"]
    finally:
        wrapper.close()


def test_the_runtime_asks_only_instances_whose_type_registered_shared_store(tmp_path: Path) -> None:
    # a JSON-RPC plugin's capabilities() starts and probes the plugin: building the runtime
    # must not do that for a type whose registration cannot lead to a write process
    from paxm_core.config import load_config
    from paxm_core.protocols import ProviderType
    from paxm_core.runtime import _with_write_process

    class Probed:
        name = "probed"
        asked = 0

        def capabilities(self) -> frozenset[str]:
            Probed.asked += 1
            return frozenset({"put_batch", "shared_store"})

        def put_batch(self, items: Any, deadline: Deadline) -> list[Any]:
            return []

    config = load_config(str(tmp_path / "missing.yaml"))
    provider_config = ProviderConfig(type="probed", enabled=True)
    plain = ProviderType("probed", lambda name, cfg: Probed())
    provider = Probed()
    assert _with_write_process(provider, plain, provider_config, config) is provider  # type: ignore[arg-type]
    assert Probed.asked == 0
    registered = ProviderType("probed", lambda name, cfg: Probed(), capabilities=frozenset({"shared_store"}))
    wrapped = _with_write_process(provider, registered, provider_config, config)  # type: ignore[arg-type]
    try:
        assert Probed.asked == 1
        assert isinstance(wrapped, WriteProcessProvider) is ((os.cpu_count() or 1) >= 2)
    finally:
        close = getattr(wrapped, "close", None)
        if isinstance(wrapped, WriteProcessProvider) and callable(close):
            close()
