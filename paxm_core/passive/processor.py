"""Hook request handling: the part of the daemon that is not socket plumbing (shared with
``paxm __hook`` and ``paxm queue flush``)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from paxm_core.api.errors import QueueError
from paxm_core.api.events import HookEvent, HookResult
from paxm_core.api.json import JSONObject
from paxm_core.passive.client_core import new_event_id
from paxm_core.passive.compose import PassiveWrite
from paxm_core.passive.economy import SessionEconomy
from paxm_core.passive.passive import BudgetedRecall, PassiveRuntime
from paxm_core.passive.session_state import SessionState

if TYPE_CHECKING:
    import sqlite3

    from paxm_core.api.types import MemoryItem
    from paxm_core.capture import CaptureQueue
    from paxm_core.capture.model import CaptureEvent, DrainReport, InboxEntry
    from paxm_core.capture.worker import DeliveryWorker
    from paxm_core.runtime import Runtime

__all__ = ["HookProcessor"]


class HookProcessor:
    """Turns hook requests into answers; appends writes to the capture queue (after COMMIT).

    :param runtime: a loaded :class:`~paxm_core.runtime.Runtime`.
    :param queue: the :class:`~paxm_core.capture.CaptureQueue` writes go to.
    :param worker: the delivery worker (the daemon's): woken by :meth:`wake_worker` once the
        answer to an append has been sent, and after a drain.
    :param session_state_path: ``session_state.json`` (``None`` disables session state).
    :param confirm_delivery: the caller reports each answer's delivery (:meth:`delivered`,
        :meth:`undelivered`); otherwise an answer counts as delivered once it is returned.
    """

    def __init__(
        self,
        runtime: Runtime,
        queue: CaptureQueue,
        *,
        worker: DeliveryWorker | None = None,
        session_state_path: Path | None = None,
        session_write_behind: float = 0.0,
        record: Callable[[dict[str, object]], None] | None = None,
        on_recall: Callable[..., None] | None = None,
        clock: Callable[[], datetime] | None = None,
        confirm_delivery: bool = False,
    ) -> None:
        self.runtime = runtime
        self.queue = queue
        self.worker = worker
        self._append_lock = threading.Lock()
        # ids of events whose append failed (the queue file locked past its busy timeout, closed):
        # :meth:`handle_hook` keeps their raw payload in the spool instead of losing them
        self._unstored: set[str] = set()
        # ids of events that must follow spooled events into the spool (see _queue_behind_spool)
        self._behind: set[str] = set()
        # handled events whose session signals are counted once their answer is out (delivered())
        self._observe: dict[str, tuple[HookEvent, HookResult]] = {}
        self._wake_pending = False
        self._reader: sqlite3.Connection | None = None
        # one drain at a time; reentrant because a drain reads through the same connection
        self._drain_lock = threading.RLock()
        self.recall = BudgetedRecall(lambda: runtime)
        state = SessionState(session_state_path, write_behind=session_write_behind) if session_state_path else None
        #: the daemon confirms an answer's delivery itself (:meth:`delivered`) once it is sent
        self.confirm_delivery = confirm_delivery
        self.passive = PassiveRuntime(
            runtime.config,
            recall=self.recall,
            sink=self.append,
            session_state=state,
            plugin_manager=runtime.plugin_manager,
            record=record,
            on_recall=on_recall,
            clock=clock,
            economy=SessionEconomy(state, lambda: self.passive.config.passive, record=record) if state else None,
        )

    def capture_event(self, write: PassiveWrite) -> CaptureEvent:
        """Build the queue's ``CaptureEvent`` for ``write`` (tier, expiry, scope from its profile)."""
        from paxm_core.capture import CaptureEvent, session_key_for

        created = write.created_at or datetime.now(UTC)
        key = session_key_for(
            write.target,
            workspace=write.workspace,
            session_id=write.metadata.get("session_id", ""),
            transcript_path=write.metadata.get("transcript_path", ""),
            event_id=write.event_id,
        )
        truncated = 0
        if write.terminal and not write.text.strip():
            # a turn-end marker only seals its turn: there is no text for the write pipeline
            from paxm_core.api.types import MemoryItem
            from paxm_core.tools import caller_metadata

            metadata = caller_metadata(write.metadata)
            if write.workspace.strip():
                metadata["workspace"] = write.workspace.strip()
            item = MemoryItem(text="", source=write.source, metadata=metadata, created_at=created)
        else:
            item, truncated = self._build_item(write, created)
        return CaptureEvent(
            event_id=write.event_id or new_event_id(),
            session_key=key,
            item=item,
            profile=write.profile,
            terminal=write.terminal,
            captured_at=created,
            truncated_bytes=truncated,
        )

    def _build_item(self, write: PassiveWrite, created: datetime) -> tuple[MemoryItem, int]:
        """The event's item and the bytes cut from its text (an oversized turn is kept, cut, never dropped)."""
        from paxm_core.capture.truncate import truncate_text

        tools = self.runtime.tools
        text, truncated = truncate_text(write.text, tools.config.limits.text_bytes)
        policy = tools.put_policy(write.profile)
        from paxm_core.attribution import expires_at_for

        expires_at = expires_at_for(created, policy.expires_after)
        item, _ = tools.build_item(
            text,
            profile=write.profile,
            source=write.source,
            metadata=write.metadata,
            # ``workspace`` is reserved caller metadata, dropped by build_item: the decoded
            # event's workspace is trusted context, so it goes through the trusted argument
            # (else every passive memory, and every episode sealed from them, is unscoped)
            workspace=write.workspace,
            agent_name=write.target,
            created_at=created,
            tier=policy.tier or "",
            expires_at=expires_at,
            admission_text=write.admission_text,
        )
        # code anchors (docs/freshness.md): paths resolve from the harness's cwd, else the workspace
        item = tools.anchored(item, write.metadata.get("cwd", "") or write.workspace)
        return item, truncated

    def append(self, write: PassiveWrite) -> bool:
        """Durably append ``write`` (returns after COMMIT); the worker is woken by :meth:`wake_worker`."""
        event = self.capture_event(write)
        if self._already_queued(event.event_id):
            # the client stored this event in the inbox while the daemon was starting, then
            # asked again for its context: the stored copy (already queued) wins
            return True
        try:
            with self._append_lock:
                if event.event_id in self._behind:
                    raise QueueError(f"capture event {event.event_id} waits behind spooled events")
                result = self.queue.append(event)
        except QueueError:
            with self._append_lock:
                self._unstored.add(event.event_id)
            raise
        self._wake_pending = self.worker is not None
        return not getattr(result, "duplicate", False)

    def flush_state_due(self) -> None:
        """Write session state held in memory once it is due (see :meth:`SessionState.flush_due`)."""
        if self.passive.session_state is not None:
            self.passive.session_state.flush_due()

    def wake_worker(self) -> None:
        """Wake the delivery worker if an append is waiting for it."""
        if self._wake_pending and self.worker is not None:
            self._wake_pending = False
            self.worker.notify()

    def handle_hook(self, request: Mapping[str, object]) -> JSONObject:
        """Answer one hook request (never raises)."""
        event_id = str(request.get("event_id") or "") or new_event_id()
        try:
            # Events a client stored in the inbox (daemon down or starting) happened before
            # this one: queue them first so a session's events keep their order.
            if self._inbox_pending():
                try:
                    self.drain_inbox()
                except QueueError as exc:
                    self._queue_behind_spool(event_id, exc)
            raw = request.get("raw")
            if isinstance(raw, str):
                payload = raw.encode("utf-8", "replace")
            elif raw is None:
                payload = b""
            else:
                payload = json.dumps(raw).encode()
            captured = request.get("captured_at")
            name = str(request.get("event") or "user_input")
            event = self.passive.decode(
                str(request.get("target") or ""),
                name,
                payload,
                event_id=event_id,
                captured_at=float(captured) if isinstance(captured, (int, float)) else time.time(),
            )
            owner = str(request.get("owner") or "")
            result = self.passive.handle(event, owner=owner)
            if self.passive.economy is not None:  # counted for paxm impact once the answer is out
                with self._append_lock:
                    self._observe[event_id] = (event, result)
                    while len(self._observe) > 256:
                        self._observe.pop(next(iter(self._observe)))
            self._spool_unstored(event, name, owner, payload, result.errors)
            output = self.passive.hook_output(result, str(request.get("mode") or "text"))
        except Exception as exc:  # fail open
            return {"ok": False, "output": "", "event_id": event_id, "error": str(exc) or type(exc).__name__}
        response: JSONObject = {"ok": True, "output": output, "buffered": result.buffered, "event_id": event_id}
        if not self.confirm_delivery:
            self.delivered(event_id)
            self.count_signals(event_id)
        if result.ignored:
            response["ignored"] = True
        if result.errors:
            response["errors"] = result.errors
        return response

    def delivered(self, event_id: str) -> None:
        """The answer to ``event_id`` reached its client: its memories count as given to the session
        (its session signals are counted by :meth:`count_signals`)."""
        economy = self.passive.economy
        if economy is not None:
            economy.delivered(event_id, self.passive.clock())

    def undelivered(self, event_id: str) -> None:
        """The answer to ``event_id`` never reached its client: its memories stay ungiven."""
        economy = self.passive.economy
        if economy is not None:
            economy.forget(event_id)
            self.count_signals(event_id)

    def count_signals(self, event_id: str) -> None:
        """Report the session signals of a handled event once (turns, tool calls, corrections: ``paxm impact``)."""
        with self._append_lock:
            observed = self._observe.pop(event_id, None)
        economy = self.passive.economy
        if observed is not None and economy is not None:
            try:
                economy.observe(*observed, self.passive.clock())
            except Exception:  # telemetry never breaks a hook
                pass

    def _queue_behind_spool(self, event_id: str, error: QueueError) -> None:
        """After a drain failed on the queue's lock, send this request's event to the spool too,
        behind the spooled events that happened before it (so it cannot overtake them)."""
        text = str(error).lower()
        if ("locked" in text or "busy" in text) and self.queue.spool_pending():
            with self._append_lock:
                self._behind.add(event_id)

    def _spool_unstored(self, event: HookEvent, name: str, owner: str, payload: bytes, errors: list[str]) -> None:
        """Keep the raw payload of an event whose append failed in the spool (imported on the next drain)."""
        with self._append_lock:
            self._behind.discard(event.event_id)
            if event.event_id not in self._unstored:
                return
            self._unstored.discard(event.event_id)
        from paxm_core.capture import _spool
        from paxm_core.passive._redact import redact_bytes

        # the inbox's form: a plugin caller's owner rides on the event name (see the client)
        name = f"{name}@{owner}" if owner.strip() else name
        captured = event.captured_at or time.time()
        try:
            _spool.append_record(self.queue.path, event.event_id, event.target, name, redact_bytes(payload), captured)
        except (OSError, ValueError) as exc:
            errors.append(f"event not spooled: {exc}")

    def _render_inbox_entry(self, entry: InboxEntry) -> list[CaptureEvent]:
        """A raw inbox entry's capture events, those not queued already (``CaptureQueue.drain_inbox`` callback).

        Only the write half runs: no recall, and no session state, so a replay renders as the first attempt did.
        """
        name, _, owner = str(entry.event).partition("@")
        event = self.passive.decode(
            entry.target, name, bytes(entry.raw), event_id=entry.event_id, captured_at=entry.received_at.timestamp()
        )
        writes: list[PassiveWrite] = []

        def collect(write: PassiveWrite) -> bool:
            writes.append(write)
            return True

        replay = PassiveRuntime(self.passive.config, sink=collect, plugin_manager=self.passive.plugin_manager)
        result = replay.handle(event, owner=owner)
        if result.errors:
            raise QueueError("; ".join(result.errors))
        events = [self.capture_event(w) for w in writes]
        return [e for e in events if not self._already_queued(e.event_id)]

    def _read(self, sql: str, args: tuple[str, ...] = ()) -> tuple[object, ...] | None:
        # the queue schema is the documented contract with the capture package
        if self._reader is None:
            from paxm_core.capture import _inbox

            self._reader = _inbox.connect(self.queue.path)
        row: tuple[object, ...] | None = self._reader.execute(sql, args).fetchone()
        return row

    def _inbox_pending(self) -> bool:
        if self.queue.spool_pending():
            return True
        try:
            with self._drain_lock:
                return self._read("SELECT 1 FROM capture_inbox WHERE state = 'pending' LIMIT 1") is not None
        except Exception:
            return False

    def _already_queued(self, event_id: str) -> bool:
        # a daemon may have queued this event before it died unanswered (the client kept a copy
        # in the inbox): the queued one wins instead of raising a conflict
        try:
            return self._read("SELECT 1 FROM capture_events WHERE event_id = ?", (event_id,)) is not None
        except Exception:
            return False

    def drain_inbox(self) -> DrainReport:
        """Drain raw inbox entries into the queue (skipping events already queued)."""
        with self._drain_lock:
            try:
                report = self.queue.drain_inbox(self._render_inbox_entry)
            finally:
                if self.worker is None:
                    # one-shot users (paxm queue flush, paxm __hook) may never call close()
                    self._close_reader()
        if self.worker is not None and getattr(report, "events", None):
            self.worker.notify()
        return report

    def close(self) -> None:
        """Write session state, close the read connection."""
        if self.passive.session_state is not None:
            self.passive.session_state.close()
        self._close_reader()

    def _close_reader(self) -> None:
        with self._drain_lock:
            if self._reader is not None:
                self._reader.close()
                self._reader = None
