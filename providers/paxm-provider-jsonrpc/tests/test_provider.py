"""The jsonrpc provider against real plugin processes (a scripted Python plugin)."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from paxm_core import Deadline, ProviderConfig, capabilities_of
from paxm_core.api.errors import ConfigError, DeadlineExceeded, ProviderError
from paxm_core.api.types import MemoryItem, MemoryOrigin, MemoryRef, MemoryScope, SearchQuery
from paxm_core.plugins import get_plugin_manager
from paxm_provider_jsonrpc.provider import JsonRpcProvider
from paxm_provider_jsonrpc.transport import RpcError

SCRIPT = Path(__file__).parent / "plugins" / "scripted.py"

Make = Callable[..., JsonRpcProvider]


@pytest.fixture
def make(tmp_path: Path) -> Make:
    def build(mode: str = "ok", timeout: float = 10.0, **env: str) -> JsonRpcProvider:
        config = ProviderConfig(
            type="jsonrpc",
            command=sys.executable,
            args=[str(SCRIPT), "--flag", "value with spaces; rm -rf /"],
            env={
                "SCRIPTED_MODE": mode,
                "SCRIPTED_STORE": str(tmp_path / "store.json"),
                "SCRIPTED_LOG": str(tmp_path / "log.jsonl"),
                **env,
            },
            timeout=timeout,
        )
        return JsonRpcProvider("plug", config)

    return build


def requests(tmp_path: Path) -> list[dict[str, object]]:
    log = tmp_path / "log.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def d() -> Deadline:
    return Deadline.after(10)


def test_registered_through_entry_point() -> None:
    spec = get_plugin_manager().provider_type("jsonrpc")
    provider = spec.factory("x", ProviderConfig(type="jsonrpc", command="/bin/true"))
    assert isinstance(provider, JsonRpcProvider) and provider.name == "x"


@pytest.mark.parametrize(
    ("config", "path"),
    [
        (ProviderConfig(type="jsonrpc"), "providers.p.command"),
        (ProviderConfig(type="jsonrpc", command="x", transport="http"), "providers.p.transport"),
        (ProviderConfig(type="jsonrpc", command="x", timeout=0), "providers.p.timeout"),
        (
            ProviderConfig(type="jsonrpc", command="x", extra={"max_response_bytes": -1}),
            "providers.p.max_response_bytes",
        ),
    ],
)
def test_bad_config_is_a_config_error(config: ProviderConfig, path: str) -> None:
    with pytest.raises(ConfigError, match=path.replace(".", r"\.")):
        JsonRpcProvider("p", config)


def test_round_trip_frames_args_env_and_attribution(make: Make, tmp_path: Path) -> None:
    provider = make(SCRIPTED_EXTRA="from-config")
    item = MemoryItem(
        text="deploys happen on Tuesday",
        metadata={"kind": "fact"},
        origin=MemoryOrigin("u1", "a1", "s1", "t1"),
        scope=MemoryScope("team", "core"),
    )
    ref = provider.put(item, d())
    assert ref == MemoryRef("plug", "s1")  # the plugin's provider field is replaced
    hits = provider.search(SearchQuery(text="tuesday", limit=3, metadata={"session_id": "x"}), d())
    assert [(h.provider, h.id, h.text) for h in hits] == [("plug", "s1", "deploys happen on Tuesday")]
    assert hits[0].origin == item.origin and hits[0].scope == item.scope
    sent = requests(tmp_path)
    put_req = sent[0]["request"]
    assert isinstance(put_req, dict)
    assert put_req["jsonrpc"] == "2.0" and put_req["method"] == "paxm.put" and put_req["id"] == "1"
    # attribution is mirrored into the canonical metadata keys for metadata-only plugins
    assert put_req["params"]["metadata"] == {
        "kind": "fact",
        "paxm_user_id": "u1",
        "paxm_agent_id": "a1",
        "paxm_session_id": "s1",
        "paxm_turn_id": "t1",
        "paxm_scope_type": "team",
        "paxm_scope_id": "core",
    }
    search_req = sent[1]["request"]
    assert isinstance(search_req, dict)
    assert search_req["id"] == "2" and search_req["params"] == {
        "text": "tuesday",
        "limit": 3,
        "metadata": {"session_id": "x"},
    }
    # args reach the plugin verbatim (no shell), env is added to the inherited environment
    assert sent[0]["argv"] == ["--flag", "value with spaces; rm -rf /"]
    assert sent[0]["env"] == "from-config"


def test_hits_without_attribution_restore_it_from_metadata(make: Make) -> None:
    provider = make("no_attribution")
    provider.put(
        MemoryItem(text="metadata only plugin", origin=MemoryOrigin("u", "a"), scope=MemoryScope("personal", "u")), d()
    )
    hit = provider.search(SearchQuery(text="metadata only"), d())[0]
    assert hit.origin == MemoryOrigin("u", "a") and hit.scope == MemoryScope("personal", "u")
    wire = provider.search_wire(SearchQuery(text="metadata only"), d())[0]
    assert wire.origin == MemoryOrigin() and wire.scope == MemoryScope()


def test_capabilities_advertised_and_legacy(make: Make) -> None:
    assert make().capabilities() == {"put_batch", "delete", "attribution"}
    assert capabilities_of(make()) >= {"put_batch", "delete", "attribution"}
    legacy = make("legacy")
    assert legacy.capabilities() == frozenset()
    assert "delete" not in capabilities_of(legacy) and "put_batch" not in capabilities_of(legacy)


def test_put_batch_and_fallback_to_single_puts(make: Make, tmp_path: Path) -> None:
    items = [MemoryItem(text="one"), MemoryItem(text="two")]
    assert [r.id for r in make().put_batch(items, d())] == ["s1", "s2"]
    assert make().put_batch([], d()) == []
    (tmp_path / "log.jsonl").unlink()
    refs = make("no_batch").put_batch([MemoryItem(text="three"), MemoryItem(text="four")], d())
    assert [r.id for r in refs] == ["s3", "s4"]
    methods = [entry["request"]["method"] for entry in requests(tmp_path)]  # type: ignore[index]
    assert methods == ["paxm.putBatch", "paxm.put", "paxm.put"]


def test_short_batch_is_an_error(make: Make) -> None:
    with pytest.raises(ProviderError, match="1 refs for 2 items"):
        make("short_batch").put_batch([MemoryItem(text="a"), MemoryItem(text="b")], d())


def test_delete(make: Make) -> None:
    provider = make()
    ref = provider.put(MemoryItem(text="short lived"), d())
    provider.delete(ref, d())
    assert provider.search(SearchQuery(text="short lived"), d()) == []
    with pytest.raises(ProviderError, match="ref id"):
        provider.delete(MemoryRef("plug", " "), d())


def test_invalid_params_error_keeps_code_and_message(make: Make) -> None:
    with pytest.raises(RpcError) as info:
        make("invalid_params").put(MemoryItem(text="x"), d())
    assert info.value.code == -32602 and info.value.data == {"field": "text"}
    assert str(info.value) == "plug paxm.put: json-rpc error -32602: text is required"


def test_null_result_is_accepted(make: Make) -> None:
    make("null_health").health(d())


def test_timeout_kills_the_whole_process_group(make: Make, tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    provider = make("hang", timeout=1.0, SCRIPTED_CHILD_PIDFILE=str(pidfile))
    started = time.monotonic()
    with pytest.raises(ProviderError, match=r"paxm.search: timed out after 1s") as info:
        provider.search(SearchQuery(text="x"), Deadline.none())
    assert time.monotonic() - started < 5
    assert info.value.retryable
    plugin_pid, child_pid = (int(p) for p in pidfile.read_text().split())
    for pid in (plugin_pid, child_pid):
        _wait_gone(pid)


def _wait_gone(pid: int) -> None:
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        # the grandchild is reparented to init and may linger as a zombie briefly
        try:
            state = Path(f"/proc/{pid}/stat").read_text().split()[2]
        except OSError:
            return
        if state == "Z":
            return
        time.sleep(0.05)
    pytest.fail(f"process {pid} survived the timeout")


def test_call_deadline_shorter_than_timeout_wins(make: Make) -> None:
    provider = make("hang", timeout=30.0)
    started = time.monotonic()
    with pytest.raises(ProviderError, match="timed out after"):
        provider.health(Deadline.after(0.5))
    assert time.monotonic() - started < 3


def test_cancel_mid_call_stops_the_plugin(make: Make) -> None:
    import threading

    provider = make("hang", timeout=30.0)
    deadline = Deadline.none()
    threading.Timer(0.3, deadline.cancel).start()
    started = time.monotonic()
    with pytest.raises(DeadlineExceeded):
        provider.health(deadline)
    assert time.monotonic() - started < 3


def _wait_for_pids(pidfile: Path) -> list[int]:
    """The pids of a ``hang`` plugin and its child, once it has written both."""
    for _ in range(400):
        words = pidfile.read_text().split() if pidfile.exists() else []
        if len(words) == 2:
            return [int(word) for word in words]
        time.sleep(0.025)
    pytest.fail("the plugin never started")


def test_close_kills_a_plugin_stuck_in_a_call(make: Make, tmp_path: Path) -> None:
    """A daemon shutting down closes its providers: a hung plugin (and its children) must not outlive it."""
    import threading

    pidfile = tmp_path / "pids"
    provider = make("hang", timeout=60.0, SCRIPTED_CHILD_PIDFILE=str(pidfile))
    errors: list[BaseException] = []

    def search() -> None:
        try:
            provider.search(SearchQuery(text="x"), Deadline.none())
        except BaseException as exc:
            errors.append(exc)

    caller = threading.Thread(target=search)
    caller.start()
    pids = _wait_for_pids(pidfile)
    started = time.monotonic()
    provider.close()
    caller.join(10)
    assert not caller.is_alive()
    assert time.monotonic() - started < 5  # not the 60 s budget
    assert len(errors) == 1 and isinstance(errors[0], ProviderError), errors
    assert "provider closed" in str(errors[0])
    for pid in pids:
        _wait_gone(pid)


_CLOSE_THEN_EXIT = """
import os, sys, threading, time
from paxm_core import Deadline, ProviderConfig, SearchQuery
from paxm_provider_jsonrpc.provider import JsonRpcProvider
script, pidfile = sys.argv[1:3]
config = ProviderConfig(type="jsonrpc", command=sys.executable, args=[script], timeout=60.0,
                        env={"SCRIPTED_MODE": "hang", "SCRIPTED_CHILD_PIDFILE": pidfile})
provider = JsonRpcProvider("plug", config)
threading.Thread(target=provider.search, args=(SearchQuery(text="x"), Deadline.none()), daemon=True).start()
while not (os.path.exists(pidfile) and len(open(pidfile).read().split()) == 2):
    time.sleep(0.01)
provider.close()
os._exit(0)  # as the hook daemon leaves: no thread gets to clean up after close()
"""


def test_close_kills_the_plugin_before_the_process_exits(tmp_path: Path) -> None:
    import subprocess

    pidfile = tmp_path / "pids"
    done = subprocess.run(
        [sys.executable, "-c", _CLOSE_THEN_EXIT, str(SCRIPT), str(pidfile)], timeout=60, capture_output=True
    )
    assert done.returncode == 0, done.stderr.decode()
    for pid in _wait_for_pids(pidfile):
        _wait_gone(pid)


def test_calls_after_close_fail_without_starting_a_plugin(make: Make, tmp_path: Path) -> None:
    provider = make()
    provider.close()
    provider.close()  # idempotent
    with pytest.raises(ProviderError, match="provider closed"):
        provider.put(MemoryItem(text="never"), d())
    assert requests(tmp_path) == []


def test_router_close_kills_a_plugin_a_search_is_waiting_for(tmp_path: Path) -> None:
    """The hook daemon shuts down (closing its router) while a recall waits for a hung plugin."""
    import threading

    from paxm_core.router import Route, Router, SearchPolicy

    pidfile = tmp_path / "pids"
    config = ProviderConfig(
        type="jsonrpc",
        command=sys.executable,
        args=[str(SCRIPT)],
        env={"SCRIPTED_MODE": "hang", "SCRIPTED_CHILD_PIDFILE": str(pidfile)},
        timeout=60.0,
    )
    router = Router({"plug": JsonRpcProvider("plug", config)})
    policy = SearchPolicy(routes=[Route("plug", timeout=60.0)])
    caller = threading.Thread(target=router.search, args=(SearchQuery(text="x"), policy), daemon=True)
    caller.start()
    try:
        _wait_for_pids(pidfile)
    finally:
        router.close()
    caller.join(10)
    assert not caller.is_alive()  # its call ended when the plugin was killed
    for pid in _wait_for_pids(pidfile):
        _wait_gone(pid)


@pytest.mark.parametrize("kind", ["cancelled", "expired"])
def test_dead_deadline_spawns_nothing(make: Make, tmp_path: Path, kind: str) -> None:
    deadline = Deadline.cancelled_now() if kind == "cancelled" else Deadline(time.monotonic() - 1)
    with pytest.raises(DeadlineExceeded):
        make().put(MemoryItem(text="never"), deadline)
    assert requests(tmp_path) == []


def test_stderr_tail_is_in_the_error(make: Make) -> None:
    with pytest.raises(ProviderError) as info:
        make("stderr_exit").health(d())
    message = str(info.value)
    assert "closed stdout without a response (exit status 3)" in message
    assert message.endswith("fatal: the store is corrupt")
    assert len(message) < 4096 + 200  # only the last 4 KiB of stderr is kept


@pytest.mark.parametrize(
    ("mode", "pattern"),
    [
        ("garbage", r"malformed response: expected a JSON object, output began 'this is not json"),
        ("wrong_id", r"response id mismatch: got 'not-1', want '1'"),
        ("truncated", r"malformed response: truncated JSON"),
    ],
)
def test_bad_output_is_a_clear_error(make: Make, mode: str, pattern: str) -> None:
    with pytest.raises(ProviderError, match=pattern):
        make(mode).health(d())


def test_plugin_that_lingers_after_answering_is_fine(make: Make) -> None:
    started = time.monotonic()
    make("linger").health(d())
    assert time.monotonic() - started < 5


def test_missing_executable_is_a_clear_error(tmp_path: Path) -> None:
    provider = JsonRpcProvider("p", ProviderConfig(type="jsonrpc", command=str(tmp_path / "nope")))
    with pytest.raises(ProviderError, match="cannot start plugin command .*No such file"):
        provider.health(d())


def test_oversized_response_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_text('{"jsonrpc":"2.0","id":"1","result":{"hits":[' + ",".join(['"x"'] * 100000) + "]}}")
    config = ProviderConfig(type="jsonrpc", command="/bin/cat", args=[str(big)], extra={"max_response_bytes": 10000})
    with pytest.raises(ProviderError, match="exceeds 10000 bytes"):
        JsonRpcProvider("p", config).health(d())


def test_ids_are_unique_across_threads(make: Make, tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    provider = make()
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda _: provider.health(d()), range(8)))
    ids = [entry["request"]["id"] for entry in requests(tmp_path)]  # type: ignore[index]
    assert sorted(ids, key=int) == [str(n) for n in range(1, 9)]


def test_capability_probe_is_short_and_not_repeated_after_failure(make: Make, tmp_path: Path) -> None:
    provider = make("hang", timeout=30.0)
    started = time.monotonic()
    assert provider.capabilities() == frozenset()
    assert time.monotonic() - started < 5  # capped at CAPABILITY_PROBE_TIMEOUT, not the 30 s timeout
    started = time.monotonic()
    assert provider.capabilities() == frozenset()
    assert time.monotonic() - started < 0.5  # the failure is remembered
    assert len(requests(tmp_path)) == 1


def test_legacy_provenance_and_turn_become_origin_and_scope(make: Make, tmp_path: Path) -> None:
    from paxm_core import Provenance, TurnContext

    item = MemoryItem(
        text="remember this",
        provenance=Provenance("todd", "codex", "team", "pax"),
        turn=TurnContext(session_id="session-7", turn_id="turn-42"),
    )
    make().put(item, d())
    params = requests(tmp_path)[0]["request"]["params"]  # type: ignore[index]
    assert params["origin"] == {"user_id": "todd", "agent_id": "codex", "session_id": "session-7", "turn_id": "turn-42"}
    assert params["scope"] == {"type": "team", "id": "pax"}
    hit = make().search(SearchQuery(text="remember"), d())[0]
    assert hit.origin == MemoryOrigin("todd", "codex", "session-7", "turn-42") and hit.scope == MemoryScope(
        "team", "pax"
    )


def test_plugin_stderr_is_redacted_of_configured_secrets(make: Make) -> None:
    """Issue 13 item 11: secrets paxm redacts elsewhere never reach an error message."""
    secret, token = "sk-live-4242-very-secret", "tok-abcdef-123456"
    with pytest.raises(ProviderError) as info:
        make("leak_secret", PLUGIN_API_KEY=secret, SCRIPTED_TOKEN=token).health(d())
    message = str(info.value)
    assert "auth failed with key=" in message
    assert secret not in message and token not in message
    assert "<redacted>" in message


@pytest.mark.parametrize(("relevance", "score"), [(50.0, 0.5), (0.5, -3.0), (1.0000001, 1.0), (-0.1, 0.2)])
def test_scores_outside_the_unit_interval_are_rejected(make: Make, relevance: float, score: float) -> None:
    """Issue 13 item 11: out-of-range scores are a malformed result (never shown as 1.0000)."""
    provider = make("ok")
    provider.put(MemoryItem(text="range check memory"), d())
    bad = make(f"scores={relevance},{score}")
    with pytest.raises(ProviderError) as info:
        bad.search(SearchQuery(text="range check"), d())
    message = str(info.value)
    assert "malformed result" in message and "outside [0, 1]" in message


def test_scores_at_the_bounds_are_accepted(make: Make) -> None:
    make("ok").put(MemoryItem(text="bounds memory"), d())
    (hit,) = make("scores=1,0").search(SearchQuery(text="bounds"), d())
    assert (hit.relevance, hit.score) == (1.0, 0.0)
