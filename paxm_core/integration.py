"""The public contract between paxm and a harness integration (Claude Code, Codex, OpenCode, Pi...).

An integration distribution registers one object per harness through the
``paxm_register_integrations`` hook.  The core asks that object everything it needs to know
about the harness; the core itself names no harness.  Integration authors import only from
this module (and ``paxm_core`` itself): nothing under a private or internal path.

The easiest way to satisfy :class:`Integration` is to subclass :class:`IntegrationBase` and
override what the harness needs.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Container, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from paxm_core.api.errors import IntegrationError
from paxm_core.api.events import (
    EVENT_PRE_TOOL,
    EVENT_SESSION_START,
    EVENT_TOOL_FAILURE,
    EVENT_TOOL_USE,
    EVENT_TURN_END,
    EVENT_USER_INPUT,
    STANDARD_EVENTS,
    HookEvent,
    HookMessage,
    HookResult,
)
from paxm_core.api.integration import (
    OWNER_PAXM,
    Finding,
    InstallContext,
    Integration,
    PastTurn,
    SupportsTranscripts,
)

# The names integration authors build with, re-exported so a distribution imports only this
# module.  All of them are light (stdlib only), so importing this module stays cheap.
from paxm_core.api.json import JSONObject, JSONValue
from paxm_core.atomic import write_atomic
from paxm_core.passive.client_command import (
    HookArgv,
    client_path,
    hook_command,
    hook_command_line,
    interpreter_path,
    is_paxm_hook,
    parse_hook_command,
)
from paxm_core.passive.decode import decode_generic, messages_from_value, parse_payload, value_text

if TYPE_CHECKING:
    from paxm_core.config.model import Config

__all__ = [
    "EVENT_PRE_TOOL",
    "EVENT_SESSION_START",
    "EVENT_TOOL_FAILURE",
    "EVENT_TOOL_USE",
    "EVENT_TURN_END",
    "EVENT_USER_INPUT",
    "OWNER_PAXM",
    "STANDARD_EVENTS",
    "Finding",
    "HookArgv",
    "HookEvent",
    "HookMessage",
    "HookResult",
    "InstallContext",
    "Integration",
    "IntegrationBase",
    "IntegrationError",
    "NativeEvents",
    "PastTurn",
    "past_turn",
    "jsonl_files",
    "Report",
    "SupportsTranscripts",
    "client_path",
    "content_text",
    "context_for",
    "decode_generic",
    "detect_harness",
    "enabled_hook_events",
    "dumps_compact",
    "env_path",
    "fill_launcher",
    "generate_marketplace_dir",
    "hook_launcher_values",
    "guard_escaped_envelope",
    "hook_command",
    "hook_command_line",
    "interpreter_path",
    "messages_from_value",
    "is_paxm_hook",
    "iso_epoch",
    "launcher_values",
    "missing_file_findings",
    "named_event",
    "parse_hook_command",
    "parse_payload",
    "paxm_executable",
    "queue_path",
    "remove_generated_dir",
    "remove_upstream_shims",
    "setup_fix_command",
    "standard_agent_config",
    "swap_in_dir",
    "tail_json_records",
    "transcript_records",
    "value_text",
    "write_atomic",
]


class IntegrationBase:
    """Defaults for :class:`Integration`: subclass and set ``name`` and what differs."""

    name: str = ""
    aliases: tuple[str, ...] = ()
    display_name: str = ""
    label: str = ""
    owners: tuple[str, ...] = ()
    setup_priority: int = 100

    def detect(self) -> str | None:
        """Nothing detected unless the subclass looks."""
        return None

    def default_agent_config(self) -> Mapping[str, object]:
        """No agent-specific defaults (the core's generic agent defaults apply)."""
        return {}

    def preflight(self, ctx: InstallContext) -> None:
        """Nothing to check."""

    def install(self, ctx: InstallContext) -> list[str]:
        """Nothing to install."""
        return []

    def uninstall(self, ctx: InstallContext) -> list[str]:
        """Nothing to remove."""
        return []

    def check(self, ctx: InstallContext) -> list[Finding]:
        """Nothing to report."""
        return []

    def decode(self, native_event: str, raw: bytes) -> HookEvent:
        """Upstream's generic payload field names; ``native_event`` is the normalized event name."""
        return decode_generic(raw, self.name, native_event)

    def hook_output(self, result: HookResult, mode: str) -> str:
        """Generic output: ``json`` prints the capture result object, any other mode the context blocks
        (nothing when there are none: upstream's "No memories found." only costs the model tokens)."""
        if result.ignored:
            return ""
        if mode == "json":
            return dumps_compact(result.to_json())
        return result.context


def standard_agent_config(
    *,
    write_events: tuple[str, ...] = ("session_start", "user_input", "turn_end"),
    recall_events: tuple[str, ...] = ("user_input",),
    enabled: bool = False,
) -> dict[str, object]:
    """An ``agents.<name>`` section built from the core's default hook settings (YAML shape)."""
    from paxm_core.config import defaults as d
    from paxm_core.config.codec import dump_value
    from paxm_core.config.model import AgentConfig, AgentHookConfig, HookRecallConfig, HookWriteConfig

    hooks: dict[str, AgentHookConfig] = {}
    for event in dict.fromkeys((*write_events, *recall_events)):
        hooks[event] = AgentHookConfig(
            recall=(d.pre_tool_recall() if event == EVENT_PRE_TOOL else d.default_hook_recall())
            if event in recall_events
            else HookRecallConfig(),
            write=d.hook_write(event, flush=event == EVENT_TURN_END) if event in write_events else HookWriteConfig(),
        )
    agent = AgentConfig(enabled=enabled, active_recall=d.active_recall(), hooks=hooks)
    dumped = dump_value(agent)
    return dumped if isinstance(dumped, dict) else {}


def dumps_compact(value: JSONValue) -> str:
    """JSON the way hook output wants it: compact, UTF-8 kept (harnesses read it byte for byte)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def enabled_hook_events(config: Config, target: str, events: Iterable[str]) -> list[str]:
    """Which of ``events`` (normalized names, in order) get a hook for agent ``target``:
    ``session_start`` always, the others when their recall or write is enabled."""
    agent = config.agents.get(target)
    hooks = agent.hooks if agent is not None else {}
    on = {event for event, hook in hooks.items() if hook.recall.enabled or hook.write.enabled}
    return [event for event in events if event == EVENT_SESSION_START or event in on]


def setup_fix_command(ctx: InstallContext, agent: str, *, force: bool = True) -> str:
    """The ``paxm setup`` line that reinstalls ``agent``'s hooks without disabling any other agent.

    ``--agent X`` alone would pin the selection to ``X``, so every enabled agent is named (or the
    plugin owner kept with ``--integration``), plus ``--config`` when it is not the default.
    """
    import shlex

    from paxm_core.config.paths import default_config_path

    parts = ["paxm", "setup", "--yes"]
    if force:
        parts.append("--force")
    config_path = Path(ctx.config.path).expanduser()
    try:
        is_default = config_path.absolute() == default_config_path().expanduser().absolute()
    except Exception:  # an unresolvable default (no HOME): name the file explicitly
        is_default = False
    if not is_default:
        parts[1:1] = ["--config", str(config_path)]
    if ctx.owner != OWNER_PAXM:
        parts += ["--agent", agent, "--integration", ctx.owner]
    else:
        enabled = {name for name, settings in ctx.config.agents.items() if settings.enabled}
        for name in sorted(enabled | {agent}):
            parts += ["--agent", name]
    return shlex.join(parts)


class NativeEvents:
    """A harness's own hook event names for paxm's events, and the way back."""

    __slots__ = ("_by_native", "_native", "events", "pairs")

    def __init__(self, pairs: Iterable[tuple[str, str]]) -> None:
        self.pairs = tuple(pairs)
        #: paxm's events, in order
        self.events = tuple(event for event, _ in self.pairs)
        self._native = dict(self.pairs)
        self._by_native = {native.lower(): event for event, native in self.pairs}

    def native(self, event: str) -> str:
        """The harness's name for paxm ``event`` (``KeyError`` for an event it has no hook for)."""
        return self._native[event]

    def event(self, native: str) -> str:
        """paxm's event for the name a hook was invoked with."""
        return native if native in self._native else self._by_native.get(native.lower(), native or EVENT_USER_INPUT)


def named_event(native_event: str, payload: Mapping[str, object] | bytes | str) -> str:
    """The native event a hook names: its ``--event`` (stripped), else the payload's ``hook_event_name``."""
    native = native_event.strip()
    if native:
        return native
    if not isinstance(payload, Mapping):
        payload = parse_payload(payload)
    name = payload.get("hook_event_name")
    return name if isinstance(name, str) else ""


def queue_path(config: Config) -> str | None:
    """The capture queue path a hook command passes (``None``: the default queue)."""
    return str(getattr(getattr(config, "capture_queue", None), "path", "") or "") or None


def env_path(var: str) -> Path | None:
    """``$var`` as an absolute path (``~`` expanded); ``None`` when it is unset or blank."""
    value = os.environ.get(var, "").strip()
    return Path(value).expanduser().absolute() if value else None


def detect_harness(command: str, directory: Path | None) -> str | None:
    """For :meth:`Integration.detect`: ``command`` found on ``PATH``, else ``directory`` if it exists."""
    import shutil

    found = shutil.which(command) if command else None
    if found:
        return found
    return str(directory) if directory is not None and directory.is_dir() else None


class Report(list[str]):
    """The lines an install or uninstall reports (what it returns), each echoed as it is added."""

    def __init__(self, ctx: InstallContext) -> None:
        super().__init__()
        self._echo = ctx.echo

    def __call__(self, *lines: str) -> None:
        """Report ``lines``, in order."""
        for line in lines:
            self.append(line)
            self._echo(line)


def past_turn(
    target: str,
    native_event: str,
    key: Iterable[str],
    *,
    path: Path,
    session: str,
    prompt: str,
    answer: str,
    started: float,
    workspace: str = "",
    messages: Iterable[HookMessage] = (),
    metadata: Mapping[str, str] | None = None,
    captured_at: float = 0.0,
) -> PastTurn:
    """One finished turn read back from the transcript ``path``, as the live ``turn_end`` hook
    would have produced it."""
    import hashlib

    # the same turn gets the same id on every run: backfill deduplicates on it
    turn_id = "backfill-" + hashlib.sha256("\x00".join(key).encode()).hexdigest()[:32]
    event = HookEvent(
        target=target,
        event=EVENT_TURN_END,
        native_event=native_event,
        prompt=prompt,
        assistant=answer,
        messages=list(messages),
        workspace=workspace,
        metadata={"session_id": session, "transcript_path": str(path), "backfill_turn_id": turn_id, **(metadata or {})},
        captured_at=captured_at,
    )
    return PastTurn(turn_id=turn_id, session_id=session, started_at=started, event=event)


def jsonl_files(root: Path, pattern: str = "**/*.jsonl") -> list[Path]:
    """The transcript files under ``root`` matching ``pattern``, sorted (``[]`` when it is absent)."""
    if not root.is_dir():
        return []
    return sorted(p for p in root.glob(pattern) if p.is_file())


def content_text(content: object, types: Container[str] = ("text",)) -> str:
    """The visible text of a transcript message's content: a string, or its parts of ``types``
    (stripped, joined by newlines); never thinking, reasoning or tool parts."""
    if isinstance(content, str):
        return content.strip()
    parts = (
        [p.get("text") for p in content if isinstance(p, dict) and p.get("type") in types]
        if isinstance(content, list)
        else []
    )
    return "\n".join(t.strip() for t in parts if isinstance(t, str) and t.strip())


def iso_epoch(value: object) -> float:
    """Seconds since the epoch of an ISO 8601 timestamp in a transcript (``Z`` allowed); ``0.0``
    for anything that is not one, so a reader falls back to the file's own time."""
    if not isinstance(value, str):
        return 0.0
    from datetime import datetime

    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def transcript_records(
    path: Path, limit: int, keep: Callable[[bytes], bool] | None = None
) -> tuple[float, Iterator[JSONObject]]:
    """The file's modification time (``0.0`` when unreadable) and the JSON objects on its lines."""
    try:
        mtime = path.stat().st_mtime
    except OSError:
        return 0.0, iter(())
    return mtime, _jsonl_objects(path, limit, keep)


def _jsonl_objects(path: Path, limit: int, keep: Callable[[bytes], bool] | None) -> Iterator[JSONObject]:
    try:
        handle = path.open("rb")
    except OSError:
        return
    with handle:
        while line := handle.readline(limit + 1):
            if len(line) > limit and not line.endswith(b"\n"):
                while line and not line.endswith(b"\n"):  # drain the rest of the oversized line
                    line = handle.readline(limit)
                continue
            if keep is None or keep(line):
                record = _json_object(line, "strict")  # str: json.loads would sniff each line's encoding
                if record is not None:
                    yield record


def _json_object(line: bytes, errors: str | None) -> JSONObject | None:
    """The JSON object on ``line`` (decoded as UTF-8 with ``errors``; ``None``: as bytes), else ``None``."""
    try:
        value = json.loads(line if errors is None else line.decode("utf-8", errors))
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def tail_json_records(
    path: str | os.PathLike[str], limit: int, *, replace_invalid: bool = False
) -> list[dict[str, Any]]:
    """The JSON objects on the lines in the last ``limit`` bytes of a JSONL transcript."""
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            start = max(0, size - limit)
            handle.seek(start)
            data = handle.read(limit)
    except OSError:
        return []
    lines = data.split(b"\n")
    if start > 0 and lines:
        lines = lines[1:]
    objects = (_json_object(line, "replace" if replace_invalid else None) for line in lines if line.strip())
    return [value for value in objects if value is not None]


def paxm_executable() -> str:
    """The ``paxm`` script beside this interpreter (the venv's), else the one on ``PATH``, else ``""``."""
    import shutil
    import sys

    beside = Path(os.path.abspath(sys.executable)).parent / "paxm"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("paxm") or ""


def fill_launcher(text: str, values: Mapping[str, str]) -> str:
    """Set the ``NAME=''`` placeholder lines of a shipped shell launcher to shell-quoted ``values``."""
    import shlex

    for name, value in values.items():
        match = re.search(rf"^{name}=''$", text, re.MULTILINE)
        if match is None:
            raise ValueError(f"launcher has no {name} placeholder")
        text = f"{text[: match.start()]}{name}={shlex.quote(value)}{text[match.end() :]}"
    return text


def launcher_values(config: Any) -> dict[str, Any]:
    """The keyword arguments a generated plugin marketplace is filled from: this interpreter and
    hook client, ``config``'s file and capture queue, and the ``paxm`` script."""
    return {
        "python": interpreter_path(),
        "client": str(client_path()),
        "config_path": Path(config.path).absolute(),
        "queue_path": queue_path(config) or "",
        "paxm_exe": paxm_executable(),
    }


def hook_launcher_values(python: str, client: str, config_path: Path, queue_path: str) -> dict[str, str]:
    """The placeholders of a shipped ``paxm-hook.sh`` launcher."""
    return {
        "PAXM_PYTHON": python,
        "PAXM_CLIENT": client,
        "PAXM_CONFIG_FILE": str(config_path),
        "PAXM_QUEUE": queue_path,
    }


#: the file that marks a generated marketplace directory as paxm's
GENERATED_MARKER = ".paxm-generated"


def _create(path: Path, data: bytes, mode: int) -> None:
    """Write the new file ``path`` with ``mode`` set through its descriptor; ``O_EXCL | O_NOFOLLOW``
    refuse whatever appeared there meanwhile (a link), so nothing is written or chmod-ed through it."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    with os.fdopen(os.open(path, flags, mode), "wb") as handle:
        os.fchmod(handle.fileno(), mode)  # the umask may have narrowed the mode
        handle.write(data)


def _mkdir(path: Path) -> None:
    from paxm_core.json_settings import make_private_dirs

    if make_private_dirs(path) != [path]:
        raise FileExistsError(f"{path} exists; paxm creates every file of the generated plugin itself")


def generate_marketplace_dir(
    shipped: Path, dest: Path, launchers: Mapping[Path, Mapping[str, str]], files: Mapping[Path, str], owner: str
) -> None:
    """(Re)generate the plugin marketplace ``dest`` from the ``shipped`` tree."""
    import shutil

    from paxm_core.json_settings import make_private_dirs

    dest = dest.absolute()
    make_private_dirs(dest.parent)
    staging = dest.with_name(f".{dest.name}.tmp-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)  # a leftover of this pid; rmtree never follows a link
    try:
        _mkdir(staging)
        for directory, subdirs, names in os.walk(shipped):
            subdirs[:] = sorted(name for name in subdirs if name != "__pycache__")
            relative = Path(directory).relative_to(shipped)
            for name in subdirs:
                _mkdir(staging / relative / name)
            for name in sorted(names):
                if relative / name not in launchers and relative / name not in files:
                    _create(staging / relative / name, (Path(directory) / name).read_bytes(), 0o600)
        for relative, values in launchers.items():
            _create(staging / relative, fill_launcher((shipped / relative).read_text(), values).encode(), 0o700)
        for relative, text in files.items():
            _create(staging / relative, text.encode(), 0o600)
        note = f"generated by paxm setup --integration {owner}; regenerated on every setup\n"
        _create(staging / GENERATED_MARKER, note.encode(), 0o600)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    swap_in_dir(staging, dest)


def swap_in_dir(staging: Path, dest: Path) -> None:
    """Replace the directory ``dest`` by the fully built ``staging`` beside it (the old copy is
    renamed aside, then deleted), so a harness reading ``dest`` never sees half of it."""
    import shutil

    if dest.exists():
        old = dest.with_name(f".{dest.name}.old-{os.getpid()}")
        shutil.rmtree(old, ignore_errors=True)
        dest.rename(old)
        staging.rename(dest)
        shutil.rmtree(old, ignore_errors=True)
    else:
        staging.rename(dest)


def remove_generated_dir(dest: Path, marker: str = GENERATED_MARKER) -> bool:
    """Delete the generated directory ``dest`` only if paxm's ``marker`` file is in it, then its
    parent when that is left empty (other integrations may keep files there); True if removed."""
    import shutil

    if not (dest / marker).is_file():
        return False
    shutil.rmtree(dest)
    try:
        dest.parent.rmdir()
    except OSError:
        pass
    return True


#: events upstream (the Go paxm) wrote ``<config dir>/hooks/<target>-<event>`` shell shims for
UPSTREAM_SHIM_EVENTS = ("session_start", "user_input", "user_prompt", "tool_use", "tool_failure", "turn_end")


def remove_upstream_shims(config_dir: Path, target: str, is_shim: Callable[[bytes], bool]) -> list[Path]:
    """Delete upstream's ``hooks/<target>-<event>[.ps1]`` shim scripts under ``config_dir``."""
    removed = []
    for event in UPSTREAM_SHIM_EVENTS:
        for suffix in ("", ".ps1"):
            shim = config_dir / "hooks" / f"{target}-{event}{suffix}"
            try:
                head = shim.read_bytes()[:4096]
            except OSError:
                continue
            if is_shim(head):
                shim.unlink()
                removed.append(shim)
    return removed


def missing_file_findings(commands: Iterable[str | list[str]], fix: str, what: str = "paxm hook") -> list[Finding]:
    """An ``error`` for every file an installed hook command runs that no longer exists (the guard
    makes such a hook exit 0, so it would fail silently on every event)."""
    findings: list[Finding] = []
    for command in commands:
        hook = parse_hook_command(command)
        for file in hook.files if hook else ():
            if not Path(file).exists():
                findings.append(Finding("error", f"{what} points at a missing file: {file}", fix))
    return findings


def context_for(result: HookResult, events: Container[str]) -> str:
    """``result``'s context blocks when the harness injects them for its event, else ``""``."""
    if result.ignored or result.event not in events:
        return ""
    context = result.context
    return context if context.strip() else ""


_ESCAPED_TAG = re.compile(r"&(lt|#0*60|#x0*3c);(/?paxm-recall)", re.IGNORECASE)


def guard_escaped_envelope(context: str) -> str:
    """``context`` with every already-escaped ``paxm-recall`` tag escaped once more (real tags untouched).

    For a harness that HTML-escapes injected text, which makes real tags look like the escaped
    forgeries the envelope makes of tags inside recalled content: escaping their ``&`` again
    keeps the two apart.
    """
    return _ESCAPED_TAG.sub(r"&amp;\1;\2", context)
