"""The direct renderer against the live write path: the same events, field for field.

``TurnRenderer.render`` builds a past turn's two writes from the live path's building blocks
without driving ``PassiveRuntime.handle``; ``TurnRenderer.render_live`` drives the live
runtime itself and is the oracle here.  Every comparison is on the capture events (ids,
session keys, items, profiles, seals, capture times), on the rows the queue stores for them
(``encode_event``: the payload JSON and its digest) and on the overlap fingerprint.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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


def _same(renderer: TurnRenderer, turn: PastTurn) -> list[Any]:
    direct, direct_fp = renderer.render(turn)
    live, live_fp = renderer.render_live(turn)
    assert [e.event_id for e in direct] == [e.event_id for e in live]
    assert direct == live
    assert _rows(direct) == _rows(live)
    assert direct_fp == live_fp
    return direct


def _rows(events: list[Any]) -> list[Any]:
    """The rows the queue stores for ``events`` (or the error the queue refuses one with)."""
    out: list[Any] = []
    for event in events:
        try:
            out.append(encode_event(event))
        except Exception as exc:
            out.append(repr(exc))
    return out


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
def test_fixture_transcripts_render_as_the_live_path_renders_them(tmp_path: Path, config: str) -> None:
    renderer = _renderer(tmp_path, config)
    seen: set[str] = set()
    total = 0
    for agent, turn in _fixture_turns():
        _same(renderer, turn)
        seen.add(agent)
        total += 1
    assert {"claude", "codex", "pi", "opencode"} <= seen and total >= 8


def test_synthetic_transcripts_render_as_the_live_path(tmp_path: Path) -> None:
    from _backfill_synthetic import write_sessions  # type: ignore[import-not-found]  # loaded by conftest

    projects = tmp_path / "projects"
    write_sessions(projects, 3, 12)
    reader: Any = get_plugin_manager().integration("claude")
    renderer = _renderer(tmp_path, "defaults")
    turns = [t for path in sorted(projects.rglob("*.jsonl")) for t in reader.read_turns(path)]
    assert len(turns) == 36
    for turn in turns:
        events = _same(renderer, turn)
        assert events and events[-1].terminal
        # what the readers hand over never carries recalled context or reasoning
        assert all("RECALLED" not in e.item.text and "PRIVATE-REASONING" not in e.item.text for e in events)


def test_opt_outs_redaction_and_seals_are_the_live_paths(tmp_path: Path) -> None:
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
    out = {name: _same(renderer, turn) for name, turn in cases.items()}
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


_WORDS = st.sampled_from(
    [
        "deploy",
        "Friday",
        "  ",
        "\n",
        ENVELOPE,
        '<paxm-recall version="1">unclosed',
        SECRET,
        "HERON-42",
        "<private>hidden</private>",
        "\ud800",
        "naïve ✓",
        "{{ .prompt }}",
        "",
    ]
)
_TEXT = st.lists(_WORDS, max_size=6).map(" ".join)
_ROLES = st.sampled_from(["user", "assistant", "tool_call", "tool_use", "tool_result", "function_call_output", "x"])
_MESSAGES = st.lists(
    st.one_of(
        st.builds(HookMessage, _ROLES, _TEXT, st.sampled_from(["", "Bash", "mcp__paxm__paxm_recall"])),
        st.just(HookMessage("tool_call", 'Bash {"command": "paxm recall --query x"}')),
        st.just(HookMessage("tool_result", '{"paxm_context": {"kind": "recall"}, "hits": []}')),
    ),
    max_size=5,
)
_METADATA = st.dictionaries(
    st.sampled_from(["session_id", "transcript_path", "model", "paxm_sequence", "workspace", "backfill_turn_id"]),
    _TEXT,
    max_size=4,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    config=st.sampled_from(sorted(CONFIGS)),
    target=st.sampled_from(["claude", "codex", "pi", "opencode", "cursor"]),
    prompt=_TEXT,
    answer=_TEXT,
    messages=_MESSAGES,
    metadata=_METADATA,
    workspace=st.sampled_from(["", "/work/project", "/tmp/ignored-x/sub", "~/code"]),
    started=st.sampled_from([0.0, 1.5, 1_790_000_000.123456, 4_000_000_000.0]),
)
def test_any_turn_renders_as_the_live_path(
    tmp_path: Path,
    config: str,
    target: str,
    prompt: str,
    answer: str,
    messages: list[HookMessage],
    metadata: dict[str, str],
    workspace: str,
    started: float,
) -> None:
    renderer = _RENDERERS.get(config)
    if renderer is None:
        renderer = _RENDERERS[config] = _renderer(tmp_path, config)
    turn = _turn(target, prompt, answer, workspace=workspace, messages=messages, metadata=metadata, started=started)
    if not started:  # no start time: the live path stamps the clock, so only compare what it can
        direct, direct_fp = renderer.render(turn)
        live, live_fp = renderer.render_live(turn)
        assert [e.event_id for e in direct] == [e.event_id for e in live] and direct_fp == live_fp
        assert [e.item.text for e in direct] == [e.item.text for e in live]
        return
    try:
        _same(renderer, turn)
    except AssertionError:
        raise
    except Exception as exc:  # a write the live path refuses is refused the same way
        with pytest.raises(type(exc)) as live_error:
            renderer.render_live(turn)
        assert str(live_error.value) == str(exc)


_RENDERERS: dict[str, TurnRenderer] = {}


def test_workers_and_the_serial_run_share_the_direct_renderer() -> None:
    # the worker and the run's own process both call render(); render_live stays test-only
    source = (REPO / "paxm_core/backfill/workers.py").read_text()
    assert "renderer.render(turn)" in source and "render_live" not in source
    assert os.path.exists(REPO / "paxm_core/backfill/render.py")
