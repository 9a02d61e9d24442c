"""The passive runtime: one normalized hook event in, one :class:`HookResult` out.

Order per event (upstream's, so behaviour matches): ownership gate, first-input marking,
session activity, durable write, then -- for ``user_input`` only -- recall under an enforced
budget and the insertion filter.  Every failure is recorded on the result and never raised:
a hook must always answer.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from paxm_core.api.deadline import Deadline
from paxm_core.api.errors import RecallError
from paxm_core.api.events import (
    EVENT_PRE_TOOL,
    EVENT_SESSION_START,
    EVENT_TURN_END,
    EVENT_USER_INPUT,
    RECALL_PHASE_INITIAL,
    RECALL_PHASE_KEY,
    HookEvent,
    HookResult,
)
from paxm_core.api.integration import Integration
from paxm_core.envelope import strip_recall_context
from paxm_core.hit_notes import passive_hits
from paxm_core.passive.compose import PassiveWrite, compose_write, template_data
from paxm_core.passive.context import identity_block, local_time_block, passive_recall_block
from paxm_core.passive.economy import SessionEconomy, emit
from paxm_core.passive.insertion import filter_insertion_hits
from paxm_core.passive.integration import resolve_integration
from paxm_core.passive.policy import HookSettings, resolve_hook_settings
from paxm_core.passive.query import bounded_query
from paxm_core.passive.session_state import SessionState
from paxm_core.passive.templates import render_template
from paxm_core.passive.workers import Workers

if TYPE_CHECKING:
    from paxm_core.api.types import MemoryHit
    from paxm_core.config.model import Config
    from paxm_core.passive.point_of_action import SeenMemories
    from paxm_core.plugins import PaxmPluginManager
    from paxm_core.router.policy import RecallResult
    from paxm_core.runtime import Runtime
    from paxm_core.tools import Tools

__all__ = ["BudgetedRecall", "PassiveRuntime", "RecallFn", "WriteSink"]

#: ``(query, profile, limit, metadata, workspace, budget_seconds) -> (RecallResult | None, timed_out)``
RecallFn = Callable[[str, str, int, dict[str, str], str, float], "tuple[RecallResult | None, bool]"]
#: durably stores a write; returns after COMMIT (True = buffered, False = duplicate/skipped)
WriteSink = Callable[[PassiveWrite], bool]


class BudgetedRecall:
    """Runs ``Tools.recall`` on a worker thread and stops waiting when the budget is spent.

    The router's own route timeouts and bulkheads bound the abandoned call; the hook answers
    on time regardless, and a call stuck in a provider never holds the process's exit.
    ``runtime_loader`` is called lazily (first recall).
    """

    def __init__(self, runtime_loader: Callable[[], Runtime]) -> None:
        self._loader = runtime_loader
        self._tools: Tools | None = None
        self._workers = Workers("paxm-passive-recall")

    def __call__(
        self, query: str, profile: str, limit: int, metadata: dict[str, str], workspace: str, budget: float
    ) -> tuple[RecallResult | None, bool]:
        started = time.monotonic()
        if self._tools is None:
            # The passive runtime reports hook recalls itself (kind "hook_recall", inserted hits);
            # the runtime's Tools would also log each one as an active recall.
            loaded = self._loader().tools
            try:
                self._tools = type(loaded)(loaded.config, loaded.router)
            except Exception:
                self._tools = loaded
        tools = self._tools
        remaining = max(0.0, budget - (time.monotonic() - started))
        done: list[RecallResult | BaseException] = []
        finished = threading.Event()

        def run() -> None:
            try:
                done.append(
                    tools.recall(
                        query,
                        profile=profile,
                        limit=limit or None,
                        metadata=metadata,
                        workspace=workspace or None,
                        deadline=Deadline.after(remaining),
                        source="hook",
                        command="hook",
                    )
                )
            except BaseException as exc:  # handed to the waiting hook below
                done.append(exc)
            finished.set()

        self._workers.run(run)
        # the deadline makes providers stop; the extra 50 ms only lets a partial result
        # come back instead of nothing, and is still inside the client's own ceiling
        finished.wait(remaining + 0.05)
        if not done:
            return None, True
        outcome = done[0]
        if isinstance(outcome, RecallError) and outcome.result is not None:
            # A required provider failed or ran out of time.  The prompt still gets what the
            # healthy providers found (as upstream does); the failure is in provider_errors.
            return outcome.result, bool(getattr(outcome.result, "timed_out", False))
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome, False


class PassiveRuntime:
    """Applies hook policy from ``config`` to events.

    :param config: a loaded :class:`~paxm_core.config.Config`.
    :param recall: the budgeted recall function (``None`` disables recall).
    :param sink: durable write sink (``None`` disables writes).
    :param session_state: first-input/local-time state (``None`` disables both).
    :param plugin_manager: used to find harness integrations by target.
    :param record: telemetry sink (``Telemetry.record``), optional.
    :param on_recall: ``Telemetry.on_recall`` (rich ``hook_recall`` events with provider
        details); when given, recalls are reported through it instead of ``record``.
    :param clock: returns the current aware local time (tests inject one).
    :param economy: per-session dedupe, compaction re-offer, holdback and receipts (optional).
    """

    def __init__(
        self,
        config: Config,
        *,
        recall: RecallFn | None = None,
        sink: WriteSink | None = None,
        session_state: SessionState | None = None,
        plugin_manager: PaxmPluginManager | None = None,
        record: Callable[[dict[str, object]], None] | None = None,
        on_recall: Callable[..., None] | None = None,
        clock: Callable[[], datetime] | None = None,
        economy: SessionEconomy | None = None,
    ) -> None:
        self.config = config
        self.economy = economy
        self.recall = recall
        self.sink = sink
        self.session_state = session_state
        self.plugin_manager = plugin_manager
        self.record = record
        self.on_recall = on_recall
        self.clock = clock or (lambda: datetime.now().astimezone())
        self._integrations: dict[str, Integration] = {}
        self._seen_at_tools: SeenMemories | None = None  # made at the first pre-tool event

    def integration(self, target: str) -> Integration:
        """The (cached) integration for ``target``."""
        if target not in self._integrations:
            self._integrations[target] = resolve_integration(target, self.plugin_manager)
        return self._integrations[target]

    def label(self, target: str) -> str:
        """How ``target`` is named in stored text: its integration's ``label`` (the target name if none)."""
        try:
            label = self.integration(target).label
        except Exception:  # a broken plugin property must not lose the write
            label = ""
        return label if isinstance(label, str) and label.strip() else target

    def decode(
        self, target: str, native_event: str, raw: bytes, *, event_id: str = "", captured_at: float = 0.0
    ) -> HookEvent:
        """Decode through the target's integration; a failing plugin falls back to the generic decoder.

        Credentials and ``<private>`` text never get past decoding (nothing queued, nothing stored).
        """
        from paxm_core.api.events import HookMessage
        from paxm_core.passive._redact import compile_extra, redact
        from paxm_core.passive.decode import decode_generic
        from paxm_core.workspace import workspace_mode

        mode = self.config.workspace.effective_mode
        with workspace_mode(mode):  # integrations resolve the payload's cwd under the config's mode
            try:
                event: object = self.integration(target).decode(native_event, raw)
            except Exception:  # fail open: a plugin bug must not lose the event
                event = None
            if not isinstance(event, HookEvent):
                event = decode_generic(raw, target, native_event)
        event.event_id = event_id or event.event_id
        event.captured_at = captured_at or event.captured_at or time.time()
        extra = compile_extra(self.config.privacy.redact_patterns)
        event.prompt = redact(event.prompt, extra)
        event.assistant = redact(event.assistant, extra)
        event.query = redact(event.query, extra)
        event.raw = redact(event.raw, extra)
        event.messages = [HookMessage(m.role, redact(m.text, extra), m.source) for m in event.messages]
        event.metadata = {key: redact(value, extra) for key, value in event.metadata.items()}
        return event

    def hook_output(self, result: HookResult, mode: str = "text") -> str:
        """The harness's stdout for ``result``: its integration's ``hook_output`` (generic on error)."""
        from paxm_core.passive.integration import GenericIntegration

        try:
            text = self.integration(result.target).hook_output(result, mode)
            return text if isinstance(text, str) else ""
        except Exception:
            return GenericIntegration(result.target).hook_output(result, mode)

    # -- policy --------------------------------------------------------------------------------

    def handle(self, event: HookEvent, *, owner: str = "") -> HookResult:
        """Apply ownership, session state, write and recall policy to ``event``."""
        result = HookResult(target=event.target, event=event.event, event_id=event.event_id)
        settings = self._hook_settings(event.target, event.event)
        if not settings.accepts(owner) or self._kept_out(event):
            result.ignored = True
            return result
        now = self.clock()
        refresh = False
        if self.session_state is not None:
            try:
                if settings.initial_enabled and self.session_state.mark_initial(event, now):
                    event.metadata[RECALL_PHASE_KEY] = RECALL_PHASE_INITIAL
                refresh = self.session_state.observe(event, now)
            except OSError as exc:
                result.errors.append(f"session state skipped: {exc}")
        result.initial = event.metadata.get(RECALL_PHASE_KEY) == RECALL_PHASE_INITIAL
        if event.event == EVENT_PRE_TOOL:  # context only, nothing written (docs/freshness.md)
            from paxm_core.passive.point_of_action import SeenMemories, inject_at_point_of_action

            if self._seen_at_tools is None:
                self._seen_at_tools = SeenMemories()
            inject_at_point_of_action(self.config, self.recall, self._seen_at_tools, event, result, settings)
            return result
        if event.event == EVENT_USER_INPUT:
            # The prompt's write (a queue COMMIT) and its recall (provider queries) do not depend
            # on each other: the write goes to the capture queue, which recall never reads.  Both
            # spend their time in SQLite with the GIL released, so they run side by side; the
            # write has committed before the answer leaves, as it always had.
            writer = self._start_write(event, result, settings)
            try:
                if result.initial:
                    result.bootstrap_context = self._session_blocks(event, settings, now)
                if refresh:
                    result.local_time_context = local_time_block(now)
                self._recall(event, result, settings)
            finally:
                if writer is not None:
                    writer.join()
            return result
        self._write(event, result, settings)
        if event.event == EVENT_SESSION_START:
            result.session_context = self._session_blocks(event, settings, now)
        if self.economy is not None:
            result.recall_context = self._economy_context(event, now)
        return result

    def _economy_context(self, event: HookEvent, now: datetime) -> str:
        """After a compaction, the session's still-relevant memories once more (see economy.py)."""
        from paxm_core.passive.economy import compaction_kind

        assert self.economy is not None
        if event.event == EVENT_SESSION_START:
            self.economy.held_back(event, now)  # the holdback arm is drawn as the session starts
        kind = compaction_kind(event)
        if not kind:
            return ""
        settings = self._hook_settings(event.target, EVENT_USER_INPUT).recall_for(initial=False)
        if kind != "after" or settings is None or self.recall is None:
            self.economy.reset(event, now)  # the model lost what it was given: inject it again (never raises)
            return ""
        recall, limit = self.recall, max(settings.max_results, 1) * 4

        def find(query: str, seconds: float) -> list[MemoryHit]:
            found, _ = recall(query, settings.profile, limit, dict(event.metadata), event.workspace, seconds)
            return list(getattr(found, "hits", []) or [])

        render = functools.partial(passive_recall_block, max_chars=settings.max_chars)
        try:
            return self.economy.reoffer(event, now, find, render, settings.budget)
        except Exception:  # fail open: a session start never fails on the re-offer
            return ""

    def _hook_settings(self, target: str, event: str) -> HookSettings:
        """``agents.<target>.hooks.<event>``, read from the config on every event (a reload counts)."""
        return resolve_hook_settings(self.config, target, event)

    def _start_write(self, event: HookEvent, result: HookResult, settings: HookSettings) -> threading.Thread | None:
        """Run :meth:`_write` on its own thread when a recall will run meanwhile; else run it now."""
        if self.sink is None or settings.write is None or self.recall is None:
            self._write(event, result, settings)
            return None
        writer = threading.Thread(target=self._write, args=(event, result, settings), name="paxm-hook-write")
        try:
            writer.start()
        except RuntimeError:  # no thread to be had (interpreter shutting down): write in line
            self._write(event, result, settings)
            return None
        return writer

    def _kept_out(self, event: HookEvent) -> bool:
        """The project opted out (``.paxm-ignore`` or ``workspace.ignore``): nothing captured or recalled."""
        from paxm_core.workspace import is_ignored

        return is_ignored(event.workspace, list(self.config.workspace.ignore))

    def _session_blocks(self, event: HookEvent, settings: HookSettings, now: datetime) -> str:
        identity = identity_block(self.config.identity.user_id, settings.agent_id, event.metadata.get("session_id", ""))
        return identity + "\n" + local_time_block(now)

    def _write(self, event: HookEvent, result: HookResult, hook: HookSettings) -> None:
        settings = hook.write
        if self.sink is None:
            return
        if settings is None:
            if event.event == EVENT_TURN_END:
                self._end_turn(event, "default", result)
            return
        started = time.monotonic()
        error = ""
        try:
            created = datetime.fromtimestamp(event.captured_at or time.time(), tz=UTC)
            write = compose_write(
                event,
                template=settings.template,
                profile=settings.profile,
                created_at=created,
                label=self.label(event.target),
            )
            if write is not None:
                result.buffered = bool(self.sink(write))
            elif event.event == EVENT_TURN_END:
                self._end_turn(event, settings.profile, result)
        except Exception as exc:  # fail open; the message goes to stderr / telemetry
            error = f"{type(exc).__name__}: {exc}" if not str(exc) else str(exc)
            result.errors.append(f"buffer skipped: {error}")
        emit(
            self.record,
            "hook_write",
            event,
            profile=settings.profile,
            success=not error,
            skipped=bool(error) or not result.buffered,
            duration_ms=int((time.monotonic() - started) * 1000),
            error=error,
        )

    def _end_turn(self, event: HookEvent, profile: str, result: HookResult) -> None:
        """A turn end with nothing to write (a ``Stop`` after a tool call) still ends its turn.

        The sink gets an empty terminal marker: the queue stores it (so a replay is recognised)
        and seals the session's open events, so the next turn never merges into this one.
        """
        assert self.sink is not None
        try:
            self.sink(
                PassiveWrite(
                    event_id=event.event_id,
                    target=event.target,
                    event=event.event,
                    text="",
                    admission_text="",
                    profile=profile or "default",
                    source=f"hook:{event.target}:{event.event}",
                    metadata={**event.metadata, "hook_target": event.target, "hook_event": event.event},
                    workspace=event.workspace,
                    created_at=datetime.fromtimestamp(event.captured_at or time.time(), tz=UTC),
                    terminal=True,
                )
            )
        except Exception as exc:  # fail open, like every write
            result.errors.append(f"turn end skipped: {exc}")

    def _recall(self, event: HookEvent, result: HookResult, hook: HookSettings) -> None:
        settings = hook.recall_for(initial=result.initial)
        if settings is None:
            result.skipped = True
            return
        if self.recall is None:
            return
        if self.economy is not None and self.economy.held_back(event, self.clock()):
            result.skipped = True  # a holdback session: no passive memory (docs/impact.md)
            return
        started = time.monotonic()
        error = ""
        try:
            query = strip_recall_context(event.query)
            if not query:
                query = strip_recall_context(
                    render_template(settings.query_template, template_data(event, self.label(event.target)))
                )
            if not query:
                query = strip_recall_context(event.prompt)
            # a prompt longer than the query limit would be refused whole: recall with its end
            query = bounded_query(query, self.config.limits.query_bytes)
            result.query = query
            if not query:
                result.skipped = True
                return
            recall, timed_out = self.recall(
                query,
                settings.profile,
                event.limit or settings.max_results,
                dict(event.metadata),
                event.workspace,
                settings.budget,
            )
            result.recall_ran = True
            result.timed_out = timed_out or bool(getattr(recall, "timed_out", False))
            result.recall = recall
            hits = list(getattr(recall, "hits", []) or [])
            # freshness and supersession (paxm_core.hit_notes): stale memories demoted, both marked
            chosen, notes = passive_hits(
                hits, self.config, lambda h: filter_insertion_hits(h, query, settings.insertion)
            )
            withheld = 0
            if self.economy is not None:  # what this session was given already is not given again
                kept, withheld = self.economy.unseen(event, chosen)
                kept_ids = {id(hit) for hit in kept}
                notes = [note for hit, note in zip(chosen, notes, strict=True) if id(hit) in kept_ids]
                chosen = kept
            result.hits = chosen
            result.recall_context = passive_recall_block(result.hits, max_chars=settings.max_chars, notes=notes)
            if self.economy is not None:
                self.economy.offered(event, result.hits, result.recall_context, query, withheld=withheld, ranked=hits)
        except Exception as exc:
            error = str(exc) or type(exc).__name__
            result.errors.append(f"recall skipped: {error}")
        finally:
            self._emit_recall(event, result, settings.profile, settings.budget, started, error)

    def _emit_recall(
        self, event: HookEvent, result: HookResult, profile: str, budget: float, started: float, error: str
    ) -> None:
        duration_ms = (time.monotonic() - started) * 1000
        if self.on_recall is not None:
            recall = result.recall
            if recall is not None:
                # upstream reports the hits that were inserted, after the insertion filter
                try:
                    recall = dataclasses.replace(recall, hits=list(result.hits), timed_out=result.timed_out)
                except (TypeError, ValueError):
                    pass
            try:
                self.on_recall(
                    query=result.query,
                    profile=profile,
                    source="hook",
                    command="hook",
                    result=recall,
                    error=error,
                    duration_ms=duration_ms,
                    kind="hook_recall",
                    target=event.target,
                    hook_event=event.event,
                )
            except Exception:  # telemetry never breaks a hook
                pass
            return
        emit(
            self.record,
            "hook_recall",
            event,
            profile=profile,
            success=not error,
            hits=len(getattr(result.recall, "hits", []) or []),
            inserted=len(result.hits),
            timed_out=result.timed_out,
            budget_ms=int(budget * 1000),
            duration_ms=int(duration_ms),
            error=error,
        )
