"""``paxm setup``: write a config (non-interactive with ``--yes``) and install agent integrations."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from paxm_core.config import Config, config_exists, resolve_config_path, save_config
from paxm_core.config.model import INTEGRATION_OWNERS, OWNER_PAXM
from paxm_core.config.setup import AGENT_DISPLAY_NAMES, SetupOptions, prepare_setup
from paxm_core.errors import IntegrationError, PaxmError, UsageError

__all__ = ["setup"]

NEXT_STEPS = (
    ('paxm remember --text "..."', "store a memory"),
    ('paxm recall --query "..."', "search memories"),
    ("paxm config doctor", "check provider health"),
)


def _summary(config: Config, agents: list[str]) -> list[str]:
    lines = ["Setup summary", f"  User: {config.identity.user_id or 'unknown'}"]
    enabled = [name for name, p in config.providers.items() if p.enabled]
    lines.append(f"  Providers: {', '.join(enabled)}")
    lines.append(f"  Agents: {', '.join(AGENT_DISPLAY_NAMES.get(a, a) for a in agents) or 'none'}")
    return lines


def _stop_hook_daemon(config_path: Path) -> str:
    """Flush and stop a running hook daemon so the next hook starts one with the new config."""
    try:
        from paxm_core.hooks.control import send_control
    except ImportError:  # the passive runtime is optional at this layer
        return ""
    try:
        send_control(config_path, "shutdown")
    except PaxmError as exc:
        return str(exc)
    return ""


def _accepts_echo(func: Any) -> bool:
    """Whether an integration's ``install`` takes ``echo=`` (so its messages join setup's output)."""
    import inspect

    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "echo" or p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


def _install_integrations(config: Config, agents: list[str], echo: Any) -> dict[str, str]:
    """Hand each selected agent to its integration plugin; report what happened per agent."""
    from paxm_core.plugins import get_plugin_manager

    results: dict[str, str] = {}
    pm = get_plugin_manager()
    for name in agents:
        display = AGENT_DISPLAY_NAMES.get(name, name)
        integration = pm.integration(name)
        install = getattr(integration, "install", None) if integration is not None else None
        if install is None:
            echo(f"{display}: enabled in config; no integration plugin is installed for it, so no hooks were installed")
            results[name] = "no-integration-plugin"
            continue
        owner = config.agents[name].integration.owner or OWNER_PAXM
        try:
            if _accepts_echo(install):
                install(config, owner=owner, echo=echo)
            else:
                install(config, owner=owner)
        except PaxmError:
            raise
        except Exception as exc:  # a plugin bug must surface as a clean error, config is already saved
            raise IntegrationError(f"installing the {display} integration failed: {exc}") from exc
        echo(f"{display}: integration installed (owner {owner})")
        results[name] = "installed"
    return results


def _preflight_integrations(config: Config, agents: list[str]) -> None:
    """Let each selected integration check its native files before anything is written.

    An integration may expose ``preflight(config)`` that raises a ``PaxmError`` for, say, a
    settings.json that is not valid JSON; setup then stops with the config untouched.
    """
    from paxm_core.plugins import get_plugin_manager

    pm = get_plugin_manager()
    for name in agents:
        integration = pm.integration(name)
        preflight = getattr(integration, "preflight", None) if integration is not None else None
        if callable(preflight):
            preflight(config)


def _ensure_remote_targets(config: Config, selected: list[str], echo: Any) -> None:
    """Create or find the remote user/graph of each selected provider before the config is saved.

    A provider that can do so exposes ``ensure_target(deadline) -> (id, "created" | "exists")``
    (Zep does). Failing here — a wrong API key, say — stops setup before anything is written.
    """
    from paxm_core.deadline import Deadline
    from paxm_core.plugins import get_plugin_manager

    pm = get_plugin_manager()
    for name in selected:
        provider_config = config.providers.get(name)
        if provider_config is None or not provider_config.enabled or provider_config.type == "sqlite":
            continue
        try:
            factory = pm.provider_type(provider_config.type).factory
        except PaxmError:
            continue  # validation already reported uninstalled types
        provider = factory(name, provider_config)
        ensure = getattr(provider, "ensure_target", None)
        try:
            if callable(ensure):
                target_id, state = ensure(Deadline.after(provider_config.timeout or 30.0))
                target = provider_config.user_id or provider_config.graph_id or target_id
                kind = "user" if provider_config.user_id else "graph" if provider_config.graph_id else "target"
                echo(f"ensured {provider_config.type} {kind}: {target} ({state})")
        finally:
            close = getattr(provider, "close", None)
            if callable(close):
                close()


@click.command("setup")
@click.option("--yes", "-y", is_flag=True, help="Accept defaults without prompting (required without a terminal).")
@click.option("--force", is_flag=True, help="Overwrite an existing config.")
@click.option("--provider", "providers", multiple=True, metavar="NAME", help="Provider to enable (repeatable).")
@click.option("--agent", "agents", multiple=True, metavar="NAME", help="Agent to enable (repeatable).")
@click.option("--user-id", default="", metavar="ID", help="Stable user identity (slugged); default $USER.")
@click.option("--team-id", "team_ids", default="", metavar="A,B", help="Add team-<id> write profiles.")
@click.option(
    "--integration",
    type=click.Choice(INTEGRATION_OWNERS),
    default=OWNER_PAXM,
    show_default=True,
    help="Who owns the agent hooks.",
)
@click.option(
    "--api-key",
    default="",
    metavar="KEY",
    envvar="PAXM_API_KEY",
    show_envvar=True,
    help="API key for the selected remote provider(s); never printed.",
)
@click.option("--base-url", default="", metavar="URL", help="Base URL for the selected remote provider(s).")
@click.option("--graph-id", default="", metavar="ID", help="Zep: store in this named graph instead of a user graph.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary instead of text.")
@click.pass_context
def setup(
    ctx: click.Context,
    yes: bool,
    force: bool,
    providers: tuple[str, ...],
    agents: tuple[str, ...],
    user_id: str,
    team_ids: str,
    integration: str,
    api_key: str,
    base_url: str,
    graph_id: str,
    as_json: bool,
) -> None:
    """Create or update the paxm config and enable agents.

    Example: paxm setup --yes --provider sqlite --agent codex
    """
    state = ctx.find_root().obj
    path = resolve_config_path(getattr(state, "config_path", None))
    interactive = not yes and sys.stdin.isatty() and sys.stdout.isatty()
    if not yes and not interactive:
        raise UsageError(
            "setup needs --yes when not run in a terminal, e.g. `paxm setup --yes --provider sqlite --agent codex`"
        )
    options = SetupOptions(
        providers=list(providers),
        agents=list(agents),
        user_id=user_id,
        team_ids=team_ids,
        integration=integration,
        api_key=api_key.strip(),
        base_url=base_url.strip(),
        graph_id=graph_id.strip(),
    )
    if interactive and not force and config_exists(path):
        if not click.confirm(f"Update existing config at {path}?", default=False):
            click.echo("setup cancelled")
            return
        force = True
    config, selected_agents, _ = prepare_setup(path, options, force=force)
    if interactive:
        for line in _summary(config, selected_agents):
            click.echo(line)
        if not click.confirm("Apply this setup?", default=True):
            click.echo("setup cancelled")
            return

    messages: list[str] = []

    def echo(line: str) -> None:
        if as_json:
            messages.append(line)
        else:
            click.echo(line)

    _preflight_integrations(config, selected_agents)
    _ensure_remote_targets(config, list(providers), echo)
    saved = save_config(config, path)
    echo(f"saved config: {saved}")
    warning = _stop_hook_daemon(saved)
    if warning:
        click.echo(f"warning: config saved but the running hook daemon could not be stopped: {warning}", err=True)
    results = _install_integrations(config, selected_agents, echo)
    if as_json:
        summary = {
            "config_path": str(saved),
            "user_id": config.identity.user_id,
            "providers": [n for n, p in config.providers.items() if p.enabled],
            "agents": selected_agents,
            "integrations": results,
            "messages": messages,
        }
        click.echo(json.dumps(summary, indent=2))
        return
    click.echo("Next steps")
    for command, hint in NEXT_STEPS:
        click.echo(f"  {command}  # {hint}")
