"""The exact hook command line an integration installs.

``/bin/sh -c <fail-open guard> paxm-hook <interpreter> -I -S <client.py> --config <config> ...``.
The guard runs the client only when the interpreter is executable and the client file exists
(paths go stale when paxm is uninstalled or the venv rebuilt), and turns any failure into exit 0
with nothing printed.  A retired "shell form" (``<bash> -c <guard> paxm-hook <client.sh> ...``)
is still recognised, so ``paxm setup`` replaces it and doctor names the missing ``client.sh``.
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


def client_path() -> Path:
    """Absolute path of the installed hook client script."""
    return (Path(__file__).parent / "client.py").resolve()


def interpreter_path() -> str:
    """The absolute interpreter of this environment, unresolved (resolving would lose the venv)."""
    return os.path.abspath(sys.executable)


def precompile_client() -> None:
    """Write the client's bytecode cache now (best effort), so the first prompt does not compile it."""
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
) -> list[str]:
    """The argv of the hook for ``target``/``event``, wrapped in the fail-open guard.

    :param event: what the client passes as ``--event``: the integration's native event name or
        a normalized name (the integration's ``decode`` receives it).
    :param mode: an output mode the target's integration knows (``text``, ``json``...); passed as ``--<mode>``.
    :param queue_path: the capture queue when it is not ``<configdir>/hooks/capture.sqlite``
        (the client cannot read YAML, so a custom ``capture_queue.path`` is passed here).
    :param timeout: the client's hard ceiling in seconds (default: the client's 5 s).
    :param python: the interpreter to run the client with (default: this environment's).
    """
    argv = ["/bin/sh", "-c", FAIL_OPEN_GUARD, "paxm-hook", python or interpreter_path(), "-I", "-S", str(client_path())]
    argv += ["--config", str(Path(config_path).expanduser().absolute()), "--target", target, "--event", event]
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
    """What an installed hook command runs, for doctor checks; ``shell``/``shell_client`` only for the
    retired shell form (its ``client.sh`` no longer ships, so doctor reports it missing)."""

    interpreter: str
    client: str
    config: str
    target: str = ""
    shell: str = ""
    shell_client: str = ""

    @property
    def files(self) -> tuple[str, ...]:
        """Every file the command runs or sources: doctor checks each exists (the guard hides a missing one)."""
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
    ):  # the retired shell form: <bash> -c <guard> paxm-hook <client.sh> <python argv>
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
    """Whether ``command`` runs paxm's hook client for one of ``targets`` and exactly the config ``config_path``
    (how integrations tell paxm's handlers from the user's own)."""
    hook = parse_hook_command(command)
    if hook is None or not hook.client.endswith(CLIENT_PATHS) or not hook.config:
        return False
    wanted = {targets} if isinstance(targets, str) else set(targets)
    if hook.target not in wanted:
        return False
    return Path(hook.config).expanduser().absolute() == Path(config_path).expanduser().absolute()
