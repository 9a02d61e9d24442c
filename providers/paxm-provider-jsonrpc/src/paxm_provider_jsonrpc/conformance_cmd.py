"""``paxm eval provider jsonrpc``: the JSON-RPC conformance run (added through ``paxm_register_commands``)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from paxm_core.api.errors import PaxmError
from paxm_core.api.provider_config import ProviderConfig
from paxm_core.duration import format_duration, parse_duration

__all__ = ["attach", "jsonrpc"]


if TYPE_CHECKING:
    _ParamType = click.ParamType[float]
else:  # ParamType is generic only from click 8.2 on; we support 8.1
    _ParamType = click.ParamType


class _Duration(_ParamType):
    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, float):
            return value
        try:
            seconds = parse_duration(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)
        if seconds <= 0:
            self.fail(f'{value!r} must be a positive duration like "10s"', param, ctx)
        return seconds


@click.command("jsonrpc")
@click.option("--command", "command", required=True, metavar="PATH", help="The plugin executable.")
@click.option("--arg", "args", multiple=True, metavar="V", help="Argument for the plugin; repeat as needed.")
@click.option("--timeout", type=_Duration(), default="10s", show_default=True, help="Timeout per JSON-RPC call.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def jsonrpc(command: str, args: tuple[str, ...], timeout: float, as_json: bool) -> None:
    """Run the JSON-RPC provider conformance checks against PATH.

    Exits 1 when a required check fails.  Checks run in order: health, capabilities, put
    acknowledgement, stable ref id, search fidelity, attribution fidelity (when advertised),
    putBatch (or its fallback), delete lifecycle (when advertised).
    """
    if not command.strip():
        raise click.BadParameter("JSON-RPC conformance requires --command PATH", param_hint="--command")
    from paxm_provider_jsonrpc.conformance import run_conformance
    from paxm_provider_jsonrpc.provider import JsonRpcProvider

    config = ProviderConfig(
        type="jsonrpc", enabled=True, transport="stdio", command=command, args=list(args), timeout=timeout
    )
    result = run_conformance(JsonRpcProvider("conformance", config))
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2))
    else:
        for line in result.text_lines():
            click.echo(line)
    if not result.passed:
        raise PaxmError(
            f"JSON-RPC provider failed required conformance checks (timeout {format_duration(timeout)} per call)"
        )


def attach(cli: click.Group) -> None:
    """Add ``jsonrpc`` under ``paxm eval provider`` (the core's group for provider checks)."""
    eval_group = cli.get_command(click.Context(cli), "eval")
    if not isinstance(eval_group, click.Group):
        return
    provider_group = eval_group.get_command(click.Context(eval_group), "provider")
    if isinstance(provider_group, click.Group) and "jsonrpc" not in provider_group.commands:
        provider_group.add_command(jsonrpc)
