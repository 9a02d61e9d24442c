"""Item 8 of issue 13: every installed hook command exits 0 and prints nothing when paxm is gone."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

from paxm_core.passive.client_command import client_path, hook_command, hook_command_line, interpreter_path

PROMPT = json.dumps({"session_id": "f1", "cwd": "/w", "prompt": "hello"}).encode()


def _run_line(line: str) -> subprocess.CompletedProcess[bytes]:
    # Harnesses run the command string through a shell, as here.
    return subprocess.run(["/bin/sh", "-c", line], input=PROMPT, capture_output=True, timeout=30)


def test_the_command_still_runs_the_client(tmp_path: Path, daemon_cleanup: list[Path]) -> None:
    daemon_cleanup.append(tmp_path / "c.yaml")  # the client starts a daemon: leave none behind
    line = hook_command_line(tmp_path / "c.yaml", "claude", "UserPromptSubmit")
    out = _run_line(line)
    assert out.returncode == 0  # a missing config: the client itself fails open
    assert str(client_path()) in shlex.split(line) and interpreter_path() in shlex.split(line)


def test_removed_client_exits_0_silently(tmp_path: Path) -> None:
    gone = tmp_path / "site-packages" / "paxm_core" / "hooks"
    gone.mkdir(parents=True)
    shutil.copy(client_path(), gone / "client.py")
    line = hook_command_line(tmp_path / "c.yaml", "claude", "UserPromptSubmit").replace(
        str(client_path()), str(gone / "client.py")
    )
    shutil.rmtree(tmp_path / "site-packages")  # pip uninstall paxm
    out = _run_line(line)
    assert (out.returncode, out.stdout, out.stderr) == (0, b"", b"")


def test_removed_interpreter_exits_0_silently(tmp_path: Path) -> None:
    argv = hook_command(tmp_path / "c.yaml", "claude", "Stop", python=str(tmp_path / "old-venv" / "bin" / "python"))
    out = _run_line(shlex.join(argv))
    assert (out.returncode, out.stdout, out.stderr) == (0, b"", b"")


def _run_with_interpreter(tmp_path: Path, script: str) -> subprocess.CompletedProcess[bytes]:
    """The installed ``UserPromptSubmit`` hook line, run with ``script`` standing in for its Python."""
    python = tmp_path / "python"
    python.write_text(script)
    python.chmod(0o700)
    return _run_line(shlex.join(hook_command(tmp_path / "c.yaml", "claude", "UserPromptSubmit", python=str(python))))


def test_an_interpreter_that_fails_is_mapped_to_exit_0_without_output(tmp_path: Path) -> None:
    out = _run_with_interpreter(tmp_path, "#!/bin/sh\necho 'blocked' ; echo 'Fatal Python error' >&2\nexit 2\n")
    assert (out.returncode, out.stdout, out.stderr) == (0, b"", b"")


def test_output_of_a_working_client_passes_through(tmp_path: Path) -> None:
    script = "#!/bin/sh\ncat >/dev/null\nprintf '<paxm-local-time version=\"1\">\\nx\\n</paxm-local-time>'\n"
    out = _run_with_interpreter(tmp_path, script)
    assert out.returncode == 0 and out.stdout == b'<paxm-local-time version="1">\nx\n</paxm-local-time>'


def test_the_real_client_with_a_real_config_still_injects_context(tmp_path: Path) -> None:
    from .conftest import wait_for, write_config

    config = write_config(tmp_path / "cfg")
    session = (Path(__file__).parent / "fixtures" / "claude_session_start.json").read_bytes()
    line = hook_command_line(config, "claude", "session_start")
    try:
        # the first hook starts the daemon (and prints nothing when none is up); the second is served by it
        subprocess.run(["/bin/sh", "-c", line], input=session, capture_output=True, timeout=60, env=os.environ)
        wait_for(lambda: (config.parent / "hooks" / "paxm-hook.sock").exists())
        out = subprocess.run(["/bin/sh", "-c", line], input=session, capture_output=True, timeout=60, env=os.environ)
        assert out.returncode == 0 and b"<paxm-session-identity" in out.stdout
    finally:
        from .conftest import stop_daemon

        stop_daemon(config)


def test_is_paxm_hook_tells_paxm_handlers_from_the_users_own(tmp_path: Path) -> None:
    from paxm_core.integration import is_paxm_hook, parse_hook_command

    config = tmp_path / "paxm" / "config.yaml"
    line = hook_command_line(config, "gemini-cli", "user_input")
    assert is_paxm_hook(line, config, "gemini-cli")
    assert is_paxm_hook(shlex.split(line), str(config), ("kimi", "gemini-cli"))  # argv, any of several targets
    assert parse_hook_command(line).target == "gemini-cli"  # type: ignore[union-attr]
    assert not is_paxm_hook(line, tmp_path / "other" / "config.yaml", "gemini-cli")  # another paxm config
    assert not is_paxm_hook(line, config, "qwen")  # another harness's handler
    legacy = line.replace("/passive/client.py", "/hooks/client.py")  # installed before the rename
    assert is_paxm_hook(legacy, config, "gemini-cli")
    for users_own in ("echo hi", "python3 my_hook.py --config x", "sh -c 'unterminated", ""):
        assert not is_paxm_hook(users_own, config, "gemini-cli")


#: the ``-c`` script of the shell form earlier versions installed (it sourced ``client.sh``)
RETIRED_SHELL_GUARD = '[ -f "$1" ] || exit 0; . "$1"; exit 0'


def test_a_hook_left_in_the_retired_shell_form_fails_open_and_is_named_by_doctor(tmp_path: Path) -> None:
    from paxm_core.integration import is_paxm_hook, missing_file_findings, parse_hook_command

    config = tmp_path / "c.yaml"
    words = hook_command(config, "claude", "UserPromptSubmit")[4:]
    retired_client = str(client_path().with_name("client.sh"))
    assert not Path(retired_client).exists()  # no longer ships
    line = shlex.join(["/bin/bash", "-c", RETIRED_SHELL_GUARD, "paxm-hook", retired_client, *words])
    out = _run_line(line)  # what such a hook does after the upgrade: nothing, exit 0
    assert (out.returncode, out.stdout, out.stderr) == (0, b"", b"")
    assert is_paxm_hook(line, config, "claude")  # setup recognises it as paxm's and replaces it
    hook = parse_hook_command(line)
    assert hook is not None and hook.shell_client == retired_client and hook.interpreter == interpreter_path()
    findings = missing_file_findings([line], "run paxm setup")
    assert [(f.level, f.message, f.fix) for f in findings] == [
        ("error", f"paxm hook points at a missing file: {retired_client}", "run paxm setup")
    ]
