"""The exact hook command line an integration installs.

``/bin/sh -c <fail-open guard> paxm-hook <absolute interpreter> -I -S <absolute client.py>
--config <absolute config> ...``: no console-script wrapper, no version-manager shim on the
per-prompt path.  ``-I`` keeps the user's ``PYTHON*`` variables and cwd out; ``-S`` skips
``site`` (the client needs nothing from site-packages).

The guard makes the hook fail open when paxm is gone: the paths baked into a harness's
settings go stale on ``pip uninstall paxm``, a rebuilt venv or a Python upgrade, and a
harness may read a non-zero exit as "block the prompt" (Claude Code does for exit 2).  So
the guard runs the client only when the interpreter is executable and the client file exists,
and turns any failure into exit 0 with nothing printed: stdout is buffered and printed only
when the client succeeded (the client itself always exits 0 and fails open).

The shell form: when setup finds a bash >= 5.1 with ``/dev/tcp``, the command is
``<bash> -c <SHELL_GUARD> paxm-hook <client.sh> <the same Python argv>``.  ``client.sh`` reaches
a warm daemon over its loopback port with builtins only (no Python start on the per-prompt
path) and runs the Python argv under the same guard whenever it cannot.  ``PAXM_HOOK_CLIENT=python``
(or ``hook_command(..., client="python")``) forces the ``/bin/sh`` form; ``PAXM_HOOK_BASH``
names the bash to use.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "FAIL_OPEN_GUARD",
    "SHELL_GUARD",
    "find_bash",
    "shell_client_path",
    "HookArgv",
    "client_path",
    "hook_command",
    "hook_command_line",
    "interpreter_path",
    "is_paxm_hook",
    "parse_hook_command",
    "precompile_client",
]

#: ``$1`` interpreter, ``$4`` client.py, ``$@`` the whole client argv.  The client's output is
#: kept in a variable (the hook's output is small) and printed only after exit 0; a trailing
#: ``x`` keeps trailing newlines that ``$(...)`` would strip.
FAIL_OPEN_GUARD = (
    '[ -x "$1" ] && [ -f "$4" ] || exit 0; '
    'out=$("$@" 2>/dev/null; rc=$?; printf x; exit $rc) || exit 0; '
    'printf %s "${out%x}"; exit 0'
)


#: the shell form's ``-c`` script: source ``client.sh`` (``$1``) if it is still there, else exit
#: 0 silently.  ``client.sh`` itself always exits 0.
SHELL_GUARD = '[ -f "$1" ] || exit 0; . "$1"; exit 0'


def shell_client_path() -> Path:
    """Absolute path of the shell hook client (sourced by the shell form of the command)."""
    return (Path(__file__).parent / "client.sh").resolve()


_BASH_CACHE: dict[str, str] = {}

_PROBE = (
    "((BASH_VERSINFO[0] > 5 || (BASH_VERSINFO[0] == 5 && BASH_VERSINFO[1] >= 1))) || exit 3; "
    'exec {fd}<>"/dev/tcp/127.0.0.1/$1" || exit 4; printf ok >&$fd'
)


def find_bash(candidate: str | None = None) -> str:
    """The absolute path of a bash >= 5.1 that can open ``/dev/tcp``, or ``""``.

    Probed for real (version and a loopback connection to a throwaway listener), once per
    path and process.  ``candidate`` (or ``$PAXM_HOOK_BASH``) names the bash to probe;
    otherwise ``bash`` on ``PATH``, then ``/bin/bash``.
    """
    import shutil
    import socket
    import subprocess

    names = [candidate or os.environ.get("PAXM_HOOK_BASH", "")]
    if not names[0]:
        names = [shutil.which("bash") or "", "/bin/bash"]
    for name in names:
        if not name or not os.path.isabs(name) or not os.access(name, os.X_OK):
            continue
        if name in _BASH_CACHE:
            if _BASH_CACHE[name]:
                return _BASH_CACHE[name]
            continue
        ok = False
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
                listener.bind(("127.0.0.1", 0))
                listener.listen(1)
                listener.settimeout(5.0)
                proc = subprocess.Popen(
                    [name, "-c", _PROBE, "probe", str(listener.getsockname()[1])],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                try:
                    if proc.wait(timeout=5.0) == 0:
                        conn, _ = listener.accept()
                        with conn:
                            conn.settimeout(5.0)
                            ok = conn.recv(2) == b"ok"
                except (subprocess.TimeoutExpired, OSError):
                    proc.kill()
                    proc.wait()
        except OSError:
            ok = False
        _BASH_CACHE[name] = name if ok else ""
        if ok:
            return name
    return ""


def client_path() -> Path:
    """Absolute path of the installed hook client script."""
    return (Path(__file__).parent / "client.py").resolve()


def interpreter_path() -> str:
    """The absolute interpreter of this environment (the venv's ``python``, symlink kept).

    The venv path is kept unresolved on purpose: resolving would jump to the base interpreter
    and lose the venv, so the daemon the client starts could not import paxm.
    """
    return os.path.abspath(sys.executable)


def precompile_client() -> None:
    """Write the client's bytecode cache now, so the first prompt does not pay for compiling it.

    Best effort: a read-only install simply compiles on each run.
    """
    import py_compile

    hooks = client_path().parent
    for source in (hooks / "client_core.py", hooks.parent / "capture" / "_inbox.py"):
        try:
            py_compile.compile(str(source), doraise=True)
        except (OSError, py_compile.PyCompileError):
            pass


def hook_command(
    config_path: str | os.PathLike[str],
    target: str,
    event: str,
    *,
    mode: str = "text",
    queue_path: str | os.PathLike[str] | None = None,
    timeout: float | None = None,
    python: str | None = None,
    client: str | None = None,
) -> list[str]:
    """The argv of the hook for ``target``/``event``, wrapped in the fail-open guard.

    :param event: what the client passes as ``--event``: the integration's native event name or
        a normalized name (the integration's ``decode`` receives it).
    :param mode: an output mode the target's integration knows (``text``, ``json``...); passed as ``--<mode>``.
    :param queue_path: the capture queue when it is not ``<configdir>/hooks/capture.sqlite``
        (the client cannot read YAML, so a custom ``capture_queue.path`` is passed here).
    :param timeout: the client's hard ceiling in seconds (default: the client's 5 s).
    :param client: ``"shell"`` / ``"python"`` / ``None`` (``$PAXM_HOOK_CLIENT``, default
        ``auto``: the shell form when :func:`find_bash` finds a usable bash).
    """
    choice = (client or os.environ.get("PAXM_HOOK_CLIENT", "") or "auto").strip().lower()
    bash = find_bash() if choice in ("auto", "shell", "bash") else ""
    if bash:
        guard = [bash, "-c", SHELL_GUARD, "paxm-hook", str(shell_client_path())]
    else:
        guard = ["/bin/sh", "-c", FAIL_OPEN_GUARD, "paxm-hook"]
    argv = [
        *guard,
        python or interpreter_path(),
        "-I",
        "-S",
        str(client_path()),
        "--config",
        str(Path(config_path).expanduser().absolute()),
        "--target",
        target,
        "--event",
        event,
    ]
    if mode and mode != "text":
        argv.append(f"--{mode}")
    if queue_path:
        argv += ["--queue", str(Path(queue_path).expanduser().absolute())]
    if timeout is not None:
        argv += ["--timeout", f"{timeout:g}"]
    precompile_client()
    return argv


def hook_command_line(config_path: str | os.PathLike[str], target: str, event: str, **kwargs: object) -> str:
    """:func:`hook_command` quoted for a shell (what goes into ``settings.json`` ``command``)."""
    return shlex.join(hook_command(config_path, target, event, **kwargs))  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class HookArgv:
    """What an installed hook command runs: for doctor checks ("do these paths still exist?").

    :param interpreter: the Python the command starts.
    :param client: the hook client script.
    :param config: the paxm config it passes (``""`` when absent).
    :param target: the ``--target`` it passes (``""`` when absent).
    :param shell: the bash of the shell form (``""`` for the ``/bin/sh`` form).
    :param shell_client: the ``client.sh`` the shell form sources (``""`` for the ``/bin/sh`` form).
    """

    interpreter: str
    client: str
    config: str
    target: str = ""
    shell: str = ""
    shell_client: str = ""

    @property
    def files(self) -> tuple[str, ...]:
        """Every file the command runs or sources: the shell form adds its bash and ``client.sh``.

        Doctor checks each one exists: a hook whose bash or ``client.sh`` is gone still exits 0
        (the guard), so without this check it would fail silently on every event.
        """
        return tuple(f for f in (self.shell, self.shell_client, self.interpreter, self.client) if f)


def parse_hook_command(command: str | list[str]) -> HookArgv | None:
    """Read back a command built by :func:`hook_command` (argv or shell line), guarded or not.

    Returns ``None`` for anything that is not a paxm hook command.
    """
    try:
        argv = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
    except ValueError:
        return None
    shell = shell_client = ""
    if argv[:2] == ["/bin/sh", "-c"] and len(argv) > 4 and argv[3] == "paxm-hook":
        argv = argv[4:]  # the fail-open guard's own arguments
    elif (
        len(argv) > 5 and argv[1] == "-c" and argv[3] == "paxm-hook" and argv[4].endswith("/client.sh")
    ):  # the shell form: <bash> -c <SHELL_GUARD> paxm-hook <client.sh> <python argv>
        shell, shell_client, argv = argv[0], argv[4], argv[5:]
    if len(argv) < 4 or argv[1:3] != ["-I", "-S"] or not argv[3].endswith("client.py"):
        return None
    return HookArgv(
        interpreter=argv[0],
        client=argv[3],
        config=_flag(argv, "--config"),
        target=_flag(argv, "--target"),
        shell=shell,
        shell_client=shell_client,
    )


def _flag(argv: list[str], flag: str) -> str:
    for i, word in enumerate(argv):
        if word == flag and i + 1 < len(argv):
            return argv[i + 1]
        if word.startswith(flag + "="):
            return word[len(flag) + 1 :]
    return ""


#: the hook client's path endings, before and after the ``hooks/`` -> ``passive/`` rename
CLIENT_PATHS = ("/passive/client.py", "/hooks/client.py")


def is_paxm_hook(command: str | list[str], config_path: str | os.PathLike[str], targets: str | Iterable[str]) -> bool:
    """Whether ``command`` runs paxm's hook client for one of ``targets`` and the config ``config_path``.

    The one test every integration uses to tell paxm's handlers from the user's own: true for
    whatever :func:`hook_command` built (guarded or not, before or after the package rename),
    for exactly this config file, so two paxm configs on one machine never take each other's.
    """
    hook = parse_hook_command(command)
    if hook is None or not hook.client.endswith(CLIENT_PATHS) or not hook.config:
        return False
    wanted = {targets} if isinstance(targets, str) else set(targets)
    if hook.target not in wanted:
        return False
    return Path(hook.config).expanduser().absolute() == Path(config_path).expanduser().absolute()
