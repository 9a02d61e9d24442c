"""The ``codex`` integration object: payload decoding, output, install, uninstall, doctor."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from paxm_core.api.errors import IntegrationError
from paxm_core.integration import (
    EVENT_PRE_TOOL,
    EVENT_SESSION_START,
    EVENT_TURN_END,
    EVENT_USER_INPUT,
    Finding,
    HookEvent,
    HookResult,
    InstallContext,
    IntegrationBase,
    PastTurn,
    Report,
    decode_generic,
    detect_harness,
    dumps_compact,
    enabled_hook_events,
    hook_command_line,
    launcher_values,
    named_event,
    parse_payload,
    queue_path,
    remove_upstream_shims,
    setup_fix_command,
    standard_agent_config,
)
from paxm_integration_codex import config_toml, plugin, rollout, transcripts, trust
from paxm_integration_codex.events import NATIVE_EVENTS, native_for, normalized_event

__all__ = ["OWNER_CODEX_PLUGIN", "CodexIntegration", "installed_events", "remove_legacy_shims"]

OWNER_CODEX_PLUGIN = "codex-plugin"
TARGET = "codex"
#: Codex reads hook stdout only for these events; anything printed for the others is dropped
_CONTEXT_EVENTS = {
    EVENT_SESSION_START: "SessionStart",
    EVENT_USER_INPUT: "UserPromptSubmit",
    EVENT_PRE_TOOL: "PreToolUse",
}


def remove_legacy_shims(config_dir: Path) -> list[Path]:
    """Delete upstream's Codex shim scripts (only files that really are paxm shims)."""
    return remove_upstream_shims(
        config_dir, "codex", lambda head: b"paxm" in head and (b"__hook" in head or b"--hook-event" in head)
    )


def installed_events(config: Any) -> list[str]:
    """paxm events that get a Codex hook: ``session_start`` always, others when recall or write is on."""
    return enabled_hook_events(config, TARGET, [native.event for native in NATIVE_EVENTS])


def _repository_plugin_enabled(path: Path) -> bool:
    """Whether Codex's config enables the plugin of paxm's repository marketplace (``codex plugin add``)."""
    try:
        doc, _ = config_toml.read_config(path)
    except IntegrationError:
        return False
    plugins = doc.get("plugins")
    entry = plugins.get(plugin.REPOSITORY_PLUGIN_ID) if isinstance(plugins, Mapping) else None
    return isinstance(entry, Mapping) and entry.get("enabled") is True


class CodexIntegration(IntegrationBase):
    """OpenAI Codex CLI: ``config.toml`` hooks (trusted) or the ``paxm-memory`` plugin."""

    name = TARGET
    aliases = ("codex-cli", "openai-codex")
    display_name = "Codex"
    label = "Codex"
    owners = (OWNER_CODEX_PLUGIN,)
    setup_priority = 10

    def detect(self) -> str | None:
        """``codex`` on PATH, else an existing ``$CODEX_HOME`` (``~/.codex``)."""
        return detect_harness("codex", config_toml.codex_home())

    def default_agent_config(self) -> Mapping[str, Any]:
        """Upstream's Codex defaults: session start, prompt recall + write, turn-end write."""
        return standard_agent_config(enabled=True)

    def transcript_files(self) -> list[Path]:
        """Every Codex rollout on this machine (``$PAXM_CODEX_SESSIONS`` / ``$CODEX_HOME/sessions``)."""
        return transcripts.transcript_files()

    def read_turns(self, path: Path) -> Iterator[PastTurn]:
        """The finished turns of one rollout (user prompt, tools, answer; never reasoning or recalled context)."""
        return transcripts.read_turns(path)

    def decode(self, native_event: str, raw: bytes) -> HookEvent:
        """Codex's hook JSON -> :class:`HookEvent` (never raises)."""
        obj = parse_payload(raw)
        native = named_event(native_event, obj)
        event = normalized_event(native) or EVENT_USER_INPUT
        hook = decode_generic(raw, TARGET, event, native)
        turn_id = obj.get("turn_id")
        if isinstance(turn_id, str) and turn_id.strip():
            hook.metadata.setdefault("turn_id", turn_id.strip())
        if event == EVENT_TURN_END:
            # the core may still read the rollout itself; keep exactly one copy, ours
            messages = [m for m in hook.messages if m.source != rollout.SOURCE]
            path = obj.get("transcript_path")
            if isinstance(path, str) and path.strip():
                seen = {(m.role, m.text.strip()) for m in messages}
                for message in rollout.turn_tool_messages(path.strip(), turn_id if isinstance(turn_id, str) else ""):
                    if (message.role, message.text.strip()) not in seen:
                        seen.add((message.role, message.text.strip()))
                        messages.append(message)
            hook.messages = messages
        return hook

    def hook_output(self, result: HookResult, mode: str) -> str:
        """What Codex reads on stdout: context only for SessionStart/UserPromptSubmit/PreToolUse, else nothing.

        Codex silently drops any other JSON shape and reads only JSON before a tool, so
        ``PreToolUse`` always gets ``hookSpecificOutput`` (never a decision that could block a tool
        or keep Codex running); upstream's ``text`` mode prints the context itself elsewhere.
        """
        native = _CONTEXT_EVENTS.get(result.event)
        if result.ignored or native is None or not result.context.strip():
            return ""
        if mode == "text" and result.event != EVENT_PRE_TOOL:
            return result.context
        return dumps_compact({"hookSpecificOutput": {"hookEventName": native, "additionalContext": result.context}})

    def wanted_hooks(self, config: Any) -> dict[str, config_toml.WantedHook]:
        """Native event -> the config.toml handler paxm installs for ``config``."""
        queue = queue_path(config)
        wanted: dict[str, config_toml.WantedHook] = {}
        for event in installed_events(config):
            native = native_for(event)
            if native is None:
                continue
            command = hook_command_line(config.path, TARGET, native.native, mode="json", queue_path=queue)
            wanted[native.native] = config_toml.WantedHook(
                command=command, status=native.status, matcher=native.matcher
            )
        return wanted

    def preflight(self, ctx: InstallContext) -> None:
        """Check that Codex's config.toml can be merged, before anything is saved."""
        config_toml.read_config(config_toml.config_path())

    def install(self, ctx: InstallContext) -> list[str]:
        """Install for ``ctx.owner``: trusted config.toml hooks (``paxm``) or the plugin (``codex-plugin``).

        The plugin owner also removes paxm's config.toml hooks, so nothing fires twice.
        """
        config = ctx.config
        report = Report(ctx)
        path = config_toml.config_path()
        config_dir = Path(config.path).parent
        report(*(f"removed the old paxm hook shim {shim}" for shim in remove_legacy_shims(config_dir)))
        if ctx.owner == OWNER_CODEX_PLUGIN:
            if self._update_config(path, config, {}):
                report(f"removed paxm hooks from {path} (the paxm-memory plugin owns them now)")
            dest = plugin.generated_dir(config_dir)
            plugin.generate_marketplace(dest, **launcher_values(config))
            report(f"Codex plugin generated at {dest}")
            self._install_plugin(dest, report)
            return report
        changed = self._update_config(path, config, self.wanted_hooks(config))
        report(f"installed paxm hooks in {path}" if changed else f"paxm hooks in {path} are up to date")
        self._trust(path, report, lambda hook: self._is_our_config_hook(hook, path, config))
        return report

    def _install_plugin(self, dest: Path, report: Report) -> None:
        codex = trust.find_codex()
        manual = [
            f"  install it: codex plugin marketplace add {dest}",
            f"              codex plugin add {plugin.PLUGIN_ID}",
            "  then trust its hooks: run codex, type /hooks and press t",
        ]
        if codex is None:
            report("codex is not on PATH, so the plugin was not installed into Codex", *manual)
            return
        if _repository_plugin_enabled(config_toml.config_path()):
            # one plugin owns the hooks: a second copy would capture every turn twice
            report(f"the {plugin.REPOSITORY_PLUGIN_ID} plugin is installed in Codex: it owns the hooks")
            self._trust(config_toml.config_path(), report, lambda hook: hook.plugin_id == plugin.REPOSITORY_PLUGIN_ID)
            return
        try:
            self._codex(codex, "plugin", "marketplace", "add", str(dest), ok_if="already")
            self._codex(codex, "plugin", "add", plugin.PLUGIN_ID)
        except IntegrationError as exc:
            report(f"installing the plugin into Codex failed: {exc}", *manual)
            return
        report(f"installed the Codex plugin {plugin.PLUGIN_ID}")
        self._trust(config_toml.config_path(), report, lambda hook: hook.plugin_id == plugin.PLUGIN_ID)

    @staticmethod
    def _codex(codex: str, *args: str, ok_if: str = "") -> None:
        try:
            done = subprocess.run([codex, *args], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise IntegrationError(f"codex {' '.join(args)}: {exc}") from exc
        if done.returncode != 0:
            detail = (done.stderr or done.stdout).strip().splitlines()
            text = detail[-1] if detail else f"exit {done.returncode}"
            if ok_if and ok_if in (done.stderr + done.stdout).lower():
                return
            raise IntegrationError(f"codex {' '.join(args)}: {text}")

    def _trust(self, path: Path, report: Report, is_ours: Callable[[trust.HookTrust], bool]) -> None:
        """Record Codex trust for paxm's hooks, asking the installed Codex for their hashes."""
        codex = trust.find_codex()
        if codex is None:
            report("Codex skips hooks nobody trusted, and codex is not on PATH to ask for their hashes:")
            report(f"  {trust.trust_command()}")
            return
        try:
            hooks = [h for h in trust.list_hooks(codex, Path.cwd()) if is_ours(h)]
        except trust.TrustError as exc:
            report(f"could not record Codex hook trust ({exc}):", f"  {trust.trust_command()}")
            return
        doc, original = config_toml.read_config(path)
        keys = trust.record_trust(doc, hooks, lambda _hook: True)
        if keys:
            config_toml.write_config(path, doc, original)
            report(f"trusted {len(keys)} paxm hook(s) in {path} (hashes from {codex} app-server)")
        elif hooks and all(h.trusted for h in hooks):
            report("paxm's Codex hooks are trusted")
        elif not hooks:
            report(f"Codex does not list paxm's hooks yet: {trust.trust_command()}")

    @staticmethod
    def _is_our_config_hook(hook: trust.HookTrust, path: Path, config: Any) -> bool:
        same_file = not hook.source_path or Path(hook.source_path).absolute() == path
        return not hook.plugin_id and same_file and config_toml.is_paxm_command(hook.command, config.path)

    def uninstall(self, ctx: InstallContext) -> list[str]:
        """Remove exactly what paxm added: its config.toml handlers and trust, the generated plugin."""
        config_dir = Path(ctx.config.path).parent
        report = Report(ctx)
        path = config_toml.config_path()
        if self._update_config(path, ctx.config, {}):
            report(f"removed paxm hooks from {path}")
        report(*(f"removed the old paxm hook shim {shim}" for shim in remove_legacy_shims(config_dir)))
        dest = plugin.generated_dir(config_dir)
        if plugin.remove_generated(config_dir):
            report(f"removed the generated plugin {dest}", *self._remove_plugin(path))
        return report

    def _remove_plugin(self, path: Path) -> list[str]:
        """Take paxm's plugin out of Codex (best effort; says what to run when it cannot)."""
        codex = trust.find_codex()
        manual = [f"  if Codex still lists it: codex plugin remove {plugin.PLUGIN_ID}"]
        if codex is None:
            return manual
        out: list[str] = []
        try:
            self._codex(codex, "plugin", "remove", plugin.PLUGIN_ID, ok_if="not installed")
            self._codex(codex, "plugin", "marketplace", "remove", plugin.MARKETPLACE_NAME, ok_if="not")
            out.append(f"removed the Codex plugin {plugin.PLUGIN_ID} and the {plugin.MARKETPLACE_NAME} marketplace")
        except IntegrationError as exc:
            out.append(f"removing the plugin from Codex failed: {exc}")
            out.extend(manual)
        doc, original = config_toml.read_config(path)
        # the trust setup recorded, for the generated plugin or the repository's one
        dropped = [
            config_toml.drop_state_prefix(doc, f"{pid}:") for pid in (plugin.PLUGIN_ID, plugin.REPOSITORY_PLUGIN_ID)
        ]
        if any(dropped) and original is not None:
            config_toml.write_config(path, doc, original)
        if dropped[1]:
            out.append(f"  no longer trusting the {plugin.REPOSITORY_PLUGIN_ID} plugin's hooks")
            out.append(f"  to remove the plugin itself: codex plugin remove {plugin.REPOSITORY_PLUGIN_ID}")
        return out

    def _update_config(self, path: Path, config: Any, wanted: dict[str, config_toml.WantedHook]) -> bool:
        doc, original = config_toml.read_config(path)
        if original is None and not wanted:
            return False
        changed = config_toml.merge_hooks(doc, wanted, config_toml.paxm_matcher(config.path), path=path)
        if not changed and original is not None:
            return False
        config_toml.write_config(path, doc, original)
        return True

    def check(self, ctx: InstallContext) -> list[Finding]:
        """Whether paxm's Codex hooks (or plugin) are installed, point at real files, and are trusted."""
        config = ctx.config
        configured = str(getattr(getattr((config.agents or {}).get(TARGET), "integration", None), "owner", "") or "")
        plugin_owned = (configured or ctx.owner) == OWNER_CODEX_PLUGIN
        path = config_toml.config_path()
        fix = setup_fix_command(ctx, TARGET)
        try:
            doc, _original = config_toml.read_config(path)
        except IntegrationError as exc:
            return [Finding("error", str(exc), f"fix {path}, then run: {fix}")]
        ours = list(config_toml.paxm_handlers(doc, config_toml.paxm_matcher(config.path)))
        findings: list[Finding] = []
        if plugin_owned:
            fix = setup_fix_command(InstallContext(config=config, owner=OWNER_CODEX_PLUGIN), TARGET)
            if ours:
                findings.append(Finding("warn", f"{path} still has paxm hooks although the plugin owns them", fix))
            generated = plugin.generated_dir(Path(config.path).parent)
            if not (generated / plugin.GENERATED_MARKER).is_file():
                findings.append(Finding("error", f"the generated Codex plugin {generated} is missing", fix))
            plugins: Any = doc.get("plugins")
            entry: Any = plugins.get(plugin.PLUGIN_ID) if hasattr(plugins, "get") else None
            if not (hasattr(entry, "get") and entry.get("enabled", True)):
                findings.append(
                    Finding(
                        "error",
                        f"the {plugin.PLUGIN_ID} plugin is not installed in Codex",
                        f"codex plugin add {plugin.PLUGIN_ID}",
                    )
                )
            else:
                findings.append(Finding("ok", f"the {plugin.PLUGIN_ID} Codex plugin is installed"))
            findings.extend(self._trust_findings(lambda h: h.plugin_id == plugin.PLUGIN_ID, doc, [], fix))
            return findings
        wanted = {native_for(e).native for e in installed_events(config) if native_for(e) is not None}  # type: ignore[union-attr]
        present = {h.native for h in ours}
        if not ours:
            return [Finding("error", f"paxm's Codex hooks are not installed in {path}", fix)]
        missing = sorted(wanted - present)
        if missing:
            findings.append(Finding("warn", f"{path} lacks paxm hooks for {', '.join(missing)}", fix))
        else:
            findings.append(Finding("ok", f"paxm hooks installed in {path}"))
        import shlex

        for handler in ours:
            words = shlex.split(handler.command) if handler.command else []
            for word in words[:1] + [w for w in words if w.endswith(".py")][:1]:
                if not Path(word).exists():
                    findings.append(
                        Finding("error", f"the {handler.native} hook runs {word}, which does not exist", fix)
                    )
        keys = [h.trust_key(path) for h in ours]
        findings.extend(self._trust_findings(lambda h: h.key in keys, doc, keys, fix))
        return findings

    @staticmethod
    def _trust_findings(
        is_ours: Callable[[trust.HookTrust], bool], doc: Any, keys: list[str], fix: str
    ) -> list[Finding]:
        codex = trust.find_codex()
        if codex is not None:
            try:
                hooks = [h for h in trust.list_hooks(codex, Path.cwd()) if is_ours(h)]
            except trust.TrustError as exc:
                return [
                    Finding(
                        "warn", f"could not ask Codex whether paxm's hooks are trusted: {exc}", trust.trust_command()
                    )
                ]
            untrusted = [h.key for h in hooks if not h.trusted]
            if not hooks:
                return [Finding("warn", "Codex does not list paxm's hooks", fix)]
            if untrusted:
                return [
                    Finding(
                        "error",
                        f"Codex will skip {len(untrusted)} untrusted paxm hook(s): {', '.join(untrusted)}",
                        fix + "  (or: " + trust.trust_command() + ")",
                    )
                ]
            return [Finding("ok", f"Codex trusts paxm's {len(hooks)} hook(s)")]
        state = doc.get("hooks", {}).get("state", {}) if hasattr(doc.get("hooks", {}), "get") else {}
        recorded = [k for k in keys if hasattr(state, "get") and state.get(k)]
        if keys and len(recorded) == len(keys):
            return [Finding("ok", "trust is recorded for paxm's Codex hooks (codex is not on PATH to verify it)")]
        return [
            Finding(
                "warn",
                "codex is not on PATH, so paxm cannot tell whether Codex trusts its hooks",
                trust.trust_command(),
            )
        ]
