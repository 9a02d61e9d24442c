"""The ``paxm`` command line.

Subcommands live in their own modules and are imported only when used, so ``paxm recall``
does not pay for the MCP SDK and ``paxm --help`` stays quick.  Plugins add commands through
the ``paxm_register_commands`` hook.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from importlib import import_module
from typing import TYPE_CHECKING

import click

from paxm_core import __version__
from paxm_core.api.errors import PaxmError

if TYPE_CHECKING:
    from paxm_core.config.model import Config
    from paxm_core.runtime import Runtime

__all__ = ["cli", "main"]

#: command name -> (module, attribute), imported when the command runs.
LAZY_COMMANDS: dict[str, tuple[str, str]] = {
    "remember": ("paxm_core.cli.memory_cmds", "remember"),
    "recall": ("paxm_core.cli.memory_cmds", "recall"),
    "forget": ("paxm_core.cli.forget_cmd", "forget"),
    "plugins": ("paxm_core.cli.info_cmds", "plugins"),
    "config": ("paxm_core.cli.config_cmds", "config"),
    "setup": ("paxm_core.cli.setup_cmd", "setup"),
    "uninstall": ("paxm_core.cli.uninstall_cmd", "uninstall"),
    "mcp": ("paxm_core.cli.mcp_cmds", "mcp"),
    "history": ("paxm_core.cli.telemetry_cmds", "history"),
    "logs": ("paxm_core.cli.telemetry_cmds", "logs"),
    "impact": ("paxm_core.cli.telemetry_cmds", "impact"),
    "queue": ("paxm_core.cli.queue_cmds", "queue"),
    "backfill": ("paxm_core.cli.backfill_cmds", "backfill"),
    "dashboard": ("paxm_core.cli.dashboard_cmd", "dashboard"),
    "eval": ("paxm_core.cli.eval_cmds", "eval_group"),
    "version": ("paxm_core.cli.info_cmds", "version"),
    "help": ("paxm_core.cli.info_cmds", "help_cmd"),
    "update": ("paxm_core.cli.update_cmd", "update"),
    "__hook": ("paxm_core.cli.hook_cmds", "hook"),
    "__hook-daemon": ("paxm_core.cli.hook_cmds", "hook_daemon"),
    "__hook-control": ("paxm_core.cli.hook_cmds", "hook_control"),
}


class LazyGroup(click.Group):
    """A group that imports subcommand modules on demand and asks plugins for more."""

    _plugin_commands_loaded = False

    def _load_plugin_commands(self) -> None:
        if self._plugin_commands_loaded:
            return
        self._plugin_commands_loaded = True
        from paxm_core.plugins import get_plugin_manager

        pm = get_plugin_manager()
        try:
            pm.hook.paxm_register_commands(cli=self)
        except Exception as exc:  # a broken plugin must not take the CLI down
            click.echo(f"paxm: plugin commands skipped: {exc}", err=True)

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._load_plugin_commands()
        return sorted({*self.commands, *(name for name in LAZY_COMMANDS if not name.startswith("__"))})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        target = LAZY_COMMANDS.get(cmd_name)
        module = _import_if_present(target[0]) if target is not None else None
        if target is not None and module is not None:
            command = getattr(module, target[1])
            assert isinstance(command, click.Command)
            return command
        self._load_plugin_commands()
        return self.commands.get(cmd_name)


def _import_if_present(module: str) -> object | None:
    """``module`` imported, or ``None`` when it (or a package above it) is not installed.

    One import instead of ``find_spec`` then import: ``importlib.util`` and a second search of
    ``sys.path`` are a cold ``paxm recall``'s to pay otherwise.  A module that is there but fails
    to import still raises.
    """
    try:
        return import_module(module)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing and (module == missing or module.startswith(missing + ".")):
            return None
        raise


class CliState:
    """Per-invocation state: the ``--config`` path and a lazily built runtime."""

    def __init__(self, config_path: str | None) -> None:
        self.config_path = config_path
        self._runtime: Runtime | None = None

    def runtime(self) -> Runtime:
        """Load config, plugins and providers once per invocation."""
        if self._runtime is None:
            from paxm_core.runtime import Runtime

            self._runtime = Runtime.load(self.config_path)
        return self._runtime

    def config(self) -> Config:
        """The loaded :class:`~paxm_core.config.Config` (``--config`` or the default location).

        Plugin commands (``paxm_register_commands``) read it as ``ctx.find_root().obj.config()``
        instead of importing the core's config package.
        """
        if self._runtime is not None:
            return self._runtime.config
        from paxm_core.config import load_config
        from paxm_core.plugins import installed_provider_catalog

        return load_config(self.config_path, provider_types=installed_provider_catalog())

    def close(self) -> None:
        if self._runtime is not None:
            self._runtime.close()
            self._runtime = None


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "-c",
    "--config",
    "config_path",
    metavar="PATH",
    envvar="PAXM_CONFIG",
    help="Config file (default: $PAXM_CONFIG, $XDG_CONFIG_HOME/paxm/config.yaml, ~/.config/paxm/config.yaml).",
)
@click.version_option(__version__, "-v", "--version", prog_name="paxm", message="%(version)s")
@click.pass_context
def cli(ctx: click.Context, config_path: str | None) -> None:
    """paxm: memory for coding agents.

    Store and recall memories from the command line (remember, recall), serve them to MCP
    clients (mcp serve), and capture agent turns through harness hooks (setup).
    """
    state = CliState(config_path)
    ctx.obj = state
    ctx.call_on_close(state.close)


def _hoist_config_flag(argv: list[str]) -> list[str]:
    """Move ``--config X`` / ``-c X`` / ``--config=X`` found anywhere in argv to the front.

    Upstream accepts the flag anywhere on the line; so do we.
    """
    out: list[str] = []
    hoisted: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            out.extend(argv[i:])
            break
        if arg in ("--config", "-c") and i + 1 < len(argv):
            hoisted = ["--config", argv[i + 1]]
            i += 2
            continue
        if arg.startswith("--config="):
            hoisted = [arg]
            i += 1
            continue
        out.append(arg)
        i += 1
    return hoisted + out


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point: run the CLI and map :class:`PaxmError` to exit code 1."""
    args = _hoist_config_flag(list(sys.argv[1:] if argv is None else argv))
    try:
        # standalone_mode=False returns ctx.exit(n)'s code instead of exiting; honour it
        rc = cli.main(args=args, prog_name="paxm", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted!", err=True)
        sys.exit(1)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except PaxmError as exc:
        if os.environ.get("PAXM_RAISE_ERRORS"):
            raise
        click.echo(f"Error: {exc}", err=True)
        sys.exit(1)
    except BrokenPipeError:
        sys.exit(1)
    sys.exit(rc if isinstance(rc, int) else 0)
