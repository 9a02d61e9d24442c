"""Integrations as data: one spec and one engine for harnesses whose hooks live in a settings file.

A harness that runs, per native event, the commands a JSON or TOML file lists (payload on
stdin, context on stdout) is a :class:`SettingsHooksSpec`; a subclass of
:class:`SettingsHooksIntegration` adds only what is its own (a transcript reader, a doctor check
of the harness's switches).  File layouts:

* ``json-groups``: ``{"hooks": {Event: [{"matcher"?: ..., "hooks": [handler]}]}}`` in the
  harness's own settings file (a one-time ``<name>.paxm.bak`` backup);
* ``json-handlers``: ``{"version"?: n, "hooks": {Event: [handler]}}`` in a hooks file of paxm's
  own (deleted once nothing but ``version`` is left);
* ``toml-tables``: ``[[hooks]]`` tables, one per handler (``tomlkit`` keeps the user's layout).

Only handlers whose command is paxm's for this config file and target are ever changed.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeAlias

from paxm_core.api.errors import IntegrationError
from paxm_core.api.json import JSONObject, JSONValue
from paxm_core.integration import (
    EVENT_PRE_TOOL,
    EVENT_SESSION_START,
    EVENT_TOOL_USE,
    EVENT_TURN_END,
    EVENT_USER_INPUT,
    Finding,
    HookEvent,
    HookResult,
    InstallContext,
    IntegrationBase,
    NativeEvents,
    Report,
    context_for,
    decode_generic,
    detect_harness,
    dumps_compact,
    enabled_hook_events,
    env_path,
    guard_escaped_envelope,
    hook_command_line,
    is_paxm_hook,
    missing_file_findings,
    named_event,
    parse_payload,
    queue_path,
    setup_fix_command,
    standard_agent_config,
)
from paxm_core.json_settings import (
    hooks_section,
    merge_hook_groups,
    read_json_object,
    write_json_object,
    write_private,
)

if TYPE_CHECKING:
    from tomlkit.items import AoT
    from tomlkit.toml_document import TOMLDocument

    from paxm_core.config.model import Config

__all__ = [
    "HOOK_TIMEOUT_S",
    "HooksData",
    "Layout",
    "Location",
    "Output",
    "SettingsHooksIntegration",
    "SettingsHooksSpec",
    "TomlHooks",
    "WantedHooks",
    "hook_events",
    "is_paxm_or_upstream_hook",
    "merge_entries",
    "merge_handlers",
    "read_toml_hooks",
]

#: seconds a harness waits for one paxm hook.  The hook client answers within its own 5 s ceiling
#: (it exits 0 even when the daemon hangs); the rest covers interpreter start-up on a loaded
#: machine, where a harness's own default (often 60 s) would let a wedged machine stall every prompt.
HOOK_TIMEOUT_S = 10


def hook_events(session_start: str, user_input: str, tool_use: str, turn_end: str) -> tuple[tuple[str, str], ...]:
    """:attr:`SettingsHooksSpec.events` of a harness with the usual four events, from their native names."""
    return (
        (EVENT_SESSION_START, session_start),
        (EVENT_USER_INPUT, user_input),
        (EVENT_TOOL_USE, tool_use),
        (EVENT_TURN_END, turn_end),
    )


Layout = Literal["json-groups", "json-handlers", "toml-tables"]
#: ``hook-specific``: ``{"hookSpecificOutput": {hookEventName, additionalContext}}`` whatever the
#: mode; ``additional-context``: top-level ``{"additionalContext": ...}``; ``text``: the context
#: as plain text, and ``hookSpecificOutput`` JSON when the hook runs with ``--json``
Output = Literal["hook-specific", "additional-context", "text"]
IsOurs = Callable[[str], bool]
#: a parsed hooks file: a JSON object, or a TOML document (``toml-tables``)
HooksData: TypeAlias = "JSONObject | TomlHooks"
#: what paxm installs: native event -> group (``json-groups``) or handler (``json-handlers``), or
#: the list of ``[[hooks]]`` tables (``toml-tables``)
WantedHooks: TypeAlias = dict[str, JSONObject] | list[JSONObject]


@dataclass(frozen=True)
class Location:
    """Where a harness keeps the file paxm's hooks go in."""

    override: str
    home_var: str = ""
    home: str = ""
    file: str = "settings.json"

    def home_dir(self) -> Path:
        """The harness's home directory."""
        return (env_path(self.home_var) if self.home_var else None) or (Path.home() / self.home).absolute()

    def path(self) -> Path:
        """The file paxm's hooks go in."""
        return env_path(self.override) or self.home_dir() / self.file


@dataclass(frozen=True)
class SettingsHooksSpec:
    """Everything that makes one settings-file harness different from the next.

    ``handler`` is the handler paxm installs per event (``"{command}"`` and ``"{native}"`` in a
    string value become the hook command and the native event); ``matchers`` give paxm's group
    a ``matcher`` per native event; ``reply_field`` is the payload field holding the reply on
    ``turn_end`` when the generic decoder does not know it; ``switches`` are keys of ``hooks``
    that are settings, not events; ``refresh`` are handler keys updated in place when paxm's
    handler already runs the wanted command; ``version`` goes first into a new ``json-handlers``
    file; ``legacy_block`` are the marker comments of a block an older paxm wrote into a TOML
    file; ``upstream_shims`` makes upstream's ``<config dir>/hooks/<name>-<event>`` shims paxm's.
    """

    name: str
    display_name: str
    location: Location
    events: tuple[tuple[str, str], ...]
    handler: Mapping[str, JSONValue]
    aliases: tuple[str, ...] = ()
    label: str = ""
    setup_priority: int = 100
    executable: str = ""
    layout: Layout = "json-groups"
    matchers: Mapping[str, str] = field(default_factory=dict)
    output: Output = "hook-specific"
    html_escaped: bool = False
    reply_field: str = ""
    what: str = ""
    noun: str = "settings"
    hint: str = "fix or move it"
    switches: frozenset[str] = frozenset()
    refresh: tuple[str, ...] = ()
    version: int | None = None
    legacy_block: tuple[str, str] | None = None
    match_aliases: bool = False
    upstream_shims: bool = False
    detect_home: bool = False
    write_events: tuple[str, ...] = ("session_start", "user_input", "turn_end")

    @property
    def command_key(self) -> str:
        """The handler key holding the command (``command``, or e.g. ``bash``)."""
        return next((k for k, v in self.handler.items() if v == "{command}"), "command")


def _fill(template: Mapping[str, JSONValue], command: str, native: str) -> JSONObject:
    def value(v: JSONValue) -> JSONValue:
        return v.replace("{native}", native).replace("{command}", command) if isinstance(v, str) else v

    return {key: value(v) for key, v in template.items()}


def is_paxm_or_upstream_hook(command: str, config_path: str | os.PathLike[str], target: str) -> bool:
    """Whether ``command`` runs paxm's hook client for ``target`` and this config file, or is one
    of upstream's shims for it (``<config dir>/hooks/<target>-<event>``)."""
    config = Path(config_path).expanduser().absolute()
    return str(config.parent / "hooks" / f"{target}-") in command or is_paxm_hook(command, config, target)


def _apply(target: SettingsHooksIntegration | type[SettingsHooksIntegration], spec: SettingsHooksSpec) -> None:
    """Set the :class:`~paxm_core.integration.Integration` names of a class (or one instance) from ``spec``."""
    target.spec = spec
    target.name = spec.name
    target.aliases = spec.aliases
    target.display_name = spec.display_name
    target.label = spec.label or spec.display_name
    target.setup_priority = spec.setup_priority
    target.native_events = NativeEvents(spec.events)


class SettingsHooksIntegration(IntegrationBase):
    """The engine: install, uninstall, doctor, decode and hook output from a :class:`SettingsHooksSpec`."""

    spec: SettingsHooksSpec
    native_events: NativeEvents = NativeEvents(())

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        if "spec" in cls.__dict__:  # the names are class attributes, as on any integration class
            _apply(cls, cls.spec)

    def __init__(self, spec: SettingsHooksSpec | None = None) -> None:
        if spec is not None:
            _apply(self, spec)

    def installed_events(self, config: Config) -> list[str]:
        """``session_start`` always; the others when their recall or write is enabled."""
        return enabled_hook_events(config, self.name, self.native_events.events)

    def detect(self) -> str | None:
        """The executable on ``PATH``, else :meth:`detect_dir` if it exists."""
        return detect_harness(self.spec.executable, self.detect_dir())

    def preflight(self, ctx: InstallContext) -> None:
        """Refuse (before setup saves anything) a file paxm could not merge."""
        self.read_hooks(self.hooks_path())

    def install(self, ctx: InstallContext) -> list[str]:
        """Merge paxm's hooks into the file (idempotent); returns the reported lines."""
        path, report = self.hooks_path(), Report(ctx)
        changed = self.update_hooks(ctx.config, self.wanted_hooks(ctx.config))
        report(f"installed paxm hooks in {path}" if changed else f"paxm hooks in {path} are up to date")
        return report

    def uninstall(self, ctx: InstallContext) -> list[str]:
        """Take exactly paxm's hooks out; everything else in the file stays as it was."""
        report = Report(ctx)
        if self.update_hooks(ctx.config, None):
            report(f"removed paxm hooks from {self.hooks_path()}")
        return report

    def check(self, ctx: InstallContext) -> list[Finding]:
        """The file readable and present, paxm's hooks current, and the files they run there."""
        path = self.hooks_path()
        fix = setup_fix_command(ctx, self.name)
        try:
            data, exists = self.read_hooks(path)
        except Exception as exc:
            return [Finding("error", str(exc), f"fix {path}, then {fix}")]
        if not exists:
            return [Finding("error", f"{self.display_name} {self.spec.noun} missing: {path}", fix)]
        wanted = self.wanted_hooks(ctx.config)
        if not self.hooks_current(data, wanted, ctx.config, path):
            return [Finding("warn", f"paxm hooks in {path} are missing or out of date", fix)]
        findings = self.extra_findings(data, wanted, path, fix)
        findings += missing_file_findings(self.hook_commands(wanted), fix)
        return findings or [Finding("ok", f"paxm hooks installed in {path}")]

    def extra_findings(self, data: HooksData, wanted: WantedHooks, path: Path, fix: str) -> list[Finding]:
        """Harness-specific problems with installed, current hooks (none by default)."""
        return []

    @property
    def what(self) -> str:
        """How messages name the file."""
        return self.spec.what or f"{self.spec.display_name} settings"

    def hooks_path(self) -> Path:
        """The file paxm's hooks go in (:attr:`SettingsHooksSpec.location`)."""
        return self.spec.location.path()

    def detect_dir(self) -> Path:
        """The harness's home when ``detect_home``, else the file's directory."""
        return self.spec.location.home_dir() if self.spec.detect_home else self.hooks_path().parent

    def default_agent_config(self) -> dict[str, object]:
        """Recall on every prompt (and before tools, when the spec maps ``pre_tool``); ``write_events``
        captured (``turn_end`` flushes)."""
        recall = ("user_input", EVENT_PRE_TOOL) if EVENT_PRE_TOOL in self.native_events.events else ("user_input",)
        return standard_agent_config(write_events=self.spec.write_events, recall_events=recall)

    def is_ours(self, config: Config) -> IsOurs:
        """Whether a command is paxm's hook for this agent and ``config``'s file."""
        if self.spec.upstream_shims:
            return lambda command: is_paxm_or_upstream_hook(command, config.path, self.name)
        targets = (self.name, *self.aliases) if self.spec.match_aliases else self.name
        return lambda command: is_paxm_hook(command, config.path, targets)

    def handler(self, command: str, native: str) -> JSONObject:
        """The handler paxm installs for ``native`` running ``command``."""
        return _fill(self.spec.handler, command, native)

    def wanted_hooks(self, config: Config) -> WantedHooks:
        """What paxm installs for ``config``: native event -> group or handler, or a list of tables."""
        queue = queue_path(config)
        wanted: dict[str, JSONObject] = {}
        for event in self.installed_events(config):
            native = self.native_events.native(event)
            handler = self.handler(hook_command_line(config.path, self.name, native, queue_path=queue), native)
            if self.spec.layout == "json-groups":
                matcher = self.spec.matchers.get(native, "")
                wanted[native] = {**({"matcher": matcher} if matcher else {}), "hooks": [handler]}
            else:
                wanted[native] = handler
        return list(wanted.values()) if self.spec.layout == "toml-tables" else wanted

    def hook_commands(self, wanted: WantedHooks) -> list[str]:
        """Every command in ``wanted`` (doctor checks the files each one runs)."""
        key = self.spec.command_key
        entries: Sequence[JSONValue] = wanted if isinstance(wanted, list) else list(wanted.values())
        if self.spec.layout == "json-groups":
            groups = [group.get("hooks") for group in entries if isinstance(group, dict)]
            entries = [h for handlers in groups if isinstance(handlers, list) for h in handlers]
        commands = [entry.get(key) for entry in entries if isinstance(entry, dict)]
        return [command for command in commands if isinstance(command, str)]

    def read_hooks(self, path: Path) -> tuple[HooksData, bool]:
        """The parsed file and whether it exists; raises ``IntegrationError`` when it cannot be merged."""
        if self.spec.layout == "toml-tables":
            document = read_toml_hooks(path, self.what, self.spec.legacy_block)
            return document, document.original is not None
        value, original = read_json_object(path, self.what, hint=self.spec.hint)
        hooks_section(value, str(path), switches=self.spec.switches)
        return value, original is not None

    def _merge(self, data: JSONObject, wanted: Mapping[str, JSONObject], config: Config, path: Path) -> JSONObject:
        if self.spec.layout == "json-handlers":
            return merge_handlers(
                data, wanted, self.is_ours(config), self.spec.command_key, self.spec.version, str(path)
            )
        return merge_hook_groups(
            data, wanted, self.is_ours(config), where=str(path), switches=self.spec.switches, refresh=self.spec.refresh
        )

    def hooks_current(self, data: HooksData, wanted: WantedHooks, config: Config, path: Path) -> bool:
        """Whether the file already holds exactly ``wanted`` as paxm's hooks."""
        if isinstance(data, TomlHooks):
            return data.paxm_hooks(self.is_ours(config)) == wanted and not data.had_legacy_block
        return self._merge(data, _by_event(wanted), config, path) == data

    def update_hooks(self, config: Config, wanted: WantedHooks | None) -> bool:
        """Merge ``wanted`` into the file (``None``: take paxm's hooks out); whether it changed."""
        path = self.hooks_path()
        if self.spec.layout == "toml-tables":
            document = read_toml_hooks(path, self.what, self.spec.legacy_block)
            tables = wanted if isinstance(wanted, list) else []
            if (document.original is None and not tables) or not document.merge(tables, self.is_ours(config)):
                return False
            import tomlkit

            text = tomlkit.dumps(document.document)
            if text.strip():
                write_private(path, text, document.original)
            else:
                path.unlink(missing_ok=True)
            return True
        data, original = read_json_object(path, self.what, hint=self.spec.hint)
        updated = self._merge(data, _by_event(wanted), config, path)
        if self.spec.layout == "json-handlers" and not any(key != "version" for key in updated):
            if original is not None:  # nothing of anyone's left in paxm's own file: it goes
                path.unlink()
            return original is not None
        if (original is None and not wanted) or (original is not None and updated == data):
            return False  # a missing file is not created just to hold nothing
        # the user's own settings file keeps its original as a backup; paxm's hooks file needs none
        write_json_object(path, updated, original if self.spec.layout == "json-groups" else None)
        return True

    def decode(self, native_event: str, raw: bytes) -> HookEvent:
        """The payload -> :class:`HookEvent` with the generic decoder's field names (never raises)."""
        payload = parse_payload(raw)
        native = named_event(native_event, payload)
        event = self.native_events.event(native.strip())
        hook = decode_generic(raw, self.name, event, native)
        reply = payload.get(self.spec.reply_field) if self.spec.reply_field else None
        if event == EVENT_TURN_END and isinstance(reply, str) and reply.strip():
            hook.assistant = reply.strip()
        return hook

    def hook_output(self, result: HookResult, mode: str) -> str:
        """The context for session start and prompts, shaped as the spec's ``output``; else nothing."""
        context = context_for(result, (EVENT_SESSION_START, EVENT_USER_INPUT, EVENT_PRE_TOOL))
        if not context:
            return ""
        if self.spec.html_escaped:
            context = guard_escaped_envelope(context)
        if self.spec.output == "additional-context":
            return dumps_compact({"additionalContext": context})
        # a pre-tool hook's plain stdout is not read as context: only hookSpecificOutput is
        if self.spec.output == "text" and mode != "json" and result.event != EVENT_PRE_TOOL:
            return context
        native = self.native_events.native(result.event)
        return dumps_compact({"hookSpecificOutput": {"hookEventName": native, "additionalContext": context}})


def _by_event(wanted: WantedHooks | None) -> dict[str, JSONObject]:
    """``wanted`` of a JSON layout (native event -> group or handler); nothing for uninstall."""
    return wanted if isinstance(wanted, dict) else {}


def merge_entries(
    entries: Sequence[JSONValue],
    want: JSONValue | None,
    ours: Callable[[JSONValue], bool],
    strip: Callable[[JSONValue], JSONValue | None] = lambda entry: None,
) -> list[JSONValue]:
    """``entries`` with exactly one of paxm's (``ours``) equal to ``want`` (none when ``None``).

    An identical one stays where it is, a missing one is appended; any other of paxm's becomes
    ``strip(entry)`` (``None``: it goes).  The input is not modified.
    """
    out: list[JSONValue] = []
    kept = False
    for entry in entries:
        if not ours(entry):
            out.append(entry)
        elif want is not None and not kept and entry == want:
            out.append(entry)
            kept = True
        elif (rest := strip(entry)) is not None:
            out.append(rest)
    if want is not None and not kept:
        out.append(copy.deepcopy(want))
    return out


def merge_handlers(
    data: Mapping[str, JSONValue],
    wanted: Mapping[str, JSONObject],
    is_ours: IsOurs,
    command_key: str = "command",
    version: int | None = None,
    where: str = "hooks file",
) -> JSONObject:
    """``data`` with exactly the paxm handlers in ``wanted`` (event -> handler); input unchanged."""

    def ours(handler: JSONValue) -> bool:
        command = handler.get(command_key) if isinstance(handler, dict) else None
        return isinstance(command, str) and is_ours(command)

    result = copy.deepcopy(dict(data))
    hooks = hooks_section(result, where)
    for event in [*hooks, *(e for e in wanted if e not in hooks)]:
        current = hooks.get(event)
        handlers = merge_entries(current if isinstance(current, list) else [], wanted.get(event), ours)
        if handlers:
            hooks[event] = handlers
        else:
            hooks.pop(event, None)
    if hooks:
        result["hooks"] = hooks
        if version is not None and "version" not in result:
            result = {"version": version, **result}
    else:
        result.pop("hooks", None)
    return result


def _plain(value: object) -> object:
    unwrap = getattr(value, "unwrap", None)
    return unwrap() if callable(unwrap) else value


class TomlHooks:
    """One parsed TOML config (a tomlkit document), its original bytes, and paxm's ``[[hooks]]`` in it."""

    def __init__(self, path: Path, document: TOMLDocument, original: bytes | None, had_legacy_block: bool) -> None:
        self.path = path
        self.document = document
        self.original = original
        #: an older paxm's marker-comment block was in the file (and is gone from ``document``)
        self.had_legacy_block = had_legacy_block

    def _hooks(self) -> AoT | None:
        hooks = self.document.get("hooks")
        if hooks is None:
            return None
        from tomlkit.items import AoT

        if not isinstance(hooks, AoT):
            raise IntegrationError(f"{self.path}: hooks must be [[hooks]] tables; paxm changed nothing")
        return hooks

    def paxm_hooks(self, is_ours: IsOurs) -> list[dict[str, object]]:
        """paxm's hook tables as plain dicts, in file order."""
        out = []
        for table in self._hooks() or []:
            command = table.get("command")
            if isinstance(command, str) and is_ours(command):
                out.append({str(k): _plain(v) for k, v in table.items()})
        return out

    def merge(self, wanted: list[JSONObject], is_ours: IsOurs) -> bool:
        """Make paxm's hook tables exactly ``wanted``; ``True`` when the document changed."""
        import tomlkit

        if self.paxm_hooks(is_ours) == wanted and not self.had_legacy_block:
            return False
        hooks = self._hooks()
        if hooks is not None:
            for index in reversed(range(len(hooks))):
                command = hooks[index].get("command")
                if isinstance(command, str) and is_ours(command):
                    del hooks[index]
        if wanted:
            if hooks is None:
                hooks = tomlkit.aot()
                self.document.append("hooks", hooks)
            for entry in wanted:
                table = tomlkit.table()
                for key, value in entry.items():
                    table.add(key, value)
                table.add(tomlkit.nl())
                hooks.append(table)
        elif hooks is not None and len(hooks) == 0:
            del self.document["hooks"]
        return True


def _strip_legacy_block(text: str, block: tuple[str, str] | None, where: str) -> str:
    if block is None:
        return text
    begin_marker, end_marker = block
    begin, end = text.find(begin_marker), text.find(end_marker)
    if begin < 0 and end < 0:
        return text
    if begin < 0 or end < begin:
        raise IntegrationError(
            f"{where}: unbalanced paxm marker comments ({begin_marker!r} / {end_marker!r}); "
            "fix or remove them, paxm changed nothing"
        )
    stop = text.find("\n", end)
    stop = len(text) if stop < 0 else stop + 1
    return text[:begin] + text[stop:]


def read_toml_hooks(path: Path, what: str, legacy_block: tuple[str, str] | None = None) -> TomlHooks:
    """Parse ``path`` (a missing file is an empty document)."""
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        original: bytes | None = path.read_bytes()
    except FileNotFoundError:
        original = None
    except OSError as exc:
        raise IntegrationError(f"cannot read {what} {path}: {exc.strerror or exc}") from exc
    text = (original or b"").decode("utf-8-sig", errors="replace")
    stripped = _strip_legacy_block(text, legacy_block, str(path))
    try:
        document = tomlkit.parse(stripped)
    except TOMLKitError as exc:
        raise IntegrationError(f"{what} {path} is not valid TOML ({exc}); fix it, paxm changed nothing") from None
    config = TomlHooks(path, document, original, stripped != text)
    config._hooks()  # shape check now, before anything is written
    return config
