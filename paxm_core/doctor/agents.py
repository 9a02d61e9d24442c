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
    """Hooks installed, pointing at paths that exist, trusted where the harness asks for that.

    The integration's :meth:`~paxm_core.integration.Integration.check` decides what that means
    for its harness; this check only runs it for each enabled agent and adds the agent's name.
    """
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
            yield DoctorFinding(
                CHECK,
                name,
                "warn",
                f"agent {name} is enabled but no integration is installed for it, so nothing captures or recalls",
                fix,
            )
            continue
        display = integration.display_name or name
        owner = agent.integration.owner or OWNER_PAXM
        try:
            found = integration.check(InstallContext(config=config, owner=owner))
        except Exception as exc:  # an integration bug: report it, keep checking the others
            yield DoctorFinding(CHECK, name, "error", f"{display}: its check failed: {exc}")
            continue
        if not found:
            yield DoctorFinding(CHECK, name, "ok", f"{display}: enabled (its integration reports nothing to check)")
        for finding in found:
            # an agent enabled only by upstream's defaults (not in the user's file) was never
            # connected on purpose: its missing hooks are worth a warning, not a failed doctor
            level = finding.level if name in chosen or finding.level != "error" else "warn"
            yield DoctorFinding(CHECK, name, level, f"{display}: {finding.message}", finding.fix)
