"""Item 4 of issue 20: a project keeps paxm out (marker file or configured patterns)."""

from __future__ import annotations

import json
from pathlib import Path

from _hooks import flush, memories, run_client, write_config

from paxm_core.workspace import is_ignored


def test_marker_silences_the_hook_client_before_any_daemon(repo: dict[str, Path], tmp_path: Path) -> None:
    config = write_config(tmp_path / "cfg")
    (repo["main"] / ".paxm-ignore").write_text("")
    for where in ("main", "src"):
        for event, key in (("user_input", "prompt"), ("turn_end", "last_assistant_message")):
            payload = {"session_id": "o1", "cwd": str(repo[where]), key: "secret plan codename heron-4410"}
            out = run_client(config, "claude", event, json.dumps(payload).encode())
            assert out.returncode == 0 and out.stdout == b"" and out.stderr == b""
    hooks = config.parent / "hooks"
    # nothing spooled, no daemon started, nothing stored
    assert not (hooks / "capture.sqlite").exists() and not (hooks / "paxm-hook.lock").exists()
    assert not (config.parent / "memory.sqlite").exists() or not memories(config)


def test_configured_patterns_keep_a_project_out_on_the_daemon_path(
    repo: dict[str, Path], tmp_path: Path, daemon_cleanup: list[Path]
) -> None:
    def ignore(cfg: object) -> None:
        cfg.workspace.ignore = [str(repo["main"].parent / "ma*")]  # type: ignore[attr-defined]

    config = write_config(tmp_path / "cfg", mutate=ignore)
    daemon_cleanup.append(config)
    # a project that is not ignored gets captured (so the daemon is up and working)
    kept = {"session_id": "k", "cwd": str(repo["outside"]), "prompt": "Decision: heron-4411 ships Friday"}
    assert run_client(config, "claude", "user_input", json.dumps(kept).encode()).returncode == 0
    flush(config)
    for where in ("src", "wt"):  # the worktree resolves to the ignored project root too
        ask = {"session_id": "o2", "cwd": str(repo[where]), "prompt": "Decision: heron-4411 stays private"}
        out = run_client(config, "claude", "user_input", json.dumps(ask).encode())
        assert out.returncode == 0 and out.stdout == b"", out.stdout
    flush(config)
    texts = [m["text"] for m in memories(config)]
    assert any("ships Friday" in t for t in texts)
    assert not any("stays private" in t for t in texts)


def test_is_ignored_rules(tmp_path: Path) -> None:
    project = tmp_path / "p" / "deep"
    project.mkdir(parents=True)
    assert not is_ignored(str(project))
    assert is_ignored(str(project), [str(tmp_path / "p")])
    assert is_ignored(str(project), [str(tmp_path) + "/*"])
    assert not is_ignored(str(project), [str(tmp_path / "q*")])
    (tmp_path / "p" / ".paxm-ignore").write_text("")
    assert is_ignored(str(project)) and not is_ignored("")
