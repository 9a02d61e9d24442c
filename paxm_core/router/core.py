"""The router: fan-out to providers, merge recalls, and write through every route."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import TypeVar

from paxm_core.deadline import Deadline
from paxm_core.errors import (
    ConfigError,
    DeadlineExceeded,
    PaxmError,
    ProviderError,
    RecallError,
    UsageError,
    WriteError,
)
from paxm_core.protocols import (
    CAP_CLEANUP_EXPIRED,
    CAP_CLOSE,
    CAP_PUT_BATCH,
    Provider,
    SupportsCleanupExpired,
    SupportsClose,
    SupportsPutBatch,
    capabilities_of,
)
from paxm_core.router import ranking
from paxm_core.router.admission import admit
from paxm_core.router.attribution import (
    META_SEQUENCE,
    effective_expires_at,
    effective_tier,
    prepare_item,
    restore_hit,
    without_attribution,
)
from paxm_core.router.bulkhead import Call, Lane, LaneBusy
from paxm_core.router.policy import PutPolicy, RecallResult, RememberResult, Route, SearchPolicy, candidate_limit
from paxm_core.session_sequence import MemorySequenceAllocator, SequenceAllocator
from paxm_core.timefmt import utcnow
from paxm_core.types import (
    MemoryHit,
    MemoryItem,
    MemoryRef,
    ProviderErrorInfo,
    ProviderHealth,
    ProviderRecall,
    SearchQuery,
)

__all__ = ["Router"]

T = TypeVar("T")

#: How long maintenance calls (health, cleanup, close) may take per provider by default.
MAINTENANCE_TIMEOUT = 30.0
#: How long ``close()`` waits for one provider to close.
CLOSE_TIMEOUT = 2.0
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(slots=True)
class _Outcome:
    """What one provider call produced (value or error), with timing and bulkhead state."""

    route: Route
    value: object = None
    error: BaseException | None = None
    timed_out: bool = False
    busy: bool = False
    duration_ms: int = 0


@dataclass(slots=True)
class _Pending:
    route: Route
    deadline: Deadline
    dispatched: float
    call: Call[object] | None = None
    outcome: _Outcome | None = None
    deferred: Callable[[], object] | None = field(default=None, repr=False)


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, ProviderError):
        return exc.detail
    text = str(exc)
    return text if text else type(exc).__name__


def _ms(seconds: float | None) -> int:
    return 0 if seconds is None else int(seconds * 1000)


def _aware(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


class Router:
    """Routes recalls and writes across provider instances.

    :param providers: instance name -> provider (built by the runtime from config).
    :param required: names required by any profile; used when a policy names no routes and
        for health reporting.
    :param sequence_allocator: persistent session-sequence allocator (see
        :mod:`paxm_core.session_sequence`); an in-memory one is used when omitted.
    :param clock: returns "now" as an aware UTC datetime (tests pin it).
    """

    def __init__(
        self,
        providers: Mapping[str, Provider],
        required: Iterable[str] = (),
        *,
        sequence_allocator: SequenceAllocator | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        for name in providers:
            if not name.strip():
                raise ConfigError("memory router: a provider has an empty name")
        self._providers = dict(sorted(providers.items()))
        self._required = frozenset(required)
        self._sequences: SequenceAllocator = sequence_allocator or MemorySequenceAllocator()
        self._sequence_lock = threading.Lock()
        self._clock = clock or utcnow
        self._lanes: dict[tuple[str, str], Lane] = {}
        self._lanes_lock = threading.Lock()
        self._capabilities: dict[str, frozenset[str]] = {}
        self._closed = False

    # -- introspection -------------------------------------------------------------------

    @property
    def providers(self) -> dict[str, Provider]:
        """The providers by instance name (a copy)."""
        return dict(self._providers)

    @property
    def required(self) -> frozenset[str]:
        return self._required

    def capabilities(self, name: str) -> frozenset[str]:
        """Capability names of provider ``name`` (cached; see :func:`capabilities_of`)."""
        if name not in self._capabilities:
            self._capabilities[name] = capabilities_of(self._providers[name])
        return self._capabilities[name]

    def preserves_turn_boundaries(self, name: str) -> bool:
        """Whether provider ``name`` stores a whole captured turn as one memory."""
        from paxm_core.protocols import CAP_TURN_BOUNDARIES

        return name in self._providers and CAP_TURN_BOUNDARIES in self.capabilities(name)

    def _lane(self, name: str, op: str) -> Lane:
        key = (name, op)
        lane = self._lanes.get(key)
        if lane is None:
            with self._lanes_lock:
                lane = self._lanes.get(key)
                if lane is None:
                    lane = Lane(f"{name}-{op}")
                    self._lanes[key] = lane
        return lane

    def _resolve(self, routes: Sequence[Route], op: str) -> list[Route]:
        if self._closed:
            raise PaxmError("memory router is closed")
        if not routes:
            return [Route(name, required=name in self._required) for name in self._providers]
        resolved: list[Route] = []
        seen: set[str] = set()
        for route in routes:
            name = route.name.strip()
            if not name or name in seen:
                continue  # a provider listed twice would queue behind its own bulkhead
            if name not in self._providers:
                enabled = ", ".join(self._providers) or "none"
                raise ConfigError(
                    f"provider {name!r} in {op} policy is not enabled "
                    f"(enabled providers: {enabled}); enable it under providers.{name} or remove it from the profile"
                )
            seen.add(name)
            resolved.append(route)
        return resolved

    # -- the fan-out engine --------------------------------------------------------------

    def _fan_out(
        self, op: str, routes: list[Route], overall: Deadline, work: Callable[[Route, Deadline], object]
    ) -> list[_Outcome]:
        """Run ``work`` for every route concurrently, each under its lane and deadline.

        Free lanes are dispatched first without waiting, so a busy provider never delays
        the others; busy lanes are then waited for within their own deadlines.
        """
        pending: list[_Pending] = []
        inline: _Pending | None = None
        for route in routes:
            # a zero or negative route timeout means "none", as upstream
            deadline = overall.child(route.timeout if route.timeout and route.timeout > 0 else None)
            item = _Pending(route, deadline, time.monotonic())
            pending.append(item)
            if deadline.expired():
                item.outcome = _Outcome(route, error=DeadlineExceeded(f"{op} deadline exceeded"), timed_out=True)
                continue
            fn = self._bind(work, route, deadline)
            if deadline.at is None and inline is None:
                # No time limit: the caller would wait for this provider anyway, so it runs
                # on the calling thread once the others are dispatched (saves a hand-off).
                inline = item
                item.deferred = fn
                continue
            try:
                item.call = self._lane(route.name, op).submit(fn, wait=0)
            except LaneBusy:
                item.deferred = fn
        busy = [item for item in pending if item.deferred is not None and item is not inline]
        if inline is not None and inline.deferred is not None:
            lane = self._lane(inline.route.name, op)
            if busy:
                # Busy lanes still need waiting for within their deadlines; running the
                # unlimited route here first could let those deadlines lapse unobserved.
                try:
                    inline.call = lane.submit(inline.deferred, wait=0)
                    inline.deferred = None
                except LaneBusy:
                    busy.append(inline)  # unlimited: waited for last
            else:
                try:
                    inline.call = lane.run_inline(inline.deferred, wait=None)
                except RuntimeError as exc:
                    inline.outcome = _Outcome(inline.route, error=PaxmError(str(exc)))
                inline.deferred = None
        # Earliest deadline first, unlimited last, so one wait never eats another's budget.
        busy.sort(key=lambda item: math.inf if item.deadline.at is None else item.deadline.at)
        for item in busy:
            assert item.deferred is not None
            try:
                item.call = self._lane(item.route.name, op).submit(item.deferred, wait=item.deadline.timeout())
            except LaneBusy:
                item.outcome = _Outcome(
                    item.route,
                    error=DeadlineExceeded(f"bulkhead busy: an earlier {op} on this provider has not returned"),
                    timed_out=True,
                    busy=True,
                    duration_ms=_ms(time.monotonic() - item.dispatched),
                )
            except RuntimeError as exc:
                item.outcome = _Outcome(item.route, error=PaxmError(str(exc)))
            item.deferred = None
        outcomes: list[_Outcome] = []
        for item in pending:
            if item.outcome is None:
                item.outcome = self._await(op, item)
            outcomes.append(item.outcome)
        return outcomes

    @staticmethod
    def _bind(work: Callable[[Route, Deadline], object], route: Route, deadline: Deadline) -> Callable[[], object]:
        return lambda: work(route, deadline)

    @staticmethod
    def _await(op: str, item: _Pending) -> _Outcome:
        assert item.call is not None
        try:
            value = item.call.wait(item.deadline.timeout())
        except TimeoutError:
            item.deadline.cancel()  # cooperative providers stop early; the slot stays held until they do
            limit = item.route.timeout
            detail = f"{op} timed out after {_ms(limit)}ms" if limit else f"{op} deadline exceeded"
            return _Outcome(
                item.route,
                error=DeadlineExceeded(detail),
                timed_out=True,
                duration_ms=_ms(time.monotonic() - item.dispatched),
            )
        except Exception as exc:
            return _Outcome(
                item.route,
                error=exc,
                timed_out=isinstance(exc, DeadlineExceeded),
                duration_ms=_ms(time.monotonic() - item.dispatched),
            )
        return _Outcome(item.route, value=value, duration_ms=_ms(time.monotonic() - item.dispatched))

    # -- search --------------------------------------------------------------------------

    def search(self, query: SearchQuery, policy: SearchPolicy, deadline: Deadline | None = None) -> RecallResult:
        """Recall from every route of ``policy`` and merge the hits.

        Raises :class:`~paxm_core.errors.RecallError` (carrying the partial result) when a
        required provider fails or times out; best-effort failures land in ``provider_errors``.
        """
        routes = self._resolve(policy.routes, "search")
        if not routes:
            raise ConfigError("no readable memory providers are enabled")
        overall = deadline or Deadline.none()
        result_limit = policy.limit if policy.limit > 0 else query.limit
        tiers = _normalized_tiers(policy.tiers)
        provider_query = query.replace(
            limit=candidate_limit(result_limit),
            tiers=tiers or query.tiers,
            metadata=without_attribution(query.metadata),
        )
        outcomes = self._fan_out("search", routes, overall, self._search_work(provider_query))
        now = _aware(self._clock())
        result = RecallResult(query=query.text)
        failures: list[str] = []
        merged: list[MemoryHit] = []
        for outcome in outcomes:
            name = outcome.route.name
            hits = outcome.value if outcome.error is None else []
            assert isinstance(hits, list)
            eligible = _eligible(name, hits, outcome.route, policy, tiers, now) if hits else []
            result.provider_recalls.append(
                ProviderRecall(
                    provider=name,
                    duration_ms=outcome.duration_ms,
                    outcome="success" if outcome.error is None else ("timeout" if outcome.timed_out else "error"),
                    timeout_ms=_ms(outcome.route.timeout),
                    bulkhead_busy=outcome.busy,
                    candidate_count=len(hits),
                    eligible_count=len(eligible),
                    raw_score_kinds=tuple(sorted({h.raw_score_kind.strip() for h in hits if h.raw_score_kind.strip()})),
                )
            )
            if outcome.error is not None:
                text = _error_text(outcome.error)
                result.provider_errors.append(ProviderErrorInfo(name, outcome.route.required, "search", text))
                if outcome.route.required:
                    failures.append(f"{name}: {text}")
                continue
            merged.extend(eligible)
        result.provider_recalls.sort(key=lambda r: r.provider)
        hits = ranking.dedupe(merged)
        ranking.sort_hits(hits)
        if result_limit > 0:
            del hits[result_limit:]
        result.hits = hits
        result.timed_out = deadline is not None and overall.expired() and any(o.timed_out for o in outcomes)
        if failures:
            raise RecallError("recall failed: " + "; ".join(failures), result)
        return result

    def _search_work(self, query: SearchQuery) -> Callable[[Route, Deadline], object]:
        def work(route: Route, deadline: Deadline) -> object:
            hits = self._providers[route.name].search(query, deadline)
            if not isinstance(hits, list) or not all(isinstance(h, MemoryHit) for h in hits):
                raise ProviderError(route.name, "search", f"returned {type(hits).__name__}, not a list of MemoryHit")
            return hits

        return work

    # -- put -----------------------------------------------------------------------------

    def put(self, items: Sequence[MemoryItem], policy: PutPolicy, deadline: Deadline | None = None) -> RememberResult:
        """Write ``items`` to every route of ``policy`` concurrently.

        Applies the write policy (tier, expiry, scope), syncs attribution into canonical
        metadata, admits LTM items by fingerprint and allocates session sequences before any
        provider sees them.  Raises :class:`~paxm_core.errors.WriteError` (carrying the
        partial result) when a required provider fails.
        """
        routes = self._resolve(policy.routes, "put")
        if not routes:
            raise ConfigError("no writable memory providers are enabled")
        if not items:
            return RememberResult()
        prepared = self.prepare_items(items, policy)
        outcomes = self._fan_out("put", routes, deadline or Deadline.none(), self._put_work(prepared))
        result = RememberResult()
        failures: list[str] = []
        for outcome in outcomes:
            name = outcome.route.name
            if outcome.error is not None:
                text = _error_text(outcome.error)
                result.provider_errors.append(ProviderErrorInfo(name, outcome.route.required, "put", text))
                if outcome.route.required:
                    failures.append(f"{name}: {text}")
                continue
            refs = outcome.value
            assert isinstance(refs, list)
            result.refs.extend(MemoryRef(name, ref.id) for ref in refs)
        result.refs.sort(key=lambda r: r.provider)  # stable: each provider's refs stay in item order
        if failures:
            raise WriteError("write failed: " + "; ".join(failures), result)
        return result

    def put_to_provider(
        self, provider: str, items: Sequence[MemoryItem], timeout: float | None, *, policy: PutPolicy | None = None
    ) -> list[MemoryRef]:
        """Write ``items`` to one provider through the same pipeline, as a required route.

        Used by the capture-queue delivery worker.  ``policy`` supplies tier/expiry/scope
        (its routes are ignored).  Raises :class:`~paxm_core.errors.WriteError` on failure.
        """
        route = Route(provider, required=True, timeout=timeout)
        base = policy or PutPolicy()
        result = self.put(items, PutPolicy([route], base.tier, base.expires_after, base.scope))
        return result.refs

    def prepare_items(self, items: Sequence[MemoryItem], policy: PutPolicy) -> list[MemoryItem]:
        """The exact items providers receive for a write under ``policy`` (allocates sequences)."""
        now = _aware(self._clock())
        default_scope = policy.scope if not policy.scope.is_empty() else None
        prepared: list[MemoryItem] = []
        for item in items:
            if not isinstance(item, MemoryItem):
                raise UsageError(f"cannot write {type(item).__name__}; expected MemoryItem")
            if not item.text.strip():
                raise UsageError("memory text is required")
            changes: dict[str, object] = {}
            if policy.tier and not item.tier:
                changes["tier"] = _normalize_tier(policy.tier)
            if policy.expires_after and policy.expires_after > 0 and item.expires_at is None:
                base = _aware(item.created_at) if item.created_at is not None else now
                changes["expires_at"] = base + _seconds(policy.expires_after)
            if changes:
                item = item.replace(**changes)
            item = admit(prepare_item(item, default_scope), now)
            prepared.append(item)
        self._assign_sequences(prepared, now)
        return prepared

    def _assign_sequences(self, items: list[MemoryItem], now: datetime) -> None:
        with self._sequence_lock:
            for index, item in enumerate(items):
                session = item.origin.session_id.strip()
                if not session or (item.metadata.get(META_SEQUENCE) or "").strip():
                    continue  # explicit sequences (backfill) are kept as given
                created = _aware(item.created_at) if item.created_at is not None else now
                floor = max(1, (created - _EPOCH) // _seconds(1e-6) * 1000)
                try:
                    sequence = self._sequences.next(session, floor)
                except PaxmError:
                    raise
                except Exception as exc:
                    raise PaxmError(f"allocate session sequence: {exc}") from exc
                metadata = dict(item.metadata)
                metadata[META_SEQUENCE] = str(sequence)
                items[index] = item.replace(metadata=metadata)

    def _put_work(self, items: list[MemoryItem]) -> Callable[[Route, Deadline], object]:
        def work(route: Route, deadline: Deadline) -> object:
            provider = self._providers[route.name]
            refs: list[MemoryRef]
            if CAP_PUT_BATCH in self.capabilities(route.name):
                assert isinstance(provider, SupportsPutBatch)
                refs = list(provider.put_batch(items, deadline))
            else:
                refs = []
                for item in items:  # sequential; the first error stops the rest
                    refs.append(provider.put(item, deadline))
            if not all(isinstance(r, MemoryRef) for r in refs):
                raise ProviderError(route.name, "put", "returned something other than MemoryRef")
            return refs

        return work

    # -- maintenance ---------------------------------------------------------------------

    def _maintain(self, name: str, op: str, fn: Callable[[Deadline], T], timeout: float | None) -> T:
        deadline = Deadline.after(timeout)
        lane = self._lane(name, "maintenance")
        try:
            call = lane.submit(lambda: fn(deadline), wait=deadline.timeout())
        except LaneBusy:
            raise ProviderError(name, op, "bulkhead busy: an earlier maintenance call has not returned") from None
        try:
            return call.wait(deadline.timeout())
        except TimeoutError:
            deadline.cancel()
            raise ProviderError(name, op, f"timed out after {_ms(timeout)}ms") from None

    def health(self, timeout: float | None = MAINTENANCE_TIMEOUT) -> list[ProviderHealth]:
        """Check every provider (sorted by name); never raises for a provider failure."""
        statuses: list[ProviderHealth] = []
        for name, provider in self._providers.items():
            required = name in self._required
            try:
                self._maintain(name, "health", provider.health, timeout)
            except Exception as exc:
                statuses.append(ProviderHealth(name, required, False, _error_text(exc)))
            else:
                statuses.append(ProviderHealth(name, required, True))
        return statuses

    def cleanup_expired(self, limit: int = 500, timeout: float | None = MAINTENANCE_TIMEOUT) -> int:
        """Delete up to ``limit`` expired memories per capable provider; return the total.

        A required provider's failure raises :class:`~paxm_core.errors.ProviderError` after
        the others ran; best-effort failures are ignored.
        """
        limit = limit if limit > 0 else 500
        deleted = 0
        failure: ProviderError | None = None
        for name, provider in self._providers.items():
            if CAP_CLEANUP_EXPIRED not in self.capabilities(name):
                continue
            assert isinstance(provider, SupportsCleanupExpired)
            try:
                count = self._maintain(name, "cleanup_expired", partial(_cleanup, provider, limit), timeout)
            except Exception as exc:
                if name in self._required and failure is None:
                    failure = ProviderError(name, "cleanup_expired", _error_text(exc))
                continue
            deleted += count
        if failure is not None:
            raise failure
        return deleted

    def close(self) -> None:
        """Close providers and the sequence allocator and stop worker threads (idempotent).

        A provider stuck in a call is not waited for beyond a short grace period.
        """
        if self._closed:
            return
        self._closed = True
        for name, provider in self._providers.items():
            if CAP_CLOSE not in self.capabilities(name):
                continue
            assert isinstance(provider, SupportsClose)
            try:
                self._maintain(name, "close", partial(_close, provider), CLOSE_TIMEOUT)
            except Exception:  # closing is best effort; data is already committed
                pass
        for lane in list(self._lanes.values()):
            lane.close()
        try:
            self._sequences.close()
        except Exception:
            pass


def _cleanup(provider: SupportsCleanupExpired, limit: int, deadline: Deadline) -> int:
    return int(provider.cleanup_expired(limit, deadline))


def _close(provider: SupportsClose, _deadline: Deadline) -> None:
    provider.close()


def _normalize_tier(tier: str) -> str:
    from paxm_core.types import normalize_tier

    return normalize_tier(tier)


def _normalized_tiers(tiers: Iterable[str]) -> tuple[str, ...]:
    out: list[str] = []
    for tier in tiers:
        value = _normalize_tier(tier)
        if value not in out:
            out.append(value)
    return tuple(out)


def _seconds(value: float) -> timedelta:
    return timedelta(seconds=value)


def _eligible(
    name: str, hits: list[MemoryHit], route: Route, policy: SearchPolicy, tiers: tuple[str, ...], now: datetime
) -> list[MemoryHit]:
    """Stamp, filter, score and calibrate one provider's hits (copies; inputs untouched).

    Filters run on the provider's own objects first so that dropped hits cost no copy.
    """
    weight = route.effective_weight
    min_relevance = route.min_relevance or policy.min_relevance
    min_score = route.min_score or policy.min_score
    boost = policy.recency_boost
    kept: list[MemoryHit] = []
    recency_of: dict[int, float] = {}
    for original in hits:
        expires_at = effective_expires_at(original)
        if expires_at is not None and expires_at <= now:
            continue
        tier = effective_tier(original)
        if tiers and tier not in tiers:
            continue
        relevance = ranking.normalized_relevance(original)
        if relevance < min_relevance:
            continue
        created = _aware(original.created_at) if original.created_at is not None else None
        recency = ranking.recency_score(created, boost, now) if boost > 0 else 0.0
        score = ranking.apply_weight_and_recency(relevance, weight, recency)
        if score < min_score:
            continue
        hit = MemoryHit(
            provider=name,
            id=original.id,
            text=original.text,
            relevance=relevance,
            score=score,
            raw_score=original.raw_score,
            raw_score_kind=original.raw_score_kind,
            source=original.source,
            metadata=dict(original.metadata),
            created_at=original.created_at,
            tier=tier,
            expires_at=expires_at,
            origin=original.origin,
            scope=original.scope,
            provenance=original.provenance,
        )
        restore_hit(hit)
        recency_of[id(hit)] = recency
        kept.append(hit)
    calibrated = ranking.calibrate(kept)
    for hit in calibrated:
        hit.ranking = ranking.apply_weight_and_recency(hit.ranking, weight, recency_of[id(hit)])
    return calibrated
