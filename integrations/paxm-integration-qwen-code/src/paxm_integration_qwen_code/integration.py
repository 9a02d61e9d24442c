"""The ``qwen`` integration object: settings.json hooks, payload decoding, JSON hook output."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from paxm_core.integration import (
    EVENT_SESSION_START,
    EVENT_TOOL_USE,
    EVENT_TURN_END,
    EVENT_USER_INPUT,
    Finding,
    InstallContext,
    IntegrationBase,
    decode_generic,
    hook_command_line,
    parse_payload,
    setup_fix_command,
)
from paxm_core.json_settings import update_hook_groups
from paxm_integration_qwen_code.settings import is_paxm_command, merge_hooks, read_settings

if TYPE_CHECKING:
    from paxm_core.integration import HookEvent, HookResult

__all__ = ["DEFAULT_AGENT_CONFIG", "HOOK_TIMEOUT_MS", "NATIVE_EVENTS", "QwenCodeIntegration", "guard_escaped_envelope"]

#: paxm event -> Qwen Code hook event, in the order they are installed
NATIVE_EVENTS: tuple[tuple[str, str], ...] = (
    (EVENT_SESSION_START, "SessionStart"),
    (EVENT_USER_INPUT, "UserPromptSubmit"),
    (EVENT_TOOL_USE, "PostToolUse"),
    (EVENT_TURN_END, "Stop"),
)
_BY_NATIVE = {native.lower(): event for event, native in NATIVE_EVENTS}
_NATIVE = dict(NATIVE_EVENTS)
#: Qwen Code's hook timeout is in milliseconds.  The hook client answers within its own 5 s
#: ceiling; the rest covers interpreter start-up on a loaded machine.
HOOK_TIMEOUT_MS = 10_000

# An escaped envelope tag inside recalled content (``wrap_recall_context`` escapes forged tags
# to ``&lt;paxm-recall``).  Qwen HTML-escapes the whole injected text, so the real tags reach the
# model as ``&lt;paxm-recall ...&gt;``; a harness that escaped ``<`` but not ``&`` would make an
# already-escaped forgery identical to the real tag.  Escaping its ``&`` once more keeps it
# distinguishable whatever the harness does to ``&``.
_ESCAPED_TAG = re.compile(r"&(lt|#0*60|#x0*3c);(/?paxm-recall)", re.IGNORECASE)


def guard_escaped_envelope(context: str) -> str:
    """``context`` with every already-escaped ``paxm-recall`` tag escaped once more (real tags untouched)."""
    return _ESCAPED_TAG.sub(lambda m: f"&amp;{m.group(1)};{m.group(2)}", context)


def _write(mode: str, *, flush: bool = False) -> dict[str, Any]:
    buffer: dict[str, Any] = {"enabled": True, "flush_count": 10, **({"flush": True} if flush else {})}
    return {"enabled": True, "profile": "ltm", "template": "{{ .safe_text }}", "mode": mode, "buffer": buffer}


#: ``agents.qwen``: recall on every prompt, and the prompt and the reply captured.  Qwen's Stop
#: payload carries the reply (``last_assistant_message``) but not the prompt, so the prompt is
#: written at ``UserPromptSubmit`` and the turn end flushes both into one episode.
DEFAULT_AGENT_CONFIG: dict[str, Any] = {
    "enabled": False,
    "active_recall": {"enabled": True, "profile": "default", "output": "markdown"},
    "hooks": {
        "session_start": {"write": _write("session_start")},
        "user_input": {
            "recall": {
                "enabled": True,
                "profile": "passive",
                "query_template": "{{ .prompt }}",
                "max_results": 2,
                "timeout_extra": "100ms",
                "output": "markdown",
                "insertion": {"min_score": 0.8, "max_items": 2, "require_query_terms": True},
                "initial": {
                    "enabled": True,
                    "profile": "passive_initial",
                    "max_results": 5,
                    "insertion": {"min_score": 0.35, "max_items": 5},
                },
            },
            "write": _write("user_input"),
        },
        "turn_end": {"write": _write("turn_end", flush=True)},
    },
}


class QwenCodeIntegration(IntegrationBase):
    """Qwen Code: Claude-shaped hooks in ``~/.qwen/settings.json``, ``hookSpecificOutput`` JSON output."""

    name = "qwen"
    aliases: tuple[str, ...] = ("qwen-code", "qwen_code", "qwencode")
    display_name = "Qwen Code"
    label = "Qwen Code"
    setup_priority = 45

    def default_agent_config(self) -> dict[str, Any]:
        """:data:`DEFAULT_AGENT_CONFIG` (a copy)."""
        return copy.deepcopy(DEFAULT_AGENT_CONFIG)

    # -- where things go ------------------------------------------------------------------------

    def settings_path(self) -> Path:
        """``$PAXM_QWEN_SETTINGS`` > ``$QWEN_HOME/settings.json`` > ``~/.qwen/settings.json``."""
        explicit = os.environ.get("PAXM_QWEN_SETTINGS", "").strip()
        if explicit:
            return Path(explicit).expanduser().absolute()
        home = os.environ.get("QWEN_HOME", "").strip()
        base = Path(home).expanduser() if home else Path.home() / ".qwen"
        return (base / "settings.json").absolute()

    def installed_events(self, config: Any) -> list[str]:
        """``session_start`` always; the others when their recall or write is enabled."""
        agent = (getattr(config, "agents", None) or {}).get(self.name)
        hooks = getattr(agent, "hooks", None) or {}
        out = []
        for event, _ in NATIVE_EVENTS:
            hook = hooks.get(event)
            on = bool(getattr(getattr(hook, "recall", None), "enabled", False)) or bool(
                getattr(getattr(hook, "write", None), "enabled", False)
            )
            if event == EVENT_SESSION_START or on:
                out.append(event)
        return out

    def wanted_hooks(self, config: Any) -> dict[str, dict[str, Any]]:
        """Native event -> the settings group paxm installs for ``config``."""
        queue = str(getattr(getattr(config, "capture_queue", None), "path", "") or "")
        wanted: dict[str, dict[str, Any]] = {}
        for event in self.installed_events(config):
            native = _NATIVE[event]
            command = hook_command_line(config.path, self.name, native, queue_path=queue or None)
            group: dict[str, Any] = {"matcher": ".*"} if native == "PostToolUse" else {}
            group["hooks"] = [{"type": "command", "command": command, "timeout": HOOK_TIMEOUT_MS}]
            wanted[native] = group
        return wanted

    def _is_ours(self, config: Any) -> Any:
        return lambda command: is_paxm_command(command, config.path, self.name)

    def _update(self, config: Any, wanted: dict[str, dict[str, Any]]) -> bool:
        what = f"{self.display_name} settings"
        return update_hook_groups(self.settings_path(), what, wanted, self._is_ours(config))

    # -- Integration contract -------------------------------------------------------------------

    def detect(self) -> str | None:
        """``qwen`` on ``PATH``, else the settings dir if it exists."""
        found = shutil.which("qwen")
        if found:
            return found
        directory = self.settings_path().parent
        return str(directory) if directory.is_dir() else None

    def preflight(self, ctx: InstallContext) -> None:
        """Refuse (before setup saves anything) a settings file paxm could not merge."""
        read_settings(self.settings_path(), f"{self.display_name} settings")

    def install(self, ctx: InstallContext) -> list[str]:
        """Merge paxm's handlers into settings.json (idempotent); returns the reported lines."""
        context = ctx
        path = self.settings_path()
        changed = self._update(context.config, self.wanted_hooks(context.config))
        line = f"installed paxm hooks in {path}" if changed else f"paxm hooks in {path} are up to date"
        context.echo(line)
        return [line]

    def uninstall(self, ctx: InstallContext) -> list[str]:
        """Take exactly paxm's handlers out of settings.json; everything else stays as it was."""
        context = ctx
        lines = [f"removed paxm hooks from {self.settings_path()}"] if self._update(context.config, {}) else []
        for line in lines:
            context.echo(line)
        return lines

    def check(self, ctx: InstallContext) -> list[Finding]:
        """Every wanted handler present in settings.json, and the files it runs exist."""
        context = ctx
        path = self.settings_path()
        fix = setup_fix_command(context, self.name)
        try:
            settings, original = read_settings(path, f"{self.display_name} settings")
        except Exception as exc:
            return [Finding("error", str(exc), f"fix {path}, then {fix}")]
        if original is None:
            return [Finding("error", f"{self.display_name} settings missing: {path}", fix)]
        wanted = self.wanted_hooks(context.config)
        if merge_hooks(settings, wanted, self._is_ours(context.config), where=str(path)) != settings:
            return [Finding("warn", f"paxm hooks in {path} are missing or out of date", fix)]
        findings = []
        for group in wanted.values():
            argv = group["hooks"][0]["command"]
            for word in argv.split()[:1]:
                if not Path(word.strip("'\"")).exists():
                    findings.append(Finding("error", f"paxm hook points at a missing file: {word}", fix))
        return findings or [Finding("ok", f"paxm hooks installed in {path}")]

    def decode(self, native_event: str, raw: bytes) -> HookEvent:
        """Qwen's Claude-shaped payload -> :class:`HookEvent` (never raises).

        ``prompt``, ``last_assistant_message`` (Stop), ``tool_name``/``tool_input``/
        ``tool_response``, ``session_id``, ``cwd``, ``transcript_path``: the generic decoder's
        names.  Without an event on the command line the payload's ``hook_event_name`` decides.
        """
        native = native_event.strip()
        if not native:
            name = parse_payload(raw).get("hook_event_name")
            native = name if isinstance(name, str) else ""
        key = native.strip()
        event = key if key in _NATIVE else _BY_NATIVE.get(key.lower(), key or EVENT_USER_INPUT)
        return decode_generic(raw, self.name, event, native)

    def hook_output(self, result: HookResult, mode: str) -> str:
        """``{"hookSpecificOutput": {"hookEventName", "additionalContext"}}`` for session start and prompts.

        Qwen ignores plain text on stdout; every other event prints nothing (a Stop hook never
        prints a ``decision``, so paxm cannot keep Qwen from stopping).
        """
        if result.ignored or result.event not in (EVENT_SESSION_START, EVENT_USER_INPUT):
            return ""
        context = result.context
        if not context.strip():
            return ""
        output = {"hookEventName": _NATIVE[result.event], "additionalContext": guard_escaped_envelope(context)}
        return json.dumps({"hookSpecificOutput": output}, ensure_ascii=False, separators=(",", ":"))
