"""``paxm history`` and ``paxm logs`` as a user runs them (real subprocesses)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from paxm_core.config import load_config
from paxm_core.telemetry import Telemetry
from paxm_core.telemetry.render import format_log_line, render_history

PAXM = [sys.executable, "-c", "from paxm_core.cli import main; main()"]


def paxm(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PAXM, "--config", str(config), *args], capture_output=True, text=True, timeout=60, env=os.environ.copy()
    )


def seeded(tmp_path: Path) -> tuple[Path, Telemetry]:
    config = tmp_path / "cfg" / "config.yaml"
    config.parent.mkdir()
    config.write_text("version: 1\n")
    t = Telemetry(load_config(config))
    assert t.settings.dir == config.parent / "state"  # non-default config keeps its state beside it
    t.record({"kind": "recall", "source": "cli", "command": "recall", "profile": "default", "hit_count": 2,
              "duration_ms": 12, "success": True})  # fmt: skip
    t.record({"kind": "remember", "source": "mcp", "command": "remember", "profile": "stm", "ref_count": 1,
              "item_count": 1, "success": True})  # fmt: skip
    t.record({"kind": "hook_write", "source": "hook", "target": "claude", "hook_event": "turn_end",
              "session_key": "s 1", "success": False, "error": 'bad "quote"'})  # fmt: skip
    return config, t


def test_logs_json_and_text(tmp_path: Path) -> None:
    config, _ = seeded(tmp_path)
    out = paxm(config, "logs", "--tail", "2", "--json")
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert [e["kind"] for e in lines] == ["remember", "hook_write"]
    text = paxm(config, "logs").stdout.splitlines()
    assert len(text) == 3
    stamp, status, kind, *rest = text[0].split(" ")
    assert stamp.endswith("Z") and len(stamp) == 20 and (status, kind) == ("OK", "recall")
    assert rest == ["command=recall", "source=cli", "profile=default", "hits=2", "duration_ms=12"]
    assert text[2].split(" ", 1)[1] == (
        'ERROR hook_write source=hook target=claude hook_event=turn_end session_key="s 1" error="bad \\"quote\\""'
    )
    assert paxm(config, "logs", "--tail", "0").stdout == ""


def test_logs_rejects_negative_tail(tmp_path: Path) -> None:
    config, _ = seeded(tmp_path)
    out = paxm(config, "logs", "--tail", "-1")
    assert out.returncode == 1 and out.stderr.strip() == "Error: logs --tail must be non-negative"


def test_history_json_and_text(tmp_path: Path) -> None:
    config, t = seeded(tmp_path)
    out = paxm(config, "history", "--json")
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["days"] == 7
    assert summary["totals"]["events"] == 3 and summary["totals"]["recalls"] == 1
    assert summary["totals"]["writes"] == 2 and summary["totals"]["errors"] == 1
    assert [row["name"] for row in summary["profiles"]] == ["default", "stm"]
    assert summary["agents"] == [{"name": "claude", "counter": summary["agents"][0]["counter"]}]
    assert summary["storage"]["events_file"] == str(t.settings.events_path)
    assert summary["storage"]["max_event_files"] == 3 and summary["storage"]["event_bytes"] > 0
    text = paxm(config, "history").stdout
    assert "status: attention" in text
    for title in ("recall funnel", "write pipeline", "by day", "by profile", "by agent", "by hook"):
        assert f"\n{title}\n" in text


def test_history_quiet_without_events(tmp_path: Path) -> None:
    config = tmp_path / "c" / "config.yaml"
    config.parent.mkdir()
    config.write_text("version: 1\n")
    out = paxm(config, "history")
    assert out.returncode == 0, out.stderr
    assert "status: quiet" in out.stdout and "no telemetry events recorded yet" in out.stdout
    assert not (config.parent / "state").exists()  # reading creates nothing


def test_logs_follow_streams_new_events_until_interrupted(tmp_path: Path) -> None:
    config, t = seeded(tmp_path)
    with subprocess.Popen(
        [*PAXM, "--config", str(config), "logs", "--follow", "--tail", "1", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
        # SIGINT as a terminal's Ctrl-C delivers it: a runner started in the background
        # (`cmd &` in a script, as CI may be) passes SIGINT on ignored, and Python then installs
        # no KeyboardInterrupt handler in the child
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    ) as proc:
        try:
            assert proc.stdout is not None
            first = json.loads(proc.stdout.readline())
            assert first["kind"] == "hook_write"
            time.sleep(0.3)  # the follower has opened the log
            t.record({"kind": "recall", "profile": "live", "success": True})
            assert json.loads(proc.stdout.readline())["profile"] == "live"
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=30) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


event_values = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(), st.lists(st.integers()))


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.sampled_from(["kind", "source", "error", "hit_count", "time", "x", "skipped"]), event_values))
def test_log_line_renders_any_event(event: dict[str, Any]) -> None:
    line = format_log_line(event)
    assert "\n" not in line
    assert line.split(" ")[1] in ("OK", "SKIP", "ERROR")


@settings(max_examples=50, deadline=None)
@given(st.text(min_size=1))
def test_query_text_never_reaches_the_log(tmp_path_factory: Any, text: str) -> None:
    # The "xq…qx" frame keeps the query from matching field names or hex hashes by chance.
    query = f"xq{text}qx"
    state = tmp_path_factory.mktemp("fuzz")
    t = Telemetry(load_config(state / "config.yaml"))
    t.on_recall(query=query, profile="", source="cli", command="recall", result=None, duration_ms=1)
    t.record({"kind": "hook_recall", "query": query, "success": True})
    raw = t.settings.events_path.read_text(encoding="utf-8") + t.settings.metrics_path.read_text(encoding="utf-8")
    assert query.strip() not in raw and json.dumps(query.strip())[1:-1] not in raw
    for event in map(json.loads, t.settings.events_path.read_text(encoding="utf-8").splitlines()):
        assert event["query_length"] == len(query.strip())
    assert "quiet" not in render_history(t.history(1))
