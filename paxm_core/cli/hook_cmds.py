"""Internal hook commands: ``paxm __hook``, ``paxm __hook-daemon``, ``paxm __hook-control``."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from paxm_core.cli.common import echo_json

__all__ = ["hook", "hook_control", "hook_daemon"]


def _config_path(ctx: click.Context) -> str:
    from paxm_core.config import resolve_config_path

    return str(resolve_config_path(ctx.find_root().obj.config_path))


@click.command("__hook", hidden=True, context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.option("--target", required=True, help="Agent name (agents.<name> in config).")
@click.option("--event", "event", default="", help="Hook event (normalized or the integration's native name).")
@click.option("--mode", default="", help="Output mode the target's integration knows (default text).")
@click.option("--json", "json_out", is_flag=True, help="Output mode json (the integration's JSON output).")
@click.pass_context
def hook(ctx: click.Context, target: str, event: str, mode: str, json_out: bool) -> None:
    """Handle one hook event in-process, reading the native payload on stdin.

    Same policy and output as the hook client + daemon (for debugging and evals); always exits 0.
    Any other bare ``--<mode>`` flag selects that output mode, as the hook client does.
    """
    from paxm_core.passive.inprocess import run_hook

    extra = [arg[2:] for arg in ctx.args if arg.startswith("--") and "=" not in arg and arg[2:].isidentifier()]
    mode = mode or ("json" if json_out else "") or (extra[-1] if extra else "") or "text"
    raw = sys.stdin.buffer.read().decode("utf-8", "replace")
    owner = os.environ.get("PAXM_INTEGRATION_OWNER", "")
    output, errors = run_hook(_config_path(ctx), target, event or "user_input", raw, mode=mode, owner=owner)
    for message in errors:
        click.echo(f"paxm hook {message}", err=True)
    if output:
        click.echo(output)


@click.command("__hook-daemon", hidden=True)
@click.option("--socket", "socket_path", default=None, help="Socket path (default <configdir>/hooks/paxm-hook.sock).")
@click.option(
    "--idle-timeout", default="30m", show_default=True, help="Flush and exit after this long without requests."
)
@click.pass_context
def hook_daemon(ctx: click.Context, socket_path: str | None, idle_timeout: str) -> None:
    """Run the hook daemon in the foreground."""
    import signal

    from paxm_core.duration import parse_duration
    from paxm_core.passive.daemon import HookDaemon, exit_now

    daemon = HookDaemon(_config_path(ctx), idle_timeout=parse_duration(idle_timeout), socket_path=socket_path)
    signal.signal(signal.SIGTERM, lambda *_: daemon.stop())
    exit_now(daemon.run())  # a recall thread stuck in a provider must not keep the process alive


@click.command("__hook-control", hidden=True)
@click.option("--flush", "action", flag_value="flush", default=True, help="Deliver everything queued (default).")
@click.option("--shutdown", "action", flag_value="shutdown", help="Flush, then stop the daemon.")
@click.option("--status", "action", flag_value="status", help="Show the daemon's status.")
@click.option("--json", "json_out", is_flag=True, help="Print the daemon's answer as JSON.")
@click.pass_context
def hook_control(ctx: click.Context, action: str, json_out: bool) -> None:
    """Flush, stop or inspect the running hook daemon (no-op when none runs)."""
    from paxm_core.passive.control import send_control

    response: dict[str, Any] | None = send_control(_config_path(ctx), action)
    if json_out:
        echo_json(response or {"running": False}, ascii=True)
    elif response is None:
        click.echo("hook daemon is not running")
    elif action == "status":
        click.echo(f"hook daemon pid {response.get('pid')} up {response.get('uptime_seconds')}s")
