"""Fuzzing: any YAML/JSON shape gives a Config or a ConfigError, never another exception."""

from __future__ import annotations

import copy
import json
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paxm_core.config import Config, ConfigError, default_config, load_config, save_config
from paxm_core.config.codec import dump_config, parse_config
from paxm_core.config.normalize import normalize
from paxm_core.config.validate import validate

KEYS = st.sampled_from(
    [
        "providers", "recall_profiles", "write_profiles", "agents", "identity", "telemetry", "capture_queue",
        "hooks", "version", "sqlite", "type", "enabled", "timeout", "name", "required", "weight", "tiers",
        "expires_after", "tier", "scope", "user_id", "thresholds", "min_score", "events", "recall", "write",
        "initial", "insertion", "buffer", "env", "args", "api_key", "provider_concurrency", "local", "path",
    ]
) | st.text(max_size=8)  # fmt: skip
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**40), max_value=2**40)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from(["", "250ms", "-1s", "24h", "stm", "ltm", "team", "personal", "sqlite", "x", "1e400"])
    | st.text(max_size=12)
)
SHAPES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=5), max_leaves=40
)

BASE_PATH = Path("/nonexistent-fuzz/config.yaml")


def _pipeline(data: Any) -> Config | None:
    """What load_config does after parsing; returns None when the input is rejected cleanly."""
    try:
        config = parse_config(data)
        config.path = BASE_PATH
        validate(config)
        config = normalize(config)
    except ConfigError as exc:
        assert str(exc)
        return None
    validate(config)  # a normalized config is always valid
    assert normalize(config) == config  # and normalizing is idempotent
    json.dumps(dump_config(config))  # and it serializes
    return config


@settings(max_examples=100, deadline=None)
@given(SHAPES)
def test_random_shapes_never_crash(data: Any) -> None:
    _pipeline(data)


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(KEYS, SHAPES, max_size=6))
def test_random_top_level_mappings_never_crash(data: dict[str, Any]) -> None:
    _pipeline(data)


def _leaves(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(node, dict):
        return [p for k, v in node.items() for p in _leaves(v, (*path, k))] or [path]
    if isinstance(node, list):
        return [p for i, v in enumerate(node) for p in _leaves(v, (*path, i))] or [path]
    return [path]


DEFAULT_DATA = dump_config(default_config(BASE_PATH), redact=False)
DEFAULT_LEAVES = _leaves(DEFAULT_DATA)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(DEFAULT_LEAVES), SHAPES), min_size=1, max_size=3))
def test_mutated_defaults_round_trip_or_fail_cleanly(mutations: list[tuple[tuple[Any, ...], Any]]) -> None:
    data = copy.deepcopy(DEFAULT_DATA)
    for path, value in mutations:
        node: Any = data
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    config = _pipeline(data)
    if config is None:
        return
    # Anything that loads must survive save + load unchanged.
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("config.yaml", "config.json"):
            target = Path(tmp) / name
            save_config(config, target)
            again = load_config(target)
            again.path = config.path
            assert again == config


def _loads_or_fails_cleanly(text: str, name: str) -> None:
    """``text`` as a config file named ``name`` loads, or fails with a ConfigError naming the file."""
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / name
        target.write_text(text, encoding="utf-8")
        try:
            config = load_config(target)
        except ConfigError as exc:
            assert str(exc).startswith(str(target))
            return
        assert config.exists


@settings(max_examples=50, deadline=None)
@given(st.text(max_size=200) | SHAPES.map(lambda d: yaml.safe_dump(d)))
def test_random_yaml_files_load_or_fail_cleanly(text: str) -> None:
    _loads_or_fails_cleanly(text, "config.yaml")


@settings(max_examples=50, deadline=None)
@given(st.text(max_size=200) | SHAPES.map(lambda d: json.dumps(d, allow_nan=True)))
def test_random_json_files_load_or_fail_cleanly(text: str) -> None:
    _loads_or_fails_cleanly(text, "config.json")
