"""The daemon's background telemetry thread: order, batching of queued records, best effort."""

from __future__ import annotations

import _socket
import json
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from paxm_core.passive import daemon
from paxm_core.passive.daemon import RECORD_BATCH, BackgroundRecorder


class Sink:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def record(self, event: dict[str, Any]) -> None:
        self.calls.append(("record", event["n"]))

    def on_recall(self, what: str) -> None:
        self.calls.append(("on_recall", what))


class BatchSink(Sink):
    def record_many(self, events: list[dict[str, Any]]) -> None:
        self.calls.append(("record_many", [e["n"] for e in events]))


def _run(sink: Sink, calls: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    recorder = BackgroundRecorder(lambda: sink)  # the sink is built only once started
    record, on_recall = recorder.wrap("record"), recorder.wrap("on_recall")
    for name, value in calls:
        if name == "record":
            record({"n": value})
        else:
            on_recall(value)
    recorder.start_sink()
    recorder.close(timeout=30)
    return sink.calls


def test_queued_records_reach_record_many_in_batches_in_order() -> None:
    calls = [("record", 1), ("record", 2), ("record", 3), ("on_recall", "q"), ("record", 4), ("record", 5)]
    assert _run(BatchSink(), calls) == [("record_many", [1, 2, 3]), ("on_recall", "q"), ("record_many", [4, 5])]


def test_a_batch_is_at_most_record_batch_events() -> None:
    count = 2 * RECORD_BATCH + 7
    got = _run(BatchSink(), [("record", n) for n in range(count)])
    assert [len(events) for _, events in got] == [RECORD_BATCH, RECORD_BATCH, 7]
    assert [n for _, events in got for n in events] == list(range(count))


def test_a_sink_without_record_many_gets_every_record() -> None:
    calls = [("record", 1), ("on_recall", "q"), ("record", 2), ("record", 3)]
    assert _run(Sink(), calls) == calls


def test_a_failing_batch_does_not_stop_later_calls() -> None:
    class Failing(BatchSink):
        def record_many(self, events: list[dict[str, Any]]) -> None:
            super().record_many(events)
            raise OSError("disk full")

    calls = [("record", 1), ("record", 2), ("on_recall", "q"), ("record", 3)]
    assert _run(Failing(), calls) == [("record_many", [1, 2]), ("on_recall", "q"), ("record_many", [3])]


def test_a_lone_event_is_written_at_once_and_a_stream_lingers_for_company(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(daemon, "RECORD_LINGER", 30.0)  # long enough to tell lingering from not
    monkeypatch.setattr(daemon, "RECORD_BATCH", 2)
    gate, seen = threading.Event(), threading.Event()

    class Gated(BatchSink):
        def record_many(self, events: list[dict[str, Any]]) -> None:
            super().record_many(events)
            seen.set()
            if len(self.calls) == 1:
                gate.wait(30)  # the first write is slow: the next records queue behind it

    sink = Gated()
    recorder = BackgroundRecorder(sink=sink)
    record = recorder.wrap("record")
    try:
        record({"n": 1})
        assert seen.wait(10), "a lone event waited for company"
        record({"n": 2})
        record({"n": 3})
        gate.set()  # 2 and 3 were waiting: one batch, and now a stream is under way
        for _ in range(1000):
            if len(sink.calls) == 2:
                break
            time.sleep(0.01)
        record({"n": 4})
        time.sleep(0.2)
        assert len(sink.calls) == 2, "in a stream, a batch waits for more"
        record({"n": 5})  # fills the batch of two
        for _ in range(1000):
            if len(sink.calls) == 3:
                break
            time.sleep(0.01)
        record({"n": 6})  # lingering, until close() ends the wait
    finally:
        recorder.close(timeout=30)
    assert sink.calls == [("record_many", [1]), ("record_many", [2, 3]), ("record_many", [4, 5]), ("record_many", [6])]


def test_held_calls_wait_for_release_and_then_go_as_one_batch() -> None:
    sink = BatchSink()
    recorder = BackgroundRecorder(sink=sink)
    record = recorder.wrap("record")
    try:
        recorder.hold()
        recorder.hold()  # two hook answers in flight
        record({"n": 1})
        record({"n": 2})
        recorder.release()
        time.sleep(0.3)
        assert sink.calls == [], "a call ran while an answer was still being prepared"
        recorder.release()
        for _ in range(1000):
            if sink.calls:
                break
            time.sleep(0.01)
    finally:
        recorder.close(timeout=30)
    assert sink.calls == [("record_many", [1, 2])]


def test_a_hold_never_keeps_a_call_waiting_past_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(daemon, "HOLD_LIMIT", 0.05)
    sink = BatchSink()
    recorder = BackgroundRecorder(sink=sink)
    try:
        recorder.hold()  # never released
        recorder.wrap("record")({"n": 1})
        for _ in range(1000):
            if sink.calls:
                break
            time.sleep(0.01)
        assert sink.calls == [("record_many", [1])]
    finally:
        recorder.close(timeout=30)


def test_the_daemon_records_telemetry_only_after_the_client_has_its_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hook's telemetry is queued while it is answered and written after the client reads EOF."""
    monkeypatch.setattr(daemon, "HOLD_LIMIT", 60.0)  # a loaded machine must not end the hold
    written: list[float] = []
    answered: list[float] = []  # when the answer was ready (the client reads it only after that)

    class TimedSink:
        def record_many(self, events: list[dict[str, Any]]) -> None:
            written.append(time.monotonic())

    hook = daemon.HookDaemon(tmp_path / "config.yaml")
    hook.recorder = BackgroundRecorder(sink=TimedSink())
    record = hook.recorder.wrap("record")

    class Processor:
        def handle_hook(self, request: dict[str, Any]) -> dict[str, Any]:
            record({"n": 1})
            time.sleep(0.3)  # an unheld recorder writes now, before the answer leaves
            answered.append(time.monotonic())
            return {"ok": True, "output": "memory", "event_id": "evt_1"}

        def delivered(self, event_id: str, *, signals: bool = True) -> None:
            pass

        def count_signals(self, event_id: str) -> None:
            record({"n": 2})

        def wake_worker(self) -> None:
            pass

        def flush_state_due(self) -> None:
            pass

    hook.processor = Processor()  # type: ignore[assignment]
    client, served = socket.socketpair()
    client.sendall(json.dumps({"event": "UserPromptSubmit", "event_id": "evt_1", "reply": "framed"}).encode() + b"\n")
    client.shutdown(socket.SHUT_WR)
    hook._inflight += 1
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM, 0, fileno=served.detach())
    thread = threading.Thread(target=hook._serve, args=(conn,))
    thread.start()
    reply = b""
    while chunk := client.recv(65536):
        reply += chunk
    client.close()
    thread.join(30)
    hook.recorder.close(timeout=30)
    assert reply.endswith(b"memory")
    assert len(written) == 1, "the hook's calls go to the sink as one batch"
    # the sink thread may run before this thread sees EOF, so compare with the answer's readiness:
    # an unheld recorder writes during the 0.3 s sleep, before it
    assert written[0] >= answered[0]


class RecallSink(BatchSink):
    """A sink that builds a recall's event itself, as ``Telemetry.recall_event`` does."""

    def recall_event(self, **fields: Any) -> dict[str, Any]:
        if fields["query"] == "broken":
            raise ValueError("no event")
        return {"n": "recall:" + fields["query"]}

    def on_recall(self, what: str = "", **fields: Any) -> None:
        self.calls.append(("on_recall", what or fields["query"]))


def test_a_recall_joins_the_batch_of_the_records_around_it() -> None:
    sink = RecallSink()
    recorder = BackgroundRecorder(lambda: sink)
    record, on_recall = recorder.wrap("record"), recorder.wrap("on_recall")
    record({"n": 1})
    on_recall(query="q", profile="default")
    record({"n": 2})
    on_recall(query="broken", profile="default")  # its event cannot be built: on_recall reports it
    record({"n": 3})
    recorder.start_sink()
    recorder.close(timeout=30)
    assert sink.calls == [("record_many", [1, "recall:q", 2]), ("on_recall", "broken"), ("record_many", [3])]


def test_close_writes_held_calls_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A clean exit loses nothing, even with an answer's hold never released."""
    monkeypatch.setattr(daemon, "HOLD_LIMIT", 60.0)
    sink = BatchSink()
    recorder = BackgroundRecorder(sink=sink)
    recorder.hold()
    recorder.wrap("record")({"n": 1})
    started = time.monotonic()
    recorder.close(timeout=30)
    assert sink.calls == [("record_many", [1])]
    assert time.monotonic() - started < 10
