"""End to end with the real Gemini CLI, Qwen Code, Copilot CLI, Kimi Code and Cline binaries (and Kilo Code).

One flow per guarantee, parametrized by harness, on the real-binary kit
(``paxm_contracttest.harness.kit``; the harnesses' descriptions are in ``harnesses``); each
harness runs offline against its fake model server on 127.0.0.1:

* a decision made in a turn that runs the shell tool is captured, and recalled in every model
  request of the next session; uninstall gives the user's own harness config back;
* a turn completes when paxm goes away underneath it (uninstalled, or its interpreter removed;
  Kilo Code joins the uninstalled case, its other flows run in the OpenCode integration's suite);
* a decision Claude Code captured is recalled by the harness.

What only one harness does (how it escapes the envelope, what its episode holds) is a
:class:`Case` of its own below.  Wall times print as ``LATENCY`` lines (run with ``-s``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from paxm_contracttest.harness import npm_cache_dir
from paxm_contracttest.harness.disposable_python import DisposablePython
from paxm_contracttest.harness.harnesses import (
    CLAUDE,
    CLINE,
    CLINE_USER_PLUGIN,
    COPILOT,
    COPILOT_USER_HOOKS,
    GEMINI,
    GEMINI_SETTINGS,
    KILO,
    KIMI,
    KIMI_CONFIG,
    QWEN,
    QWEN_SETTINGS,
)
from paxm_contracttest.harness.kit import (
    Harness,
    HarnessBox,
    Installed,
    Recall,
    Turn,
    capture_then_recall,
    cross_harness,
    installed_fixture,
    model_requests,
    ok,
    paxm_removed_midway,
)
from paxm_contracttest.model_input import assert_no_hook_noise

pytestmark = [pytest.mark.harness, pytest.mark.slow]

Steps = list[Any]


def _returned(turn: Turn) -> None:
    """Kimi Code's check of a turn: it finished (its reply is the last line it printed)."""
    assert turn.returncode == 0, turn.stderr[-4000:]


def _nothing(box: HarnessBox) -> None:
    """No harness-specific step."""


def _no_more(box: HarnessBox, seen: Recall, steps: Steps) -> None:
    """No harness-specific check of the capture-and-recall run."""


@dataclass(frozen=True)
class Case:
    """What one harness's end-to-end run checks beyond the shared flow.

    :param harness: the pinned harness.
    :param restored: after ``paxm uninstall``, the user's own harness config is as it was.
    :param recalled: more checks of the capture-and-recall run (episode text, escaping).
    :param check: the check of a finished turn.
    :param noise: strings of the harness's own error output that must never reach the model.
    :param budget: the recall budget the hooks get (Cline allows a plugin hook only 3 s).
    :param warm: starts paxm's hook daemon before the first turn, where the harness needs it.
    :param wait: seconds a turn may wait for its first model request (Kilo starts slowly).
    """

    harness: Harness
    restored: Callable[[HarnessBox], None]
    recalled: Callable[[HarnessBox, Recall, Steps], None] = _no_more
    check: Callable[[Turn], None] = ok
    noise: tuple[str, ...] = ()
    budget: str = "2s"
    warm: Callable[[HarnessBox], None] = _nothing
    wait: float = 120


# -- what each harness checks of its own ------------------------------------------------------


def _stored(box: HarnessBox, marker: str) -> list[str]:
    return [t for t in box.memory_texts() if marker in t]


def _gemini_recalled(box: HarnessBox, seen: Recall, steps: Steps) -> None:
    # one episode: the prompt (BeforeAgent) and the reply (AfterAgent's prompt_response)
    stored = _stored(box, seen.marker)
    assert any("Gemini CLI user input:" in t and "Noted, I will remember that." in t for t in stored), stored
    assert not any("TOOL_RAN_OK" in t for t in box.memory_texts())
    assert "<paxm-recall" not in steps[0].text  # it arrives escaped, as documented
    assert "<hook_context>" in steps[0].user_text()  # Gemini's own wrapper around hook context


def _gemini_restored(box: HarnessBox) -> None:
    assert json.loads((box.home / ".gemini" / "settings.json").read_text()) == GEMINI_SETTINGS


def _qwen_recalled(box: HarnessBox, seen: Recall, steps: Steps) -> None:
    assert not any("TOOL_RAN_OK" in t for t in box.memory_texts())
    assert "<paxm-recall" not in json.dumps(steps[0].body)  # it arrives escaped, as documented


def _qwen_restored(box: HarnessBox) -> None:
    """The settings are the user's again, plus the ``$version`` Qwen itself adds."""
    data = json.loads((box.home / ".qwen" / "settings.json").read_text())
    data.pop("$version", None)
    assert data == QWEN_SETTINGS


def _copilot_recalled(box: HarnessBox, seen: Recall, steps: Steps) -> None:
    # one episode: the prompt (userPromptSubmitted) and the reply read from events.jsonl (agentStop)
    stored = _stored(box, seen.marker)
    assert any(
        "GitHub Copilot CLI user input:" in t and "assistant response:\nNoted, I will remember that." in t
        for t in stored
    ), box.memory_texts()
    assert not any("TOOL_RAN_OK" in t for t in box.memory_texts())
    box.paxm("__hook-control", "--flush")
    replies = [t for t in box.memory_texts() if "which naming scheme" in t]
    assert any("[marker-seen]" in t for t in replies), replies  # the warm daemon's read of the reply too


def _copilot_restored(box: HarnessBox) -> None:
    assert not (box.home / ".copilot" / "hooks" / "paxm.json").exists()
    user_files = {"hooks/mine.json": COPILOT_USER_HOOKS, "settings.json": '{"model": "fake-model"}\n'}
    for name, text in user_files.items():
        assert (box.home / ".copilot" / name).read_text() == text, name


def _kimi_recalled(box: HarnessBox, seen: Recall, steps: Steps) -> None:
    assert "[marker-seen]" in seen.second.stdout  # the reply is read from the session's wire.jsonl


def _kimi_restored(box: HarnessBox) -> None:
    """The user's config, pointed at the last fake model before setup, is as it was."""
    assert (box.home / ".kimi-code" / "config.toml").read_text() == KIMI_CONFIG.replace("{url}", box.fake_url)


def _cline_recalled(box: HarnessBox, seen: Recall, steps: Steps) -> None:
    assert any("TOOL_RAN_OK" in t for t in box.memory_texts())  # afterTool captured the result


def _cline_restored(box: HarnessBox) -> None:
    plugins = box.home / ".cline" / "plugins"
    assert sorted(p.name for p in plugins.iterdir()) == ["mine.js"]
    assert (plugins / "mine.js").read_text() == CLINE_USER_PLUGIN


def _cline_warm(box: HarnessBox) -> None:
    """Start paxm's hook daemon before the first run (Cline allows a plugin hook only 3 s)."""
    from paxm_integration_cline.plugin import plugin_file

    plugin = (box.home / ".cline" / "plugins" / "paxm.js").read_text()
    settings: dict[str, Any] = plugin_file().embedded_settings(plugin) or {}
    payload = {"hook_event_name": "session_start", "session_id": "warm-up", "cwd": str(box.workspace)}
    argv = settings["commands"]["session_start"]
    subprocess.run(argv, input=json.dumps(payload), env=box.env(), capture_output=True, text=True, timeout=60)
    box.wait_for_daemon()


def _kilo_ok(turn: Turn) -> None:
    """Kilo's check of a turn: :func:`ok`, and paxm's plugin did not make it wait for its config-dir dependency."""
    ok(turn)
    assert "dependency install failed" not in turn.stderr, turn.stderr[-4000:]


def _kilo_restored(box: HarnessBox) -> None:
    """paxm's plugin is gone; Kilo's own config stays."""
    assert KILO.native_config is not None
    plugin = KILO.native_config(box)
    assert not plugin.exists()
    assert (plugin.parents[1] / "kilo.json").is_file()


CASES = {
    case.harness.name: case
    for case in (
        Case(GEMINI, _gemini_restored, _gemini_recalled, noise=("No such file",)),
        Case(QWEN, _qwen_restored, _qwen_recalled),
        Case(COPILOT, _copilot_restored, _copilot_recalled, noise=("No such file",)),
        Case(KIMI, _kimi_restored, _kimi_recalled, check=_returned),
        Case(CLINE, _cline_restored, _cline_recalled, budget="1s", warm=_cline_warm),
        Case(KILO, _kilo_restored, check=_kilo_ok, wait=150),
    )
}

every = installed_fixture(GEMINI, QWEN, COPILOT, KIMI, CLINE)
#: harnesses whose hooks stay behind in their config after ``paxm uninstall`` when paxm's files are gone
uninstalled = installed_fixture(QWEN, KIMI, CLINE, KILO)
#: harnesses run with paxm in a disposable venv whose interpreter is deleted under them
interpreter_removed = installed_fixture(GEMINI, COPILOT)
claude = installed_fixture(CLAUDE)


@pytest.fixture
def paxm_unset_env() -> tuple[str, ...]:
    """The harnesses' variables a developer may have set."""
    return (
        *("PAXM_GEMINI_SETTINGS", "GEMINI_CLI_HOME", "PAXM_QWEN_SETTINGS", "QWEN_HOME"),
        *("PAXM_COPILOT_HOOKS", "COPILOT_HOME", "PAXM_KIMI_CONFIG", "KIMI_CODE_HOME"),
        *("PAXM_CLINE_PLUGINS_DIR", "PAXM_CLINE_HOOKS_DIR", "CLINE_HOOKS_DIR", "CLINE_DIR"),
        *("PAXM_KILO_CONFIG_DIR", "KILO_CONFIG_DIR"),
    )


def cline_processes() -> list[int]:
    """PIDs of running processes started from the pinned cline install (``/proc`` scan)."""
    root = str(npm_cache_dir() / CLINE.cache).encode()
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(root in part for part in cmdline[:2]):
            out.append(int(entry.name))
    return out


@pytest.fixture(autouse=True)
def no_cline_left_behind() -> Iterator[None]:
    """Every test ends with no Cline process of its own alive (Cline's hub daemon outlives runs;
    every Cline run uses ``CLINE_SESSION_BACKEND_MODE=local``)."""
    before = set(cline_processes())
    yield
    leftover = [pid for pid in cline_processes() if pid not in before]
    for pid in leftover:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    assert not leftover, f"cline processes left running: {leftover}"


def _box(installed: tuple[Harness, Installed], tmp_path: Path) -> tuple[Case, HarnessBox]:
    return CASES[installed[0].name], HarnessBox(tmp_path / "box", *installed)


def _requests(fake: Any) -> list[Any]:
    """Every request the fake model got, side requests too."""
    return list(fake.generations() if hasattr(fake, "generations") else fake.completions())


def _garbage_free(case: Case, fake: Any) -> None:
    """No paxm noise and only whole envelopes in every request."""
    open_tag, close_tag = case.harness.envelope
    for request in _requests(fake):
        assert_no_hook_noise(
            request.user_text(), extra=case.noise, open_tag=open_tag.split(" ")[0], close_tag=close_tag
        )


def test_decision_with_a_tool_call_is_recalled_in_every_request_of_the_next_session(
    every: tuple[Harness, Installed], tmp_path: Path
) -> None:
    case, box = _box(every, tmp_path)
    name, envelope = case.harness.name, case.harness.envelope[0]
    marker = f"KESTREL-{uuid.uuid4().hex[:10]}"
    with box.fake(marker=marker) as fake:
        box.point_at(fake.url)
        box.setup()
        box.generous_recall_budget(case.budget)
        try:
            case.warm(box)
            seen = capture_then_recall(
                box,
                fake,
                marker=marker,
                decision="RUN_TOOL: Decision: release branches are named {marker}-<version>.",
                question="RUN_TOOL: which naming scheme did we decide on for release branches?",
                check=case.check,
            )
            first_steps = model_requests(fake)[: len(seen.first_inputs)]
            assert any(s.has_tool_result for s in first_steps)  # the turn ran the shell tool
            print(f"LATENCY {name} session 1 (tool call, capture): wall_s={seen.first.wall:.2f}")
            steps = model_requests(fake)[len(seen.first_inputs) :]
            assert len(steps) >= 2 and steps[-1].has_tool_result, [s.user_text()[-300:] for s in steps]
            for step in steps:  # including the request after the tool call
                assert box.recalled(step.user_text(), marker), step.user_text()[-3000:]
                assert step.user_text().count(envelope) == 1
            case.recalled(box, seen, steps)
            print(f"LATENCY {name} session 2 (recall on every step): wall_s={seen.second.wall:.2f}")
            _garbage_free(case, fake)
        finally:
            box.stop_daemon()
    box.uninstall()
    case.restored(box)


def test_turn_completes_with_paxm_uninstalled_underneath_it(
    uninstalled: tuple[Harness, Installed], tmp_path: Path
) -> None:
    case, box = _box(uninstalled, tmp_path)
    with box.fake(hang=4.0) as fake:
        box.point_at(fake.url)
        box.setup()
        try:

            def remove() -> None:  # paxm goes away under the running turn: hooks and config, then the config dir
                box.uninstall()
                box.config.rename(box.config.with_suffix(".gone"))

            run = paxm_removed_midway(box, fake, remove, wait=case.wait)
            case.check(run)
            assert "Noted, I will remember that." in run.stdout
            _garbage_free(case, fake)
        finally:
            box.stop_daemon()
    case.restored(box)


#: the SessionStart hook command in the installed hooks file, and a string of paxm's hooks there
SESSION_START: dict[str, tuple[Callable[[dict[str, Any]], str], str]] = {
    "gemini": (lambda hooks: hooks["hooks"]["SessionStart"][-1]["hooks"][0]["command"], "paxm-BeforeAgent"),
    "copilot": (lambda hooks: hooks["hooks"]["sessionStart"][0]["bash"], "sessionStart"),
}


def test_turns_complete_with_paxm_interpreter_removed_underneath_them(
    interpreter_removed: tuple[Harness, Installed], tmp_path: Path
) -> None:
    case, box = _box(interpreter_removed, tmp_path)
    assert case.harness.native_config is not None
    hooks = case.harness.native_config(box)
    python = DisposablePython(tmp_path / "paxm-venv")
    agent = case.harness.name  # the short alias: ``--agent gemini`` / ``--agent copilot``
    done = python.paxm(box.config, "setup", "--yes", "--agent", agent, "--provider", "sqlite", env=box.env())
    assert done.returncode == 0, done.stderr
    assert str(python.python) in hooks.read_text()  # the hooks run the disposable interpreter
    # start the hook daemon the way the harness would (a cold one is not waited for: the turn goes on without paxm)
    session_start, ours = SESSION_START[case.harness.name]
    start = session_start(json.loads(hooks.read_text()))
    subprocess.run(start, shell=True, input=b"{}", env=box.env(), capture_output=True, timeout=60, check=True)
    box.wait_for_daemon()
    paxm_tag = case.harness.envelope[0].split("paxm-")[0] + "paxm-"  # ``<paxm-``, or ``&lt;paxm-`` escaped
    try:
        with box.fake(hang=4.0) as fake:

            def remove() -> None:
                # the hooks ran with the disposable interpreter: SessionStart's paxm context arrived
                assert paxm_tag in _requests(fake)[0].user_text(), _requests(fake)[0].user_text()[-2000:]
                # paxm goes away under the running turn: its interpreter, then its config
                python.remove()
                box.config.rename(box.config.with_suffix(".gone"))

            ok(paxm_removed_midway(box, fake, remove))
            # the next turn starts with stale hooks whose interpreter is gone: it runs as without paxm
            fake.hang = 0.0
            seen = len(_requests(fake))
            ok(box.turn(fake, "Hello again"))
            assert _requests(fake)[seen:]
            _garbage_free(case, fake)
            assert paxm_tag not in _requests(fake)[-1].user_text()
    finally:
        box.stop_daemon()
    assert ours in hooks.read_text()  # the stale hooks were there all along


def test_decision_captured_by_claude_code_is_recalled(
    every: tuple[Harness, Installed], claude: tuple[Harness, Installed], tmp_path: Path
) -> None:
    case, box = _box(every, tmp_path)
    first = HarnessBox(box.root, *claude)
    first.setup(case.harness.agent)
    first.generous_recall_budget()
    box.generous_recall_budget(case.budget)
    marker = f"HERON-{uuid.uuid4().hex[:10]}"
    try:
        case.warm(box)
        run, inputs = cross_harness(first, box, marker=marker, check=case.check)
        assert all(box.recalled(text, marker) for text in inputs), [t[-2000:] for t in inputs]
        assert "[marker-seen]" in run.stdout
        print(f"LATENCY {case.harness.name} turn recalling a Claude Code decision: wall_s={run.wall:.2f}")
    finally:
        box.stop_daemon()
