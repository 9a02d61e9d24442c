"""``paxm_contracttest.harness.kit``: the descriptions, one turn's plumbing, and CI's no-skip rule (no real binary)."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from _pytest.outcomes import Failed, Skipped

from paxm_contracttest.harness.harnesses import CLAUDE_CURRENT, HARNESSES, PI_BUILDS, QWEN
from paxm_contracttest.harness.kit import Harness, HarnessBox, Installed, capture_then_recall, install, model_inputs

#: a stand-in harness: sends its prompt to the Chat Completions URL in $FAKE_URL, prints the JSON answer
FAKE_BINARY = """\
import json, os, sys, urllib.request
body = {"tools": [{"type": "function", "function": {"name": "bash"}}],
        "messages": [{"role": "user", "content": sys.argv[-1]}]}
req = urllib.request.Request(os.environ["FAKE_URL"] + "/chat/completions", json.dumps(body).encode(),
                             {"Content-Type": "application/json"})
answer = json.load(urllib.request.urlopen(req, timeout=10))
print(json.dumps({"result": answer["choices"][0]["message"]["content"], "cwd": os.getcwd()}))
"""


def test_every_description_is_complete_and_named_once() -> None:
    every = list({h.cache: h for h in (*HARNESSES.values(), CLAUDE_CURRENT, *PI_BUILDS.values())}.values())
    assert sorted(HARNESSES) == sorted(
        ["claude", "codex", "opencode", "pi", "qwen", "kimi", "cline", "kilo", "gemini", "copilot"]
    )
    assert len(every) == 13  # ten harnesses, a second Claude Code release, two more Pi builds
    for harness in every:
        assert "{prompt}" in harness.argv, harness.name
        assert harness.api in ("anthropic", "responses", "chat", "chat-tools", "gemini"), harness.name
        assert all("@" in spec.lstrip("@") for spec in harness.packages), harness.packages  # pinned
        assert harness.native_config is not None, harness.name


def _stand_in(tmp_path: Path) -> tuple[Harness, Installed]:
    script = tmp_path / "bin" / "stand-in"
    script.parent.mkdir()
    script.write_text(f"#!{sys.executable}\n{FAKE_BINARY}")
    script.chmod(0o755)
    harness = replace(
        QWEN,
        name="stand-in",
        argv=("--ask", "{prompt}"),
        env={"FAKE_URL": "{url}"},
        prepare=None,
        reply=lambda _box, stdout: str(json.loads(stdout)["result"]),
    )
    return harness, Installed(script)


def test_a_turn_runs_the_binary_in_the_workspace_against_the_fake(tmp_path: Path) -> None:
    harness, installed = _stand_in(tmp_path)
    box = HarnessBox(tmp_path / "box", harness, installed)
    with box.fake(marker="plum-7") as fake:
        turn = box.turn(fake, "remember plum-7")
        assert turn.returncode == 0, turn.stderr
        assert turn.reply.endswith("[marker-seen]")
        assert json.loads(turn.stdout)["cwd"] == str(box.workspace)
        assert model_inputs(fake) == ["remember plum-7"]
        assert not box.recalled(model_inputs(fake)[0], "plum-7")  # no envelope: nothing recalled
        wrapped = '&lt;paxm-recall version="1" mode="passive"&gt;plum-7&lt;/paxm-recall&gt;'
        assert box.recalled(wrapped, "plum-7")  # Qwen's escaped spelling
    assert str(installed.binary.parent) in box.env()["PATH"].split(os.pathsep)[0]


@pytest.mark.parametrize("ci", ["", "1"])
def test_a_missing_npm_skips_locally_and_fails_in_ci(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ci: str) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no npm anywhere
    monkeypatch.setenv("PAXM_TEST_NPM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("CI", ci) if ci else monkeypatch.delenv("CI", raising=False)
    with pytest.raises(Failed if ci else Skipped):
        install(replace(QWEN, cache="never-installed-0.0.0"))


def test_capture_then_recall_fails_when_the_harness_never_reaches_paxm(tmp_path: Path) -> None:
    # the stand-in runs no hooks: nothing is captured, so the shared flow must fail, not pass vacuously
    harness, installed = _stand_in(tmp_path)
    box = HarnessBox(tmp_path / "box", harness, installed)
    box.paxm("setup", "--yes", "--agent", "qwen", "--provider", "sqlite")
    daemon = box.start_daemon()
    try:
        with box.fake(marker="plum-7") as fake, pytest.raises(AssertionError):
            capture_then_recall(box, fake, marker="plum-7")
    finally:
        box.stop_daemon(daemon)
