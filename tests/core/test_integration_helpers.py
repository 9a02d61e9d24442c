"""``paxm_core.integration``'s helpers for hook-file integrations (Copilot, Gemini, Kimi, Qwen, Cline use them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paxm_core.integration import (
    EVENT_SESSION_START,
    EVENT_TURN_END,
    EVENT_USER_INPUT,
    Finding,
    HookResult,
    InstallContext,
    IntegrationError,
    NativeEvents,
    context_for,
    detect_harness,
    env_path,
    fill_launcher,
    guard_escaped_envelope,
    hook_command_line,
    iso_epoch,
    missing_file_findings,
    named_event,
    queue_path,
    remove_generated_dir,
    remove_upstream_shims,
    swap_in_dir,
    tail_json_records,
)
from paxm_core.settings_hooks import Location, SettingsHooksIntegration, SettingsHooksSpec

EVENTS = NativeEvents(((EVENT_SESSION_START, "SessionStart"), (EVENT_USER_INPUT, "BeforeAgent")))


def test_native_events_map_both_ways() -> None:
    assert EVENTS.events == (EVENT_SESSION_START, EVENT_USER_INPUT)
    assert EVENTS.native(EVENT_USER_INPUT) == "BeforeAgent"
    assert EVENTS.event("BeforeAgent") == EVENTS.event("beforeagent") == EVENT_USER_INPUT
    assert EVENTS.event(EVENT_SESSION_START) == EVENT_SESSION_START  # paxm's own name stays
    assert EVENTS.event("") == EVENT_USER_INPUT
    assert EVENTS.event("Unknown") == "Unknown"  # passes through, the runtime ignores it
    with pytest.raises(KeyError):
        EVENTS.native(EVENT_TURN_END)


def test_named_event_prefers_the_command_line_then_the_payload() -> None:
    raw = json.dumps({"hook_event_name": "Stop"}).encode()
    assert named_event("  BeforeAgent ", raw) == "BeforeAgent"
    assert named_event("", raw) == "Stop"
    assert named_event("", {"hook_event_name": "Stop"}) == "Stop"
    assert named_event("", {"hook_event_name": 3}) == ""
    assert named_event("", b"not json") == ""


def test_queue_path_and_env_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert queue_path(SimpleNamespace(capture_queue=SimpleNamespace(path="/q"))) == "/q"
    assert queue_path(SimpleNamespace(capture_queue=SimpleNamespace(path=""))) is None
    assert queue_path(object()) is None
    monkeypatch.setenv("PAXM_TEST_HELPER_DIR", "  ~/x ")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert env_path("PAXM_TEST_HELPER_DIR") == tmp_path / "x"
    monkeypatch.setenv("PAXM_TEST_HELPER_DIR", "  ")
    assert env_path("PAXM_TEST_HELPER_DIR") is None


def test_detect_harness_finds_the_command_else_the_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tool = tmp_path / "bin" / "myharness"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o700)
    monkeypatch.setenv("PATH", str(tool.parent))
    assert detect_harness("myharness", tmp_path / "nope") == str(tool)
    assert detect_harness("other", tmp_path) == str(tmp_path)
    assert detect_harness("other", tmp_path / "nope") is None


def test_missing_file_findings_name_each_file_a_hook_runs_that_is_gone(tmp_path: Path) -> None:
    good = hook_command_line(tmp_path / "c.yaml", "toy", "prompt")
    bad = good.replace(sys.executable, "/gone/python") if sys.executable in good else good
    assert sys.executable in good and os.path.exists(sys.executable)
    assert missing_file_findings([good, "echo not paxm"], "fix it") == []
    assert missing_file_findings([bad], "fix it", "paxm plugin") == [
        Finding("error", "paxm plugin points at a missing file: /gone/python", "fix it")
    ]


def test_context_for_only_for_the_events_the_harness_injects() -> None:
    prompt = HookResult(target="toy", event=EVENT_USER_INPUT, recall_context="<paxm-recall>x</paxm-recall>")
    assert context_for(prompt, (EVENT_USER_INPUT,)) == prompt.context
    assert context_for(prompt, (EVENT_SESSION_START,)) == ""
    assert context_for(HookResult(target="toy", event=EVENT_USER_INPUT, ignored=True), (EVENT_USER_INPUT,)) == ""
    assert context_for(HookResult(target="toy", event=EVENT_USER_INPUT), (EVENT_USER_INPUT,)) == ""


def test_guard_escaped_envelope_escapes_only_already_escaped_tags() -> None:
    assert guard_escaped_envelope("<paxm-recall> &lt;/paxm-recall&gt; &#60;PAXM-RECALL &#x3C;b") == (
        "<paxm-recall> &amp;lt;/paxm-recall&gt; &amp;#60;PAXM-RECALL &#x3C;b"
    )


class _Toy(SettingsHooksIntegration):
    """A harness that keeps its hooks in a JSON hooks file of paxm's own."""

    def __init__(self, path: Path) -> None:
        super().__init__(
            SettingsHooksSpec(
                name="toy",
                display_name="Toy",
                location=Location("PAXM_TOY_HOOKS_NOT_SET", home=str(path.parent), file=path.name),
                events=EVENTS.pairs,
                handler={"command": "{command}"},
                layout="json-handlers",
                executable="toy-harness-not-installed",
            )
        )
        self.path = path
        self.switched_off = False

    def extra_findings(self, data: Any, wanted: Any, path: Path, fix: str) -> list[Finding]:
        return [Finding("warn", "hooks are switched off", "")] if self.switched_off else []


def test_a_hook_file_integration_installs_checks_and_uninstalls(tmp_path: Path) -> None:
    from paxm_core.config import load_config

    config = load_config(tmp_path / "config.yaml")
    ctx = InstallContext(config=config)
    toy = _Toy(tmp_path / "hooks.json")
    path = toy.path
    assert toy.installed_events(config) == [EVENT_SESSION_START]  # the others are off for an unknown agent
    assert toy.detect() == str(tmp_path)  # not on PATH: the file's directory
    [missing] = toy.check(ctx)
    assert (missing.level, missing.message) == ("error", f"Toy settings missing: {path}")
    assert toy.install(ctx) == [f"installed paxm hooks in {path}"]
    assert toy.install(ctx) == [f"paxm hooks in {path} are up to date"]
    assert toy.check(ctx) == [Finding("ok", f"paxm hooks installed in {path}")]
    toy.switched_off = True
    assert [f.message for f in toy.check(ctx)] == ["hooks are switched off"]
    path.write_text(json.dumps({"hooks": {"SessionStart": [{"command": "stale"}]}}))
    assert [f.level for f in toy.check(ctx)] == ["warn"]
    path.write_text("{not json")
    [broken] = toy.check(ctx)
    assert broken.level == "error" and broken.fix.startswith(f"fix {path}, then paxm")
    with pytest.raises(IntegrationError):
        toy.preflight(ctx)
    path.write_text('{"theirs": 1}')
    assert toy.uninstall(ctx) == []
    toy.install(ctx)
    assert toy.uninstall(ctx) == [f"removed paxm hooks from {path}"]
    assert json.loads(path.read_text()) == {"theirs": 1}


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=40))
def test_fill_launcher_quotes_any_value_so_sh_reads_it_back(value: str) -> None:
    launcher = "#!/bin/sh\nPAXM_CLIENT=''\nPAXM_QUEUE=''\nprintf '%s|%s' \"$PAXM_CLIENT\" \"$PAXM_QUEUE\"\n"
    filled = fill_launcher(launcher, {"PAXM_CLIENT": value, "PAXM_QUEUE": "q\\1"})
    done = subprocess.run(["sh", "-c", filled], capture_output=True, timeout=10)
    assert done.stdout.decode("utf-8", "surrogateescape") == f"{value}|q\\1"
    with pytest.raises(ValueError, match="no PAXM_EXE placeholder"):
        fill_launcher(launcher, {"PAXM_EXE": "x"})


def test_remove_upstream_shims_deletes_only_what_the_rule_recognises(tmp_path: Path) -> None:
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "codex-user_input").write_text("#!/bin/sh\nexec paxm __hook codex user_input\n")
    (hooks / "codex-turn_end.ps1").write_text("paxm --hook-event turn_end\n")
    (hooks / "codex-tool_use").write_text("#!/bin/sh\necho mine\n")  # a user's own script of that name
    (hooks / "claude-user_input").write_text("paxm __hook claude\n")  # another harness's
    removed = remove_upstream_shims(tmp_path, "codex", lambda head: b"paxm" in head)
    assert sorted(p.name for p in removed) == ["codex-turn_end.ps1", "codex-user_input"]
    assert sorted(p.name for p in hooks.iterdir()) == ["claude-user_input", "codex-tool_use"]


def test_generated_dir_swaps_in_whole_and_is_removed_only_with_its_marker(tmp_path: Path) -> None:
    dest = tmp_path / "integrations" / "x-plugin"
    for version in ("1", "2"):
        staging = dest.with_name(f".x-plugin.tmp-{version}")
        staging.mkdir(parents=True)
        (staging / "v").write_text(version)
        swap_in_dir(staging, dest)
        assert (dest / "v").read_text() == version and not staging.exists()
    assert sorted(p.name for p in dest.parent.iterdir()) == ["x-plugin"]  # no old copy left beside it
    assert remove_generated_dir(dest, ".paxm-generated") is False and dest.exists()  # not paxm's: kept
    (dest / ".paxm-generated").write_text("")
    (tmp_path / "integrations" / "other").mkdir()
    assert remove_generated_dir(dest, ".paxm-generated") is True and not dest.exists()
    assert dest.parent.is_dir()  # another integration's directory keeps the parent


def test_iso_epoch_reads_a_transcript_timestamp_else_zero() -> None:
    assert iso_epoch("2026-01-02T03:04:05Z") == iso_epoch("2026-01-02T03:04:05+00:00") == 1767323045.0
    assert iso_epoch("2026-01-02T04:04:05.500+01:00") == 1767323045.5
    for value in ("", "yesterday", None, 1767323045, ["2026-01-02"]):
        assert iso_epoch(value) == 0.0


def test_tail_json_records_reads_whole_objects_from_the_end_only(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"n": 1}\n\n[2]\nnot json\n{"n": "\xff"}\n{"n": 3}\n{"n": 4, "still being wri')
    assert tail_json_records(path, 1 << 20) == [{"n": 1}, {"n": 3}]
    assert tail_json_records(path, 1 << 20, replace_invalid=True) == [{"n": 1}, {"n": "\ufffd"}, {"n": 3}]
    assert tail_json_records(path, len(b'1}\n\n[2]\nnot json\n{"n": "\xff"}\n{"n": 3}\n{"n": 4, "still being wri')) == [
        {"n": 3}
    ]  # the read began inside the first line: it is dropped, not half-parsed
    assert tail_json_records(tmp_path / "missing.jsonl", 100) == []
