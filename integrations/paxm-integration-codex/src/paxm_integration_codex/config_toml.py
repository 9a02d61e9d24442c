"""Codex's ``config.toml``: locating it, merging paxm's hooks in and taking them out.

Edits go through ``tomlkit``, so the user's comments and layout survive outside what paxm
changes.  A handler is paxm's when its command runs paxm's hook client for this config with
``--target codex``, or is one of upstream's shims (``<paxm configdir>/hooks/codex-<event>``).
paxm's groups go at the *end* of each event's array: Codex keys hook trust by group position, so
adding or removing paxm never shifts (and un-trusts) one of the user's hooks.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # tomlkit is imported by the functions that edit TOML, not when the plugin loads
    import tomlkit
    from tomlkit.items import InlineTable, Table

from paxm_core.api.errors import IntegrationError
from paxm_core.settings_hooks import is_paxm_or_upstream_hook
from paxm_integration_codex.events import HOOK_TIMEOUT, NATIVE_EVENTS

__all__ = [
    "PaxmHandler",
    "WantedHook",
    "codex_home",
    "config_path",
    "drop_state_prefix",
    "is_paxm_command",
    "merge_hooks",
    "paxm_handlers",
    "paxm_matcher",
    "read_config",
    "write_config",
]

IsOurs = Callable[[str], bool]


def codex_home(environ: Mapping[str, str] | None = None) -> Path:
    """``$CODEX_HOME`` or ``~/.codex``."""
    env = os.environ if environ is None else environ
    explicit = env.get("CODEX_HOME", "").strip()
    return (Path(explicit).expanduser() if explicit else Path.home() / ".codex").absolute()


def config_path(environ: Mapping[str, str] | None = None) -> Path:
    """``$PAXM_CODEX_CONFIG`` > ``$CODEX_HOME/config.toml`` > ``~/.codex/config.toml``."""
    env = os.environ if environ is None else environ
    explicit = env.get("PAXM_CODEX_CONFIG", "").strip()
    if explicit:
        return Path(explicit).expanduser().absolute()
    return codex_home(env) / "config.toml"


@dataclass(frozen=True)
class WantedHook:
    """The paxm handler one native event should have."""

    command: str
    status: str
    matcher: str = ""
    timeout: int = HOOK_TIMEOUT

    def handler(self) -> InlineTable:
        """The handler as Codex reads it (``type``, ``command``, ``async``, ``statusMessage``, ``timeout``)."""
        import tomlkit

        table = tomlkit.inline_table()
        table.update(
            {
                "type": "command",
                "command": self.command,
                "async": False,
                "statusMessage": self.status,
                "timeout": self.timeout,
            }
        )
        return table

    def group(self, *, inline: bool = True) -> InlineTable | Table:
        """A group holding just this handler (with the matcher when the event has one); a
        ``[[hooks.<event>]]`` table when ``inline`` is false (the event's groups are written so)."""
        import tomlkit

        group = tomlkit.inline_table() if inline else tomlkit.table()
        if self.matcher:
            group["matcher"] = self.matcher
        handlers = tomlkit.array()
        handlers.append(self.handler())
        group["hooks"] = handlers
        return group


def is_paxm_command(command: str, config: str | os.PathLike[str]) -> bool:
    """Whether ``command`` is a paxm Codex hook for the paxm config file ``config`` (or upstream's shim)."""
    return is_paxm_or_upstream_hook(command, config, "codex")


def paxm_matcher(config: str | os.PathLike[str]) -> IsOurs:
    """:func:`is_paxm_command` bound to one paxm config file."""
    return lambda command: is_paxm_command(command, config)


def _handlers_of(group: Any) -> Any:
    return group.get("hooks") if isinstance(group, dict) else None


def _is_ours(handler: Any, is_ours: IsOurs) -> bool:
    if not isinstance(handler, dict):
        return False
    command = handler.get("command")
    return isinstance(command, str) and is_ours(command)


def _hooks_table(doc: tomlkit.TOMLDocument, where: str) -> Any:
    hooks = doc.get("hooks")
    if hooks is None:
        return None
    if not isinstance(hooks, dict):
        raise IntegrationError(f"{where}: hooks must be a table; paxm changed nothing")
    for event in NATIVE_EVENTS:
        groups = hooks.get(event.native)
        if groups is not None and not isinstance(groups, list):
            raise IntegrationError(f"{where}: hooks.{event.native} must be an array; paxm changed nothing")
    return hooks


@dataclass(frozen=True)
class PaxmHandler:
    """Where one paxm handler sits: Codex's trust key is ``<file>:<snake event>:<group>:<handler>``."""

    native: str
    snake: str
    group: int
    handler: int
    command: str

    def trust_key(self, path: Path) -> str:
        """The ``[hooks.state]`` key Codex uses for this handler of the file at ``path``."""
        return f"{path}:{self.snake}:{self.group}:{self.handler}"


def paxm_handlers(doc: tomlkit.TOMLDocument, is_ours: IsOurs) -> Iterator[PaxmHandler]:
    """Every paxm handler in ``doc``'s ``[hooks]`` (by event, group and handler index)."""
    hooks = doc.get("hooks")
    if not isinstance(hooks, dict):
        return
    for event in NATIVE_EVENTS:
        groups = hooks.get(event.native)
        if not isinstance(groups, list):
            continue
        for g, group in enumerate(groups):
            handlers = _handlers_of(group)
            if not isinstance(handlers, list):
                continue
            for h, handler in enumerate(handlers):
                if _is_ours(handler, is_ours):
                    yield PaxmHandler(event.native, event.snake, g, h, str(handler.get("command")))


def _state_table(hooks: Any) -> Any:
    state = hooks.get("state") if hooks is not None else None
    return state if isinstance(state, dict) else None


def _drop_state(doc: tomlkit.TOMLDocument, keys: set[str]) -> bool:
    hooks = doc.get("hooks")
    state = _state_table(hooks)
    if state is None:
        return False
    changed = False
    for key in [k for k in state if k in keys]:
        del state[key]
        changed = True
    if changed and len(state) == 0 and hooks is not None:
        del hooks["state"]
    return changed


def merge_hooks(
    doc: tomlkit.TOMLDocument, wanted: Mapping[str, WantedHook], is_ours: IsOurs, *, path: Path, where: str = ""
) -> bool:
    """Make ``doc``'s paxm handlers exactly ``wanted`` (native event -> handler); in place."""
    import tomlkit
    from tomlkit.items import AoT

    hooks = _hooks_table(doc, where or str(path))
    before = list(paxm_handlers(doc, is_ours))
    keep: dict[str, PaxmHandler] = {}
    if hooks is not None:
        for found in before:
            want = wanted.get(found.native)
            groups = hooks[found.native]
            group = groups[found.group]
            last = found.group == len(groups) - 1
            if (
                want is not None
                and found.native not in keep
                and last
                and found.command == want.command
                and len(_handlers_of(group)) == 1
                and dict(_handlers_of(group)[0]) == dict(want.handler())
                and str(group.get("matcher", "") or "") == want.matcher
            ):
                keep[found.native] = found
    stale = [f for f in before if keep.get(f.native) != f]
    changed = _drop_state(doc, {f.trust_key(path) for f in stale})
    # remove stale handlers, last first so indexes stay valid
    for found in sorted(stale, key=lambda f: (f.native, f.group, f.handler), reverse=True):
        groups = hooks[found.native]
        handlers = _handlers_of(groups[found.group])
        del handlers[found.handler]
        if len(handlers) == 0:
            del groups[found.group]
        changed = True
    if hooks is not None:
        for event in NATIVE_EVENTS:
            groups = hooks.get(event.native)
            if groups is not None and len(groups) == 0 and any(s.native == event.native for s in stale):
                del hooks[event.native]
    for event in NATIVE_EVENTS:
        want = wanted.get(event.native)
        if want is None or event.native in keep:
            continue
        if hooks is None:
            hooks = tomlkit.table()
            doc["hooks"] = hooks
            hooks = doc["hooks"]
        groups = hooks.get(event.native)
        group = want.group(inline=not isinstance(groups, AoT))
        if groups is None:
            groups = tomlkit.array()
            groups.append(group)
            hooks[event.native] = groups
        else:
            groups.append(group)
        changed = True
    if hooks is not None and len(hooks) == 0 and before and not wanted:
        del doc["hooks"]
    return changed


def read_config(path: Path) -> tuple[tomlkit.TOMLDocument, str | None]:
    """The parsed config and its original text (``None`` when the file does not exist)."""
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return tomlkit.document(), None
    except OSError as exc:
        raise IntegrationError(f"cannot read Codex config {path}: {exc.strerror or exc}") from exc
    text = raw.decode("utf-8-sig", errors="replace")
    try:
        doc = tomlkit.parse(text)
    except (TOMLKitError, ValueError) as exc:
        raise IntegrationError(
            f"Codex config {path} is not valid TOML ({exc}); fix or move it, paxm changed nothing"
        ) from None
    _hooks_table(doc, str(path))
    return doc, text


def write_config(path: Path, doc: tomlkit.TOMLDocument, original: str | None) -> None:
    """Write ``doc`` atomically with mode 0600; keep the first original as ``config.toml.paxm.bak``."""
    import tomlkit

    from paxm_core.json_settings import write_private

    text = tomlkit.dumps(doc)
    if text.endswith("\n\n") and not (original or "").endswith("\n\n"):
        # removing a trailing table leaves the blank line that separated it
        text = text.rstrip("\n") + "\n"
    write_private(path, text, original)  # a new 0600 file, its mode set through its descriptor


def drop_state_prefix(doc: tomlkit.TOMLDocument, prefix: str) -> bool:
    """Remove every ``[hooks.state]`` entry whose key starts with ``prefix``; True if any was."""
    state = _state_table(doc.get("hooks"))
    if state is None:
        return False
    return _drop_state(doc, {k for k in state if k.startswith(prefix)})
