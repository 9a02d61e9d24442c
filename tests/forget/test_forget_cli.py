"""``paxm forget`` on the command line: preview, confirmation (real pty / piped stdin), ``--json``."""

from __future__ import annotations

import io
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

from paxm_contracttest.sandbox import CLI_ENTRY as ENTRY
from paxm_contracttest.sandbox import run_paxm as paxm
from paxm_core.capture import _inbox
from paxm_core.config import load_config

SECRET = "the staging quokka token is kept in the blue vault"


@pytest.fixture
def cfg(tmp_path: Path) -> Path:
    path = tmp_path / "cfg" / "config.yaml"
    path.parent.mkdir()
    path.write_text(
        f"""version: 1
identity: {{user_id: alice}}
providers:
  sqlite: {{type: sqlite, enabled: true, path: {tmp_path / "cfg" / "memory.sqlite"}}}
"""
    )
    # stored in-process (quicker than three CLI runs); the commands under test run as subprocesses
    from paxm_core.runtime import Runtime

    with Runtime.load(str(path), telemetry=None) as runtime:
        for text in (SECRET, "deploys go through the wombat pipeline", "a second quokka token, rotated monthly"):
            runtime.tools.remember(text, source="test")
    return path


def texts(cfg: Path) -> list[str]:
    with sqlite3.connect(cfg.parent / "memory.sqlite") as conn:
        return sorted(r[0] for r in conn.execute("SELECT text FROM memories"))


def test_piped_stdin_without_yes_refuses_and_deletes_nothing(cfg: Path) -> None:
    before = texts(cfg)
    result = paxm(cfg, "forget", "--query", "quokka token", stdin="y\n")
    assert result.returncode == 1
    assert "refusing to forget without confirmation: stdin is not a terminal; re-run with --yes" in result.stderr
    assert "Memories to delete (2):" in result.stdout
    assert "sqlite  " in result.stdout and SECRET in result.stdout
    assert texts(cfg) == before


def test_preview_and_confirmation_under_a_real_pty(cfg: Path) -> None:
    pexpect = pytest.importorskip("pexpect")

    def run(answer: str) -> tuple[int, str]:
        child = pexpect.spawn(
            sys.executable,
            ["-c", ENTRY, "--config", str(cfg), "forget", "--query", "staging quokka"],
            encoding="utf-8",
            timeout=60,
        )
        screen = io.StringIO()
        child.logfile_read = screen
        child.expect_exact("Delete these for good? [y/N]: ")
        child.sendline(answer)
        child.expect(pexpect.EOF)
        child.close()
        return int(child.exitstatus), screen.getvalue()

    status, screen = run("n")
    assert status == 1
    assert "Memories to delete (1):" in screen
    assert SECRET in screen
    assert "aborted; nothing was deleted" in screen
    assert SECRET in texts(cfg)
    status, screen = run("y")
    assert status == 0, screen
    assert "sqlite: deleted: " in screen
    assert SECRET not in texts(cfg)
    assert len(texts(cfg)) == 2


def test_json_shape(cfg: Path) -> None:
    result = paxm(cfg, "forget", "--query", "quokka token", "--yes", "--json")
    assert result.returncode == 0, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    assert set(report) == {"mode", "query", "hits", "providers", "linked", "queue", "search_errors", "not_found", "ok"}
    assert report["mode"] == "query" and report["ok"] is True
    assert sorted(h["first_line"] for h in report["hits"]) == sorted([SECRET, "a second quokka token, rotated monthly"])
    (entry,) = report["providers"]
    assert entry["provider"] == "sqlite" and entry["status"] == "ok"
    assert sorted(entry["deleted"]) == sorted(h["id"] for h in report["hits"])
    assert entry["not_found"] == entry["accepted"] == entry["failed"] == entry["unsupported"] == []
    assert set(report["queue"]) == {"path", "copies", "removed", "error"}
    assert texts(cfg) == ["deploys go through the wombat pipeline"]


def test_an_unknown_id_is_not_found_and_exits_1(cfg: Path) -> None:
    result = paxm(cfg, "forget", "no-such-memory", "--yes", "--json")
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert report["not_found"] == ["no-such-memory"] and report["ok"] is False
    assert report["providers"][0]["not_found"] == ["no-such-memory"]
    assert "not found anywhere: no-such-memory" in result.stderr
    assert len(texts(cfg)) == 3


def test_forget_by_provider_slash_id_as_remember_prints_it(cfg: Path) -> None:
    stored = paxm(cfg, "remember", "--text", "forget me: the otter password")
    ref = stored.stdout.strip().removeprefix("stored memory: ")
    assert ref.startswith("sqlite/")
    result = paxm(cfg, "forget", ref, "--yes")
    assert result.returncode == 0, result.stderr
    assert f"sqlite: deleted: {ref.split('/', 1)[1]}" in result.stdout
    assert "forget me: the otter password" not in texts(cfg)


def test_nothing_matching_is_said_and_deletes_nothing(cfg: Path) -> None:
    result = paxm(cfg, "forget", "--query", "platypus")
    assert result.returncode == 0
    assert "nothing matches 'platypus'; nothing was deleted" in result.stdout
    assert len(texts(cfg)) == 3


def test_usage_errors(cfg: Path) -> None:
    both = paxm(cfg, "forget", "some-id", "--query", "x")
    assert both.returncode == 1 and "give memory IDs or --query TEXT" in both.stderr
    neither = paxm(cfg, "forget")
    assert neither.returncode == 1 and "give memory IDs or --query TEXT" in neither.stderr
    unknown = paxm(cfg, "forget", "--query", "quokka", "--provider", "nope", "--yes")
    assert unknown.returncode == 1 and "provider(s) not enabled: nope (enabled: sqlite)" in unknown.stderr
    assert len(texts(cfg)) == 3


def test_a_raw_inbox_payload_matching_the_query_is_emptied(cfg: Path) -> None:
    # the hook client stored this while no daemon ran: it would become a memory on the next drain
    config = load_config(str(cfg))
    raw = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": "remember: the quokka token is 1234"})
    assert _inbox.append_raw(config.capture_queue_path, "evt_" + "1" * 32, "claude", "user_input", raw)
    result = paxm(cfg, "forget", "--query", "quokka token", "--yes", "--json")
    assert result.returncode == 0, result.stderr
    copies = json.loads(result.stdout)["queue"]["copies"]
    assert [(c["kind"], c["reason"]) for c in copies] == [("inbox", "text")]
    assert "quokka token is 1234" in copies[0]["first_line"]
    with sqlite3.connect(config.capture_queue_path) as conn:
        assert conn.execute("SELECT state, length(raw), last_error FROM capture_inbox").fetchall() == [
            ("done", 0, "forgotten")
        ]


def test_forget_is_not_an_agent_tool() -> None:
    from paxm_core.mcp_server import TOOLS

    assert not any("forget" in name or "delete" in name for name in TOOLS)
