"""``paxm setup``: write a config (non-interactive with ``--yes``) and install agent integrations."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import click

from paxm_core.config import Config, config_exists, load_config, resolve_config_path, save_config
from paxm_core.config.model import OWNER_PAXM
from paxm_core.config.setup import SetupCatalog, SetupOptions, prepare_setup
from paxm_core.errors import IntegrationError, PaxmError, UsageError
from paxm_core.integration import InstallContext

__all__ = ["setup"]

NEXT_STEPS = (
    ('paxm remember --text "..."', "store a memory"),
    ('paxm recall --query "..."', "search memories"),
    ("paxm config doctor", "check provider health"),
)


def _summary(config: Config, agents: list[str], catalog: SetupCatalog) -> list[str]:
    lines = ["Setup summary", f"  User: {config.identity.user_id or 'unknown'}"]
    enabled = [name for name, p in config.providers.items() if p.enabled]
    lines.append(f"  Providers: {', '.join(enabled)}")
    lines.append(f"  Agents: {', '.join(catalog.display_name(a) for a in agents) or 'none'}")
    return lines


def _stop_hook_daemon(config_path: Path) -> str:
    """Flush and stop a running hook daemon so the next hook starts one with the new config."""
    try:
        from paxm_core.passive.control import send_control
    except ImportError:  # the passive runtime is optional at this layer
        return ""
    try:
        send_control(config_path, "shutdown")
    except PaxmError as exc:
        return str(exc)
    return ""


def _install_integrations(
    config: Config, agents: list[str], echo: Callable[[str], None], catalog: SetupCatalog
) -> dict[str, str]:
    """Hand each selected agent to its integration's ``install``; report what happened per agent."""
    results: dict[str, str] = {}
    for name in agents:
        display = catalog.display_name(name)
        integration = catalog.integrations.get(name)
        if integration is None:
            echo(f"{display}: enabled in config; no integration plugin is installed for it, so no hooks were installed")
            results[name] = "no-integration-plugin"
            continue
        owner = config.agents[name].integration.owner or OWNER_PAXM
        try:
            integration.install(InstallContext(config=config, owner=owner, echo=echo))
        except PaxmError:
            raise
        except Exception as exc:  # a plugin bug must surface as a clean error, config is already saved
            raise IntegrationError(f"installing the {display} integration failed: {exc}") from exc
        echo(f"{display}: integration installed (owner {owner})")
        results[name] = "installed"
    return results


def _preflight_integrations(config: Config, agents: list[str], catalog: SetupCatalog) -> None:
    """Let each selected integration check its native files before anything is written.

    ``preflight`` raises a ``PaxmError`` for, say, a settings.json that is not valid JSON;
    setup then stops with the config untouched.
    """
    for name in agents:
        integration = catalog.integrations.get(name)
        if integration is not None:
            owner = config.agents[name].integration.owner or OWNER_PAXM
            integration.preflight(InstallContext(config=config, owner=owner))


def _ensure_targets(config: Config, names: list[str], echo: Callable[[str], None]) -> None:
    """Run the set-up step of each provider in ``names`` that has one (:class:`SupportsEnsureTarget`).

    It creates or finds the remote user/graph/collection before the config is saved; a failure
    (a wrong API key, say) stops setup before anything is written.
    """
    from paxm_core.deadline import Deadline
    from paxm_core.plugins import get_plugin_manager
    from paxm_core.protocols import SupportsClose, SupportsEnsureTarget

    pm = get_plugin_manager()
    for name in names:
        provider_config = config.providers[name]
        try:
            factory = pm.provider_type(provider_config.type).factory
        except PaxmError:
            continue  # setup already refused uninstalled types
        provider = factory(name, provider_config)
        try:
            if isinstance(provider, SupportsEnsureTarget):
                target, state = provider.ensure_target(Deadline.after(provider_config.timeout or 30.0))
                echo(f"ensured {name} ({provider_config.type}) target: {target} ({state})")
        finally:
            if isinstance(provider, SupportsClose):
                provider.close()


def _enabled_providers(path: Path, force: bool) -> set[str]:
    """Providers already enabled in the existing config (their set-up step ran when they were enabled)."""
    if not force or not config_exists(path):
        return set()
    try:
        return {n for n, p in load_config(path).providers.items() if p.enabled}
    except PaxmError:
        return set()


@click.command("setup")
@click.option("--yes", "-y", is_flag=True, help="Accept defaults without prompting (required without a terminal).")
@click.option("--force", is_flag=True, help="Overwrite an existing config.")
@click.option("--provider", "providers", multiple=True, metavar="NAME", help="Provider to enable (repeatable).")
@click.option("--agent", "agents", multiple=True, metavar="NAME", help="Agent to enable (repeatable).")
@click.option("--user-id", default="", metavar="ID", help="Stable user identity (slugged); default $USER.")
@click.option("--team-id", "team_ids", default="", metavar="A,B", help="Add team-<id> write profiles.")
@click.option(
    "--integration",
    default=OWNER_PAXM,
    show_default=True,
    metavar="OWNER",
    help="Who owns the agent hooks: paxm, or an installed integration's owner name (e.g. claude-plugin).",
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
@click.option(
    "--graph-id",
    default="",
    metavar="ID",
    help="For provider types with a graph_id key: store in this named graph instead of a user graph.",
)
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

    Example: paxm setup --yes --provider sqlite --agent claude
    """
    state = ctx.find_root().obj
    path = resolve_config_path(getattr(state, "config_path", None))
    interactive = not yes and sys.stdin.isatty() and sys.stdout.isatty()
    if not yes and not interactive:
        raise UsageError(
            "setup needs --yes when not run in a terminal, e.g. `paxm setup --yes --provider sqlite --agent claude`"
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
    catalog = SetupCatalog.from_plugins()
    was_enabled = _enabled_providers(path, force)
    config, selected_agents, _ = prepare_setup(path, options, force=force, catalog=catalog)
    if interactive:
        for line in _summary(config, selected_agents, catalog):
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

    _preflight_integrations(config, selected_agents, catalog)
    # newly enabled providers, and those named with --provider (a re-run re-checks their key)
    named = {p.strip().lower() for p in providers}
    ensure = [n for n, p in config.providers.items() if p.enabled and (n not in was_enabled or n.lower() in named)]
    _ensure_targets(config, ensure, echo)
    saved = save_config(config, path)
    echo(f"saved config: {saved}")
    warning = _stop_hook_daemon(saved)
    if warning:
        click.echo(f"warning: config saved but the running hook daemon could not be stopped: {warning}", err=True)
    results = _install_integrations(config, selected_agents, echo, catalog)
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
