"""``unknown_keys``: every key paxm does not read is found, at its path, and nothing paxm reads is."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from paxm_core.config import default_config
from paxm_core.config.codec import dump_config
from paxm_core.config.model import Config, RecallProfileConfig
from paxm_core.config.unknown_keys import unknown_keys

TOP = {f.name for f in dataclasses.fields(Config)}
PROFILE = {f.name for f in dataclasses.fields(RecallProfileConfig)}
names = st.from_regex(r"[a-z][a-z0-9_]{0,15}", fullmatch=True)


@given(names)
def test_an_unknown_top_level_key_is_reported_at_its_path(key: str) -> None:
    data: dict[str, Any] = {"version": 1, key: "x"}
    found = unknown_keys(data)
    assert [k.path for k in found] == ([] if key in TOP else [key])


@given(names, names)
def test_an_unknown_key_deep_in_a_profile_is_reported_with_its_path(profile: str, key: str) -> None:
    data = {"recall_profiles": {profile: {key: 1, "providers": [{"name": "sqlite", key: 2}]}}}
    paths = [k.path for k in unknown_keys(data)]
    expected = [] if key in PROFILE else [f"recall_profiles.{profile}.{key}"]
    route_fields = {"name", "required", "weight", "timeout", "thresholds"}
    expected += [] if key in route_fields else [f"recall_profiles.{profile}.providers[0].{key}"]
    assert paths == expected


def test_what_paxm_writes_has_no_unknown_key(tmp_path: Any) -> None:
    assert unknown_keys(dump_config(default_config(tmp_path / "c.yaml"), redact=False)) == []


def test_a_misspelt_key_gets_a_suggestion_and_provider_extras_do_not() -> None:
    found = unknown_keys(
        {"telemetryy": {}, "providers": {"pg": {"type": "x", "dsn": "postgres://", "enabel": True, "pool_size": 2}}}
    )
    assert [(k.path, k.suggestion) for k in found] == [("telemetryy", "telemetry"), ("providers.pg.enabel", "enabled")]
