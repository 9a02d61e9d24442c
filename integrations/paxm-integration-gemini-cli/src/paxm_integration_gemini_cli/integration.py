"""The ``gemini-cli`` integration: Claude-shaped hooks in ``~/.gemini/settings.json``, as data.

The core's :mod:`paxm_core.settings_hooks` engine does install, uninstall, doctor, decode and
output from :data:`SPEC`.  Gemini's own parts: ``hooks`` may hold the switches ``enabled`` /
``disabled`` / ``notifications`` (older releases' place for ``hooksConfig``), which are not
events; the settings may hold comments, which a JSON rewrite cannot keep; ``AfterAgent``
carries the reply as ``prompt_response``; doctor reports Gemini's switches that keep paxm's
hooks from running.  Gemini reads JSON only on stdout and HTML-escapes the injected context.
"""

from __future__ import annotations

from pathlib import Path

from paxm_core.integration import Finding
from paxm_core.settings_hooks import (
    HOOK_TIMEOUT_S,
    HooksData,
    Location,
    SettingsHooksIntegration,
    SettingsHooksSpec,
    WantedHooks,
    hook_events,
)

__all__ = ["CONFIG_FIELDS", "SPEC", "GeminiCliIntegration"]

#: keys of ``hooks`` that are switches, not events (Gemini skips them when it loads hooks)
CONFIG_FIELDS = frozenset({"enabled", "disabled", "notifications"})

SPEC = SettingsHooksSpec(
    name="gemini-cli",
    aliases=("gemini", "gemini_cli", "geminicli"),
    display_name="Gemini CLI",
    setup_priority=44,
    executable="gemini",
    # $PAXM_GEMINI_SETTINGS > $GEMINI_CLI_HOME/.gemini/settings.json > ~/.gemini/settings.json
    # (GEMINI_CLI_HOME is Gemini's own override of the home directory it keeps .gemini in)
    location=Location("PAXM_GEMINI_SETTINGS", home_var="GEMINI_CLI_HOME", file=".gemini/settings.json"),
    events=hook_events("SessionStart", "BeforeAgent", "AfterTool", "AfterAgent"),
    matchers={"AfterTool": ".*"},
    handler={"type": "command", "name": "paxm-{native}", "command": "{command}", "timeout": HOOK_TIMEOUT_S * 1000},
    html_escaped=True,
    reply_field="prompt_response",
    switches=CONFIG_FIELDS,
    hint="paxm cannot keep comments when it rewrites the file; remove them or add paxm's hooks by hand",
)


class GeminiCliIntegration(SettingsHooksIntegration):
    """Gemini CLI: hooks in ``~/.gemini/settings.json``, ``hookSpecificOutput`` JSON output."""

    spec = SPEC

    def extra_findings(self, data: HooksData, wanted: WantedHooks, path: Path, fix: str) -> list[Finding]:
        """Gemini's own switches that keep installed hooks from running (``hooksConfig``, ``hooks``)."""
        findings: list[Finding] = []
        if not isinstance(data, dict) or not isinstance(wanted, dict):
            return findings  # Gemini's file is JSON and paxm's hooks there are groups by event
        names = {str(self.handler("", native)["name"]) for native in wanted}
        for key in ("hooksConfig", "hooks"):
            switches = data.get(key)
            if not isinstance(switches, dict):
                continue
            if switches.get("enabled") is False:
                findings.append(Finding("warn", f"{key}.enabled is false in {path}: Gemini runs no hooks", ""))
            disabled = switches.get("disabled")
            for name in sorted(names & set(disabled if isinstance(disabled, list) else [])):
                findings.append(Finding("warn", f"{key}.disabled turns off paxm's hook {name} in {path}", ""))
        return findings
