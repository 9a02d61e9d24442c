"""``paxm uninstall``: remove paxm's passive agent integrations, keep memories and provider config.

Order (upstream's): flush the capture queue through the running hook daemon (and stop it on a
full uninstall), mark the agents ``enabled: false`` (hook settings are kept, so a later setup
restores them), then let each agent's integration plugin remove exactly what it installed.
Provider config, memory data, telemetry, the capture queue and ``.paxm.bak`` backups are never
touched.  Running it twice is harmless.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from paxm_core.api.errors import IntegrationError, PaxmError, UsageError
from paxm_core.cli.common import install_context, tell_daemon

if TYPE_CHECKING:
    from paxm_core.config.model import Config
    from paxm_core.config.setup import SetupCatalog

__all__ = ["uninstall"]

# the daemon's socket and session state, and its parsed-config cache (``config.loader``)
_SHARED_STATE = ("paxm-hook.sock", "session_state.json", "config-parsed.json")


def _normalize(name: str, known: list[str], catalog: SetupCatalog) -> str:
    wanted = "-".join(name.strip().lower().replace("_", "-").split())
    canonical = catalog.canonical_agent(wanted)  # an installed integration's name or alias first
    if canonical:
        return canonical
    if wanted in known:
        return wanted
    compact = wanted.replace("-", "")
    for candidate in known:
        if candidate.replace("-", "") == compact:
            return candidate
    raise UsageError(f"unsupported agent {name!r}; expected one of {', '.join(known)}")


def _load(path: Path, catalog: SetupCatalog) -> tuple[Config, bool]:
    """The config and whether it could be read; an unreadable one gives the defaults for ``path``.

    Uninstall must work whatever the file says: the hooks it removes are found by this config
    file's path, not by its contents, and the file itself is then left as it is.
    """
    from paxm_core.api.errors import ConfigError
    from paxm_core.config import load_config
    from paxm_core.config.defaults import default_config

    try:
        return load_config(path, provider_types=catalog.provider_catalog()), True  # missing -> defaults
    except ConfigError as exc:
        advice = "" if "paxm setup --yes --force" in str(exc) else " (`paxm setup --yes --force` starts again)"
        click.echo(
            f"warning: {exc}\nThe config cannot be read: removing every hook paxm installed for {path};"
            f" the file is left as it is{advice}.",
            err=True,
        )
        return default_config(path, catalog.provider_catalog()), False


def _remove(config: Config, targets: list[str], catalog: SetupCatalog, one: bool) -> tuple[list[str], list[str]]:
    """Run each target's integration ``uninstall``; (agents whose hooks were removed, failures)."""
    removed: list[str] = []
    failures: list[str] = []
    for name in targets:
        label = catalog.display_name(name)
        integration = catalog.integrations.get(name)
        if integration is None:  # no integration plugin for it: there is nothing paxm could have installed
            if one:
                click.echo(f"{label}: disabled; no integration plugin is installed for it, so no hooks were removed")
            continue
        try:
            lines = integration.uninstall(install_context(config, name, click.echo))
        except PaxmError as exc:
            failures.append(f"{label}: {exc}")
            continue
        except Exception as exc:  # a plugin bug is reported per agent; the others still run
            failures.append(f"{label}: {type(exc).__name__}: {exc}")
            continue
        if lines:
            click.echo(f"uninstalled {label} passive integration")
            removed.append(name)
        elif one:
            click.echo(f"{label}: no paxm hooks were installed for this config; nothing to remove")
    return removed, failures


def _remove_shared_state(hooks_dir: Path) -> list[str]:
    errors = []
    for name in _SHARED_STATE:
        try:
            (hooks_dir / name).unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            errors.append(f"{hooks_dir / name}: {exc.strerror or exc}")
    try:
        hooks_dir.rmdir()  # only when empty: the capture queue and logs stay
    except OSError:
        pass
    return errors


@click.command("uninstall")
@click.option("--agent", "agent", default="", metavar="NAME", help="Uninstall one agent (default: every agent).")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation (required without a terminal).")
@click.pass_context
def uninstall(ctx: click.Context, agent: str, yes: bool) -> None:
    """Remove paxm's hooks from agents; memories, providers and telemetry stay.

    Example: paxm uninstall --agent claude --yes
    """
    from paxm_core.config import config_exists, resolve_config_path
    from paxm_core.config.setup import SetupCatalog, fold_agent_aliases
    from paxm_core.plugins import get_plugin_manager

    path = resolve_config_path(ctx.find_root().obj.config_path)
    has_config = config_exists(path)
    catalog = SetupCatalog.from_plugins(get_plugin_manager())
    config, readable = _load(path, catalog)
    fold_agent_aliases(config, catalog)  # upstream's ``kimi`` is the ``kimi-code`` integration's agent
    # configured agents plus every agent an installed integration serves, in setup order
    known = sorted({*config.agents, *catalog.integrations}, key=lambda n: (catalog.agent_priority(n), n))
    targets = [_normalize(agent, known, catalog)] if agent.strip() else known

    if not yes:
        if not (sys.stdin.isatty() and sys.stdout.isatty()):
            raise UsageError(
                "uninstall needs --yes when not run in a terminal, e.g. `paxm uninstall --agent claude --yes`"
            )
        click.echo(f"Passive integrations to remove: {', '.join(catalog.display_name(t) for t in targets)}")
        if not click.confirm("Continue uninstall?", default=False):
            click.echo("uninstall cancelled")
            return

    warning = tell_daemon(path, "flush" if agent.strip() else "shutdown")
    if warning:
        click.echo(f"paxm hook buffer flush skipped: {warning}", err=True)

    if has_config and readable:
        _disable(config, targets, path)

    removed, failures = _remove(config, targets, catalog, one=bool(agent.strip()))
    if not agent.strip():
        if not removed and not failures:
            click.echo(f"no paxm hooks were installed for {path}; nothing to remove")
        failures.extend(_remove_shared_state(config.hooks_dir))
    if failures:
        raise IntegrationError("uninstall incomplete: " + "; ".join(failures))


def _disable(config: Config, targets: list[str], path: Path) -> None:
    """Mark ``targets`` ``enabled: false`` in the config file (their hook settings stay)."""
    from paxm_core.config import save_config

    enabled = [config.agents[n] for n in targets if n in config.agents and config.agents[n].enabled]
    for agent_config in enabled:
        agent_config.enabled = False
    if enabled:
        save_config(config, path)
