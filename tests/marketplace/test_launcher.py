"""``plugins/paxm-memory/scripts/paxm-run.sh``: which paxm it finds, what it runs, and that it fails open.

Run with the real ``/bin/sh`` (dash on Debian) in a private HOME.  An installation is a real
directory layout (``<venv>/bin/paxm``, ``<venv>/bin/python``,
``<venv>/lib/python3.X/site-packages/paxm_core/passive/client.py``) whose ``python`` is a small
script that records the command line and environment it was started with, so each test sees
exactly which interpreter and hook client the launcher chose.  The real installation, interpreter
and hook client run in the real-binary tests (``test_e2e_*_marketplace.py``).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
LAUNCHER = ROOT / "plugins" / "paxm-memory" / "scripts" / "paxm-run.sh"
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


def _script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    path.chmod(0o755)
    return path


def _recording_python(path: Path, log: Path, *, exit_code: int = 0, answer: str = "CONTEXT-FROM-CLIENT") -> Path:
    """An interpreter that logs its argv, owner and stdin to ``log`` and prints ``answer``."""
    return _script(
        path,
        "#!/bin/sh\n"
        f"log={shlex.quote(str(log))}\n"
        'if [ "$1" = -I ] && [ "$2" = -c ]; then printf "%s\\n" "$FIND_SPEC_ANSWER"; exit 0; fi\n'
        'printf "%s\\n" "$0" "$@" "owner=$PAXM_INTEGRATION_OWNER" > "$log"\n'
        'cat >> "$log"\n'
        f"printf '%s\\n' {shlex.quote(answer)}\n"
        f"exit {exit_code}\n",
    )


def make_install(venv: Path, log: Path, **python: object) -> Path:
    """A wheel-style installation at ``venv``; returns its ``bin/paxm``."""
    _recording_python(venv / "bin" / "python", log, **python)  # type: ignore[arg-type]
    client = venv / "lib" / "python3.12" / "site-packages" / "paxm_core" / "passive" / "client.py"
    client.parent.mkdir(parents=True)
    client.write_text("# the hook client\n")
    return _script(venv / "bin" / "paxm", f"#!{venv / 'bin' / 'python'}\n# console script\n")


def run(
    home: Path, *args: str, path: str = SYSTEM_PATH, stdin: str = "{}", **env: str
) -> subprocess.CompletedProcess[str]:
    environ = {"HOME": str(home), "PATH": path, **env}
    return subprocess.run(
        ["sh", str(LAUNCHER), *args], env=environ, input=stdin, capture_output=True, text=True, timeout=30
    )


def logged(log: Path) -> list[str]:
    return log.read_text().splitlines()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "user-home"  # the autouse isolated_home fixture owns tmp_path/home
    home.mkdir()
    return home


# -- paxm missing --------------------------------------------------------------------------------


def test_missing_paxm_session_start_tells_the_user_and_exits_0(home: Path) -> None:
    started = time.monotonic()
    done = run(home, "hook", "claude", "SessionStart")
    assert done.returncode == 0 and done.stderr == ""
    assert time.monotonic() - started < 2
    message = json.loads(done.stdout)["systemMessage"]  # shown to the user, not given to the model
    assert "uv tool install 'paxm[claude-code]'" in message and "pipx install 'paxm[claude-code]'" in message
    assert "paxm setup --yes --agent claude --integration claude-plugin" in message
    codex = json.loads(run(home, "hook", "codex", "SessionStart").stdout)["systemMessage"]
    assert "uv tool install 'paxm[codex]'" in codex and "--agent codex --integration codex-plugin" in codex


@pytest.mark.parametrize("event", ["UserPromptSubmit", "PostToolUse", "PostToolUseFailure", "Stop"])
def test_missing_paxm_other_events_print_nothing(home: Path, event: str) -> None:
    done = run(home, "hook", "claude", event)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_missing_paxm_mcp_server_fails_with_the_hint(home: Path) -> None:
    done = run(home, "mcp", "claude")
    assert done.returncode == 127 and done.stdout == ""
    assert "uv tool install 'paxm[claude-code]'" in done.stderr


@pytest.mark.parametrize("args", [("hook", "other", "Stop"), ("hook", "claude", "Nonsense"), ("", "", ""), ()])
def test_unknown_arguments_do_nothing(home: Path, args: tuple[str, ...]) -> None:
    done = run(home, *args)
    assert (done.returncode, done.stdout) == (0, "")


# -- where paxm is found -------------------------------------------------------------------------


def _locations(home: Path, tmp: Path) -> dict[str, tuple[Path, dict[str, str], str]]:
    """name -> (the venv, extra env, PATH) for each place the launcher looks."""
    return {
        "PATH": (tmp / "venvs" / "on-path", {}, f"{tmp / 'venvs' / 'on-path' / 'bin'}:{SYSTEM_PATH}"),
        "PAXM_BINARY": (
            tmp / "venvs" / "explicit",
            {"PAXM_BINARY": str(tmp / "venvs" / "explicit" / "bin" / "paxm")},
            SYSTEM_PATH,
        ),
        "uv tool": (home / ".local" / "share" / "uv" / "tools" / "paxm", {}, SYSTEM_PATH),
        "uv tool, XDG_DATA_HOME": (
            tmp / "data" / "uv" / "tools" / "paxm",
            {"XDG_DATA_HOME": str(tmp / "data")},
            SYSTEM_PATH,
        ),
        "uv tool, UV_TOOL_DIR": (tmp / "uvtools" / "paxm", {"UV_TOOL_DIR": str(tmp / "uvtools")}, SYSTEM_PATH),
        "pipx": (home / ".local" / "share" / "pipx" / "venvs" / "paxm", {}, SYSTEM_PATH),
        "pipx, old home": (home / ".local" / "pipx" / "venvs" / "paxm", {}, SYSTEM_PATH),
        "pipx, PIPX_HOME": (tmp / "px" / "venvs" / "paxm", {"PIPX_HOME": str(tmp / "px")}, SYSTEM_PATH),
    }


@pytest.mark.parametrize(
    "where",
    [
        "PATH",
        "PAXM_BINARY",
        "uv tool",
        "uv tool, XDG_DATA_HOME",
        "uv tool, UV_TOOL_DIR",
        "pipx",
        "pipx, old home",
        "pipx, PIPX_HOME",
    ],
)
def test_finds_paxm_and_runs_its_hook_client(home: Path, tmp_path: Path, where: str) -> None:
    venv, env, path = _locations(home, tmp_path)[where]
    log = tmp_path / "argv.log"
    make_install(venv, log)
    done = run(home, "hook", "claude", "UserPromptSubmit", path=path, stdin='{"prompt": "hi"}', **env)
    assert (done.returncode, done.stdout, done.stderr) == (0, "CONTEXT-FROM-CLIENT\n", "")
    client = venv / "lib" / "python3.12" / "site-packages" / "paxm_core" / "passive" / "client.py"
    assert logged(log) == [
        str(venv / "bin" / "python"),
        "-I",
        "-S",
        str(client),
        "--target",
        "claude",
        "--event",
        "UserPromptSubmit",
        "owner=claude-plugin",
        '{"prompt": "hi"}',
    ]


def test_uv_tool_bin_symlink_resolves_to_the_tool_environment(home: Path, tmp_path: Path) -> None:
    """``uv tool install`` links ``~/.local/bin/paxm`` to ``<tools>/paxm/bin/paxm``: the hook runs that venv."""
    venv = tmp_path / "tools" / "paxm"
    log = tmp_path / "argv.log"
    paxm = make_install(venv, log)
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "paxm").symlink_to(paxm)
    done = run(home, "hook", "codex", "Stop")
    assert done.returncode == 0 and done.stdout == "CONTEXT-FROM-CLIENT\n"
    argv = logged(log)
    assert argv[0] == str(venv / "bin" / "python") and argv[3].startswith(str(venv / "lib"))
    assert argv[4:10] == ["--target", "codex", "--event", "Stop", "--json", "owner=codex-plugin"]


def test_path_wins_over_the_tool_directories(home: Path, tmp_path: Path) -> None:
    make_install(home / ".local" / "share" / "uv" / "tools" / "paxm", tmp_path / "tool.log")
    make_install(tmp_path / "first", tmp_path / "path.log")
    done = run(home, "hook", "claude", "Stop", path=f"{tmp_path / 'first' / 'bin'}:{SYSTEM_PATH}")
    assert done.returncode == 0
    assert (tmp_path / "path.log").exists() and not (tmp_path / "tool.log").exists()


def test_editable_install_asks_the_interpreter_for_the_client(home: Path, tmp_path: Path) -> None:
    """No client in the venv's site-packages (an editable install): the interpreter says where paxm_core is."""
    venv = tmp_path / "dev"
    log = tmp_path / "argv.log"
    _recording_python(venv / "bin" / "python", log)
    _script(venv / "bin" / "paxm", "#!/bin/sh\n")
    source = tmp_path / "checkout" / "paxm_core" / "passive" / "client.py"
    source.parent.mkdir(parents=True)
    source.write_text("# the hook client\n")
    done = run(home, "hook", "claude", "Stop", path=f"{venv / 'bin'}:{SYSTEM_PATH}", FIND_SPEC_ANSWER=str(source))
    assert done.returncode == 0 and done.stdout == "CONTEXT-FROM-CLIENT\n"
    assert logged(log)[:4] == [str(venv / "bin" / "python"), "-I", "-S", str(source)]


def test_console_script_outside_a_venv_uses_its_shebang_python(home: Path, tmp_path: Path) -> None:
    """``pip install --user``: ``~/.local/bin/paxm`` names the system Python in its ``#!`` line."""
    log = tmp_path / "argv.log"
    python = _recording_python(tmp_path / "system" / "python3", log)
    source = tmp_path / "site" / "paxm_core" / "passive" / "client.py"
    source.parent.mkdir(parents=True)
    source.write_text("# the hook client\n")
    _script(home / ".local" / "bin" / "paxm", f"#!{python}\n# console script\n")
    done = run(home, "hook", "claude", "Stop", FIND_SPEC_ANSWER=str(source))
    assert done.returncode == 0 and done.stdout == "CONTEXT-FROM-CLIENT\n"
    assert logged(log)[:4] == [str(python), "-I", "-S", str(source)]


def test_without_a_reachable_client_it_falls_back_to_paxm_hook(home: Path, tmp_path: Path) -> None:
    """A ``paxm`` whose interpreter cannot be found: ``paxm __hook`` (the CLI's own hook entry)."""
    log = tmp_path / "argv.log"
    _script(
        tmp_path / "odd" / "paxm",
        "#!/bin/sh\n"
        f'printf "%s\\n" "$0" "$@" "owner=$PAXM_INTEGRATION_OWNER" > {shlex.quote(str(log))}\n'
        "echo FROM-CLI\n",
    )
    done = run(home, "hook", "codex", "UserPromptSubmit", path=f"{tmp_path / 'odd'}:{SYSTEM_PATH}")
    assert done.returncode == 0 and done.stdout == "FROM-CLI\n"
    assert logged(log)[1:] == [
        "__hook",
        "--target",
        "codex",
        "--event",
        "UserPromptSubmit",
        "--json",
        "owner=codex-plugin",
    ]


def test_mcp_runs_the_found_paxm(home: Path, tmp_path: Path) -> None:
    log = tmp_path / "argv.log"
    _script(home / ".local" / "bin" / "paxm", f'#!/bin/sh\nprintf "%s\\n" "$@" > {shlex.quote(str(log))}\n')
    done = run(home, "mcp", "codex")
    assert done.returncode == 0
    assert logged(log) == ["mcp", "serve", "--agent", "codex"]


# -- fail open -----------------------------------------------------------------------------------


@pytest.mark.parametrize("exit_code", [1, 2, 127])
def test_a_failing_client_never_blocks_and_prints_nothing(home: Path, tmp_path: Path, exit_code: int) -> None:
    """Claude Code reads exit 2 as "block this prompt": whatever the client does, the hook exits 0."""
    make_install(
        tmp_path / "venv", tmp_path / "argv.log", exit_code=exit_code, answer="Traceback (most recent call last)"
    )
    done = run(home, "hook", "claude", "UserPromptSubmit", path=f"{tmp_path / 'venv' / 'bin'}:{SYSTEM_PATH}")
    assert (done.returncode, done.stdout) == (0, "")


def test_trailing_newlines_of_the_answer_are_kept(home: Path, tmp_path: Path) -> None:
    make_install(tmp_path / "venv", tmp_path / "argv.log", answer="line\n\n")
    done = run(home, "hook", "claude", "UserPromptSubmit", path=f"{tmp_path / 'venv' / 'bin'}:{SYSTEM_PATH}")
    assert done.stdout == "line\n\n\n"


def test_a_removed_interpreter_falls_through_to_nothing(home: Path, tmp_path: Path) -> None:
    """The venv's python is gone (a rebuilt venv) and its console script points at it: exit 0, silent."""
    paxm = make_install(tmp_path / "venv", tmp_path / "argv.log")
    (tmp_path / "venv" / "bin" / "python").unlink()
    assert paxm.exists()
    done = run(home, "hook", "claude", "UserPromptSubmit", path=f"{tmp_path / 'venv' / 'bin'}:{SYSTEM_PATH}")
    assert (done.returncode, done.stdout) == (0, "")


# -- paths are data, never shell code --------------------------------------------------------------

#: directory names with everything a shell might read as code
_NAMES = st.text(alphabet=st.sampled_from(list("ab Z09_-.'\"$`;&|*?[]()<>\\!#~{}=%^")), min_size=1, max_size=16).filter(
    lambda s: s not in (".", "..") and "/" not in s
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=_NAMES)
def test_any_home_path_reaches_the_client_unchanged(tmp_path: Path, name: str) -> None:
    """A HOME under a directory with quotes, ``$``, backticks, globs, spaces: the exact paths reach the client."""
    home = tmp_path / name / "home"
    if home.exists():
        return
    home.mkdir(parents=True)
    log = tmp_path / "argv.log"
    venv = home / ".local" / "share" / "uv" / "tools" / "paxm"
    make_install(venv, log)
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "paxm").symlink_to(venv / "bin" / "paxm")
    done = run(home, "hook", "claude", "PostToolUse", stdin="payload")
    assert done.returncode == 0 and done.stdout == "CONTEXT-FROM-CLIENT\n", done.stderr
    argv = logged(log)
    assert argv[0] == str(venv / "bin" / "python")
    assert argv[3] == str(venv / "lib" / "python3.12" / "site-packages" / "paxm_core" / "passive" / "client.py")
    assert argv[-1] == "payload"
    os.unlink(log)


# -- nothing anyone may rewrite is run -------------------------------------------------------------


@pytest.mark.parametrize("writable", ["python", "client", "client-dir"])
def test_a_world_writable_interpreter_or_client_is_never_run(home: Path, tmp_path: Path, writable: str) -> None:
    venv = tmp_path / "venv"
    log = tmp_path / "argv.log"
    make_install(venv, log)
    client = venv / "lib" / "python3.12" / "site-packages" / "paxm_core" / "passive" / "client.py"
    target = {"python": venv / "bin" / "python", "client": client, "client-dir": client.parent}[writable]
    target.chmod(target.stat().st_mode | 0o002)
    done = run(home, "hook", "claude", "UserPromptSubmit", path=f"{venv / 'bin'}:{SYSTEM_PATH}")
    assert (done.returncode, done.stdout) == (0, "")
    assert not log.exists()  # nothing was started
    target.chmod(target.stat().st_mode & ~0o002)
    assert run(home, "hook", "claude", "UserPromptSubmit", path=f"{venv / 'bin'}:{SYSTEM_PATH}").stdout


def test_a_world_writable_paxm_is_never_run(home: Path, tmp_path: Path) -> None:
    log = tmp_path / "argv.log"
    paxm = _script(tmp_path / "odd" / "paxm", f"#!/bin/sh\necho ran > {shlex.quote(str(log))}\n")
    paxm.chmod(0o777)
    hook = run(home, "hook", "claude", "Stop", path=f"{tmp_path / 'odd'}:{SYSTEM_PATH}")
    assert (hook.returncode, hook.stdout) == (0, "")
    mcp = run(home, "mcp", "claude", path=f"{tmp_path / 'odd'}:{SYSTEM_PATH}")
    assert mcp.returncode == 126 and "writable by every user" in mcp.stderr
    assert not log.exists()
