"""The ``qwen`` integration: Qwen Code's Claude-shaped hooks in ``~/.qwen/settings.json``, as data.

The core's :mod:`paxm_core.settings_hooks` engine does install, uninstall, doctor, decode and
output from :data:`SPEC`.  Qwen's payloads carry the generic decoder's field names (its Stop
payload has the reply in ``last_assistant_message``, not the prompt, so the prompt is written
at ``UserPromptSubmit`` and the turn end flushes both into one episode).  Qwen reads JSON only
on stdout and HTML-escapes the injected context.
"""

from __future__ import annotations

from paxm_core.integration import EVENT_SESSION_START, EVENT_TOOL_USE, EVENT_TURN_END, EVENT_USER_INPUT
from paxm_core.settings_hooks import Location, SettingsHooksIntegration, SettingsHooksSpec

__all__ = ["HOOK_TIMEOUT_MS", "SPEC", "QwenCodeIntegration"]

#: Qwen Code's hook timeout is in milliseconds.  The hook client answers within its own 5 s
#: ceiling; the rest covers interpreter start-up on a loaded machine.
HOOK_TIMEOUT_MS = 10_000

SPEC = SettingsHooksSpec(
    name="qwen",
    aliases=("qwen-code", "qwen_code", "qwencode"),
    display_name="Qwen Code",
    setup_priority=45,
    executable="qwen",
    # $PAXM_QWEN_SETTINGS > $QWEN_HOME/settings.json > ~/.qwen/settings.json
    location=Location("PAXM_QWEN_SETTINGS", home_var="QWEN_HOME", home=".qwen"),
    events=(
        (EVENT_SESSION_START, "SessionStart"),
        (EVENT_USER_INPUT, "UserPromptSubmit"),
        (EVENT_TOOL_USE, "PostToolUse"),
        (EVENT_TURN_END, "Stop"),
    ),
    matchers={"PostToolUse": ".*"},
    handler={"type": "command", "command": "{command}", "timeout": HOOK_TIMEOUT_MS},
    html_escaped=True,
)


class QwenCodeIntegration(SettingsHooksIntegration):
    """Qwen Code: Claude-shaped hooks in ``~/.qwen/settings.json``, ``hookSpecificOutput`` JSON output."""

    spec = SPEC
