"""The ``claude`` integration: ``settings.json`` hooks (as data) or the ``paxm-claude`` plugin.

The core's :mod:`paxm_core.settings_hooks` engine merges paxm's hooks into Claude Code's
``settings.json`` and takes exactly them out again, decodes the payloads (Claude's field names
are the generic decoder's) and renders the output, from :data:`SPEC`.  What is Claude's own:
the generated plugin (owner ``claude-plugin``), upstream's shim scripts it cleans up, what
counts as paxm's handler (upstream's shims too), and doctor's wording.

A handler is paxm's when its command runs paxm's hook client for *this* config file with
``--target claude`` (any interpreter or install location, so an install from a moved or
upgraded virtualenv is still recognised and replaced), or is one of upstream's shell shims
``<configdir>/hooks/claude-<event>``.  Nothing else is ever touched.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path

from paxm_core.integration import (
    EVENT_PRE_TOOL,
    EVENT_SESSION_START,
    EVENT_TOOL_FAILURE,
    EVENT_TOOL_USE,
    EVENT_TURN_END,
    EVENT_USER_INPUT,
    Finding,
    InstallContext,
    PastTurn,
    Report,
    launcher_values,
    parse_hook_command,
    remove_upstream_shims,
    setup_fix_command,
)
from paxm_core.settings_hooks import (
    HOOK_TIMEOUT_S,
    Location,
    SettingsHooksIntegration,
    SettingsHooksSpec,
    is_paxm_or_upstream_hook,
)
from paxm_integration_claude_code import plugin, transcripts

__all__ = [
    "OWNER_CLAUDE_PLUGIN",
    "SPEC",
    "ClaudeCodeIntegration",
    "is_paxm_command",
    "remove_legacy_shims",
]

OWNER_CLAUDE_PLUGIN = "claude-plugin"

SPEC = SettingsHooksSpec(
    name="claude",
    aliases=("claude-code", "claude_code", "claudecode"),
    display_name="Claude Code",
    setup_priority=10,  # upstream lists Claude Code second, after Codex
    executable="claude",
    # $PAXM_CLAUDE_SETTINGS > $CLAUDE_CONFIG_DIR/settings.json > ~/.claude/settings.json
    location=Location("PAXM_CLAUDE_SETTINGS", home_var="CLAUDE_CONFIG_DIR", home=".claude"),
    # installation order (also the order the events appear in settings.json and hooks.json)
    events=(
        (EVENT_SESSION_START, "SessionStart"),
        (EVENT_USER_INPUT, "UserPromptSubmit"),
        (EVENT_PRE_TOOL, "PreToolUse"),
        (EVENT_TOOL_USE, "PostToolUse"),
        (EVENT_TOOL_FAILURE, "PostToolUseFailure"),
        (EVENT_TURN_END, "Stop"),
    ),
    # PreToolUse only for the tools that change files or run commands (point of action)
    matchers={"SessionStart": "startup|resume|clear|compact", "PreToolUse": "Edit|MultiEdit|Write|NotebookEdit|Bash"},
    handler={"type": "command", "command": "{command}", "timeout": HOOK_TIMEOUT_S},
    # a handler already running the wanted command stays where it is; only its timeout is updated
    refresh=("timeout",),
    # SessionStart/UserPromptSubmit stdout is added to the context: plain text, or
    # hookSpecificOutput JSON with --json; PreToolUse context is always hookSpecificOutput JSON
    output="text",
    upstream_shims=True,
    write_events=("session_start", "user_input", "turn_end", "tool_use", "tool_failure"),
)


def is_paxm_command(command: str, config_path: str | os.PathLike[str]) -> bool:
    """Whether ``command`` is a paxm Claude hook for the config file ``config_path`` (or upstream's shim)."""
    return is_paxm_or_upstream_hook(command, config_path, SPEC.name)


def remove_legacy_shims(config_dir: Path) -> list[Path]:
    """Delete upstream's Claude shim scripts (only files that really are paxm shims)."""
    return remove_upstream_shims(config_dir, "claude", lambda head: b"__hook" in head and b"claude" in head)


def _commands_by_event(settings: object) -> dict[str, list[str]]:
    """settings.json ``hooks`` -> native event -> every handler command string."""
    out: dict[str, list[str]] = {}
    hooks = settings.get("hooks") if isinstance(settings, Mapping) else None
    if not isinstance(hooks, Mapping):
        return out
    for event, groups in hooks.items():
        for group in groups if isinstance(groups, list) else []:
            handlers = group.get("hooks") if isinstance(group, Mapping) else None
            for handler in handlers if isinstance(handlers, list) else []:
                command = handler.get("command") if isinstance(handler, Mapping) else None
                if isinstance(command, str):
                    out.setdefault(str(event), []).append(command)
    return out


def _missing_files(command: str) -> list[str]:
    """The files an installed paxm command line runs that are gone (interpreter, client, a retired ``client.sh``)."""
    hook = parse_hook_command(command)
    return [f for f in hook.files if not os.path.exists(f)] if hook is not None else [command]


class ClaudeCodeIntegration(SettingsHooksIntegration):
    """Claude Code: ``settings.json`` hooks or the ``paxm-claude`` plugin, text output."""

    spec = SPEC
    owners = (OWNER_CLAUDE_PLUGIN,)

    def transcript_files(self) -> list[Path]:
        """Every stored Claude Code session (``~/.claude/projects/*/*.jsonl``)."""
        return transcripts.transcript_files()

    def read_turns(self, path: Path) -> Iterator[PastTurn]:
        """The finished turns of one session transcript (see :mod:`.transcripts`)."""
        return transcripts.read_turns(path)

    def install(self, ctx: InstallContext) -> list[str]:
        """Install for ``owner``: settings.json hooks (``paxm``) or the generated plugin (``claude-plugin``).

        The plugin owner also removes paxm's settings.json hooks, so nothing fires twice.
        """
        config = ctx.config
        report = Report(ctx)
        path = self.hooks_path()
        report(*(f"removed the old paxm hook shim {shim}" for shim in remove_legacy_shims(Path(config.path).parent)))
        if ctx.owner != OWNER_CLAUDE_PLUGIN:
            return [*report, *super().install(ctx)]
        if self.update_hooks(config, None):
            report(f"removed paxm hooks from {path} (the paxm-claude plugin owns them now)")
        dest = plugin.generated_dir(Path(config.path).parent)
        plugin.generate_marketplace(dest, **launcher_values(config))
        report(
            f"Claude Code plugin generated at {dest}",
            f"  install it: claude plugin marketplace add {dest}",
            f"              claude plugin install {plugin.PLUGIN_NAME}@{plugin.MARKETPLACE_NAME}",
            f"  or try it for one session: claude --plugin-dir {dest / 'plugins' / plugin.PLUGIN_NAME}",
        )
        return report

    def uninstall(self, ctx: InstallContext) -> list[str]:
        """Remove exactly what paxm added: its settings.json handlers and the generated plugin dir."""
        config_dir = Path(ctx.config.path).parent
        report = Report(ctx)
        if self.update_hooks(ctx.config, None):
            report(f"removed paxm hooks from {self.hooks_path()}")
        report(*(f"removed the old paxm hook shim {shim}" for shim in remove_legacy_shims(config_dir)))
        dest = plugin.generated_dir(config_dir)
        if plugin.remove_generated(config_dir):
            report(
                f"removed the generated plugin {dest}",
                "  if Claude Code still lists it: claude plugin uninstall "
                f"{plugin.PLUGIN_NAME}@{plugin.MARKETPLACE_NAME}",
            )
        return report

    def check(self, ctx: InstallContext) -> list[Finding]:
        """Doctor: the hooks (or the generated plugin) are installed and point at a client that exists."""
        config = ctx.config
        fix = setup_fix_command(ctx, self.name)
        if ctx.owner == OWNER_CLAUDE_PLUGIN:
            dest = plugin.generated_dir(Path(config.path).parent)
            if not (dest / "plugins" / plugin.PLUGIN_NAME).is_dir():
                return [Finding("error", f"the paxm-claude plugin is not generated at {dest}", fix)]
            return [Finding("ok", f"paxm-claude plugin generated at {dest}")]
        path = self.hooks_path()
        try:
            settings, _ = self.read_hooks(path)
        except Exception as exc:  # IntegrationError: not JSON, unreadable
            return [Finding("error", str(exc), f"fix or move {path}, then run: {fix}")]
        ours = self.is_ours(config)
        commands = _commands_by_event(settings)
        wanted = self.wanted_hooks(config)
        events = list(wanted) if isinstance(wanted, dict) else []
        missing = [event for event in events if not any(ours(c) for c in commands.get(event, []))]
        if missing:
            return [Finding("error", f"paxm hooks missing in {path} for {', '.join(missing)}", fix)]
        broken = sorted({f for cs in commands.values() for c in cs if ours(c) for f in _missing_files(c)})
        if broken:
            gone = ", ".join(broken)
            return [Finding("error", f"paxm hooks in {path} point at a hook client that does not exist: {gone}", fix)]
        return [Finding("ok", f"hooks installed in {path}")]
