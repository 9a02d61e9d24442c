"""Doctor check ``agents``: every enabled agent's integration reports on its native files."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from paxm_core.doctor import DoctorFinding

if TYPE_CHECKING:
    from paxm_core.config.model import Config

__all__ = ["check_agents"]

CHECK = "agents"


def check_agents(config: Config) -> Iterator[DoctorFinding]:
    """Each enabled agent's integration ``check()`` (hooks installed, paths exist, trusted), named by agent."""
    from paxm_core.api.integration import InstallContext
    from paxm_core.config.model import OWNER_PAXM
    from paxm_core.config.setup import agents_enabled_in_file
    from paxm_core.install_hints import integration_install_hint
    from paxm_core.plugins import get_plugin_manager

    if not config.exists:
        return  # no config file: setup never ran, so no agent was connected (defaults are not installs)
    integrations = get_plugin_manager().integrations()
    chosen = agents_enabled_in_file(config)
    for name in sorted(config.agents):
        agent = config.agents[name]
        if not agent.enabled:
            continue
        integration = integrations.get(name)
        if integration is None and name not in chosen:
            continue  # enabled only by upstream's defaults and never installed: nothing was connected
        if integration is None:
            hint = integration_install_hint(name)
            fix = hint.removeprefix("install it with: ") if hint else f"paxm uninstall --agent {name} --yes"
            missing = f"agent {name} is enabled but no integration is installed for it, so nothing captures or recalls"
            yield DoctorFinding(CHECK, name, "warn", missing, fix)
            continue
        display = integration.display_name or name
        try:
            found = integration.check(InstallContext(config=config, owner=agent.integration.owner or OWNER_PAXM))
        except Exception as exc:  # an integration bug: report it, keep checking the others
            yield DoctorFinding(CHECK, name, "error", f"{display}: its check failed: {exc}")
            continue
        if not found:
            yield DoctorFinding(CHECK, name, "ok", f"{display}: enabled (its integration reports nothing to check)")
        absent = bool(found) and _not_on_this_machine(integration)
        for finding in found:
            # an agent enabled only by upstream's defaults (not in the user's file) was never
            # connected on purpose, and a harness that is not on this machine captures nothing
            # to lose (upstream's documented config enables Codex): worth a warning, not a failed doctor
            level = finding.level if (name in chosen and not absent) or finding.level != "error" else "warn"
            message = f"{display}: {finding.message}"
            if absent and finding.level == "error":
                message += f" ({display} is not detected on this machine)"
            yield DoctorFinding(CHECK, name, level, message, finding.fix)


def _not_on_this_machine(integration: object) -> bool:
    """Whether the integration's own ``detect()`` looks for its harness and finds nothing."""
    from paxm_core.integration import IntegrationBase

    detect = getattr(type(integration), "detect", None)
    if detect is None or detect is IntegrationBase.detect:
        return False
    try:
        return integration.detect() is None  # type: ignore[attr-defined]
    except Exception:  # a broken probe: judge the hooks as if the harness were there
        return False
