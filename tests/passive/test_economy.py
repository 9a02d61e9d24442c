"""Per-session economy: inject once, re-offer after a compaction, byte-stable blocks, holdback, receipts.

Over a real Runtime (SQLite provider), a real capture queue and the real session state file.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paxm_core.api.events import HookEvent
from paxm_core.api.types import MemoryHit
from paxm_core.config.model import PassiveConfig
from paxm_core.passive.context import passive_recall_block
from paxm_core.passive.economy import SessionEconomy, holdback_arm, included_hits, matched_terms, memory_key
from paxm_core.passive.session_state import SessionState

from .conftest import stop_daemon, write_config
from .test_passive import Env, open_env, opened

ENVELOPE = '<paxm-recall version="1" mode="passive">'
PAXM = [sys.executable, "-c", "from paxm_core.cli import main; main()"]


def paxm(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PAXM, "--config", str(config), *args], capture_output=True, text=True, timeout=60, env=os.environ.copy()
    )


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    with opened(write_config(tmp_path / "cfg")) as e:
        yield e


def _config_with(tmp_path: Path, **passive: Any) -> Path:
    """A config (see :func:`write_config`) whose ``passive`` section has ``passive`` set."""

    def mutate(config: Any) -> None:
        for name, value in passive.items():
            setattr(config.passive, name, value)

    return write_config(tmp_path / "cfg", mutate=mutate)


def _opened_with(tmp_path: Path, **passive: Any) -> contextlib.AbstractContextManager[Env]:
    """An env (closed when the block ends) whose config's ``passive`` section has ``passive`` set."""
    return opened(_config_with(tmp_path, **passive))


def _prompt(env: Env, session: str, prompt: str, target: str = "claude") -> str:
    return str(env.hook(target, "user_input", {"session_id": session, "cwd": "/w", "prompt": prompt})["output"])


def _compact(env: Env, session: str, source: str = "compact") -> str:
    answer = env.hook("claude", "session_start", {"session_id": session, "cwd": "/w", "source": source})
    return str(answer["output"])


def _state(env: Env) -> dict[str, Any]:
    state = env.processor.passive.session_state
    assert state is not None
    state.flush()
    path = env.config.parent / "hooks" / "session_state.json"
    return dict(json.loads(path.read_text()))


# -- dedupe ------------------------------------------------------------------------------------


def test_a_memory_is_injected_once_per_session(env: Env) -> None:
    env.runtime.tools.remember("The billing service retries webhooks with heron-backoff-7731.", profile="ltm")
    first = _prompt(env, "d1", "how does billing retry webhooks? heron-backoff-7731")
    assert "heron-backoff-7731." in first
    again = _prompt(env, "d1", "and billing webhooks heron-backoff-7731 once more?")
    assert "heron-backoff-7731." not in again and ENVELOPE not in again
    other = _prompt(env, "d2", "how does billing retry webhooks? heron-backoff-7731")
    assert "heron-backoff-7731." in other  # another session has not seen it
    (ledger,) = [v for k, v in _state(env)["ledgers"].items() if k.endswith("/d1")]
    assert len(ledger["ids"]) == 1 and ledger["queries"]


def test_dedupe_off_injects_on_every_prompt(tmp_path: Path) -> None:
    with _opened_with(tmp_path, dedupe=False) as env:
        env.runtime.tools.remember("The billing service retries webhooks with heron-backoff-7731.", profile="ltm")
        assert "heron-backoff-7731." in _prompt(env, "d1", "billing webhooks heron-backoff-7731")
        assert "heron-backoff-7731." in _prompt(env, "d1", "billing webhooks heron-backoff-7731 again")


def test_an_answer_the_client_never_got_withholds_nothing(tmp_path: Path) -> None:
    with opened(write_config(tmp_path / "cfg")) as env:
        env.processor.confirm_delivery = True  # as in the daemon: delivery is reported after the send
        env.runtime.tools.remember("Deploys are frozen on Fridays: osprey-freeze-1190.", profile="ltm")
        lost = env.hook("claude", "user_input", {"session_id": "u1", "prompt": "deploy freeze osprey-freeze-1190"})
        assert "osprey-freeze-1190." in lost["output"]
        env.processor.undelivered(lost["event_id"])  # the client had given up
        kept = env.hook("claude", "user_input", {"session_id": "u1", "prompt": "deploy freeze osprey-freeze-1190?"})
        assert "osprey-freeze-1190." in kept["output"]  # injected again: the model never had it
        env.processor.delivered(kept["event_id"])
        assert "osprey-freeze-1190." not in _prompt(env, "u1", "deploy freeze osprey-freeze-1190!")


def test_the_ledger_outlives_the_daemon(tmp_path: Path) -> None:
    """A restarted daemon (or the daemon-down fallback's new one) reads the ledger back from the file."""
    config = write_config(tmp_path / "cfg")
    with opened(config) as first:
        first.runtime.tools.remember("The cache key prefix is kite-cache-2207.", profile="ltm")
        assert "kite-cache-2207." in _prompt(first, "r1", "cache key prefix kite-cache-2207")
    state = config.parent / "hooks" / "session_state.json"
    assert stat.S_IMODE(os.stat(state).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(state.parent).st_mode) == 0o700
    with opened(config) as second:
        assert "kite-cache-2207." not in _prompt(second, "r1", "cache key prefix kite-cache-2207 again")


def test_a_corrupt_state_file_only_costs_a_repeat(env: Env) -> None:
    env.runtime.tools.remember("The cache key prefix is kite-cache-2207.", profile="ltm")
    assert "kite-cache-2207." in _prompt(env, "c1", "cache key prefix kite-cache-2207")
    path = env.config.parent / "hooks" / "session_state.json"
    path.write_text("{not json")
    assert "kite-cache-2207." in _prompt(env, "c1", "cache key prefix kite-cache-2207 again")


# -- compaction --------------------------------------------------------------------------------


def test_compaction_offers_the_sessions_memories_once_more(env: Env) -> None:
    env.runtime.tools.remember("Release branches are named plover-release-5512.", profile="ltm")
    env.runtime.tools.remember("The staging database is wren-db-8843.", profile="ltm")
    assert "plover-release-5512." in _prompt(env, "k1", "release branches plover-release-5512")
    assert "wren-db-8843." in _prompt(env, "k1", "staging database wren-db-8843")
    start = _compact(env, "k1", "startup")  # not a compaction: nothing offered
    assert ENVELOPE not in start
    offered = _compact(env, "k1")
    assert ENVELOPE in offered
    assert offered.index("plover-release-5512.") < offered.index("wren-db-8843.")  # injection order
    # offered again, so in the ledger again: a later prompt does not repeat them
    assert "wren-db-8843." not in _prompt(env, "k1", "staging database wren-db-8843?")
    assert ENVELOPE not in _compact(env, "other-session")  # nothing was injected there


def test_a_forgotten_memory_is_not_offered_after_compaction(env: Env) -> None:
    env.runtime.tools.remember("Release branches are named plover-release-5512.", profile="ltm")
    result = env.runtime.tools.remember("The staging database is wren-db-8843.", profile="ltm")
    assert "plover-release-5512." in _prompt(env, "k2", "release branches plover-release-5512")
    assert "wren-db-8843." in _prompt(env, "k2", "staging database wren-db-8843")
    from paxm_core.api.deadline import Deadline

    provider = env.runtime.router.providers["sqlite"]
    assert provider.delete(result.refs[0], Deadline.after(5))
    offered = _compact(env, "k2")
    assert "plover-release-5512." in offered and "wren-db-8843" not in offered


def test_compaction_without_reoffer_lets_memories_come_again(tmp_path: Path) -> None:
    with _opened_with(tmp_path, reoffer_after_compaction=False) as env:
        env.runtime.tools.remember("Release branches are named plover-release-5512.", profile="ltm")
        assert "plover-release-5512." in _prompt(env, "k3", "release branches plover-release-5512")
        assert ENVELOPE not in _compact(env, "k3")
        # the model lost it at the compaction: the next prompt that finds it injects it again
        assert "plover-release-5512." in _prompt(env, "k3", "release branches plover-release-5512?")


def test_compaction_reoffer_stays_within_the_block_cap(tmp_path: Path) -> None:
    def small(config: Any) -> None:
        config.agents["claude"].hooks["user_input"].recall.max_context_chars = 420

    with opened(write_config(tmp_path / "cfg", mutate=small)) as env:
        long = "Release branches are named plover-release-5512. " + "Context sentence. " * 12
        env.runtime.tools.remember(long, profile="ltm")
        env.runtime.tools.remember("The staging database is wren-db-8843.", profile="ltm")
        assert "plover-release-5512." in _prompt(env, "k4", "release branches plover-release-5512")
        assert "wren-db-8843." in _prompt(env, "k4", "staging database wren-db-8843")
        offered = _compact(env, "k4")
        block = offered[offered.index(ENVELOPE) :]
        assert len(block) <= 420
        # what did not fit whole is not in the ledger: the next prompt may inject it again
        assert "wren-db-8843." in _prompt(env, "k4", "staging database wren-db-8843?")


def _injected(
    economy: SessionEconomy, now: datetime, target: str, session: str, hits: list[MemoryHit], query: str
) -> HookEvent:
    """``hits`` offered for ``query`` in ``session``'s prompt ``e1``, delivered at ``now``; the prompt's event."""
    event = HookEvent(target=target, event="user_input", event_id="e1", metadata={"session_id": session})
    economy.offered(event, hits, passive_recall_block(hits), query)
    economy.delivered("e1", now)
    return event


def test_a_precompress_hook_empties_the_ledger(tmp_path: Path) -> None:
    state = SessionState(tmp_path / "state.json")
    economy = SessionEconomy(state, PassiveConfig)
    now = datetime(2026, 12, 7, tzinfo=UTC)
    hit = MemoryHit(provider="sqlite", id="m1", text="The staging database is wren-db-8843.")
    event = _injected(economy, now, "gemini", "g1", [hit], "staging")
    assert economy.unseen(event, [hit]) == ([], 1)
    before = HookEvent(target="gemini", event="PreCompress", native_event="PreCompress", metadata={"session_id": "g1"})
    from paxm_core.passive.economy import compaction_kind

    assert compaction_kind(before) == "before"
    economy.reset(before, now)
    assert economy.unseen(event, [hit]) == ([hit], 0)


# -- byte stability ----------------------------------------------------------------------------


def test_the_same_memory_renders_the_same_bytes_at_any_time() -> None:
    created = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    hit = MemoryHit(provider="sqlite", id="m1", text="Use plover-release-5512.", created_at=created, score=0.91)
    later = MemoryHit(provider="sqlite", id="m1", text="Use plover-release-5512.", created_at=created, score=0.12)
    block = passive_recall_block([hit])
    assert block == passive_recall_block([later])  # a score that changes between prompts changes nothing
    for volatile in ("2026", "0.91", "score", "ago"):
        assert volatile not in block


def test_two_sessions_get_byte_identical_blocks(env: Env) -> None:
    env.runtime.tools.remember("Release branches are named plover-release-5512.", profile="ltm")
    first = _prompt(env, "b1", "release branches plover-release-5512")
    second = _prompt(env, "b2", "release branches plover-release-5512")
    block = first[first.index(ENVELOPE) :]
    assert block and block == second[second.index(ENVELOPE) :]


# -- holdback ----------------------------------------------------------------------------------


def test_holdback_arm_is_deterministic_and_near_its_ratio() -> None:
    keys = [f"claude/session/{i}" for i in range(4000)]
    arms = [holdback_arm(k, 0.1) for k in keys]
    assert arms == [holdback_arm(k, 0.1) for k in keys]
    assert 0.08 < sum(arms) / len(arms) < 0.12
    assert not any(holdback_arm(k, 0.0) for k in keys)


def test_a_held_back_session_gets_no_passive_memory(tmp_path: Path) -> None:
    with _opened_with(tmp_path, holdback=0.5) as env:
        env.runtime.tools.remember("The cache key prefix is kite-cache-2207.", profile="ltm")
        sessions = [f"h{i}" for i in range(12)]
        held = [s for s in sessions if holdback_arm(f"claude/session/{s}", 0.5)]
        served = [s for s in sessions if s not in held]
        assert held and served
        # the arm is drawn when the session starts (a harness without that hook: at its first prompt)
        env.hook("claude", "session_start", {"session_id": held[0], "cwd": "/w", "source": "startup"})
        assert _state(env)["ledgers"][f"claude/session/{held[0]}"]["holdback"] is True
        for session in held:
            assert ENVELOPE not in _prompt(env, session, "cache key prefix kite-cache-2207")
        for session in served:
            assert "kite-cache-2207." in _prompt(env, session, "cache key prefix kite-cache-2207")
        ledgers = _state(env)["ledgers"]
        assert all(ledgers[f"claude/session/{s}"]["holdback"] is True for s in held)
        assert all(ledgers[f"claude/session/{s}"]["holdback"] is False for s in served)
        # the arm was chosen at the session's start: a changed ratio does not move it
        env.runtime.config.passive.holdback = 0.0
        assert ENVELOPE not in _prompt(env, held[0], "cache key prefix kite-cache-2207")


# -- receipts ----------------------------------------------------------------------------------


@contextlib.contextmanager
def _recording(tmp_path: Path) -> Iterator[tuple[Env, list[dict[str, Any]]]]:
    """An env whose injection receipts go to the yielded list."""
    records: list[dict[str, Any]] = []
    with opened(write_config(tmp_path / "cfg")) as env:
        assert env.processor.passive.economy is not None
        env.processor.passive.economy.record = records.append
        yield env, records


def test_every_injection_records_why(tmp_path: Path) -> None:
    with _recording(tmp_path) as (env, records):
        env.runtime.tools.remember("The billing service retries webhooks with heron-backoff-7731.", profile="ltm")
        _prompt(env, "q1", "how does billing retry webhooks? heron-backoff-7731")
        _prompt(env, "q1", "billing webhooks heron-backoff-7731 again")
        first, second = [r for r in records if r["kind"] == "injection"]
        assert first["query"] == "how does billing retry webhooks? heron-backoff-7731"
        assert first["reason"] == "prompt" and first["session"] and first["target"] == "claude"
        (memory,) = first["memories"]
        assert memory["rank"] == 1 and memory["position"] == 1 and memory["provider"] == "sqlite" and memory["id"]
        assert {"billing", "webhooks", "heron"} <= set(memory["matched_terms"])
        assert memory["relevance"] > 0
        assert second["withheld_count"] == 1 and second["memories"] == []


def test_receipts_carry_freshness_from_metadata() -> None:
    records: list[dict[str, Any]] = []
    economy = SessionEconomy(
        SessionState(Path("/nonexistent/never-written.json")), PassiveConfig, record=records.append
    )
    hit = MemoryHit(
        provider="sqlite", id="m9", text="Tax lives in tax.py", metadata={"freshness": "stale", "superseded_by": "m10"}
    )
    event = HookEvent(target="claude", event="user_input", event_id="", metadata={})
    economy.offered(event, [hit], passive_recall_block([hit]), "where is tax")
    (receipt,) = records[0]["memories"]
    assert receipt["freshness"] == "stale" and receipt["superseded_by"] == "m10"
    assert matched_terms("where is TAX computed", "Tax lives in tax.py") == ["tax"]


# -- signals and receipts through the CLI ------------------------------------------------------


def _telemetry_env(tmp_path: Path, holdback: float = 0.0) -> Any:
    env = open_env(_config_with(tmp_path, holdback=holdback))
    from paxm_core.telemetry import Telemetry

    telemetry = Telemetry(env.runtime.config)
    assert env.processor.passive.economy is not None
    env.processor.passive.economy.record = telemetry.record
    return env, telemetry


def _close(env: Any) -> None:
    env.close()


def test_sessions_count_what_paxm_sees(tmp_path: Path) -> None:
    env, telemetry = _telemetry_env(tmp_path, holdback=0.5)
    try:
        base = {"session_id": "sig1", "cwd": "/w"}
        for prompt in (
            "How is billing deployed?",
            "No, that's wrong: we switched to blue-green.",
            "how is BILLING deployed",
        ):
            env.hook("claude", "user_input", {**base, "prompt": prompt})
        env.hook("claude", "tool_use", {**base, "tool_name": "Bash", "tool_input": {"command": "ls"}})
        env.hook("claude", "tool_failure", {**base, "tool_name": "Bash", "error": "exit 1"})
        from paxm_core.telemetry.sessions import SessionStats

        (row,) = SessionStats(telemetry.settings.dir).rows()
        assert (row.turns, row.tool_calls, row.tool_failures, row.corrections, row.repeats) == (3, 2, 1, 1, 1)
        assert row.arm == ("holdback" if holdback_arm("claude/session/sig1", 0.5) else "memory")
        assert row.target == "claude" and len(row.session) == 16 and "sig1" not in row.session
        path = telemetry.settings.dir / "sessions.sqlite"
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        # the signal table is not the event log: nothing of it in `paxm logs`
        assert not any(e.get("kind") == "session_signal" for e in telemetry.tail(1000))
        assert [e["arm"] for e in telemetry.tail(1000) if e.get("kind") == "session_arm"] == [row.arm]
    finally:
        _close(env)


def test_history_injections_prints_the_receipts(tmp_path: Path) -> None:
    env, _ = _telemetry_env(tmp_path)
    try:
        env.runtime.tools.remember("The billing service retries webhooks with heron-backoff-7731.", profile="ltm")
        env.hook(
            "claude", "user_input", {"session_id": "r1", "prompt": "how does billing retry webhooks heron-backoff-7731"}
        )
    finally:
        _close(env)
    out = paxm(env.config, "history", "--injections")
    assert out.returncode == 0, out.stderr
    assert "reason prompt" in out.stdout and "injected 1, withheld as already given 0" in out.stdout
    assert "#1  rank 1  sqlite:" in out.stdout and "terms: billing, webhooks, heron, backoff, 7731" in out.stdout
    assert "query: <hash " in out.stdout  # no query text unless capture_query_preview is on
    data = json.loads(paxm(env.config, "history", "--injections", "--json").stdout)
    (event,) = data["injections"]
    assert event["memories"][0]["matched_terms"][:2] == ["billing", "webhooks"] and "query" not in event
    assert paxm(env.config, "history", "--injections", "--limit", "-1").returncode != 0


# -- the property: dedupe never withholds a memory the session has not seen ---------------------

_TEXTS = [f"Memory number {i} says kestrel-{i * 7919 % 10007} " + "padding " * (i * 9 % 40) for i in range(10)]
_op = st.one_of(
    st.tuples(
        st.just("prompt"),
        st.sampled_from(["s1", "s2"]),
        st.lists(st.integers(0, 9), max_size=6, unique=True),
        st.sampled_from([0, 300, 900]),  # the block cap: excerpts happen
        st.booleans(),  # delivered?
    ),
    st.tuples(st.just("compact"), st.sampled_from(["s1", "s2"]), st.sampled_from([0, 300, 900]), st.booleans()),
    st.tuples(st.just("crash")),  # the daemon dies: what was not written yet is lost
    st.tuples(st.just("flush")),  # the write-behind timer fires
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(_op, max_size=25))
def test_dedupe_never_withholds_an_unseen_memory(tmp_path: Path, ops: list[tuple[Any, ...]]) -> None:
    path = tmp_path / "state" / f"{abs(hash(repr(ops)))}.json"
    state = SessionState(path, write_behind=30.0)
    economy = SessionEconomy(state, PassiveConfig)
    now = datetime(2026, 12, 7, tzinfo=UTC)
    seen: dict[str, set[str]] = {"s1": set(), "s2": set()}  # what each session's model really holds
    for n, op in enumerate(ops):
        now += timedelta(seconds=1)
        if op[0] == "crash":
            _die(state)
            state = SessionState(path, write_behind=30.0)  # the unsaved in-memory state is gone
            economy = SessionEconomy(state, PassiveConfig)
            continue
        if op[0] == "flush":
            state.flush()
            continue
        event = HookEvent(target="claude", event="user_input", event_id=f"e{n}", metadata={"session_id": op[1]})
        if op[0] == "compact":
            _, session, cap, delivered = op
            start = HookEvent(
                target="claude",
                event="session_start",
                event_id=f"e{n}",
                metadata={"session_id": session, "source": "compact"},
            )
            seen[session] = set()  # the summary replaced the conversation
            every = [MemoryHit(provider="p", id=f"m{i}", text=_TEXTS[i]) for i in range(10)]
            found = every  # bound now (the lambdas run inside this iteration)
            block = economy.reoffer(
                start,
                now,
                lambda q, s, found=found: found,  # type: ignore[misc]
                lambda hits, cap=cap: passive_recall_block(hits, max_chars=cap),  # type: ignore[misc]
                1.0,
            )
            if delivered:
                economy.delivered(start.event_id, now)
                seen[session] = {memory_key(h) for h in included_hits(every, block)}
            else:
                economy.forget(start.event_id)
            continue
        _, session, ids, cap, delivered = op
        hits = [MemoryHit(provider="p", id=f"m{i}", text=_TEXTS[i]) for i in ids]
        kept, _ = economy.unseen(event, hits)
        withheld = {memory_key(h) for h in hits} - {memory_key(h) for h in kept}
        assert withheld <= seen[session], (withheld, seen[session])
        block = passive_recall_block(kept, max_chars=cap)
        whole = economy.offered(event, kept, block, "q")
        assert whole == included_hits(kept, block)
        if delivered:
            economy.delivered(event.event_id, now)
            seen[session] |= {memory_key(h) for h in whole}
        else:
            economy.forget(event.event_id)
    _die(state)


def test_a_compaction_survives_a_crash_right_after_it(tmp_path: Path) -> None:
    """The emptied ledger is written at once: a crash must not bring back what the model lost."""
    path = tmp_path / "state.json"
    state = SessionState(path, write_behind=30.0)
    economy = SessionEconomy(state, PassiveConfig)
    now = datetime(2026, 12, 7, tzinfo=UTC)
    hit = MemoryHit(provider="p", id="m1", text="The staging database is wren-db-8843.")
    event = _injected(economy, now, "claude", "x1", [hit], "staging")
    state.flush()  # the ledger with m1 is on disk
    start = HookEvent(target="claude", event="session_start", metadata={"session_id": "x1", "source": "compact"})
    economy.reoffer(start, now, lambda q, s: [], lambda hits: passive_recall_block(hits), 1.0)
    _die(state)
    reborn = SessionEconomy(SessionState(path, write_behind=30.0), PassiveConfig)
    assert reborn.unseen(event, [hit]) == ([hit], 0)


def _die(state: SessionState) -> None:
    """The process ends without writing its pending state: no ``flush_due`` or ``close`` comes."""
    del state  # write-behind writes only when the daemon asks (SessionState.flush_due)


def test_the_in_process_hook_records_its_receipts_too(tmp_path: Path) -> None:
    """``paxm __hook`` (no daemon) dedupes through the same ledger and records the same receipts."""
    config = write_config(tmp_path / "cfg")
    assert paxm(config, "remember", "--global", "--text", "The cache key prefix is kite-cache-2207.").returncode == 0
    prompt = json.dumps({"session_id": "ip1", "cwd": str(tmp_path), "prompt": "cache key prefix kite-cache-2207"})
    outputs = []
    try:
        for _ in range(2):
            done = subprocess.run(
                [*PAXM, "--config", str(config), "__hook", "--target", "claude", "--event", "user_input"],
                input=prompt,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert done.returncode == 0, done.stderr
            outputs.append(done.stdout)
    finally:
        stop_daemon(config)  # the hook starts one for the next prompt: none outlives the test
    assert "kite-cache-2207." in outputs[0] and "kite-cache-2207." not in outputs[1]
    receipts = json.loads(paxm(config, "history", "--injections", "--json").stdout)["injections"]
    assert [len(r.get("memories", [])) for r in receipts] == [1, 0] and receipts[1]["withheld_count"] == 1


def test_a_planted_session_table_is_never_written(tmp_path: Path) -> None:
    """A symlink where the session table goes (another user's trap) is refused, its target untouched."""
    from paxm_core.config import load_config
    from paxm_core.telemetry import Telemetry

    config = tmp_path / "cfg" / "config.yaml"
    config.parent.mkdir()
    config.write_text("version: 1\n")
    telemetry = Telemetry(load_config(config))
    telemetry.settings.dir.mkdir(mode=0o700)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (telemetry.settings.dir / "sessions.sqlite").symlink_to(victim)
    telemetry.record({"kind": "session_signal", "session": "abc", "target": "claude", "turns": 1})
    assert victim.read_text() == "precious"
    assert (telemetry.settings.dir / "sessions.sqlite").is_symlink()


def test_dedupe_holds_across_the_daemon_down_fallback(tmp_path: Path, daemon_cleanup: list[Path]) -> None:
    """The real hook client, no daemon running: it starts one and asks it; after that daemon is
    shut down, the next prompt's new daemon reads the ledger back and injects nothing twice."""
    from .conftest import run_client, stop_daemon

    config = write_config(tmp_path / "cfg")
    daemon_cleanup.append(config)
    assert paxm(config, "remember", "--global", "--text", "The cache key prefix is kite-cache-2207.").returncode == 0
    outputs = []
    for n in range(2):
        payload = json.dumps(
            {"session_id": "fb1", "cwd": str(tmp_path), "prompt": f"cache key prefix kite-cache-2207 #{n}"}
        )
        done = run_client(config, "claude", "user_input", payload.encode(), "--daemon-wait", "15", "--timeout", "20")
        outputs.append(done.stdout.decode())
        stop_daemon(config)  # down again: the next prompt takes the fallback path too
    assert "kite-cache-2207." in outputs[0], outputs
    assert "kite-cache-2207." not in outputs[1], outputs


def test_a_compaction_reoffer_has_its_receipt(tmp_path: Path) -> None:
    with _recording(tmp_path) as (env, records):
        env.runtime.tools.remember("Release branches are named plover-release-5512.", profile="ltm")
        _prompt(env, "k9", "release branches plover-release-5512")
        _compact(env, "k9")
        prompt, compaction = [r for r in records if r["kind"] == "injection"]
        assert compaction["reason"] == "compaction" and compaction["hook_event"] == "session_start"
        assert compaction["query"] == prompt["query"] and compaction["memories"][0]["id"] == prompt["memories"][0]["id"]
        assert {"release", "branches"} <= set(compaction["memories"][0]["matched_terms"])


def test_a_stale_or_superseded_memory_is_not_offered_after_compaction(tmp_path: Path) -> None:
    state = SessionState(tmp_path / "state.json")
    economy = SessionEconomy(state, PassiveConfig)
    now = datetime(2026, 12, 7, tzinfo=UTC)
    hits = [
        MemoryHit(provider="p", id="fresh", text="Deploys use blue-green."),
        MemoryHit(provider="p", id="stale", text="Tax lives in tax.py.", metadata={"freshness": "stale"}),
        MemoryHit(provider="p", id="old", text="Deploys use rolling.", metadata={"superseded_by": "p:fresh"}),
    ]
    _injected(economy, now, "claude", "z1", hits, "deploys tax")
    start = HookEvent(
        target="claude", event="session_start", event_id="e2", metadata={"session_id": "z1", "source": "compact"}
    )
    block = economy.reoffer(start, now, lambda q, s: hits, lambda found: passive_recall_block(found), 1.0)
    assert "blue-green" in block and "tax.py" not in block and "rolling" not in block


def test_an_unwritable_state_file_fails_open(env: Env) -> None:
    """The ledger cannot be written (a directory squats its path): prompts still get their memories."""
    env.runtime.tools.remember("The cache key prefix is kite-cache-2207.", profile="ltm")
    path = env.config.parent / "hooks" / "session_state.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    path.mkdir()
    answers = [
        env.hook("claude", "user_input", {"session_id": "w1", "prompt": f"cache key prefix kite-cache-2207 {n}"})
        for n in range(2)
    ]
    assert all(a["ok"] and "kite-cache-2207." in a["output"] for a in answers), answers
    assert ENVELOPE not in _compact(env, "w1")  # nothing recorded, nothing re-offered, no failure
