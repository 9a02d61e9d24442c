"""A past turn -> the capture events a live hook would have appended for it.

A live turn is two hook events: ``user_input`` (the prompt) and ``turn_end`` (the answer and
the turn's messages; terminal, it seals the episode).  :meth:`TurnRenderer.render` builds the
same two writes directly from the building blocks the live
:class:`~paxm_core.passive.passive.PassiveRuntime` write path uses (its ownership gate and
opt-out, the configured templates, echo stripping of recalled context, ``Tools.build_item``
with its redaction and put policy), with everything that does not depend on the turn
resolved once per run: hook settings, labels, policies, compiled templates.  It skips what a
past turn has no use for: the per-event ``HookResult``, two event copies per event, the
telemetry record, the clock.  :meth:`TurnRenderer.render_live` drives the live runtime
itself; the tests (``tests/backfill/test_direct_render.py``) hold the two equal, item for
item and row for row, so the live path stays the oracle.

Event ids are derived from the turn's stable id, so a re-run appends exact duplicates
(ignored by the queue).
"""

from __future__ import annotations

import copy
import functools
import hashlib
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from paxm_core.api.integration import PastTurn

if TYPE_CHECKING:
    from paxm_core.api.events import HookEvent, HookMessage
    from paxm_core.capture.model import CaptureEvent
    from paxm_core.capture.queue import CaptureQueue
    from paxm_core.config.model import Config
    from paxm_core.passive.compose import PassiveWrite
    from paxm_core.passive.passive import PassiveRuntime
    from paxm_core.passive.policy import HookSettings
    from paxm_core.plugins import PaxmPluginManager
    from paxm_core.tools import Tools

__all__ = ["RenderRuntime", "TurnRenderer", "live_fingerprint"]


class RenderRuntime(Protocol):
    """What a :class:`TurnRenderer` reads of a runtime: a :class:`~paxm_core.runtime.Runtime`,
    or a worker's providerless stand-in."""

    @property
    def config(self) -> Config: ...

    @property
    def plugin_manager(self) -> PaxmPluginManager: ...

    @property
    def tools(self) -> Tools: ...


def live_fingerprint(target: str, session_id: str, prompt_text: str, event: str = "user_input") -> str:
    """Identity of a turn's rendered ``user_input`` write: the same for live and backfilled.

    Agents whose live hooks write only the turn's end (Pi, OpenCode) have no ``user_input``
    write; their turns are matched on the rendered ``turn_end`` text (``event="turn_end"``).
    """
    parts = (
        (target, session_id, prompt_text.strip())
        if event == "user_input"
        else (target, session_id, event, prompt_text.strip())
    )
    # surrogatepass: a lone surrogate (a JSON "\\ud800" escape in a transcript) must not fail the run
    return hashlib.sha256("\x00".join(parts).encode("utf-8", "surrogatepass")).hexdigest()


class _PolicyOnce:
    """The runtime, with its tools' ``put_policy`` worked out once per write profile.

    A live write resolves its profile's policy (tier, expiry, scope) per item so a config
    reload counts; a backfill run has one config, and thousands of items per profile.
    """

    def __init__(self, runtime: RenderRuntime) -> None:
        self._runtime = runtime
        tools = copy.copy(runtime.tools)
        # a copy of this run's tools whose policy lookups are cached
        tools.put_policy = functools.lru_cache(maxsize=64)(runtime.tools.put_policy)  # type: ignore[method-assign]
        self.tools = tools

    def __getattr__(self, name: str) -> object:
        return getattr(self._runtime, name)


@functools.cache
def _replay_class(base: type[PassiveRuntime]) -> type[PassiveRuntime]:
    """``PassiveRuntime`` that looks each workspace's opt-out and each event's settings up once per run.

    A live hook checks ``.paxm-ignore`` (a stat per parent directory) on every event so a
    marker created mid-session counts at once; a backfill renders thousands of past turns of
    the same few workspaces, and the opt-out in force when the run started is the one that
    applies to all of them (a marker created during a run counts from the next run).
    """

    class ReplayRuntime(base):  # type: ignore[misc,valid-type]
        def _kept_out(self, event: HookEvent) -> bool:
            cache: dict[str, bool] = self.__dict__.setdefault("_ignored_by_workspace", {})
            hit = cache.get(event.workspace)
            if hit is None:
                hit = cache[event.workspace] = bool(super()._kept_out(event))
            return hit

        def _hook_settings(self, target: str, event: str) -> HookSettings:
            # one config for the whole run: each (agent, event)'s settings are read once
            cache: dict[tuple[str, str], HookSettings] = self.__dict__.setdefault("_settings_by_event", {})
            hit = cache.get((target, event))
            if hit is None:
                hit = cache[(target, event)] = super()._hook_settings(target, event)
            return hit

    return ReplayRuntime


class TurnRenderer:
    """Renders past turns with a loaded runtime's config, write templates and policies."""

    def __init__(self, runtime: RenderRuntime, queue: CaptureQueue | None) -> None:
        from paxm_core.passive.passive import PassiveRuntime
        from paxm_core.passive.processor import HookProcessor

        self._writes: list[PassiveWrite] = []
        view: Any = _PolicyOnce(runtime)
        # only ``capture_event`` is called, which never reads the queue (a worker renders with none)
        self._processor = HookProcessor(view, queue)  # type: ignore[arg-type]
        self._replay = _replay_class(PassiveRuntime)(
            runtime.config, sink=self._collect, plugin_manager=getattr(runtime, "plugin_manager", None)
        )
        self._tools = view.tools
        self._plans: dict[tuple[str, str], _Plan | None] = {}

    def _collect(self, write: PassiveWrite) -> bool:
        self._writes.append(write)
        return True

    def close(self) -> None:
        """Release the processor's resources."""
        self._processor.close()

    def render_live(self, turn: PastTurn) -> tuple[list[CaptureEvent], str]:
        """:meth:`render` through the live ``PassiveRuntime.handle`` path (the oracle of the tests)."""
        from paxm_core.api.events import EVENT_TURN_END, EVENT_USER_INPUT

        base = turn.turn_id.removeprefix("backfill-")
        started = turn.started_at or None
        source = turn.event
        prompt_event = replace(
            source,
            event=EVENT_USER_INPUT,
            native_event="",
            assistant="",
            messages=[],
            metadata=dict(source.metadata),
            event_id=f"bf_{base}_u",
            captured_at=started or source.captured_at,
        )
        end_event = replace(
            source,
            event=EVENT_TURN_END,
            metadata=dict(source.metadata),
            event_id=f"bf_{base}_e",
            captured_at=(started + 0.001) if started else source.captured_at,
        )
        events: list[CaptureEvent] = []
        fingerprint = end_fingerprint = ""
        for hook_event in (prompt_event, end_event):
            self._writes.clear()
            result = self._replay.handle(hook_event)
            if result.errors:
                raise ValueError("; ".join(result.errors))
            for write in self._writes:
                session = str(write.metadata.get("session_id", ""))
                if write.event == EVENT_USER_INPUT:
                    fingerprint = live_fingerprint(write.target, session, write.text)
                elif write.event == EVENT_TURN_END and not end_fingerprint:
                    end_fingerprint = live_fingerprint(write.target, session, write.text, EVENT_TURN_END)
                events.append(self._processor.capture_event(write))
        self._writes.clear()
        # no prompt write (the agent captures turn ends only): the turn end identifies the turn
        return events, fingerprint or end_fingerprint

    # -- the direct path ---------------------------------------------------------------------

    def render(self, turn: PastTurn) -> tuple[list[CaptureEvent], str]:
        """``(capture events, fingerprint of the user_input write or "")`` for ``turn``.

        Equal to :meth:`render_live` (the same events, field for field), without the live
        runtime's per-event machinery.
        """
        from paxm_core.api.events import EVENT_TURN_END, EVENT_USER_INPUT

        base = turn.turn_id.removeprefix("backfill-")
        started = turn.started_at or None
        source = turn.event
        events: list[CaptureEvent] = []
        fingerprint = end_fingerprint = ""
        for kind, event_id, captured_at in (
            (EVENT_USER_INPUT, f"bf_{base}_u", started or source.captured_at),
            (EVENT_TURN_END, f"bf_{base}_e", (started + 0.001) if started else source.captured_at),
        ):
            plan = self._plan(source.target, kind)
            if plan is None or self._replay._kept_out(source):  # not ours, or the project opted out
                continue
            made = self._direct_event(source, kind, event_id, captured_at, plan)
            if made is None:
                continue
            event, text, session = made
            if kind == EVENT_USER_INPUT:
                fingerprint = live_fingerprint(source.target, session, text)
            elif not end_fingerprint:
                end_fingerprint = live_fingerprint(source.target, session, text, EVENT_TURN_END)
            events.append(event)
        # no prompt write (the agent captures turn ends only): the turn end identifies the turn
        return events, fingerprint or end_fingerprint

    def _plan(self, target: str, kind: str) -> _Plan | None:
        """What the live path resolves for ``(target, event)`` (``None``: not ours), once per run."""
        key = (target, kind)
        if key not in self._plans:
            settings = self._replay._hook_settings(target, kind)
            self._plans[key] = _Plan(settings, self._replay.label(target)) if settings.accepts("") else None
        return self._plans[key]

    def _direct_event(
        self, source: HookEvent, kind: str, event_id: str, captured_at: float, plan: _Plan
    ) -> tuple[CaptureEvent, str, str] | None:
        """``(capture event, written text, session id)`` as ``PassiveRuntime._write`` and
        ``HookProcessor.capture_event`` make them; ``None`` when nothing is written."""
        import time

        from paxm_core.api.events import EVENT_TURN_END, EVENT_USER_INPUT
        from paxm_core.attribution import expires_at_for
        from paxm_core.capture import CaptureEvent, session_key_for

        target = source.target
        metadata = dict(source.metadata)
        session = str(metadata.get("session_id", ""))
        write = plan.write
        if write is None:
            if kind != EVENT_TURN_END:
                return None
            created = datetime.fromtimestamp(captured_at or time.time(), tz=UTC)
            return self._marker(source, event_id, metadata, "default", created), "", session
        try:
            created = datetime.fromtimestamp(captured_at or time.time(), tz=UTC)
            clean = _Clean(source, kind, metadata)
            text = plan.text(clean)
        except Exception as exc:  # the live path reports it as the event's error
            error = f"{type(exc).__name__}: {exc}" if not str(exc) else str(exc)
            raise ValueError(f"buffer skipped: {error}") from exc
        profile = write.profile or "default"
        if not text.strip():
            if kind != EVENT_TURN_END:
                return None
            # a turn end with nothing to write still seals its turn (PassiveRuntime._end_turn)
            return self._marker(source, event_id, metadata, profile, created), "", session
        metadata["hook_target"] = target
        metadata["hook_event"] = kind
        workspace = source.workspace
        if workspace:
            metadata["workspace"] = workspace
        tools = self._tools
        policy = tools.put_policy(profile)
        item, _ = tools.build_item(
            text,
            profile=profile,
            source=f"hook:{target}:{kind}",
            metadata=metadata,
            workspace=workspace,
            agent_name=target,
            created_at=created,
            tier=policy.tier or "",
            expires_at=expires_at_for(created, policy.expires_after),
            admission_text=clean.prompt if kind == EVENT_USER_INPUT else "",
        )
        key = session_key_for(
            target,
            workspace=workspace,
            session_id=session,
            transcript_path=metadata.get("transcript_path", ""),
            event_id=event_id,
        )
        event = CaptureEvent(
            event_id=event_id,
            session_key=key,
            item=item,
            profile=profile,
            terminal=kind == EVENT_TURN_END,
            captured_at=created,
        )
        return event, text, session

    def _marker(
        self, source: HookEvent, event_id: str, metadata: dict[str, str], profile: str, created: datetime
    ) -> CaptureEvent:
        """The empty turn end that only seals its turn (``PassiveRuntime._end_turn``)."""
        from paxm_core.api.events import EVENT_TURN_END
        from paxm_core.api.types import MemoryItem
        from paxm_core.capture import CaptureEvent, session_key_for
        from paxm_core.tools import caller_metadata

        target = source.target
        meta = {**metadata, "hook_target": target, "hook_event": EVENT_TURN_END}
        key = session_key_for(
            target,
            workspace=source.workspace,
            session_id=meta.get("session_id", ""),
            transcript_path=meta.get("transcript_path", ""),
            event_id=event_id,
        )
        item_meta = caller_metadata(meta)
        if source.workspace.strip():
            item_meta["workspace"] = source.workspace.strip()
        item = MemoryItem(text="", source=f"hook:{target}:{EVENT_TURN_END}", metadata=item_meta, created_at=created)
        return CaptureEvent(
            event_id=event_id, session_key=key, item=item, profile=profile, terminal=True, captured_at=created
        )


class _Clean:
    """The fields ``compose_write`` reads of an echo-stripped event (``echo.strip_event``), no copy."""

    __slots__ = ("assistant", "event", "messages", "metadata", "prompt", "query", "raw", "target", "workspace")

    def __init__(self, source: HookEvent, kind: str, metadata: dict[str, str]) -> None:
        from paxm_core.api.events import EVENT_USER_INPUT, HookMessage
        from paxm_core.envelope import strip_recall_context
        from paxm_core.passive.echo import drop_recall_tool_exchanges

        self.target = source.target
        self.event = kind
        self.query = strip_recall_context(source.query)
        self.prompt = strip_recall_context(source.prompt)
        self.workspace = source.workspace
        self.metadata = metadata
        self.raw = strip_recall_context(source.raw)
        if kind == EVENT_USER_INPUT:  # the prompt's half carries the prompt only
            self.assistant = ""
            self.messages: list[HookMessage] = []
        else:
            self.assistant = strip_recall_context(source.assistant)
            messages = [
                HookMessage(m.role, strip_recall_context(m.text), m.source)
                for m in drop_recall_tool_exchanges(source.messages)
            ]
            self.messages = [m for m in messages if m.text]


class _Plan:
    """One ``(agent, event)``'s write settings, label and compiled template, for a whole run."""

    def __init__(self, settings: HookSettings, label: str) -> None:
        from paxm_core.passive.templates import compile_template

        self.write = settings.write
        self.label = label
        template = (self.write.template if self.write is not None else "") or _DEFAULT_TEMPLATE
        self.template = template
        # the default template renders ``safe_text`` as it is (then trimmed): no template data
        self.plain = compile_template(template) == compile_template(_DEFAULT_TEMPLATE)

    def text(self, clean: _Clean) -> str:
        """``render_template(template, template_data(clean, label))``."""
        from paxm_core.passive.compose import safe_text, template_data
        from paxm_core.passive.templates import render_template

        if self.plain:
            return safe_text(clean, self.label).strip()  # type: ignore[arg-type]
        return render_template(self.template, template_data(clean, self.label))  # type: ignore[arg-type]


_DEFAULT_TEMPLATE = "{{ .safe_text }}"
