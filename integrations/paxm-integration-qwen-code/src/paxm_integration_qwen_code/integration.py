"""The ``qwen`` integration: Qwen Code's Claude-shaped hooks in ``~/.qwen/settings.json``, as data.

The core's :mod:`paxm_core.settings_hooks` engine does install, uninstall, doctor, decode and
output from :data:`SPEC`.  Qwen's payloads carry the generic decoder's field names (its Stop
payload has the reply in ``last_assistant_message``, not the prompt, so the prompt is written
at ``UserPromptSubmit`` and the turn end flushes both into one episode).  Qwen reads JSON only
on stdout and HTML-escapes the injected context.
"""

from __future__ import annotations

from paxm_core.settings_hooks import HOOK_TIMEOUT_S, Location, SettingsHooksIntegration, SettingsHooksSpec, hook_events

__all__ = ["SPEC", "QwenCodeIntegration"]


SPEC = SettingsHooksSpec(
    name="qwen",
    aliases=("qwen-code", "qwen_code", "qwencode"),
    display_name="Qwen Code",
    setup_priority=45,
    executable="qwen",
    # $PAXM_QWEN_SETTINGS > $QWEN_HOME/settings.json > ~/.qwen/settings.json
    location=Location("PAXM_QWEN_SETTINGS", home_var="QWEN_HOME", home=".qwen"),
    events=hook_events("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop"),
    matchers={"PostToolUse": ".*"},
    handler={"type": "command", "command": "{command}", "timeout": HOOK_TIMEOUT_S * 1000},
    html_escaped=True,
)


class QwenCodeIntegration(SettingsHooksIntegration):
    """Qwen Code: Claude-shaped hooks in ``~/.qwen/settings.json``, ``hookSpecificOutput`` JSON output."""

    spec = SPEC
