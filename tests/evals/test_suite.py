"""Strict suite parsing: format v1, unknown fields, types, and upstream's semantic rules."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paxm_core.api.errors import UsageError
from paxm_core.evals._strict import EvalFileError
from paxm_core.evals.suite import load_suite, parse_suite


def test_directory_or_file_loads_the_same_suite(tmp_path: Path, kit: ModuleType) -> None:
    kit.write_json(tmp_path / "suite.json", kit.suite(kit.retrieval_case("a"), kit.write_case("b")))
    from_dir = load_suite(tmp_path)
    from_file = load_suite(tmp_path / "suite.json")
    assert from_dir == from_file
    assert [c.id for c in from_dir.cases] == ["a", "b"]
    assert from_dir.cases[0].memories[0].tier == "ltm"
    assert from_dir.cases[1].is_write_case and not from_dir.cases[0].is_write_case


def test_timestamps_are_parsed_as_utc(kit: ModuleType) -> None:
    case = kit.retrieval_case()
    case["memories"][1]["expires_at"] = "2020-01-01T02:00:00+02:00"
    case["memories"][0]["created_at"] = "2019-06-01T00:00:00Z"  # extension: seeded creation time
    parsed = parse_suite(kit.suite(case))
    expires = parsed.cases[0].memories[1].expires_at
    assert expires is not None and expires.isoformat() == "2020-01-01T00:00:00+00:00"
    created = parsed.cases[0].memories[0].created_at
    assert created is not None and created.year == 2019 and parsed.cases[0].memories[1].created_at is None


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda s: s.update(extra=1), "top level: unknown field 'extra'"),
        (lambda s: s["cases"][0].update(expect=["x"]), "cases[0]: unknown field 'expect'"),
        (lambda s: s["cases"][0]["recall"].update(modee="active"), "cases[0].recall: unknown field 'modee'"),
        (lambda s: s["cases"][0]["memories"][1].update(created="2020-01-01"), "cases[0].memories[1]: unknown field"),
        (
            lambda s: s["cases"][0]["recall"].update(limit="3"),
            "cases[0].recall.limit: expected an integer, got a string",
        ),
        (lambda s: s["cases"][0].update(expected="c1-target"), "cases[0].expected: expected an array"),
        (lambda s: s["cases"][0]["memories"][0].update(metadata={"n": 1}), "metadata.n: expected a string"),
        (lambda s: s["cases"][0]["memories"][0].update(expires_at="yesterday"), "expires_at: not an RFC 3339"),
        (lambda s: s["cases"][0]["memories"][0].update(created_at=5), "created_at: expected a string"),
        (lambda s: s.update(version=2), "unsupported eval suite version 2; expected 1"),
        (lambda s: s.update(name=" "), "eval suite name is required"),
        (lambda s: s.update(cases=[]), "requires at least one case"),
        (lambda s: s["cases"][0]["recall"].update(mode="sometimes"), "unsupported recall mode 'sometimes'"),
        (lambda s: s["cases"][0]["recall"].update(query=""), "recall query is required"),
        (lambda s: s["cases"][0].update(expected=["nope"]), "references unknown memory 'nope'"),
        (lambda s: s["cases"][0].update(expected=[]), "requires expected memory ids"),
        (lambda s: s["cases"][0].update(memories=[]), "requires memories or a conversation write"),
        (lambda s: s["cases"][0].pop("recall"), "cases[0].recall: is required"),
        (lambda s: s["cases"].append(dict(s["cases"][0])), "duplicate case id 'c1'"),
        (lambda s: s["cases"][0]["memories"].append({"id": "c1-target", "text": "x"}), "duplicate memory id"),
        (lambda s: s["cases"][0].update(turns=[{"role": "system", "text": "x"}]), "invalid normalized turn"),
    ],
)
def test_invalid_suites_are_rejected_with_a_precise_message(
    kit: ModuleType, mutate: Any, message: str, tmp_path: Path
) -> None:
    data = kit.suite(kit.retrieval_case())
    mutate(data)
    path = kit.write_json(tmp_path / "suite.json", data)
    with pytest.raises(EvalFileError, match=None) as info:
        load_suite(path)
    assert message in str(info.value)
    assert str(path) in str(info.value)
    assert isinstance(info.value, UsageError)  # -> "Error: ...", exit 1 in the CLI


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda c: c.update(expected_write=[]), "requires expected_write"),
        (lambda c: c["write"].update(event=""), "requires an event"),
        (lambda c: c["write"].update(include_history=True), "include history only for turn_end"),
        (lambda c: c["write"].update(repeat=-1), "repeat must be positive"),
        (lambda c: c.update(forbidden_write=["Lunar Cache"]), "repeats write fragment"),
        (lambda c: c.update(forbidden_recall=[" "]), "forbidden_recall contains a blank fragment"),
        (lambda c: c.update(turns=[{"role": "user", "text": "x"}]), "requires normalized user and assistant history"),
        (lambda c: c["write"].update(messages=[{"role": "robot", "text": "x"}]), "invalid hook write message"),
    ],
)
def test_invalid_write_cases_are_rejected(kit: ModuleType, mutate: Any, message: str) -> None:
    case = kit.write_case()
    mutate(case)
    with pytest.raises(EvalFileError) as info:
        parse_suite(kit.suite(case))
    assert message in str(info.value)


def test_duplicate_json_keys_and_bad_json_are_rejected(tmp_path: Path) -> None:
    path = tmp_path / "suite.json"
    path.write_text('{"version": 1, "version": 1, "name": "x", "cases": []}', encoding="utf-8")
    with pytest.raises(EvalFileError, match="duplicate key 'version'"):
        load_suite(path)
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(EvalFileError, match="decode eval suite"):
        load_suite(path)
    with pytest.raises(EvalFileError, match="read eval suite"):
        load_suite(tmp_path / "missing")


def test_upstream_suites_parse_when_present(kit: ModuleType) -> None:
    if not kit.SHARED_EVALS.is_dir():
        pytest.skip(f"upstream eval suites not found at {kit.SHARED_EVALS} (../shared/evals beside the repo)")
    counts = {
        name: len(load_suite(kit.SHARED_EVALS / name).cases) for name in ("baseline", "conversation-write", "lifecycle")
    }
    assert counts == {"baseline": 100, "conversation-write": 50, "lifecycle": 40}


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
_keys = st.sampled_from(["version", "name", "cases", "id", "category", "memories", "recall", "mode", "query", "text"])


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(_keys, _json, max_size=4), st.integers(0, 4))
def test_arbitrary_json_only_ever_raises_eval_file_error(data: dict[str, Any], where: int) -> None:
    # Graft the random value into an otherwise valid suite at several depths.
    base: dict[str, Any] = {"version": 1, "name": "fuzz", "cases": [json.loads(json.dumps(_VALID_CASE))]}
    target = [base, base["cases"][0], base["cases"][0]["recall"], base["cases"][0]["memories"][0], {}][where]
    target.update(data)
    try:
        parse_suite(base)
    except EvalFileError:
        pass


_VALID_CASE = {
    "id": "f",
    "category": "c",
    "memories": [{"id": "m", "text": "t"}],
    "recall": {"mode": "active", "query": "q"},
    "expected": ["m"],
}
