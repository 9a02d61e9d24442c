"""The ``claude`` integration object: payload decoding, hook output, install, uninstall and doctor checks."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from paxm_core.integration import (
    EVENT_SESSION_START,
    EVENT_USER_INPUT,
    Finding,
    HookEvent,
    HookResult,
    InstallContext,
    IntegrationBase,
    PastTurn,
    client_path,
    decode_generic,
    enabled_hook_events,
    hook_command_line,
    interpreter_path,
    parse_hook_command,
    parse_payload,
    setup_fix_command,
    standard_agent_config,
)
from paxm_integration_claude_code import plugin, transcripts
from paxm_integration_claude_code.events import NATIVE_EVENTS, native_for, normalized_event
from paxm_integration_claude_code.settings import (
    WantedHook,
    merge_hooks,
    paxm_matcher,
    read_settings,
    settings_path,
    write_settings,
)

__all__ = ["OWNER_CLAUDE_PLUGIN", "ClaudeCodeIntegration", "installed_events", "remove_legacy_shims"]

OWNER_CLAUDE_PLUGIN = "claude-plugin"
TARGET = "claude"


#: events upstream (the Go paxm) wrote ``<configdir>/hooks/claude-<event>`` shell shims for
_LEGACY_SHIM_EVENTS = ("session_start", "user_input", "user_prompt", "tool_use", "tool_failure", "turn_end")


def remove_legacy_shims(config_dir: Path) -> list[Path]:
    """Delete upstream's Claude shim scripts (only files that really are paxm shims)."""
    removed = []
    for event in _LEGACY_SHIM_EVENTS:
        for suffix in ("", ".ps1"):
            shim = config_dir / "hooks" / f"claude-{event}{suffix}"
            try:
                head = shim.read_bytes()[:4096]
            except OSError:
                continue
            if b"__hook" in head and b"claude" in head:
                shim.unlink()
                removed.append(shim)
    return removed


def installed_events(config: Any) -> list[str]:
    """paxm events that get a Claude hook: ``session_start`` always, others when recall or write is on."""
    return enabled_hook_events(config, TARGET, [native.event for native in NATIVE_EVENTS])


# --force: doctor runs against an existing config, which setup otherwise refuses to touch


def _commands_by_event(settings: Mapping[str, Any]) -> dict[str, list[str]]:
    """settings.json ``hooks`` -> native event -> every handler command string."""
    out: dict[str, list[str]] = {}
    hooks = settings.get("hooks")
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


class ClaudeCodeIntegration(IntegrationBase):
    """Claude Code: ``settings.json`` hooks or the ``paxm-claude`` plugin, text output."""

    name = TARGET
    aliases = ("claude-code", "claude_code", "claudecode")
    display_name = "Claude Code"
    label = "Claude Code"
    owners = (OWNER_CLAUDE_PLUGIN,)
    setup_priority = 10  # upstream lists Claude Code second, after Codex

    # -- this machine ---------------------------------------------------------------------------

    def detect(self) -> str | None:
        """``claude`` on PATH, else an existing ``~/.claude`` (or ``$CLAUDE_CONFIG_DIR``)."""
        found = shutil.which("claude")
        if found:
            return found
        base = settings_path().parent
        return str(base) if base.is_dir() else None

    def default_agent_config(self) -> Mapping[str, Any]:
        """Upstream's ``agents.claude``: recall on prompts; writes of session, prompts, turns and tools."""
        return standard_agent_config(
            write_events=("session_start", "user_input", "turn_end", "tool_use", "tool_failure"),
        )

    # -- transcripts (paxm backfill) ------------------------------------------------------------

    def transcript_files(self) -> list[Path]:
        """Every stored Claude Code session (``~/.claude/projects/*/*.jsonl``)."""
        return transcripts.transcript_files()

    def read_turns(self, path: Path) -> Iterator[PastTurn]:
        """The finished turns of one session transcript (see :mod:`.transcripts`)."""
        return transcripts.read_turns(path)

    # -- hook runtime seam ----------------------------------------------------------------------

    def decode(self, native_event: str, raw: bytes) -> HookEvent:
        """Claude's hook JSON -> :class:`HookEvent` (never raises).

        Claude payloads use the field names the generic decoder knows (``prompt``,
        ``last_assistant_message``, ``tool_name``/``tool_input``/``tool_response``, ``error``,
        ``session_id``, ``cwd``, ``transcript_path``); what is Claude-specific is the event
        name mapping.  When the command line gave no event, the payload's ``hook_event_name``
        decides.  Reasoning blocks are stripped by the decoder, recall echoes by the runtime.
        """
        native = native_event.strip()
        if not native:
            name = parse_payload(raw).get("hook_event_name")
            native = name if isinstance(name, str) else ""
        event = normalized_event(native) or EVENT_USER_INPUT
        return decode_generic(raw, TARGET, event, native)

    def hook_output(self, result: HookResult, mode: str) -> str:
        """What Claude reads on stdout.

        ``SessionStart`` and ``UserPromptSubmit`` stdout is added to the model's context, so
        those print the context blocks (plain text, or ``hookSpecificOutput`` JSON with
        ``--json``); every other event prints nothing.  A ``Stop`` hook never prints a
        ``decision``, so paxm can never keep Claude from stopping.
        """
        if result.ignored or result.event not in (EVENT_SESSION_START, EVENT_USER_INPUT):
            return ""
        context = result.context
        if not context.strip():
            return ""
        if mode == "json":
            native = native_for(result.event)
            return json.dumps(
                {
                    "hookSpecificOutput": {
                        "hookEventName": native.native if native else "",
                        "additionalContext": context,
                    }
                },
                ensure_ascii=False,
                separators=(",", ":"),
            )
        return context

    # -- install / uninstall --------------------------------------------------------------------

    def wanted_hooks(self, config: Any) -> dict[str, WantedHook]:
        """Native event -> the settings.json handler paxm installs for ``config``."""
        queue = str(getattr(getattr(config, "capture_queue", None), "path", "") or "")
        wanted: dict[str, WantedHook] = {}
        for event in installed_events(config):
            native = native_for(event)
            if native is None:
                continue
            command = hook_command_line(config.path, TARGET, native.native, queue_path=queue or None)
            wanted[native.native] = WantedHook(command=command, matcher=native.matcher)
        return wanted

    def preflight(self, ctx: InstallContext) -> None:
        """Check that the Claude settings file can be merged, before anything is saved.

        :raises IntegrationError: the settings file is unreadable or not a JSON object.
        """
        read_settings(settings_path())

    def install(self, ctx: InstallContext) -> list[str]:
        """Install for ``owner``: settings.json hooks (``paxm``) or the generated plugin (``claude-plugin``).

        Plugin ownership also removes paxm's settings.json hooks, so nothing fires twice.
        Returns the lines it reported (also written through ``ctx.echo``).
        """
        config, owner, say = ctx.config, ctx.owner, ctx.echo
        lines: list[str] = []

        def report(line: str) -> None:
            lines.append(line)
            say(line)

        path = settings_path()
        for shim in remove_legacy_shims(Path(config.path).parent):
            report(f"removed the old paxm hook shim {shim}")
        if owner == OWNER_CLAUDE_PLUGIN:
            if self._update_settings(path, config, {}):
                report(f"removed paxm hooks from {path} (the paxm-claude plugin owns them now)")
            dest = plugin.generated_dir(Path(config.path).parent)
            plugin.generate_marketplace(
                dest,
                python=interpreter_path(),
                client=str(client_path()),
                config_path=Path(config.path).absolute(),
                queue_path=str(getattr(getattr(config, "capture_queue", None), "path", "") or ""),
                paxm_exe=plugin.paxm_executable(),
            )
            report(f"Claude Code plugin generated at {dest}")
            report(f"  install it: claude plugin marketplace add {dest}")
            report(f"              claude plugin install {plugin.PLUGIN_NAME}@{plugin.MARKETPLACE_NAME}")
            report(f"  or try it for one session: claude --plugin-dir {dest / 'plugins' / plugin.PLUGIN_NAME}")
            return lines
        if self._update_settings(path, config, self.wanted_hooks(config)):
            report(f"installed paxm hooks in {path}")
        else:
            report(f"paxm hooks in {path} are up to date")
        return lines

    def uninstall(self, ctx: InstallContext) -> list[str]:
        """Remove exactly what paxm added: its settings.json handlers and the generated plugin dir."""
        config, say = ctx.config, ctx.echo
        lines: list[str] = []
        path = settings_path()
        if self._update_settings(path, config, {}):
            lines.append(f"removed paxm hooks from {path}")
        lines.extend(f"removed the old paxm hook shim {shim}" for shim in remove_legacy_shims(Path(config.path).parent))
        config_dir = Path(config.path).parent
        dest = plugin.generated_dir(config_dir)
        if plugin.remove_generated(config_dir):
            lines.append(f"removed the generated plugin {dest}")
            lines.append(
                "  if Claude Code still lists it: claude plugin uninstall "
                f"{plugin.PLUGIN_NAME}@{plugin.MARKETPLACE_NAME}"
            )
        for line in lines:
            say(line)
        return lines

    def check(self, ctx: InstallContext) -> list[Finding]:
        """Doctor: the hooks (or the generated plugin) are installed and point at a client that exists."""
        config, owner = ctx.config, ctx.owner
        fix = setup_fix_command(ctx, self.name)
        if owner == OWNER_CLAUDE_PLUGIN:
            dest = plugin.generated_dir(Path(config.path).parent)
            if not (dest / "plugins" / plugin.PLUGIN_NAME).is_dir():
                return [Finding("error", f"the paxm-claude plugin is not generated at {dest}", fix)]
            return [Finding("ok", f"paxm-claude plugin generated at {dest}")]
        path = settings_path()
        try:
            settings, _ = read_settings(path)
        except Exception as exc:  # IntegrationError: not JSON, unreadable
            return [Finding("error", str(exc), f"fix or move {path}, then run: {fix}")]
        wanted = self.wanted_hooks(config)
        ours = paxm_matcher(config.path)
        commands = _commands_by_event(settings)
        missing = [event for event in wanted if not any(ours(c) for c in commands.get(event, []))]
        if missing:
            return [Finding("error", f"paxm hooks missing in {path} for {', '.join(missing)}", fix)]
        broken = sorted({f for cs in commands.values() for c in cs if ours(c) for f in _missing_files(c)})
        if broken:
            gone = ", ".join(broken)
            return [Finding("error", f"paxm hooks in {path} point at a hook client that does not exist: {gone}", fix)]
        return [Finding("ok", f"hooks installed in {path}")]

    def _update_settings(self, path: Path, config: Any, wanted: dict[str, WantedHook]) -> bool:
        settings, original = read_settings(path)
        if original is None and not wanted:
            return False
        updated = merge_hooks(settings, wanted, paxm_matcher(config.path), where=str(path))
        if updated == settings and original is not None:
            return False
        write_settings(path, updated, original)
        return True
