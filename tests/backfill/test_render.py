"""Past turns rendered through the live write path: opt-outs, redaction, seals, every reader's fixtures."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from paxm_core.api.events import HookMessage
from paxm_core.backfill.render import TurnRenderer
from paxm_core.backfill.workers import _LightRuntime
from paxm_core.capture.queue import encode_event
from paxm_core.config import load_config
from paxm_core.integration import EVENT_TURN_END, HookEvent, PastTurn
from paxm_core.plugins import get_plugin_manager
from paxm_core.tools import Tools

REPO = Path(__file__).resolve().parents[2]
ENVELOPE = '<paxm-recall version="1" mode="passive">\nRECALLED-NEVER-STORE\n</paxm-recall>'
SECRET = "AKIA" + "ABCDEFGHIJKLMNOP"

#: agents.* blocks: built-in settings, custom templates, a write turned off, a plugin owner,
#: a template that renders nothing (the turn end becomes a bare seal)
CONFIGS = {
    "defaults": "",
    "templates": """
agents:
  claude:
    enabled: true
    hooks:
      user_input:
        write:
          enabled: true
          profile: stm
          template: >-
            Q {{ .prompt }} @ {{ .workspace }}{{ if .metadata.session_id }}
            [{{ .metadata.session_id }}]{{ end }}
      turn_end:
        write:
          enabled: true
          profile: ltm
          template: >-
            {{ range .messages }}{{ .role }}={{ .text }};{{ else }}none{{ end }}
            {{ .assistant }} {{ .safe_text }}
  codex:
    hooks:
      user_input:
        write: {enabled: false}
      turn_end:
        write: {enabled: true, template: "{{ .query }}"}
  pi:
    integration: {owner: claude-plugin}
privacy:
  redact_patterns: ["HERON-[0-9]+"]
workspace:
  ignore: ["/tmp/ignored-*"]
""",
    "no-writes": """
agents:
  claude:
    hooks:
      user_input:
        write: {enabled: false}
      turn_end:
        write: {enabled: false}
  opencode:
    hooks:
      turn_end:
        write: {enabled: true, template: "  "}
""",
}


def _renderer(tmp_path: Path, name: str) -> TurnRenderer:
    path = tmp_path / f"{name}.yaml"
    path.write_text(CONFIGS[name] or "{}\n")
    config = load_config(path)
    tools = Tools(config, None, session_id="", agent_name="")  # type: ignore[arg-type]
    return TurnRenderer(_LightRuntime(config, get_plugin_manager(), tools), None)


def _fixture_turns() -> Iterator[tuple[str, PastTurn]]:
    manager = get_plugin_manager()
    fixtures = {
        "claude": (REPO / "integrations/paxm-integration-claude-code/tests/fixtures/claude-transcripts").glob(
            "*.jsonl"
        ),
        "codex": (REPO / "integrations/paxm-integration-codex/tests/fixtures").glob("codex_*.jsonl"),
        "pi": (REPO / "integrations/paxm-integration-pi/tests/fixtures").glob("pi-sessions-*/*.jsonl"),
        "opencode": (REPO / "integrations/paxm-integration-opencode/tests/fixtures").glob("opencode-sessions-*/*.db"),
    }
    for agent, paths in fixtures.items():
        reader = manager.integration(agent)
        if reader is None or not hasattr(reader, "read_turns"):
            continue
        for path in sorted(paths):
            for turn in reader.read_turns(path):
                yield agent, turn


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_fixture_transcripts_render_to_rows_the_queue_takes(tmp_path: Path, config: str) -> None:
    renderer = _renderer(tmp_path, config)
    seen: set[str] = set()
    total = 0
    for agent, turn in _fixture_turns():
        events, _ = renderer.render(turn)
        for event in events:
            encode_event(event)  # the queue accepts every rendered event
        seen.add(agent)
        total += 1
    assert {"claude", "codex", "pi", "opencode"} <= seen and total >= 8


def test_synthetic_transcripts_render_without_recalled_context(tmp_path: Path) -> None:
    from _backfill_synthetic import write_sessions  # type: ignore[import-not-found]  # loaded by conftest

    projects = tmp_path / "projects"
    write_sessions(projects, 3, 12)
    reader: Any = get_plugin_manager().integration("claude")
    renderer = _renderer(tmp_path, "defaults")
    turns = [t for path in sorted(projects.rglob("*.jsonl")) for t in reader.read_turns(path)]
    assert len(turns) == 36
    for turn in turns:
        events, fingerprint = renderer.render(turn)
        assert events and events[-1].terminal and fingerprint
        # what the readers hand over never carries recalled context or reasoning
        assert all("RECALLED" not in e.item.text and "PRIVATE-REASONING" not in e.item.text for e in events)


def test_opt_outs_redaction_and_seals(tmp_path: Path) -> None:
    renderer = _renderer(tmp_path, "templates")
    ignored = tmp_path / "ignored-box"
    ignored.mkdir()
    (ignored / ".paxm-ignore").write_text("")
    cases = {
        # an ignored workspace: nothing at all
        "ignored": _turn("claude", "hi", "ok", workspace=str(ignored)),
        # redacted by the built-in rules and the configured pattern, envelope stripped
        "redacted": _turn("claude", f"key {SECRET} HERON-12 {ENVELOPE}", f"{ENVELOPE} fine HERON-9"),
        # codex: no prompt write; a turn end that renders nothing still seals the turn
        "seal": _turn("codex", "hello", "answer"),
        # pi's hooks belong to a plugin here: paxm's own backfill writes nothing for them
        "owner": _turn("pi", "hello", "answer"),
    }
    out = {name: renderer.render(turn)[0] for name, turn in cases.items()}
    assert out["ignored"] == [] and out["owner"] == []
    assert SECRET not in out["redacted"][0].item.text and "HERON-12" not in out["redacted"][0].item.text
    assert "RECALLED" not in out["redacted"][0].item.text + out["redacted"][1].item.text
    (seal,) = out["seal"]
    assert seal.terminal and seal.item.text == ""


def _turn(
    target: str,
    prompt: str,
    answer: str,
    *,
    workspace: str = "/work/project",
    messages: list[HookMessage] | None = None,
    metadata: dict[str, str] | None = None,
    started: float = 1_790_000_000.25,
    turn_id: str = "backfill-0123456789abcdef",
) -> PastTurn:
    event = HookEvent(
        target=target,
        event=EVENT_TURN_END,
        native_event="Stop",
        prompt=prompt,
        assistant=answer,
        messages=list(messages or []),
        workspace=workspace,
        metadata=dict(metadata or {"session_id": "s-1", "transcript_path": "/t/s-1.jsonl"}),
        captured_at=started,
    )
    return PastTurn(turn_id=turn_id, session_id="s-1", started_at=started, event=event)
