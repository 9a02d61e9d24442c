"""End to end with the real Codex CLI (offline, fake Responses server on 127.0.0.1).

Runs on the shared real-binary kit (``paxm_contracttest.harness.kit``, the Codex description
in ``harnesses``): the pinned ``@openai/codex`` from the shared npm cache, paxm's hooks
with ``paxm setup`` (which records Codex hook trust through the binary's own ``app-server``),
and checks what the model is actually sent.  Hook latencies are the time between Codex's
``hook: <Event>`` and ``hook: <Event> Completed`` lines, printed as ``LATENCY`` lines (``-s``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Mapping
from pathlib import Path

import pytest

from paxm_contracttest.fake_models.responses import FakeResponses, input_text
from paxm_contracttest.harness import kit
from paxm_contracttest.harness.harnesses import CODEX, codex_hooks_completed
from paxm_contracttest.sandbox import PAXM
from paxm_integration_codex import CodexIntegration, trust

pytestmark = [pytest.mark.harness, pytest.mark.slow]

HOOK_TIMEOUT_MS = 10_000
ENVELOPE = '<paxm-recall version="1" mode="passive">'


codex = kit.installed_fixture(CODEX)


@pytest.fixture
def box(codex: tuple[kit.Harness, kit.Installed], tmp_path: Path) -> kit.HarnessBox:
    """A sandbox for the real Codex."""
    return kit.HarnessBox(tmp_path / "box", *codex)


def _config(box: kit.HarnessBox) -> Path:
    return box.home / ".codex" / "config.toml"


def _users_config(box: kit.HarnessBox, fake: FakeResponses) -> str:
    """Point Codex at ``fake``; returns its ``config.toml`` as the user has it, before paxm."""
    box.point_at(fake.url)
    return _config(box).read_text()


def _hook_call(box: kit.HarnessBox, event: str, payload: Mapping[str, object], *, owner: str = "") -> str:
    """Run paxm's Codex hook the way Codex would (``owner``: as the plugin's launcher does)."""
    extra = {"PAXM_INTEGRATION_OWNER": owner} if owner else {}
    done = subprocess.run(
        [PAXM, "--config", str(box.config), "__hook", "--target", "codex", "--event", event, "--json"],
        env=box.env(**extra),
        input=json.dumps({"session_id": "gate-check", "cwd": str(box.workspace), **payload}),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def report(label: str, run: kit.Turn) -> None:
    hooks = {h["hookEvent"]: h["durationMs"] for h in run.hooks}
    print(f"LATENCY codex {label}: hooks_ms={json.dumps(hooks)} codex_wall_s={run.wall:.2f}")


def check_hooks(run: kit.Turn, *events: str) -> None:
    """Codex ran (trusted) each of ``events`` once, successfully, within the hook timeout."""
    codex_hooks_completed(run, *events, within_ms=HOOK_TIMEOUT_MS)


def first_request_text(fake: FakeResponses, start: int) -> str:
    requests = fake.responses()[start:]
    assert requests, "Codex sent no model request"
    return input_text(requests[0])


def assert_no_garbage(text: str) -> None:
    for bad in ("Traceback", "paxm hook:", "PAXM-HOOK", '"ok"', "hookSpecificOutput"):
        assert bad not in text, f"{bad!r} reached the model:\n{text[-3000:]}"
    assert text.count("<paxm-recall") == text.count("</paxm-recall>")


def _quiet_turn(box: kit.HarnessBox, fake: FakeResponses) -> kit.Turn:
    """A turn paxm must stay out of: it completes with the model's reply, and what the model is
    shown holds no paxm noise and no envelope."""
    run = box.turn(fake, "Hello there")
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.reply.startswith("Noted")
    text = first_request_text(fake, 0)
    assert_no_garbage(text)
    assert ENVELOPE not in text
    return run


def setup_box(box: kit.HarnessBox, fake: FakeResponses, *extra: str) -> None:
    box.point_at(fake.url)
    box.paxm("setup", "--yes", "--agent", "codex", "--provider", "sqlite", *extra)
    box.generous_recall_budget()


def test_decision_in_one_session_is_recalled_in_the_next(box: kit.HarnessBox) -> None:
    marker = f"KESTREL-{uuid.uuid4().hex[:10]}"
    try:
        with box.fake(marker=marker) as fake:
            original = _users_config(box, fake)
            setup = box.paxm("setup", "--yes", "--agent", "codex", "--provider", "sqlite")
            assert "trusted 3 paxm hook(s)" in setup.stderr + setup.stdout
            box.generous_recall_budget()
            doctor = box.paxm("config", "doctor", check=False)
            first = box.turn(fake, f"Decision: release branches are named {marker}-<version>. RUN_TOOL to check.")
            assert first.returncode == 0, first.stderr[-3000:]
            assert first.reply.endswith("[marker-seen]")
            check_hooks(first, "SessionStart", "UserPromptSubmit", "Stop")
            report("session 1 (config.toml hooks, cold daemon)", first)
            # the tool call happened inside the turn
            assert any(r.text.count("function_call_output") for r in fake.responses())

            box.wait_for_daemon()
            box.paxm("__hook-control", "--flush")
            stored = [t for t in box.memory_texts() if marker in t]
            assert stored, box.memory_texts()
            joined = "\n".join(stored)
            assert "Noted, I will remember that." in joined  # Stop: last_assistant_message
            assert "Tool call: exec_command" in joined and "TOOL_RAN_OK" in joined  # from the rollout
            # backfill reads the same turn back from the real rollout
            rollouts = sorted((box.home / ".codex" / "sessions").rglob("*.jsonl"))
            turns = [t for f in rollouts for t in CodexIntegration().read_turns(f)]
            assert any(
                marker in t.event.prompt and any(m.role == "tool_call" for m in t.event.messages) for t in turns
            ), turns

            seen = len(fake.responses())
            second = box.turn(fake, "What naming scheme did we decide on for release branches?")
            assert second.returncode == 0, second.stderr[-3000:]
            text = first_request_text(fake, seen)
            developer = input_text(fake.responses()[seen], ("developer",))
            assert "<paxm-session-identity" in developer  # SessionStart context, as a developer item
            assert developer.count(ENVELOPE) == 1  # recalled once, nothing twice
            start = developer.index(ENVELOPE)
            assert marker in developer[start : developer.index("</paxm-recall>", start)]
            assert second.reply.endswith("[marker-seen]")
            check_hooks(second, "SessionStart", "UserPromptSubmit", "Stop")
            report("session 2 (config.toml hooks, recall)", second)
            for request in fake.responses():
                assert_no_garbage(input_text(request))
            # the ownership gate: while paxm owns codex, a plugin's call gets nothing
            question = {"prompt": "What naming scheme did we decide on for release branches?"}
            answered = json.loads(_hook_call(box, "UserPromptSubmit", question))
            assert ENVELOPE in answered["hookSpecificOutput"]["additionalContext"]
            assert _hook_call(box, "UserPromptSubmit", question, owner="codex-plugin") == ""
            del text, doctor
    finally:
        box.stop_daemon()
    box.paxm("uninstall", "--agent", "codex", "--yes")
    assert _config(box).read_text() == original  # hooks and their trust entries gone, byte for byte
    assert os.stat(_config(box)).st_mode & 0o777 == 0o600


def test_plugin_owns_the_hooks(box: kit.HarnessBox) -> None:
    marker = f"HERON-{uuid.uuid4().hex[:10]}"
    try:
        with box.fake(marker=marker) as fake:
            original = _users_config(box, fake)
            setup_box(box, fake)
            assert "client.py" in _config(box).read_text()
            out = box.paxm("setup", "--yes", "--force", "--agent", "codex", "--integration", "codex-plugin")
            box.generous_recall_budget()
            said = out.stdout + out.stderr
            assert "installed the Codex plugin paxm-memory@paxm" in said, said
            text = _config(box).read_text()
            assert "client.py" not in text  # paxm's config.toml hooks are gone: nothing fires twice
            assert '[plugins."paxm-memory@paxm"]' in text and "trusted_content_hash" in text

            first = box.turn(fake, f"Decision: the metrics dashboard lives at {marker}.example. RUN_TOOL now.")
            assert first.returncode == 0, first.stderr[-3000:]
            check_hooks(first, "SessionStart", "UserPromptSubmit", "PostToolUse", "Stop")
            report("session 1 (plugin)", first)
            box.wait_for_daemon()
            box.paxm("__hook-control", "--flush")
            assert any(marker in t and "TOOL_RAN_OK" in t for t in box.memory_texts()), box.memory_texts()

            seen = len(fake.responses())
            second = box.turn(fake, "Where does the metrics dashboard live?")
            assert second.returncode == 0, second.stderr[-3000:]
            developer = input_text(fake.responses()[seen], ("developer",))
            assert developer.count("<paxm-session-identity") == 1
            assert developer.count(ENVELOPE) == 1
            start = developer.index(ENVELOPE)
            assert marker in developer[start : developer.index("</paxm-recall>", start)]
            check_hooks(second, "SessionStart", "UserPromptSubmit", "Stop")
            report("session 2 (plugin, recall)", second)
            # the plugin's MCP server is registered with Codex (codex exec 0.171 does not put MCP
            # tools into the request itself, so this is as far as an offline turn can see)
            servers = box.cli("mcp", "list", check=False).stdout
            assert any(
                line.startswith("paxm ") and "mcp serve --agent codex" in line and "enabled" in line
                for line in servers.splitlines()
            ), servers

            # the ownership gate: a paxm-owned (config.toml) call is rejected while the plugin owns codex
            rejected = _hook_call(box, "UserPromptSubmit", {"prompt": "Where does the metrics dashboard live?"})
            assert rejected == ""
    finally:
        box.stop_daemon()
    box.paxm("uninstall", "--agent", "codex", "--yes")
    assert not (box.config.parent / "integrations" / "codex-plugin").exists()
    listed = box.cli("plugin", "list", check=False)
    assert "paxm-memory" not in listed.stdout.replace("paxm-memory@", "") or "installed" not in listed.stdout
    after = _config(box).read_text()
    assert "paxm-memory" not in after and "client.py" not in after
    assert after.strip() == original.strip()


def test_daemon_down_turn_completes_and_nothing_is_lost(box: kit.HarnessBox) -> None:
    marker = f"OSPREY-{uuid.uuid4().hex[:10]}"
    with box.fake(marker=marker) as fake:
        setup_box(box, fake)
        with kit.daemon_held_off(box):  # every hook takes the inbox path
            run = box.turn(fake, f"Remember: the staging database is called {marker}.")
        assert run.returncode == 0, run.stderr[-3000:]
        assert run.reply.endswith("[marker-seen]")
        text = first_request_text(fake, 0)
        assert_no_garbage(text)
        assert ENVELOPE not in text and "<paxm-session-identity" not in text
    check_hooks(run, "SessionStart", "UserPromptSubmit", "Stop")
    report("daemon down", run)
    box.paxm("__hook-control", "--status", check=False)
    import subprocess

    daemon = subprocess.Popen(
        [PAXM, "--config", str(box.config), "__hook-daemon", "--idle-timeout", "2m"],
        env=box.env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        box.wait_for_daemon()
        box.paxm("__hook-control", "--flush")
        assert any(marker in t for t in box.memory_texts())
    finally:
        box.stop_daemon()
        daemon.wait(timeout=30)


def test_hanging_provider_costs_at_most_the_client_ceiling(box: kit.HarnessBox) -> None:
    with box.fake() as fake:
        setup_box(box, fake)
        kit.add_hanging_provider(box)
        data = box.config_data()  # the default recall budget, not setup_box's generous one
        recall = data["agents"]["codex"]["hooks"]["user_input"]["recall"]
        recall.pop("timeout", None)
        recall["initial"].pop("timeout", None)
        box.write_config_data(data)
        box.paxm("remember", "--text", "The deploy window is Tuesday afternoon.")
        try:
            box.paxm("__hook-control", "--status", check=False)
            warm = box.turn(fake, "hello")  # starts the daemon
            assert warm.returncode == 0
            box.wait_for_daemon()
            run = box.turn(fake, "When is the deploy window?")
            assert run.returncode == 0, run.stderr[-3000:]
            assert run.reply.startswith("Noted")
            assert_no_garbage(first_request_text(fake, len(fake.responses()) - 1))
            check_hooks(run, "UserPromptSubmit", "Stop")
            assert 4_000 <= run.durations("UserPromptSubmit")[0] < HOOK_TIMEOUT_MS  # the client gave up at 5 s
            report("hanging provider", run)
        finally:
            box.stop_daemon()


def test_broken_config_turn_completes_clean(box: kit.HarnessBox) -> None:
    with box.fake() as fake:
        setup_box(box, fake)
        box.config.write_text(kit.BROKEN_CONFIG)
        run = _quiet_turn(box, fake)
    check_hooks(run, "SessionStart", "UserPromptSubmit", "Stop")
    report("broken config", run)
    kit.daemon_refused_config(box)


def test_paxm_removed_underneath_turn_completes(box: kit.HarnessBox, tmp_path: Path) -> None:
    """The hook commands point at a client that no longer exists (paxm's venv was deleted)."""
    with box.fake() as fake:
        setup_box(box, fake)
        gone = tmp_path / "deleted-venv"
        text = _config(box).read_text().replace(sys.executable, str(gone / "bin" / "python"))
        _config(box).write_text(text)
        # trust the rewritten commands, as a user who trusted paxm earlier would have them
        from paxm_integration_codex import config_toml

        doc, original = config_toml.read_config(_config(box))
        env = box.env()
        hooks = trust.list_hooks(str(box.installed.binary), box.workspace, env=env)
        assert hooks and all(not h.trusted for h in hooks)
        trust.record_trust(doc, hooks, lambda h: str(gone) in h.command)
        config_toml.write_config(_config(box), doc, original)
        run = _quiet_turn(box, fake)
    assert {h["hookEvent"] for h in run.hooks} >= {"UserPromptSubmit", "Stop"}
    for hook in run.hooks:
        assert hook["durationMs"] < HOOK_TIMEOUT_MS
    report("paxm removed underneath", run)


def test_doctor_says_whether_codex_trusts_paxm_hooks(box: kit.HarnessBox, monkeypatch: pytest.MonkeyPatch) -> None:
    from paxm_core.config.loader import load_config
    from paxm_core.integration import InstallContext

    with box.fake() as fake:
        setup_box(box, fake)
    for key, value in box.env().items():
        monkeypatch.setenv(key, value)
    integration = CodexIntegration()
    ctx = InstallContext(config=load_config(box.config))
    findings = integration.check(ctx)
    assert [f.level for f in findings] == ["ok", "ok"], findings
    assert "trusts paxm's 3 hook(s)" in findings[-1].message
    # a user edits one of paxm's hooks: Codex no longer trusts it, and doctor says so
    text = _config(box).read_text().replace('statusMessage = "paxm: recall"', 'statusMessage = "edited"')
    _config(box).write_text(text)
    findings = integration.check(ctx)
    assert findings[-1].level == "error" and "user_prompt_submit" in findings[-1].message, findings
    assert "setup --yes --force" in findings[-1].fix and "--agent codex" in findings[-1].fix
    # re-running setup records trust again
    integration.install(ctx)
    assert integration.check(ctx)[-1].level == "ok"
