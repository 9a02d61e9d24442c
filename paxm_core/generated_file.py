"""Integrations that install one generated file (a JS plugin, a TS extension ...) into a harness.

:class:`GeneratedFile` is the format (a template with paxm's settings embedded as a JSON literal
between two comment markers, paxm's marker in its first lines, upstream's markers);
:class:`GeneratedFileIntegration` is preflight, install, uninstall, doctor and hook output for a
harness that loads such a file; a subclass says where it goes and which events it forwards.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from paxm_core.api.errors import IntegrationError
from paxm_core.api.json import JSONObject, JSONValue
from paxm_core.atomic import write_atomic
from paxm_core.integration import (
    EVENT_SESSION_START,
    EVENT_USER_INPUT,
    Finding,
    InstallContext,
    IntegrationBase,
    NativeEvents,
    Report,
    context_for,
    decode_generic,
    detect_harness,
    enabled_hook_events,
    hook_command,
    parse_hook_command,
    queue_path,
    setup_fix_command,
)
from paxm_core.private_files import private_dir

if TYPE_CHECKING:
    from paxm_core.config.model import Config
    from paxm_core.integration import HookEvent, HookResult

__all__ = [
    "DEFAULT_SPAWN_TIMEOUT_MS",
    "GeneratedFile",
    "GeneratedFileIntegration",
    "template_text",
]

#: how long a generated file waits for one hook client run before killing it.  The client
#: answers within its own 5 s ceiling even when the daemon or a provider hangs; the rest covers
#: interpreter start-up on a loaded machine.
DEFAULT_SPAWN_TIMEOUT_MS = 10_000

#: how much of a file is read to find paxm's marker (it is in the header comment)
_MARKER_SCAN = 2048


#: a template line replaced by the named piece of paxm_core's (what the JS/TS templates share)
_INCLUDE = re.compile(r"^// paxm-include: ([\w-]+\.js)\n", re.MULTILINE)


def template_text(package: str, name: str) -> str:
    """The template ``name`` shipped in ``package``, with each ``// paxm-include: <piece>.js`` line
    replaced by that piece of ``paxm_core`` (``plugin_kit.js``: running one hook client, debug
    warnings, a message's visible text)."""
    from importlib import resources

    text = resources.files(package).joinpath(name).read_text(encoding="utf-8")
    return _INCLUDE.sub(lambda m: resources.files("paxm_core").joinpath(m.group(1)).read_text(encoding="utf-8"), text)


@dataclass(frozen=True, slots=True)
class GeneratedFile:
    """The format of one generated file: its template, ownership markers and settings slot."""

    template: str
    marker: str
    upstream_markers: tuple[str, ...] = ()
    upstream_scan: int = 65_536
    start: str = "/*PAXM_SETTINGS*/"
    end: str = "/*END_PAXM_SETTINGS*/"

    def render(self, settings: Mapping[str, JSONValue], *, replace: Mapping[str, str] | None = None) -> str:
        """The template with ``settings`` embedded as a JSON literal."""
        template = self.template
        for old, new in (replace or {}).items():
            template = template.replace(old, new, 1)
        # escaping ``<`` keeps a path literal inert in a module; ASCII keeps U+2028/U+2029 escaped
        literal = json.dumps(dict(settings), ensure_ascii=True, indent=2).replace("<", "\\u003c")
        head, rest = template.split(self.start, 1)
        _, tail = rest.split(self.end, 1)
        return f"{head}{self.start} {literal} {self.end}{tail}"

    def embedded_settings(self, source: str) -> JSONObject | None:
        """The settings embedded in ``source`` (``None`` if it is not a file paxm generated)."""
        if self.marker not in source[:_MARKER_SCAN] or self.start not in source or self.end not in source:
            return None
        literal = source.split(self.start, 1)[1].split(self.end, 1)[0]
        try:
            value = json.loads(literal)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None

    def is_paxm(self, path: Path) -> bool:
        """Whether ``path`` is a file this paxm generated (so paxm may replace or delete it)."""
        return self.marker in _head(path, _MARKER_SCAN)

    def is_upstream(self, path: Path) -> bool:
        """Whether ``path`` is the file upstream (the Go paxm) generated."""
        if not self.upstream_markers:
            return False
        text = _head(path, self.upstream_scan)
        return all(marker in text for marker in self.upstream_markers)

    @staticmethod
    def write(path: Path, source: str) -> bool:
        """Write ``source`` to ``path`` atomically, 0600 (new directories 0700); ``False`` when current."""
        try:
            if path.read_text(encoding="utf-8") == source:
                return False
        except OSError:
            pass
        private_dir(path.parent)
        write_atomic(path, source, durable=True)
        return True

    def remove(self, path: Path, *, upstream: bool = True, empty_parent: bool = False) -> bool:
        """Delete ``path`` if paxm generated it (or upstream, with ``upstream``); ``True`` if removed."""
        if not (self.is_paxm(path) or (upstream and self.is_upstream(path))):
            return False
        path.unlink(missing_ok=True)
        if empty_parent:
            try:
                path.parent.rmdir()
            except OSError:
                pass  # not empty (or already gone): leave it
        return True


def _head(path: Path, size: int) -> str:
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            return handle.read(size)
    except OSError:
        return ""


class GeneratedFileIntegration(IntegrationBase):
    """An integration whose whole installation is one file paxm generates into the harness."""

    #: the noun used in every message ("the paxm OpenCode plugin at ...")
    artifact: ClassVar[str] = "plugin"
    #: the harness's executable (``detect`` looks for it on ``PATH``)
    executable: ClassVar[str] = ""
    #: the events the generated file can forward, in order (which are installed: the config's)
    native_events: ClassVar[NativeEvents] = NativeEvents(())
    #: remove the file's directory on uninstall when it is left empty (a dir paxm owns)
    remove_empty_parent: ClassVar[bool] = False
    #: the generated file's per-run spawn timeout, embedded as ``timeoutMs``
    spawn_timeout_ms: ClassVar[int] = DEFAULT_SPAWN_TIMEOUT_MS

    def generated_file(self) -> GeneratedFile:
        """The file's format (template, markers)."""
        raise NotImplementedError

    def generated_path(self) -> Path:
        """Where the generated file goes."""
        raise NotImplementedError

    def home_dir(self) -> Path | None:
        """The harness's own directory (``detect`` reports it when the executable is not on PATH)."""
        return None

    def legacy_paths(self) -> list[Path]:
        """Other paths where an older paxm (upstream) left its file; install replaces them."""
        return []

    def install_notes(self) -> list[str]:
        """Extra lines install reports after writing the file (advice, not errors)."""
        return []

    def extra_findings(self) -> list[Finding]:
        """Extra doctor findings appended after the file's own."""
        return []

    def template_replacements(self) -> Mapping[str, str]:
        """Text substituted in the template before rendering (for example the agent in the header)."""
        return {}

    def installed_events(self, config: Config) -> list[str]:
        """paxm events the file forwards: ``session_start`` always, others when recall or write is on."""
        return enabled_hook_events(config, self.name, self.native_events.events)

    def commands(self, config: Config) -> dict[str, list[str]]:
        """paxm event -> the hook-client argv the file runs (the same client as every integration)."""
        queue = queue_path(config)
        return {
            event: hook_command(config.path, self.name, self.native_events.native(event), queue_path=queue)
            for event in self.installed_events(config)
        }

    def render(self, commands: Mapping[str, Sequence[str]], *, timeout_ms: int | None = None) -> str:
        """The file's source for explicit ``commands``, its settings JSON holding version, target,
        spawn timeout and commands (tests and tools; setup uses :meth:`source`)."""
        timeout = self.spawn_timeout_ms if timeout_ms is None else timeout_ms
        argv: JSONObject = {event: list(args) for event, args in commands.items()}
        settings: JSONObject = {"version": 1, "target": self.name, "timeoutMs": int(timeout), "commands": argv}
        return self.generated_file().render(settings, replace=self.template_replacements())

    def source(self, config: Config) -> str:
        """The generated file's content for ``config``."""
        return self.render(self.commands(config))

    def detect(self) -> str | None:
        """The executable on ``PATH``, else the harness's directory if it exists."""
        return detect_harness(self.executable, self.home_dir())

    def preflight(self, ctx: InstallContext) -> None:
        """Refuse to overwrite a file at the generated path that no paxm generated."""
        path, fmt = self.generated_path(), self.generated_file()
        if path.exists() and not (fmt.is_paxm(path) or fmt.is_upstream(path)):
            raise IntegrationError(f"{path} exists and was not generated by paxm: move it away, then run setup again")

    def install(self, ctx: InstallContext) -> list[str]:
        """Write the file (idempotent; replaces upstream's); returns the reported lines."""
        self.preflight(ctx)
        fmt = self.generated_file()
        path = self.generated_path()
        report = Report(ctx)
        for legacy in self.legacy_paths():
            if legacy != path and fmt.is_upstream(legacy) and not fmt.is_paxm(legacy):
                legacy.unlink(missing_ok=True)
                report(f"removed the old paxm {self.artifact} {legacy}")
        replacing = fmt.is_upstream(path) and not fmt.is_paxm(path)
        if fmt.write(path, self.source(ctx.config)):
            verb = f"replaced the old paxm {self.display_name} {self.artifact} with" if replacing else "installed"
            report(f"{verb} the paxm {self.display_name} {self.artifact} at {path}")
        else:
            report(f"the paxm {self.display_name} {self.artifact} at {path} is up to date")
        report(*self.install_notes())
        return report

    def uninstall(self, ctx: InstallContext) -> list[str]:
        """Delete paxm's file (and upstream's at the legacy paths); nothing else is touched."""
        fmt = self.generated_file()
        path = self.generated_path()
        report = Report(ctx)
        if fmt.remove(path, empty_parent=self.remove_empty_parent):
            report(f"removed the paxm {self.display_name} {self.artifact} {path}")
        for legacy in self.legacy_paths():
            if legacy != path and fmt.remove(legacy):
                report(f"removed the old paxm {self.display_name} {self.artifact} {legacy}")
        return report

    def check(self, ctx: InstallContext) -> list[Finding]:
        """File present, generated by paxm, for this config, current, and its interpreter and client exist."""
        findings, readable = self._file_findings(ctx)
        if readable:  # advice about the harness only matters once paxm's file is there
            findings.extend(self.extra_findings())
        return findings

    def _file_findings(self, ctx: InstallContext) -> tuple[list[Finding], bool]:
        fmt = self.generated_file()
        path = self.generated_path()
        what = f"{self.display_name} {self.artifact}"
        fix = setup_fix_command(ctx, self.name)
        try:
            source = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return [Finding("error", f"{what} missing: {path}", fix)], False
        except OSError as exc:
            return [Finding("error", f"{what} unreadable: {path}: {exc.strerror or exc}", fix)], False
        settings = fmt.embedded_settings(source)
        if settings is None:
            if fmt.is_upstream(path):
                return [Finding("warn", f"{path} is the old (Go) paxm's {self.artifact}", fix)], False
            article = "an" if self.artifact[:1] in "aeiou" else "a"
            message = f"{path} is not {article} {self.artifact} paxm generated"
            return [Finding("error", message, f"move it away, then {fix}")], False
        raw_commands = settings.get("commands")
        commands: Mapping[str, JSONValue] = raw_commands if isinstance(raw_commands, Mapping) else {}
        findings: list[Finding] = []
        if not commands:
            findings.append(Finding("warn", f"{what} at {path} forwards no events", fix))
        missing: set[str] = set()
        config_path = str(Path(ctx.config.path).expanduser().absolute())
        other_config = False
        for argv in commands.values():
            hook = parse_hook_command(argv) if isinstance(argv, list) else None
            if hook is None:
                continue
            missing.update(item for item in hook.files if not Path(item).exists())
            if hook.config and hook.config != config_path:
                other_config = True
        for item in sorted(missing):
            findings.append(Finding("error", f"{what} points at a missing file: {item}", fix))
        if other_config:
            findings.append(Finding("warn", f"{what} at {path} uses another paxm config", fix))
        if not findings and source != self.source(ctx.config):
            findings.append(Finding("warn", f"{what} at {path} is out of date", fix))
        if not findings:
            findings.append(Finding("ok", f"{what} installed at {path}"))
        return findings, True

    def normalized_event(self, native_event: str) -> str:
        """paxm's event for a native event name; paxm names and unknown names pass through."""
        return self.native_events.event(native_event.strip())

    def decode(self, native_event: str, raw: bytes) -> HookEvent:
        """The file's payload -> :class:`HookEvent` (never raises)."""
        event = self.normalized_event(native_event)
        return decode_generic(raw, self.name, event, native_event.strip())

    def hook_output(self, result: HookResult, mode: str) -> str:
        """What the file reads on stdout: the context blocks for session start and prompts, else nothing."""
        if mode != "text":
            return super().hook_output(result, mode)
        return context_for(result, (EVENT_SESSION_START, EVENT_USER_INPUT))
