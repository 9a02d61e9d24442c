"""Fuzzing: whatever a plugin prints, the provider and a router searching through it fail cleanly."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paxm_core import Deadline, MemoryHit, ProviderConfig, ProviderError, RecallError, SearchQuery
from paxm_core.router import Route, Router, SearchPolicy
from paxm_provider_jsonrpc.provider import JsonRpcProvider
from paxm_provider_jsonrpc.transport import MalformedResponse, _ObjectScanner, _RemoteError, decode_response

json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
hit_fields = st.fixed_dictionaries(
    {},
    optional={
        "id": st.text(max_size=5) | json_values,
        "text": st.text(max_size=20) | json_values,
        "relevance": st.floats(allow_nan=False) | json_values,
        "score": st.floats(allow_nan=False) | json_values,
        "raw_score": json_values,
        "metadata": st.dictionaries(st.text(max_size=5), json_values, max_size=3) | json_values,
        "created_at": st.sampled_from(["2026-01-02T03:04:05Z", "yesterday", ""]) | json_values,
        "origin": st.dictionaries(st.sampled_from(["user_id", "agent_id"]), json_values, max_size=2) | json_values,
        "scope": json_values,
        "tiers": json_values,
    },
)
results = (
    json_values
    | st.fixed_dictionaries({"hits": st.lists(hit_fields, max_size=4) | json_values})
    | st.fixed_dictionaries({"ref": json_values, "refs": json_values})
)
frames = st.fixed_dictionaries(
    {"jsonrpc": st.sampled_from(["2.0", "1.0"]) | json_values},
    optional={
        "id": st.sampled_from(["1", "2", 1, None, ""]) | json_values,
        "result": results,
        "error": st.fixed_dictionaries({}, optional={"code": json_values, "message": json_values, "data": json_values})
        | json_values,
    },
)


def encoded(frame: dict[str, Any]) -> bytes:
    return json.dumps(frame).encode()


raw_outputs = (
    st.binary(max_size=300)
    | frames.map(encoded)
    | st.tuples(frames.map(encoded), st.integers(0, 400)).map(lambda pair: pair[0][: pair[1]])  # truncated
    | st.tuples(frames.map(encoded), st.binary(max_size=40)).map(lambda pair: pair[0] + pair[1])  # trailing junk
)


@settings(max_examples=150, deadline=None)
@given(raw_outputs)
def test_decoding_any_bytes_is_a_value_or_a_clean_error(raw: bytes) -> None:
    try:
        end = _ObjectScanner().feed(raw)
    except MalformedResponse:
        return
    if end is None:
        return
    try:
        decode_response(raw[:end], "1")
    except (MalformedResponse, _RemoteError):
        pass


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.text(max_size=6), json_values, max_size=6), st.lists(st.integers(1, 50), max_size=10))
def test_scanner_finds_the_object_end_however_output_is_chunked(obj: dict[str, Any], cuts: list[int]) -> None:
    data = json.dumps(obj).encode() + b"\n{trailing"
    end_of_object = len(json.dumps(obj).encode())
    scanner = _ObjectScanner()
    buf = bytearray()
    found = None
    pos = 0
    for size in [*cuts, len(data)]:
        buf.extend(data[pos : pos + size])
        pos += size
        found = scanner.feed(buf)
        if found is not None:
            break
    assert found == end_of_object


def _provider(path: Path) -> JsonRpcProvider:
    # /bin/cat prints the canned response and ignores the request: a real process every time
    return JsonRpcProvider("fuzz", ProviderConfig(type="jsonrpc", command="/bin/cat", args=[str(path)], timeout=5.0))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw_outputs)
def test_provider_and_router_never_crash_on_any_response(raw: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        response = Path(tmp) / "response"
        response.write_bytes(raw)
        try:
            hits = _provider(response).search(SearchQuery(text="q", limit=5), Deadline.after(5))
        except ProviderError as exc:
            assert str(exc).startswith("fuzz paxm.search: ")
        else:
            assert all(isinstance(hit, MemoryHit) and hit.provider == "fuzz" for hit in hits)

        router = Router({"fuzz": _provider(response)})
        result = router.search(
            SearchQuery(text="q", limit=5), SearchPolicy(routes=[Route("fuzz")], limit=5), Deadline.after(10)
        )
        for error in result.provider_errors:
            assert error.provider == "fuzz" and "Traceback" not in error.error
        json.dumps(result.to_json())  # whatever came back serializes

        required = Router({"fuzz": _provider(response)}, required={"fuzz"})
        try:
            required.search(
                SearchQuery(text="q"), SearchPolicy(routes=[Route("fuzz", required=True)]), Deadline.after(10)
            )
        except RecallError as exc:  # a required provider's failure is the router's one clean error
            assert exc.result is not None and exc.result.provider_errors


def test_huge_response_within_the_limit_is_parsed(tmp_path: Path) -> None:
    hits = [{"id": f"h{n}", "text": "x" * 1000, "relevance": 0.5, "score": 0.5} for n in range(5000)]
    response = tmp_path / "response"
    response.write_text(json.dumps({"jsonrpc": "2.0", "id": "1", "result": {"hits": hits}}))
    assert response.stat().st_size > 4_000_000
    found = _provider(response).search(SearchQuery(text="q"), Deadline.after(30))
    assert len(found) == 5000 and found[-1].id == "h4999"


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_non_json_number_literals_are_refused(tmp_path: Path, literal: str) -> None:
    response = tmp_path / "response"
    frame = '{"jsonrpc":"2.0","id":"1","result":{"hits":[{"id":"a","text":"t","relevance":LITERAL}]}}'
    response.write_text(frame.replace("LITERAL", literal))
    with pytest.raises(ProviderError, match="not valid JSON"):
        _provider(response).search(SearchQuery(text="q"), Deadline.after(5))
