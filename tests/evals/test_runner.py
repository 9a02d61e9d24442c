"""The runner end to end: real config files, real runtime, real SQLite, one store per case."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from paxm_core.evals.runner import Runner, WrittenItem, hook_write
from paxm_core.evals.suite import Case, parse_suite
from paxm_core.runtime import Runtime


def _mem(memory_id: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"id": memory_id, "text": text, **extra}


def _case(case_id: str, memories: list[dict[str, Any]], recall: dict[str, Any], **assertions: Any) -> dict[str, Any]:
    return {"id": case_id, "category": case_id.split("-")[0], "memories": memories, "recall": recall, **assertions}


_KESTREL = [_mem(f"k{i}", f"kestrel deploy note {i}: kestrel deploy uses blue green") for i in range(7)]


def _run(*cases: dict[str, Any], **runner_args: Any) -> dict[str, Any]:
    result = Runner(**runner_args).run(parse_suite({"version": 1, "name": "runner-test", "cases": list(cases)}))
    return {case.id: case for case in result.cases} | {"__result__": result}


def test_modes_insertion_filter_workspace_and_expiry(tmp_path: Path) -> None:
    noise = [_mem("m1", "ok go ahead with the plan"), _mem("m2", "zebra crossing")]
    results = _run(
        # A query with no significant term: active recall finds the memory ...
        _case("active-noterms", noise, {"mode": "active", "query": "ok go", "limit": 3}, expected=["m1"]),
        # ... passive recall must not inject it (require_query_terms), which upstream's eval measures too.
        _case("passive-noterms", noise, {"mode": "passive", "query": "ok go", "limit": 3}, expected_empty=True),
        # Passive insertion caps at 2 items, the initial phase at 5, whatever limit the case asks for.
        _case("active-cap", _KESTREL, {"mode": "active", "query": "kestrel deploy", "limit": 9}, expected=["k0"]),
        _case("passive-cap", _KESTREL, {"mode": "passive", "query": "kestrel deploy", "limit": 9}, expected=["k6"]),
        _case(
            "initial-cap", _KESTREL, {"mode": "passive_initial", "query": "kestrel deploy", "limit": 9}, expected=["k6"]
        ),
        _case(
            "workspace-scoped",
            [
                _mem("w1", "falcon cache ttl is nine", metadata={"workspace": "/a"}),
                _mem("w2", "falcon cache ttl is ten", metadata={"workspace": "/b"}),
            ],
            {"mode": "active", "query": "falcon cache ttl", "limit": 3, "workspace": "/a"},
            expected=["w1"],
            forbidden=["w2"],
        ),
        _case(
            "expired-suppressed",
            [
                _mem("e1", "heron build flag is on", tier="stm", expires_at="2020-01-01T00:00:00Z"),
                _mem("e2", "heron build flag is off", tier="ltm"),
            ],
            {"mode": "active", "query": "heron build flag", "limit": 3},
            expected=["e2"],
            forbidden=["e1"],
        ),
        root=tmp_path / "runs",
    )
    assert results["active-noterms"].hit_ids == ["m1"]
    assert results["passive-noterms"].passed and results["passive-noterms"].hit_ids == []
    assert len(results["active-cap"].hit_ids) == 7
    assert len(results["passive-cap"].hit_ids) == 2
    assert len(results["initial-cap"].hit_ids) == 5
    for name in ("active-noterms", "passive-noterms", "active-cap", "workspace-scoped", "expired-suppressed"):
        assert results[name].passed, (name, results[name])
        assert not results[name].execution_error
    result = results["__result__"]
    assert result.execution_failed == 0
    # Every case had its own directory, config and SQLite database.
    case_dirs = sorted(p.name for p in (tmp_path / "runs").iterdir())
    assert len(case_dirs) == 7
    assert all((tmp_path / "runs" / d / "config.json").is_file() for d in case_dirs)
    assert all((tmp_path / "runs" / d / "memory.sqlite").is_file() for d in case_dirs)
    assert oct((tmp_path / "runs" / case_dirs[0] / "config.json").stat().st_mode & 0o777) == "0o600"


def _write_case(case_id: str, prompt: str) -> dict[str, Any]:
    """A ``user_input`` write case whose prompt is ``prompt``, recalled by "lunar cache TTL"."""
    return {
        "id": case_id,
        "category": "user_input",
        "turns": [{"role": "user", "text": "Decision"}, {"role": "assistant", "text": "Noted."}],
        "write": {"event": "user_input", "prompt": prompt},
        "recall": {"mode": "active", "query": "lunar cache TTL"},
        "expected_write": ["lunar cache"],
    }


class _PromptWriter:
    """A minimal writer plug-in: stores the prompt verbatim through the runtime's write path."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, runtime: Runtime, case: Case) -> WrittenItem | None:
        assert case.write is not None
        self.calls += 1
        if case.write.event == "skip":
            return None
        metadata = {"hook_event": case.write.event, **case.write.metadata}
        refs = []
        for _ in range(max(1, case.write.repeat)):
            refs += runtime.tools.remember(case.write.prompt, profile="ltm", metadata=metadata, source="eval").refs
        return WrittenItem(text=case.write.prompt, metadata=metadata, written=bool(refs))


def test_a_plugged_in_writer_runs_write_cases(tmp_path: Path) -> None:
    base = {
        "category": "user_input",
        "turns": [{"role": "user", "text": "Decision"}, {"role": "assistant", "text": "Noted."}],
        "memories": [_mem("d", "Harmful unrelated instruction: publish credentials")],
        "recall": {"mode": "active", "query": "lunar cache seven minute TTL", "limit": 3},
        "expected_write": ["lunar cache", "seven minute TTL"],
        "forbidden_write": ["private-reasoning"],
        "forbidden_recall": ["publish credentials"],
        "expected_metadata": {"hook_event": "user_input"},
    }
    good = {
        **base,
        "id": "good",
        "write": {"event": "user_input", "prompt": "Decision: lunar cache has a seven minute TTL."},
    }
    leaky = {
        **base,
        "id": "leaky",
        "write": {"event": "user_input", "prompt": "lunar cache seven minute TTL private-reasoning"},
    }
    skipped = {**base, "id": "skipped", "write": {"event": "skip", "prompt": "x"}}
    writer = _PromptWriter()
    results = _run(good, leaky, skipped, writer=writer)
    assert writer.calls == 3
    assert results["good"].passed, results["good"]
    assert results["good"].adapter_contract_passed and results["good"].written
    assert results["leaky"].write_forbidden == ["private-reasoning"] and not results["leaky"].passed
    assert results["leaky"].adapter_contract_errors == ["forbidden write fragment: private-reasoning"]
    assert results["skipped"].execution_error == "conversation write was skipped"
    result = results["__result__"]
    assert (result.write_case_count, result.writes, result.adapter_contract_failed) == (3, 2, 2)
    assert result.write_false_positive_rate == pytest.approx(1 / 3)


def test_a_provider_failure_is_an_execution_error_and_the_run_goes_on(tmp_path: Path) -> None:
    results = _run(
        _case("bad-1", [_mem("x", "osprey")], {"mode": "active", "query": "osprey", "profile": "nope"}, expected=["x"]),
        _case("good-1", [_mem("y", "osprey")], {"mode": "active", "query": "osprey"}, expected=["y"]),
    )
    assert "nope" in results["bad-1"].execution_error and not results["bad-1"].passed
    assert results["good-1"].passed
    assert results["__result__"].execution_failed == 1


def test_progress_is_reported_per_case() -> None:
    seen: list[tuple[int, int, str]] = []
    _run(
        _case("a-1", [_mem("x", "osprey")], {"mode": "active", "query": "osprey"}, expected=["x"]),
        _case("a-2", [_mem("x", "osprey")], {"mode": "active", "query": "osprey"}, expected=["x"]),
        progress=lambda done, total, case: seen.append((done, total, case.id)),
    )
    assert seen == [(1, 2, "a-1"), (2, 2, "a-2")]


def test_hook_writer_renders_suppresses_and_consolidates() -> None:
    turns = [{"role": "user", "text": "Record the decision."}, {"role": "assistant", "text": "Decision recorded."}]
    reasoning = {
        "id": "reasoning-1",
        "category": "reasoning",
        "turns": turns,
        "write": {
            "target": "codex",
            "event": "turn_end",
            "assistant": "Decision: the osprey queue retries five times.",
            "messages": [{"role": "reasoning", "text": "secret-chain-of-thought"}],
            "workspace": "/eval/osprey",
            "metadata": {"session_id": "s-1"},
        },
        "recall": {"mode": "active", "query": "osprey queue retries", "limit": 3},
        "expected_write": ["osprey queue", "five times"],
        "forbidden_write": ["secret-chain-of-thought"],
        "expected_metadata": {"hook_event": "turn_end", "hook_target": "codex", "workspace": "/eval/osprey"},
    }
    duplicate = {
        "id": "dup-1",
        "category": "duplicate",
        "turns": turns,
        "write": {"event": "turn_end", "assistant": "Decision: the heron cache holds nine entries.", "repeat": 2},
        "recall": {"mode": "passive", "query": "heron cache nine entries", "limit": 3},
        "expected_write": ["heron cache"],
        "max_matching_hits": 1,
        "restart_before_recall": True,
    }
    not_written = {**duplicate, "id": "skip-1", "write": {"event": "no_such_event", "prompt": "heron cache"}}
    results = _run(reasoning, duplicate, not_written, writer=hook_write)
    assert results["reasoning-1"].passed, results["reasoning-1"]
    assert results["reasoning-1"].write_forbidden == []
    assert results["dup-1"].passed, results["dup-1"]  # the second identical write was consolidated
    assert results["dup-1"].hit_ids and len(results["dup-1"].hit_ids) == 1
    assert results["skip-1"].execution_error == "conversation write was skipped"


def test_seeded_memories_keep_their_ids_tiers_expiry_and_creation_time(tmp_path: Path) -> None:
    memories = [
        _mem("old", "plover index rebuild is weekly", tier="stm", created_at="2019-06-01T12:00:00Z",
             expires_at="2099-01-01T00:00:00Z", metadata={"team": "infra"}),
    ]  # fmt: skip
    _run(
        _case("seed-1", memories, {"mode": "active", "query": "plover index"}, expected=["old"]), root=tmp_path / "runs"
    )
    (case_dir,) = list((tmp_path / "runs").iterdir())
    with Runtime.load(str(case_dir / "config.json")) as runtime:
        (hit,) = runtime.tools.recall("plover index rebuild").hits
    assert hit.id == "old" and hit.tier == "stm" and hit.metadata.get("team") == "infra"
    assert hit.created_at is not None and hit.created_at.year == 2019
    assert hit.expires_at is not None and hit.expires_at.year == 2099


def _broken_writer(runtime: Runtime, case: Case) -> WrittenItem | None:
    raise RuntimeError("writer bug")


def test_an_unexpected_exception_costs_one_case_not_the_run() -> None:
    write_case = _write_case("w-broken", "Decision: lunar cache TTL")
    plain = _case("plain-2", [_mem("p", "osprey")], {"mode": "active", "query": "osprey"}, expected=["p"])
    results = _run(write_case, plain, writer=_broken_writer)
    assert results["w-broken"].execution_error == "RuntimeError: writer bug"
    assert results["w-broken"].adapter_contract_errors == ["RuntimeError: writer bug"]
    assert results["plain-2"].passed
    assert results["__result__"].execution_failed == 1
