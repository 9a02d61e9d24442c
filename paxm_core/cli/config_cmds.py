"""``paxm config path|show|doctor``."""

from __future__ import annotations

import json
from typing import Any

import click

from paxm_core.config import load_config, resolve_config_path
from paxm_core.errors import PaxmError

__all__ = ["config"]


def _config_path_arg(ctx: click.Context) -> str | None:
    state = ctx.find_root().obj
    value = getattr(state, "config_path", None)
    return value if isinstance(value, str) and value else None


@click.group("config")
def config() -> None:
    """Inspect the configuration: where it is, what it says, whether providers are healthy."""


@config.command("path")
@click.pass_context
def path_cmd(ctx: click.Context) -> None:
    """Print the config file paxm uses (it need not exist yet)."""
    click.echo(str(resolve_config_path(_config_path_arg(ctx))))


@config.command("show")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of YAML.")
@click.pass_context
def show_cmd(ctx: click.Context, as_json: bool) -> None:
    """Print the effective (normalized) config; API keys, tokens and env values are redacted."""
    cfg = load_config(_config_path_arg(ctx))
    if not cfg.exists:
        click.echo(f"# no config file at {cfg.path}; showing built-in defaults", err=True)
    data = cfg.to_json(redact=True)
    if as_json:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    import yaml

    click.echo(yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False), nl=False)


@config.command("doctor")
@click.option("--json", "as_json", is_flag=True, help="Print [{provider, required, ok, error?}] as JSON.")
@click.pass_context
def doctor_cmd(ctx: click.Context, as_json: bool) -> None:
    """Check every enabled provider; exit 1 when a provider some profile requires is unhealthy."""
    state = ctx.find_root().obj
    runtime: Any = state.runtime()
    statuses = list(runtime.router.health())
    capture, warnings = _capture_problems(runtime.config)
    if as_json:
        rows = [s.to_json() for s in statuses]
        # capture problems as extra entries; a healthy capture path adds none (upstream's shape)
        rows += [{"provider": "capture-queue", "required": True, "ok": False, "error": e} for e in capture]
        click.echo(json.dumps(rows, indent=2, ensure_ascii=False))
    else:
        for status in statuses:
            if status.ok:
                click.echo(f"ok: {status.provider}")
            else:
                click.echo(f"error: {status.provider}: {status.error}")
        for problem in capture:
            click.echo(f"error: capture-queue: {problem}")
    for warning in warnings:
        click.echo(f"warning: capture-queue: {warning}", err=True)
    failed = [s.provider for s in statuses if s.required and not s.ok]
    if capture:
        failed.append("capture-queue")
    if failed:
        # A PaxmError (not ctx.exit) so the exit status is 1 under main()'s standalone_mode=False.
        raise PaxmError(f"required provider(s) unhealthy: {', '.join(failed)}")


def _capture_problems(config: Any) -> tuple[list[str], list[str]]:
    """What breaks passive capture: the queue, failed inbox entries, the daemon's start-up.

    Returns ``(errors, warnings)``; errors make doctor exit non-zero.
    """
    from paxm_core.capture import _inbox

    errors: list[str] = []
    warnings: list[str] = []
    path = config.capture_queue_path
    for copy in _inbox.corrupt_copies(path):
        warnings.append(f"a corrupt queue was moved aside to {copy}; its undelivered events are in that file")
    if path.exists():
        try:
            conn = _inbox.connect(path)
        except Exception as exc:
            errors.append(f"{path}: {exc}; {_inbox.sqlite_hint(str(exc))}")
        else:
            try:
                (failed,) = conn.execute("SELECT count(*) FROM capture_inbox WHERE state = 'failed'").fetchone()
            finally:
                conn.close()
            if failed:
                errors.append(f"{failed} raw hook event(s) failed to process; see `paxm queue status`")
    log = config.hooks_dir / "paxm-hook-daemon.log"
    last = ""
    try:
        with open(log, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if "startup failed" in line or line.rstrip().endswith(" started"):
                    last = line.strip()
    except OSError:
        pass
    if "startup failed" in last:
        errors.append(f"the hook daemon's last start failed ({log}): {last}")
    return errors, warnings
