"""``paxm setup``: write a config (non-interactive with ``--yes``) and install agent integrations."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import click

from paxm_core.api.errors import ConfigError, IntegrationError, PaxmError
from paxm_core.cli.common import echo_json, install_context, json_flag, tell_daemon
from paxm_core.config import Config, load_config, resolve_config_path, save_config
from paxm_core.config.model import OWNER_PAXM
from paxm_core.config.setup import (
    SetupCatalog,
    SetupOptions,
    config_load_error,
    move_config_aside,
    prepare_setup,
    setup_finds_config,
)

__all__ = ["setup"]

NEXT_STEPS = (
    ('paxm remember "..."', "store a memory"),
    ('paxm recall --query "..."', "search memories"),
    ("paxm mcp serve --agent <name>", "serve the same memory to MCP clients (docs/mcp.md)"),
    ("paxm config doctor", "check provider health"),
)


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
        context = install_context(config, name, echo)
        try:
            integration.install(context)
        except PaxmError:
            raise
        except Exception as exc:  # a plugin bug must surface as a clean error, config is already saved
            raise IntegrationError(f"installing the {display} integration failed: {exc}") from exc
        echo(f"{display}: integration installed (owner {context.owner})")
        results[name] = "installed"
    return results


def _remove_disabled(
    config: Config, selected: list[str], echo: Callable[[str], None], catalog: SetupCatalog
) -> list[str]:
    """Remove the hooks this config installed for agents it no longer enables; return those agents.

    ``uninstall`` removes only hooks that run paxm for this config file, so an agent that was
    never connected is untouched.
    """
    removed: list[str] = []
    for name, integration in catalog.integrations.items():
        agent = config.agents.get(name)
        if name in selected or (agent is not None and agent.enabled):
            continue
        display = catalog.display_name(name)
        try:
            lines = integration.uninstall(install_context(config, name, echo))
        except Exception as exc:  # the new setup is saved: say what is left, do not fail it
            echo(f"warning: {display} is no longer enabled but its paxm hooks could not be removed: {exc}")
            continue
        if lines:
            echo(f"{display}: no longer enabled; its paxm hooks were removed")
            removed.append(name)
    return removed


def _ensure_targets(config: Config, names: list[str], echo: Callable[[str], None]) -> None:
    """Run the set-up step of each provider in ``names`` that has one (:class:`SupportsEnsureTarget`).

    It creates or finds the remote user/graph/collection before the config is saved; a failure
    (a wrong API key, say) stops setup before anything is written.
    """
    from paxm_core.api.deadline import Deadline
    from paxm_core.api.protocols import SupportsClose, SupportsEnsureTarget
    from paxm_core.plugins import get_plugin_manager

    pm = get_plugin_manager()
    for name in names:
        provider_config = config.providers[name]
        try:
            spec = pm.provider_type(provider_config.type)
        except PaxmError:
            continue  # setup already refused uninstalled types
        provider = spec.factory(name, provider_config)
        try:
            deadline = Deadline.after(provider_config.timeout or 30.0)
            if isinstance(provider, SupportsEnsureTarget):
                target, state = provider.ensure_target(deadline)
                echo(f"ensured {name} ({provider_config.type}) target: {target} ({state})")
            elif spec.locality != "local":
                # no set-up step: at least prove the server answers with these settings
                try:
                    provider.health(deadline)
                except PaxmError as exc:
                    raise PaxmError(f"{name} ({provider_config.type}) connection check failed: {exc}") from exc
                echo(f"checked {name} ({provider_config.type}): reachable")
        finally:
            if isinstance(provider, SupportsClose):
                provider.close()


def _enabled_providers(path: Path, force: bool) -> set[str]:
    """Providers already enabled in the existing config (their set-up step ran when they were enabled)."""
    if not force or not setup_finds_config(path):
        return set()
    from paxm_core.plugins import installed_provider_catalog

    try:
        config = load_config(path, provider_types=installed_provider_catalog())
        return {n for n, p in config.providers.items() if p.enabled}
    except PaxmError:
        return set()


@dataclass
class _Prepared:
    """What setup is about to apply."""

    config: Config
    agents: list[str]
    #: providers enabled before (their set-up step ran when they were enabled)
    was_enabled: set[str]
    #: the existing config cannot be read: it is moved aside just before the new one is saved
    replace_broken: bool = False


def _broken_config_error(path: Path, problem: ConfigError) -> ConfigError:
    text = f"{problem}\nThe config cannot be read, so setup stops here"
    if "paxm setup --yes --force" in text:  # the loader's message names the way out already
        return ConfigError(text + ".")
    return ConfigError(
        f"{text}: `paxm setup --yes --force` moves it aside (kept as {path.name}.broken-<time>) and writes"
        " a new one; `paxm uninstall --yes` removes paxm's hooks whatever the config says."
    )


def _ask(
    path: Path,
    options: SetupOptions,
    force: bool,
    catalog: SetupCatalog,
    broken: ConfigError | None,
) -> _Prepared | None:
    """Ask setup's questions (terminal or piped stdin); ``None`` when the person declines.

    Raises :class:`KeyboardInterrupt` on Ctrl-C; nothing has been written by then.
    """
    from paxm_core.cli.prompts import make_prompter
    from paxm_core.cli.setup_flow import ask_setup, summary_lines
    from paxm_core.config.setup import add_offered_agents, apply_setup, setup_base_config

    prompter = make_prompter()
    existed = setup_finds_config(path)
    if broken is not None:
        prompter.note(f"The config at {path} cannot be read: {broken}")
        question = f"Move it aside (kept as {path.name}.broken-<time>) and start a new config?"
        if not prompter.confirm(question, True):
            return None
        existed, force = False, True
    elif existed and not force:
        if not prompter.confirm(f"Update the existing config at {path}?", True):
            return None
        force = True
    was_enabled = _enabled_providers(path, force)
    config = setup_base_config(path, existed, catalog.provider_catalog())
    add_offered_agents(config, catalog)  # every installed integration is offered, under one name
    answers = ask_setup(prompter, config, catalog, options)
    options.providers = answers.providers
    options.agents = answers.agents
    options.agents_chosen = True
    config, selected_agents = apply_setup(config, options, catalog)
    config.path = path
    for line in summary_lines(config, selected_agents, catalog):
        prompter.note(line)
    if not prompter.confirm("Apply this setup?", True):
        return None
    return _Prepared(config, selected_agents, was_enabled, replace_broken=broken is not None)


def _prepare(
    ctx: click.Context,
    path: Path,
    options: SetupOptions,
    yes: bool,
    force: bool,
    catalog: SetupCatalog,
) -> _Prepared | None:
    """The new config, the agents to connect and the providers enabled before; ``None`` when cancelled."""
    broken = config_load_error(path, catalog.provider_catalog())
    try:
        if yes:
            if broken is not None and not force:
                raise _broken_config_error(path, broken)
            was_enabled = _enabled_providers(path, force)
            config, selected_agents, _ = prepare_setup(
                path, options, force=force, catalog=catalog, start_fresh=broken is not None
            )
            return _Prepared(config, selected_agents, was_enabled, replace_broken=broken is not None)
        prepared = _ask(path, options, force, catalog, broken)
        if prepared is None:
            click.echo("setup cancelled; nothing was saved")
        return prepared
    except KeyboardInterrupt:
        click.echo("\nsetup cancelled; nothing was saved", err=True)
        ctx.exit(130)


def _apply(
    prepared: _Prepared,
    providers: tuple[str, ...],
    path: Path,
    catalog: SetupCatalog,
    echo: Callable[[str], None],
) -> tuple[Path, dict[str, str], list[str]]:
    """Check integrations and providers, save the config, install the integrations, remove stale hooks."""
    config, selected_agents = prepared.config, prepared.agents
    for name in selected_agents:  # an integration's native file it cannot read stops setup here
        integration = catalog.integrations.get(name)
        if integration is not None:
            integration.preflight(install_context(config, name))
    # newly enabled providers, and those named with --provider (a re-run re-checks their key)
    named = {p.strip().lower() for p in providers}
    ensure = [
        n for n, p in config.providers.items() if p.enabled and (n not in prepared.was_enabled or n.lower() in named)
    ]
    _ensure_targets(config, ensure, echo)
    if prepared.replace_broken:
        kept = move_config_aside(path)
        echo(f"moved the unreadable config aside to {kept} (kept, mode 0600)")
    saved = save_config(config, path)
    echo(f"saved config: {saved}")
    warning = tell_daemon(saved, "shutdown")  # the next hook starts a daemon on the new config
    if warning:
        click.echo(f"warning: config saved but the running hook daemon could not be stopped: {warning}", err=True)
    results = _install_integrations(config, selected_agents, echo, catalog)
    removed = _remove_disabled(config, selected_agents, echo, catalog)
    if not selected_agents:
        echo("no agent is connected (none was chosen or detected); connect one with `paxm setup --force --agent NAME`")
    return saved, results, removed


@click.command("setup")
@click.option(
    "--yes",
    "-y",
    is_flag=True,
    help="Ask nothing: use the flags and the defaults. Without it setup asks in a terminal, or reads"
    " numbered answers (all, none, 1,3) line by line from piped stdin.",
)
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
@json_flag("Print a JSON summary instead of text.")
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
    """Create or update the paxm config and connect agents.

    In a terminal it asks which providers to enable (and their keys, masked), which agents to
    connect (the ones found on this machine are pre-selected), shows a summary and asks to
    confirm. Flags answer questions in advance. Nothing is saved before the connection check
    passes; Ctrl-C saves nothing.

    Example: paxm setup --yes --provider sqlite --agent claude
    """
    path = resolve_config_path(ctx.find_root().obj.config_path)
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
    from paxm_core.plugins import get_plugin_manager

    catalog = SetupCatalog.from_plugins(get_plugin_manager())
    prepared = _prepare(ctx, path, options, yes, force, catalog)
    if prepared is None:
        return

    messages: list[str] = []
    echo = messages.append if as_json else click.echo  # --json holds the messages back for its summary
    saved, results, removed = _apply(prepared, providers, path, catalog, echo)
    if as_json:
        config = prepared.config
        summary = {
            "config_path": str(saved),
            "user_id": config.identity.user_id,
            "providers": [n for n, p in config.providers.items() if p.enabled],
            "agents": prepared.agents,
            "integrations": results,
            "removed_hooks": removed,
            "messages": messages,
        }
        echo_json(summary, ascii=True)
        return
    click.echo("Next steps")
    for command, hint in NEXT_STEPS:
        click.echo(f"  {command}  # {hint}")
