"""Wire types shared by the core, providers and JSON-RPC plugins.

Field and JSON names follow upstream paxm exactly, so saved outputs and plugins written for
upstream keep working.  Every type converts losslessly with ``to_json()`` / ``from_json()``;
unknown JSON fields are ignored on read, as upstream does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from typing import Any

from paxm_core.dataclass_support import FACTORY as _FACTORY
from paxm_core.dataclass_support import set_field as _set_field
from paxm_core.dataclass_support import value_dataclass, value_methods
from paxm_core.timefmt import ZERO_TIME, format_time, parse_time

__all__ = [
    "SEMANTIC_SCORE_KIND_PREFIX",
    "TIER_LTM",
    "TIER_STM",
    "MemoryHit",
    "MemoryItem",
    "MemoryOrigin",
    "MemoryRef",
    "MemoryScope",
    "Provenance",
    "ProviderHealth",
    "ProviderErrorInfo",
    "ProviderRecall",
    "SearchQuery",
    "TurnContext",
    "normalize_tier",
]

TIER_STM = "stm"
TIER_LTM = "ltm"


def normalize_tier(tier: str | None) -> str:
    """Return ``"stm"`` for any spelling of stm, otherwise ``"ltm"`` (upstream's rule)."""
    return TIER_STM if (tier or "").strip().lower() == TIER_STM else TIER_LTM


def _str_map(value: Any, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"{what} must be an object of strings")
    out: dict[str, str] = {}
    for key, item in value.items():
        if item is None:
            continue
        # upstream metadata is map[string]string; numbers and booleans are coerced
        # so that lenient plugins still interoperate.
        if isinstance(item, bool):
            out[str(key)] = "true" if item else "false"
        elif isinstance(item, (str, int, float)):
            out[str(key)] = str(item)
        else:
            raise ValueError(f"{what}[{key!r}] must be a string")
    return out


def _opt_time(value: Any) -> datetime | None:
    if value is None or value == "":
        return None
    if type(value) is not str and not isinstance(value, str):
        raise ValueError("timestamps must be RFC 3339 strings")
    return parse_time(value)


def _plain_str_map(value: Any, what: str) -> dict[str, str]:
    # the common case, every key and value already a string, is one C-level copy
    if not value:
        if value is None or value == {}:
            return {}
        return _str_map(value, what)
    if type(value) is dict:
        for key, item in value.items():
            if type(item) is not str or type(key) is not str:
                return _str_map(value, what)
        return dict(value)
    return _str_map(value, what)


def _str(value: Any, what: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a string")
    return value


# The dataclasses below write out __init__ and take __repr__, __eq__ and __hash__ from
# value_methods instead of letting @dataclass compile them on every import (see
# paxm_core.dataclass_support).


@value_dataclass(frozen=True, slots=True)
class MemoryOrigin:
    """Where a memory was produced: trusted runtime context, never a caller filter."""

    user_id: str = ""
    agent_id: str = ""
    session_id: str = ""
    turn_id: str = ""

    def __init__(self, user_id: str = "", agent_id: str = "", session_id: str = "", turn_id: str = "") -> None:
        _set_field(self, "user_id", user_id)
        _set_field(self, "agent_id", agent_id)
        _set_field(self, "session_id", session_id)
        _set_field(self, "turn_id", turn_id)

    def is_empty(self) -> bool:
        return not (self.user_id or self.agent_id or self.session_id or self.turn_id)

    def to_json(self) -> dict[str, str]:
        return {
            k: v
            for k, v in (
                ("user_id", self.user_id),
                ("agent_id", self.agent_id),
                ("session_id", self.session_id),
                ("turn_id", self.turn_id),
            )
            if v
        }

    @classmethod
    def from_json(cls, data: Any) -> MemoryOrigin:
        if not data:
            return _EMPTY_ORIGIN if cls is MemoryOrigin else cls()
        if not isinstance(data, dict):
            raise ValueError("origin must be an object")
        return cls(*(_str(data.get(k), f"origin.{k}") for k in ("user_id", "agent_id", "session_id", "turn_id")))


@value_dataclass(frozen=True, slots=True)
class MemoryScope:
    """The visibility boundary assigned at write time (``personal``/``team`` + id)."""

    type: str = ""
    id: str = ""

    def __init__(self, type: str = "", id: str = "") -> None:
        _set_field(self, "type", type)
        _set_field(self, "id", id)

    def is_empty(self) -> bool:
        return not (self.type or self.id)

    def to_json(self) -> dict[str, str]:
        return {k: v for k, v in (("type", self.type), ("id", self.id)) if v}

    @classmethod
    def from_json(cls, data: Any) -> MemoryScope:
        if not data:
            return _EMPTY_SCOPE if cls is MemoryScope else cls()
        if not isinstance(data, dict):
            raise ValueError("scope must be an object")
        return cls(_str(data.get("type"), "scope.type"), _str(data.get("id"), "scope.id"))


@value_dataclass(frozen=True, slots=True)
class Provenance:
    """Upstream's v1 attribution shape, kept for compatibility with v1 plugins."""

    user_id: str = ""
    agent_id: str = ""
    scope_type: str = ""
    scope_id: str = ""

    def __init__(self, user_id: str = "", agent_id: str = "", scope_type: str = "", scope_id: str = "") -> None:
        _set_field(self, "user_id", user_id)
        _set_field(self, "agent_id", agent_id)
        _set_field(self, "scope_type", scope_type)
        _set_field(self, "scope_id", scope_id)

    def is_empty(self) -> bool:
        return not (self.user_id or self.agent_id or self.scope_type or self.scope_id)

    def to_json(self) -> dict[str, str]:
        return {
            k: v
            for k, v in (
                ("user_id", self.user_id),
                ("agent_id", self.agent_id),
                ("scope_type", self.scope_type),
                ("scope_id", self.scope_id),
            )
            if v
        }

    @classmethod
    def from_json(cls, data: Any) -> Provenance:
        if not data:
            return _EMPTY_PROVENANCE if cls is Provenance else cls()
        if not isinstance(data, dict):
            raise ValueError("provenance must be an object")
        return cls(*(_str(data.get(k), f"provenance.{k}") for k in ("user_id", "agent_id", "scope_type", "scope_id")))


# items are immutable, so every item without attribution may share these
_EMPTY_ORIGIN = MemoryOrigin()
_EMPTY_SCOPE = MemoryScope()
_EMPTY_PROVENANCE = Provenance()


@value_dataclass(frozen=True, slots=True)
class TurnContext:
    """Capture boundaries of one turn; providers that do not model turns ignore it."""

    session_id: str = ""
    turn_id: str = ""
    started_at: datetime | None = None
    ended_at: datetime | None = None

    def __init__(
        self,
        session_id: str = "",
        turn_id: str = "",
        started_at: datetime | None = None,
        ended_at: datetime | None = None,
    ) -> None:
        _set_field(self, "session_id", session_id)
        _set_field(self, "turn_id", turn_id)
        _set_field(self, "started_at", started_at)
        _set_field(self, "ended_at", ended_at)


@value_dataclass(frozen=True, slots=True)
class MemoryRef:
    """A stored memory's address: the provider instance name and its id there."""

    provider: str
    id: str

    def __init__(self, provider: str, id: str) -> None:
        _set_field(self, "provider", provider)
        _set_field(self, "id", id)

    def to_json(self) -> dict[str, str]:
        return {"provider": self.provider, "id": self.id}

    @classmethod
    def from_json(cls, data: Any) -> MemoryRef:
        if not isinstance(data, dict):
            raise ValueError("ref must be an object")
        return cls(_str(data.get("provider"), "ref.provider"), _str(data.get("id"), "ref.id"))


@value_dataclass(frozen=True, slots=True)
class MemoryItem:
    """One memory to write.

    ``admission_text`` and ``turn`` are internal (never serialized), as upstream.
    """

    text: str
    id: str = ""
    source: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
    created_at: datetime | None = None
    tier: str = ""
    expires_at: datetime | None = None
    origin: MemoryOrigin = field(default_factory=MemoryOrigin)
    scope: MemoryScope = field(default_factory=MemoryScope)
    provenance: Provenance = field(default_factory=Provenance)
    admission_text: str = ""
    turn: TurnContext | None = None

    def __init__(
        self,
        text: str,
        id: str = "",
        source: str = "",
        metadata: dict[str, str] = _FACTORY,
        created_at: datetime | None = None,
        tier: str = "",
        expires_at: datetime | None = None,
        origin: MemoryOrigin = _FACTORY,
        scope: MemoryScope = _FACTORY,
        provenance: Provenance = _FACTORY,
        admission_text: str = "",
        turn: TurnContext | None = None,
    ) -> None:
        _set_field(self, "text", text)
        _set_field(self, "id", id)
        _set_field(self, "source", source)
        _set_field(self, "metadata", dict() if metadata is _FACTORY else metadata)
        _set_field(self, "created_at", created_at)
        _set_field(self, "tier", tier)
        _set_field(self, "expires_at", expires_at)
        _set_field(self, "origin", MemoryOrigin() if origin is _FACTORY else origin)
        _set_field(self, "scope", MemoryScope() if scope is _FACTORY else scope)
        _set_field(self, "provenance", Provenance() if provenance is _FACTORY else provenance)
        _set_field(self, "admission_text", admission_text)
        _set_field(self, "turn", turn)

    def replace(self, **changes: Any) -> MemoryItem:
        """Return a copy with ``changes`` applied (items are immutable)."""
        if type(self) is not MemoryItem or not changes.keys() <= _ITEM_FIELD_SET:
            return replace(self, **changes)  # subclasses, and the TypeError for a bad name
        # the write path copies every item two or three times: setting the slots directly
        # costs half of dataclasses.replace (which re-runs __init__ through keywords)
        new = _new_object(MemoryItem)
        for name in _ITEM_FIELDS:
            _set_field(new, name, changes[name] if name in changes else getattr(self, name))
        return new

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.id:
            out["id"] = self.id
        out["text"] = self.text
        if self.source:
            out["source"] = self.source
        if self.metadata:
            out["metadata"] = dict(self.metadata)
        # Go's encoder never omits a time.Time, so upstream always sends created_at (zero
        # time when unset); plugins and saved outputs expect the key.
        out["created_at"] = format_time(self.created_at) if self.created_at is not None else ZERO_TIME
        if self.tier:
            out["tier"] = self.tier
        if self.expires_at is not None:
            out["expires_at"] = format_time(self.expires_at)
        out["origin"] = self.origin.to_json()
        out["scope"] = self.scope.to_json()
        out["provenance"] = self.provenance.to_json()
        return out

    @classmethod
    def from_json(cls, data: Any) -> MemoryItem:
        if not isinstance(data, dict):
            raise ValueError("memory item must be an object")
        get = data.get
        # each field is checked inline (``type(x) is str`` first): this runs for every
        # queued event of every delivery, and the helper calls were most of its cost
        text = get("text")
        if type(text) is not str:
            text = _str(text, "text")
        item_id = get("id")
        if type(item_id) is not str:
            item_id = _str(item_id, "id")
        source = get("source")
        if type(source) is not str:
            source = _str(source, "source")
        tier = get("tier")
        if type(tier) is not str:
            tier = _str(tier, "tier")
        origin = get("origin")
        scope = get("scope")
        provenance = get("provenance")
        return cls(
            text,
            item_id,
            source,
            _plain_str_map(get("metadata"), "metadata"),
            _opt_time(get("created_at")),
            tier,
            _opt_time(get("expires_at")),
            MemoryOrigin.from_json(origin) if origin else _EMPTY_ORIGIN,
            MemoryScope.from_json(scope) if scope else _EMPTY_SCOPE,
            Provenance.from_json(provenance) if provenance else _EMPTY_PROVENANCE,
        )


_ITEM_FIELDS = tuple(f.name for f in fields(MemoryItem))
_ITEM_FIELD_SET = frozenset(_ITEM_FIELDS)
_new_object = object.__new__


@value_dataclass(frozen=True, slots=True)
class SearchQuery:
    """A recall request to one provider.

    ``metadata`` is runtime/diagnostic context and must never become a provider-side filter
    (the SQLite provider's trusted ``workspace`` is the one documented exception); only
    ``filters`` may.
    """

    text: str
    limit: int = 0
    metadata: dict[str, str] = field(default_factory=dict)
    filters: dict[str, str] = field(default_factory=dict)
    tiers: tuple[str, ...] = ()

    def __init__(
        self,
        text: str,
        limit: int = 0,
        metadata: dict[str, str] = _FACTORY,
        filters: dict[str, str] = _FACTORY,
        tiers: tuple[str, ...] = (),
    ) -> None:
        _set_field(self, "text", text)
        _set_field(self, "limit", limit)
        _set_field(self, "metadata", dict() if metadata is _FACTORY else metadata)
        _set_field(self, "filters", dict() if filters is _FACTORY else filters)
        _set_field(self, "tiers", tiers)

    def replace(self, **changes: Any) -> SearchQuery:
        """Return a copy with ``changes`` applied."""
        return replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"text": self.text}
        if self.limit:
            out["limit"] = self.limit
        if self.metadata:
            out["metadata"] = dict(self.metadata)
        if self.filters:
            out["filters"] = dict(self.filters)
        if self.tiers:
            out["tiers"] = list(self.tiers)
        return out

    @classmethod
    def from_json(cls, data: Any) -> SearchQuery:
        if not isinstance(data, dict):
            raise ValueError("search query must be an object")
        limit = data.get("limit") or 0
        if not isinstance(limit, int) or isinstance(limit, bool):
            raise ValueError("limit must be an integer")
        tiers = data.get("tiers") or []
        if not isinstance(tiers, list) or not all(isinstance(t, str) for t in tiers):
            raise ValueError("tiers must be a list of strings")
        return cls(
            text=_str(data.get("text"), "text"),
            limit=limit,
            metadata=_str_map(data.get("metadata"), "metadata"),
            filters=_str_map(data.get("filters"), "filters"),
            tiers=tuple(tiers),
        )


#: ``raw_score_kind`` prefix of a hit found by meaning (embedding similarity) rather than by
#: shared words.  Such a hit need not contain any query word, so term-based checks (the
#: passive insertion filter's ``require_query_terms``) must not reject it; its ``score`` is the
#: provider's calibration of that similarity onto paxm's scale.
SEMANTIC_SCORE_KIND_PREFIX = "semantic:"


@value_methods
@dataclass(slots=True, init=False, repr=False, eq=False)
class MemoryHit:
    """One recalled memory.

    ``relevance`` and ``score`` are higher-is-better in ``[0, 1]``; ``raw_score`` and
    ``raw_score_kind`` keep the backend's own value.  ``ranking`` is the router's private
    calibrated ranking score and is never serialized.
    """

    provider: str
    id: str
    text: str
    relevance: float = 0.0
    score: float = 0.0
    raw_score: float | None = None
    raw_score_kind: str = ""
    source: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
    created_at: datetime | None = None
    tier: str = ""
    expires_at: datetime | None = None
    origin: MemoryOrigin = field(default_factory=MemoryOrigin)
    scope: MemoryScope = field(default_factory=MemoryScope)
    provenance: Provenance = field(default_factory=Provenance)
    ranking: float = field(default=0.0, compare=False, repr=False)

    def __init__(
        self,
        provider: str,
        id: str,
        text: str,
        relevance: float = 0.0,
        score: float = 0.0,
        raw_score: float | None = None,
        raw_score_kind: str = "",
        source: str = "",
        metadata: dict[str, str] = _FACTORY,
        created_at: datetime | None = None,
        tier: str = "",
        expires_at: datetime | None = None,
        origin: MemoryOrigin = _FACTORY,
        scope: MemoryScope = _FACTORY,
        provenance: Provenance = _FACTORY,
        ranking: float = 0.0,
    ) -> None:
        self.provider = provider
        self.id = id
        self.text = text
        self.relevance = relevance
        self.score = score
        self.raw_score = raw_score
        self.raw_score_kind = raw_score_kind
        self.source = source
        self.metadata = dict() if metadata is _FACTORY else metadata
        self.created_at = created_at
        self.tier = tier
        self.expires_at = expires_at
        self.origin = MemoryOrigin() if origin is _FACTORY else origin
        self.scope = MemoryScope() if scope is _FACTORY else scope
        self.provenance = Provenance() if provenance is _FACTORY else provenance
        self.ranking = ranking

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value (as @dataclass(eq=True))

    def copy(self, **changes: Any) -> MemoryHit:
        """Return a copy with ``changes`` applied (metadata dict copied)."""
        changes.setdefault("metadata", dict(self.metadata))
        return replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "provider": self.provider,
            "id": self.id,
            "text": self.text,
            "relevance": _finite(self.relevance),
            "score": _finite(self.score),
        }
        if self.raw_score is not None and math.isfinite(self.raw_score):
            out["raw_score"] = self.raw_score
        if self.raw_score_kind:
            out["raw_score_kind"] = self.raw_score_kind
        if self.source:
            out["source"] = self.source
        if self.metadata:
            out["metadata"] = dict(self.metadata)
        # Go's encoder never omits a time.Time, so upstream always sends created_at (zero
        # time when unset); plugins and saved outputs expect the key.
        out["created_at"] = format_time(self.created_at) if self.created_at is not None else ZERO_TIME
        if self.tier:
            out["tier"] = self.tier
        if self.expires_at is not None:
            out["expires_at"] = format_time(self.expires_at)
        out["origin"] = self.origin.to_json()
        out["scope"] = self.scope.to_json()
        out["provenance"] = self.provenance.to_json()
        return out

    @classmethod
    def from_json(cls, data: Any) -> MemoryHit:
        if not isinstance(data, dict):
            raise ValueError("memory hit must be an object")

        def num(key: str, default: float | None) -> float | None:
            value = data.get(key)
            if value is None:
                return default
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"{key} must be a number")
            return float(value)

        return cls(
            provider=_str(data.get("provider"), "provider"),
            id=_str(data.get("id"), "id"),
            text=_str(data.get("text"), "text"),
            relevance=num("relevance", 0.0) or 0.0,
            score=num("score", 0.0) or 0.0,
            raw_score=num("raw_score", None),
            raw_score_kind=_str(data.get("raw_score_kind"), "raw_score_kind"),
            source=_str(data.get("source"), "source"),
            metadata=_str_map(data.get("metadata"), "metadata"),
            created_at=_opt_time(data.get("created_at")),
            tier=_str(data.get("tier"), "tier"),
            expires_at=_opt_time(data.get("expires_at")),
            origin=MemoryOrigin.from_json(data.get("origin")),
            scope=MemoryScope.from_json(data.get("scope")),
            provenance=Provenance.from_json(data.get("provenance")),
        )


def _finite(value: float) -> float:
    return value if math.isfinite(value) else 0.0


@value_dataclass(frozen=True, slots=True)
class ProviderErrorInfo:
    """A provider failure reported inside a result (``provider_errors``)."""

    provider: str
    required: bool
    op: str
    error: str

    def __init__(self, provider: str, required: bool, op: str, error: str) -> None:
        _set_field(self, "provider", provider)
        _set_field(self, "required", required)
        _set_field(self, "op", op)
        _set_field(self, "error", error)

    def to_json(self) -> dict[str, Any]:
        return {"provider": self.provider, "required": self.required, "op": self.op, "error": self.error}


@value_dataclass(frozen=True, slots=True)
class ProviderRecall:
    """Per-provider diagnostics of one recall (``provider_recalls``)."""

    provider: str
    duration_ms: int
    outcome: str  # "success" | "error" | "timeout"
    timeout_ms: int = 0
    bulkhead_busy: bool = False
    candidate_count: int = 0
    eligible_count: int = 0
    raw_score_kinds: tuple[str, ...] = ()

    def __init__(
        self,
        provider: str,
        duration_ms: int,
        outcome: str,
        timeout_ms: int = 0,
        bulkhead_busy: bool = False,
        candidate_count: int = 0,
        eligible_count: int = 0,
        raw_score_kinds: tuple[str, ...] = (),
    ) -> None:
        _set_field(self, "provider", provider)
        _set_field(self, "duration_ms", duration_ms)
        _set_field(self, "outcome", outcome)
        _set_field(self, "timeout_ms", timeout_ms)
        _set_field(self, "bulkhead_busy", bulkhead_busy)
        _set_field(self, "candidate_count", candidate_count)
        _set_field(self, "eligible_count", eligible_count)
        _set_field(self, "raw_score_kinds", raw_score_kinds)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"provider": self.provider, "duration_ms": self.duration_ms, "outcome": self.outcome}
        if self.timeout_ms:
            out["timeout_ms"] = self.timeout_ms
        if self.bulkhead_busy:
            out["bulkhead_busy"] = True
        if self.candidate_count:
            out["candidate_count"] = self.candidate_count
        if self.eligible_count:
            out["eligible_count"] = self.eligible_count
        if self.raw_score_kinds:
            out["raw_score_kinds"] = list(self.raw_score_kinds)
        return out


@value_dataclass(frozen=True, slots=True)
class ProviderHealth:
    """One provider's health as reported by ``config doctor``."""

    provider: str
    required: bool
    ok: bool
    error: str = ""

    def __init__(self, provider: str, required: bool, ok: bool, error: str = "") -> None:
        _set_field(self, "provider", provider)
        _set_field(self, "required", required)
        _set_field(self, "ok", ok)
        _set_field(self, "error", error)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"provider": self.provider, "required": self.required, "ok": self.ok}
        if self.error:
            out["error"] = self.error
        return out
