"""``paxm config path|show|doctor``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from paxm_core.api.errors import PaxmError
from paxm_core.cli.common import echo_json, json_flag
from paxm_core.config import resolve_config_path
from paxm_core.config.codec import dump_config

if TYPE_CHECKING:
    from paxm_core.runtime import Runtime

__all__ = ["config"]


@click.group("config")
def config() -> None:
    """Inspect the configuration: where it is, what it says, whether providers are healthy."""


@config.command("path")
@click.pass_context
def path_cmd(ctx: click.Context) -> None:
    """Print the config file paxm uses (it need not exist yet)."""
    click.echo(str(resolve_config_path(ctx.find_root().obj.config_path or None)))


@config.command("show")
@json_flag("Print JSON instead of YAML.")
@click.pass_context
def show_cmd(ctx: click.Context, as_json: bool) -> None:
    """Print the effective (normalized) config; API keys, tokens and env values are redacted."""
    cfg = ctx.find_root().obj.config()
    if not cfg.exists:
        click.echo(f"# no config file at {cfg.path}; showing built-in defaults", err=True)
    data = dump_config(cfg, redact=True)
    if as_json:
        echo_json(data)
        return
    import yaml

    click.echo(yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False), nl=False)


@config.command("doctor")
@json_flag("Print [{provider, required, ok, error?}] as JSON; installation findings add check, level and fix.")
@click.pass_context
def doctor_cmd(ctx: click.Context, as_json: bool) -> None:
    """Check the whole installation: providers, each enabled agent's hooks, plugins.

    Every problem comes with the command that fixes it. Exits 1 when a provider some profile
    requires is unhealthy or any check reports an error.
    """
    from paxm_core.doctor import DoctorFinding, run_checks

    state = ctx.find_root().obj
    config = state.config()  # a file that does not parse stops here, with its error
    runtime: Runtime | None = None
    unstartable = ""
    try:
        runtime = state.runtime()
    except PaxmError as exc:  # e.g. an enabled provider type that is not installed: report it with the rest
        unstartable = str(exc)
    # the checks first: provider health opens databases, and opening one repairs its mode
    findings = run_checks(config)
    statuses = list(runtime.router.health()) if runtime is not None else []
    if runtime is None and not any(f.check == "config" and f.level == "error" for f in findings):
        findings.append(DoctorFinding("config", "providers", "error", unstartable, "fix the setting it names"))
    if as_json:
        echo_json([s.to_json() for s in statuses] + [f.to_json() for f in findings])
    else:
        for status in statuses:
            click.echo(f"ok: {status.provider}" if status.ok else f"error: {status.provider}: {status.error}")
        for finding in findings:
            click.echo(f"{finding.level}: {finding.message}")
            if finding.fix and finding.level != "ok":
                click.echo(f"  fix: {finding.fix}")
    failed = [s.provider for s in statuses if s.required and not s.ok]
    broken = list(dict.fromkeys(f"{f.check}:{f.subject}" for f in findings if f.level == "error"))
    problems = [f"required provider(s) unhealthy: {', '.join(failed)}"] if failed else []
    problems += [f"installation problem(s): {', '.join(broken)}"] if broken else []
    if problems:
        # A PaxmError (not ctx.exit) so the exit status is 1 under main()'s standalone_mode=False.
        raise PaxmError("; ".join(problems))
