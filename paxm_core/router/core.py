"""The router: fan-out to providers, merge recalls, and write through every route."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from functools import partial
from itertools import repeat
from operator import attrgetter
from typing import TYPE_CHECKING, TypeVar

from paxm_core.api.deadline import Deadline
from paxm_core.api.errors import (
    ConfigError,
    PaxmError,
    ProviderError,
    RecallError,
    UsageError,
    WriteError,
)
from paxm_core.api.protocols import (
    CAP_DELETE,
    CAP_PUT_BATCH,
    Provider,
    SupportsCleanupExpired,
    SupportsClose,
    SupportsDelete,
    SupportsPutBatch,
    capabilities_of,
)
from paxm_core.api.timefmt import utcnow
from paxm_core.api.types import (
    MemoryHit,
    MemoryItem,
    MemoryRef,
    ProviderErrorInfo,
    ProviderHealth,
    ProviderRecall,
    SearchQuery,
    normalize_tier,
)
from paxm_core.attribution import (
    META_SEQUENCE,
    expires_at_for,
    prepare_item,
    without_attribution,
)
from paxm_core.router.bulkhead import Lane, LaneBusy
from paxm_core.router.fanout import Outcome, error_text, fan_out, ms
from paxm_core.router.pipeline import Entry, eligible_hits, finite_keys, normalized_tiers, select
from paxm_core.router.policy import (
    FORGET_TIMEOUT,
    PutPolicy,
    RecallResult,
    RememberResult,
    Route,
    SearchPolicy,
    candidate_limit,
)
from paxm_core.session_sequence import MemorySequenceAllocator, SequenceAllocator

if TYPE_CHECKING:  # forget and LTM admission are imported by the calls that use them, not by a recall
    from paxm_core.router.forget import ForgetResult

__all__ = ["Router"]

T = TypeVar("T")

#: How long maintenance calls (health, cleanup, close) may take per provider by default.
MAINTENANCE_TIMEOUT = 30.0
#: How long ``close()`` waits for one provider to close.
CLOSE_TIMEOUT = 2.0
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


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

    # -- search --------------------------------------------------------------------------

    def search(self, query: SearchQuery, policy: SearchPolicy, deadline: Deadline | None = None) -> RecallResult:
        """Recall from every route of ``policy`` and merge the hits.

        Raises :class:`~paxm_core.api.errors.RecallError` (carrying the partial result) when a
        required provider fails or times out; best-effort failures (and optional routes
        skipped after ``policy.optional_grace``) land in ``provider_errors``.
        """
        routes = self._resolve(policy.routes, "search")
        if not routes:
            raise ConfigError("no readable memory providers are enabled")
        overall = deadline or Deadline.none()
        result_limit = policy.limit if policy.limit > 0 else query.limit
        tiers = normalized_tiers(policy.tiers) if policy.tiers else ()
        provider_query = query.replace(
            limit=candidate_limit(result_limit),
            tiers=tiers or query.tiers,
            metadata=without_attribution(query.metadata) if query.metadata else {},
        )
        work = partial(self._search_one, provider_query)
        outcomes = fan_out(self._lane, "search", routes, overall, work, policy.optional_grace)
        result = RecallResult(query=query.text)
        merged, failures = self._merge_outcomes(outcomes, policy, tiers, result)
        result.provider_recalls.sort(key=_recall_provider)
        result.hits = [candidate.materialize() for candidate in select(merged, result_limit, finite_keys(routes))]
        result.timed_out = deadline is not None and overall.expired() and any(o.timed_out for o in outcomes)
        if failures:
            raise RecallError("recall failed: " + "; ".join(failures), result)
        return result

    def _merge_outcomes(
        self,
        outcomes: list[Outcome[list[MemoryHit]]],
        policy: SearchPolicy,
        tiers: tuple[str, ...],
        result: RecallResult,
    ) -> tuple[list[Entry], list[str]]:
        """Record each provider's diagnostics and errors in ``result``; its eligible hits, and required failures."""
        now = _aware(self._clock())
        failures: list[str] = []
        merged: list[Entry] = []
        for outcome in outcomes:
            name = outcome.route.name
            hits = outcome.value if outcome.error is None and outcome.value is not None else []  # checked by work
            eligible = eligible_hits(name, hits, outcome.route, policy, tiers, now) if hits else []
            result.provider_recalls.append(_provider_recall(outcome, hits, eligible))
            if _failed(outcome, "search", result.provider_errors, failures):
                continue
            merged.extend(eligible)
        return merged, failures

    def _search_one(self, query: SearchQuery, route: Route, deadline: Deadline) -> list[MemoryHit]:
        hits = self._providers[route.name].search(query, deadline)
        if not isinstance(hits, list) or not all(map(isinstance, hits, repeat(MemoryHit))):
            raise ProviderError(route.name, "search", f"returned {type(hits).__name__}, not a list of MemoryHit")
        return hits

    # -- put -----------------------------------------------------------------------------

    def put(self, items: Sequence[MemoryItem], policy: PutPolicy, deadline: Deadline | None = None) -> RememberResult:
        """Write ``items`` to every route of ``policy`` concurrently.

        Applies the write policy (tier, expiry, scope), syncs attribution into canonical
        metadata, admits LTM items by fingerprint and allocates session sequences before any
        provider sees them.  Raises :class:`~paxm_core.api.errors.WriteError` (carrying the
        partial result) when a required provider fails.
        """
        routes = self._resolve(policy.routes, "put")
        if not routes:
            raise ConfigError("no writable memory providers are enabled")
        if not items:
            return RememberResult()
        work = partial(self._put_one, self.prepare_items(items, policy))
        outcomes = fan_out(self._lane, "put", routes, deadline or Deadline.none(), work, policy.optional_grace)
        result = RememberResult()
        failures: list[str] = []
        for outcome in outcomes:
            name = outcome.route.name
            if _failed(outcome, "put", result.provider_errors, failures):
                continue
            refs = outcome.value or []
            # a ref already under this route's name is kept (refs are frozen values)
            result.refs.extend(
                ref if type(ref) is MemoryRef and ref.provider == name else MemoryRef(name, ref.id) for ref in refs
            )
        result.refs.sort(key=lambda r: r.provider)  # stable: each provider's refs stay in item order
        if failures:
            raise WriteError("write failed: " + "; ".join(failures), result)
        return result

    def put_to_provider(
        self, provider: str, items: Sequence[MemoryItem], timeout: float | None, *, policy: PutPolicy | None = None
    ) -> list[MemoryRef]:
        """Write ``items`` to one provider through the same pipeline, as a required route.

        Used by the capture-queue delivery worker.  ``policy`` supplies tier/expiry/scope
        (its routes are ignored).  Raises :class:`~paxm_core.api.errors.WriteError` on failure.
        """
        route = Route(provider, required=True, timeout=timeout)
        base = policy or PutPolicy()
        result = self.put(items, PutPolicy([route], base.tier, base.expires_after, base.scope))  # no grace
        return result.refs

    def prepare_items(self, items: Sequence[MemoryItem], policy: PutPolicy) -> list[MemoryItem]:
        """The exact items providers receive for a write under ``policy`` (allocates sequences)."""
        now = _aware(self._clock())
        from paxm_core.router.admission import admit

        default_scope = policy.scope if not policy.scope.is_empty() else None
        prepared: list[MemoryItem] = []
        for item in items:
            if not isinstance(item, MemoryItem):
                raise UsageError(f"cannot write {type(item).__name__}; expected MemoryItem")
            if not item.text.strip():
                raise UsageError("memory text is required")
            changes: dict[str, object] = {}
            if policy.tier and not item.tier:
                changes["tier"] = normalize_tier(policy.tier)
            if item.expires_at is None:
                expires = expires_at_for(
                    _aware(item.created_at) if item.created_at is not None else now, policy.expires_after
                )
                if expires is not None:
                    changes["expires_at"] = expires
            if changes:
                item = item.replace(**changes)
            item = admit(prepare_item(item, default_scope), now)
            prepared.append(item)
        self._assign_sequences(prepared, now)
        return prepared

    def _assign_sequences(self, items: list[MemoryItem], now: datetime) -> None:
        # ``items`` are prepare_items' own copies: prepare_item gave each a metadata dict of
        # its own that nobody else holds yet, so the sequence is set in it rather than
        # copying the dict and the item once more for every write
        # one reservation for the whole write: the persistent store commits (and fsyncs) once
        # per batch, where one ``next`` per item cost a commit per delivered episode
        wanted: list[MemoryItem] = []
        requests: list[tuple[str, int]] = []
        for item in items:
            session = item.origin.session_id.strip()
            if not session or (item.metadata.get(META_SEQUENCE) or "").strip():
                continue  # explicit sequences (backfill) are kept as given
            created = _aware(item.created_at) if item.created_at is not None else now
            wanted.append(item)
            requests.append((session, max(1, (created - _EPOCH) // timedelta(microseconds=1) * 1000)))
        if not requests:
            return
        with self._sequence_lock:
            try:
                sequences = self._sequences.next_many(requests)
            except PaxmError:
                raise
            except Exception as exc:
                raise PaxmError(f"allocate session sequence: {exc}") from exc
        if len(sequences) != len(requests):
            raise PaxmError(f"allocate session sequence: {len(sequences)} sequences for {len(requests)} items")
        for item, sequence in zip(wanted, sequences, strict=True):
            item.metadata[META_SEQUENCE] = str(sequence)

    def _put_one(self, items: list[MemoryItem], route: Route, deadline: Deadline) -> list[MemoryRef]:
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

    # -- forget --------------------------------------------------------------------------

    def forget(
        self,
        targets: Mapping[str, Sequence[str]],
        *,
        timeout: float | None = FORGET_TIMEOUT,
        deadline: Deadline | None = None,
    ) -> ForgetResult:
        """Delete memory ids on several providers concurrently (``paxm forget``).

        ``targets`` maps a provider name to the ids to delete there.  Each provider runs in its
        own ``delete`` bulkhead lane with ``timeout`` seconds for all its ids (within
        ``deadline``); one failing or slow provider never stops the others.  Providers without
        the ``delete`` capability are reported ``unsupported`` and not called.  Never raises for
        a provider failure: the per-provider results say what happened to every id.
        """
        if self._closed:
            raise PaxmError("memory router is closed")
        unknown = sorted(name for name in targets if name not in self._providers)
        if unknown:
            enabled = ", ".join(self._providers) or "none"
            raise ConfigError(f"cannot forget on provider(s) {', '.join(unknown)}: not enabled (enabled: {enabled})")
        from paxm_core.router.forget import forget as forget_refs

        return forget_refs(
            self._lane,
            self._delete_one,
            lambda name: CAP_DELETE in self.capabilities(name),
            targets,
            timeout=timeout,
            deadline=deadline,
        )

    def _delete_one(self, name: str, ref: MemoryRef, deadline: Deadline) -> object:
        provider = self._providers[name]
        assert isinstance(provider, SupportsDelete)
        return provider.delete(ref, deadline)

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
            raise ProviderError(name, op, f"timed out after {ms(timeout)}ms") from None

    def health(self, timeout: float | None = MAINTENANCE_TIMEOUT) -> list[ProviderHealth]:
        """Check every provider (sorted by name); never raises for a provider failure."""
        statuses: list[ProviderHealth] = []
        for name, provider in self._providers.items():
            required = name in self._required
            try:
                self._maintain(name, "health", provider.health, timeout)
            except Exception as exc:
                statuses.append(ProviderHealth(name, required, False, error_text(exc)))
            else:
                statuses.append(ProviderHealth(name, required, True))
        return statuses

    def cleanup_expired(self, limit: int = 500, timeout: float | None = MAINTENANCE_TIMEOUT) -> int:
        """Delete up to ``limit`` expired memories per capable provider; return the total.

        A required provider's failure raises :class:`~paxm_core.api.errors.ProviderError` after
        the others ran; best-effort failures are ignored.
        """
        limit = limit if limit > 0 else 500
        deleted = 0
        failure: ProviderError | None = None
        for name, provider in self._providers.items():
            # the static protocol decides: asking a stuck plugin for its run-time
            # capabilities here would stall maintenance for nothing
            if not isinstance(provider, SupportsCleanupExpired):
                continue
            try:
                count = self._maintain(name, "cleanup_expired", partial(_cleanup, provider, limit), timeout)
            except Exception as exc:
                if name in self._required and failure is None:
                    failure = ProviderError(name, "cleanup_expired", error_text(exc))
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
            if not isinstance(provider, SupportsClose):
                continue
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


_raw_score_kind = attrgetter("raw_score_kind")
_recall_provider = attrgetter("provider")


def _score_kinds(hits: list[MemoryHit]) -> tuple[str, ...]:
    # The distinct kinds first (a provider's hits nearly always share one), stripped after.
    kinds = set(map(_raw_score_kind, hits))  # in C, not a comprehension
    if len(kinds) == 1:  # the common case: no second set, no sort
        kind = next(iter(kinds)).strip()
        return (kind,) if kind else ()
    return tuple(sorted({kind.strip() for kind in kinds} - {""}))


def _cleanup(provider: SupportsCleanupExpired, limit: int, deadline: Deadline) -> int:
    return int(provider.cleanup_expired(limit, deadline))


def _close(provider: SupportsClose, _deadline: Deadline) -> None:
    provider.close()


def _failed(outcome: Outcome[T], op: str, errors: list[ProviderErrorInfo], failures: list[str]) -> bool:
    """Record ``outcome``'s error, if any, in ``errors`` (and ``failures`` for a required route)."""
    if outcome.error is None:
        return False
    text = error_text(outcome.error)
    errors.append(ProviderErrorInfo(outcome.route.name, outcome.route.required, op, text))
    if outcome.route.required:
        failures.append(f"{outcome.route.name}: {text}")
    return True


def _provider_recall(outcome: Outcome[list[MemoryHit]], hits: list[MemoryHit], eligible: list[Entry]) -> ProviderRecall:
    """The ``provider_recalls`` entry of one search outcome."""
    if outcome.error is None:
        status = "success"
    elif outcome.skipped:
        status = "skipped"
    else:
        status = "timeout" if outcome.timed_out else "error"
    return ProviderRecall(
        provider=outcome.route.name,
        duration_ms=outcome.duration_ms,
        outcome=status,
        timeout_ms=ms(outcome.route.timeout),
        bulkhead_busy=outcome.busy,
        candidate_count=len(hits),
        eligible_count=len(eligible),
        raw_score_kinds=_score_kinds(hits) if hits else (),
    )
