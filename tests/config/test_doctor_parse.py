"""``paxm config doctor`` reads the file back with the config's own hardened loader, never plain PyYAML."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from paxm_core.config import load_config
from paxm_core.config.setup import agents_enabled_in_file


def test_a_tab_indented_json_config_is_read_back(tmp_path: Path) -> None:
    # JSON allows tabs; YAML forbids them, so a YAML parser cannot read this file back
    path = tmp_path / "config.json"
    path.write_text('{\n\t"identity": {"user_id": "alice"}\n}\n', encoding="utf-8")
    config = load_config(path)
    assert any(agent.enabled for agent in config.agents.values())  # upstream's defaults enable one
    assert agents_enabled_in_file(config) == set()  # ... but the file itself enables none


def test_enabled_is_read_by_the_config_s_boolean_rule(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("agents:\n  claude: {enabled: 'yes'}\n  codex: {enabled: off}\n  pi: {enabled: false}\n")
    assert agents_enabled_in_file(load_config(path)) == {"claude"}


def test_doctor_never_calls_plain_pyyaml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("agents:\n  claude: {enabled: true}\n")
    config = load_config(path)
    calls: list[object] = []
    monkeypatch.setattr(yaml, "safe_load", lambda *a, **k: calls.append(a))
    assert agents_enabled_in_file(config) == {"claude"}
    assert calls == []
