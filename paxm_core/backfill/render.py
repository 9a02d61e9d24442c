"""A past turn -> the capture events a live hook would have appended for it.

A live turn is two hook events: ``user_input`` (the prompt) and ``turn_end`` (the answer and
the turn's messages; terminal, it seals the episode).  :meth:`TurnRenderer.render` replays
both through the live :class:`~paxm_core.passive.passive.PassiveRuntime` write path, with what
does not change during a run (the workspace opt-out, hook settings, put policies) looked up
once per run.

Event ids are derived from the turn's stable id, so a re-run appends exact duplicates
(ignored by the queue).
"""

from __future__ import annotations

import copy
import functools
import hashlib
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from paxm_core.api.integration import PastTurn

if TYPE_CHECKING:
    from paxm_core.api.events import HookEvent
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

    def _collect(self, write: PassiveWrite) -> bool:
        self._writes.append(write)
        return True

    def close(self) -> None:
        """Release the processor's resources."""
        self._processor.close()

    def render(self, turn: PastTurn) -> tuple[list[CaptureEvent], str]:
        """``(capture events, fingerprint of the user_input write, else of the turn_end write)`` for ``turn``."""
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
