"""Wire types shared by the core, providers and JSON-RPC plugins.

Field and JSON names follow upstream paxm exactly, so saved outputs and plugins written for
upstream keep working.  Every type converts losslessly with ``to_json()`` / ``from_json()``;
unknown JSON fields are ignored on read, as upstream does.

One codec (:func:`_encode`, :func:`_decode`) does every conversion.  A field is on the wire
when its metadata carries a tag written as upstream's Go struct tag (:func:`_json`:
``"id,omitempty"``), and the field's annotation says how its value is checked and written.
The rules are Go's: an ``omitempty`` field is left out when empty (``""``, ``0``, ``False``,
an empty map or list, ``None``); a time without ``omitempty`` is Go's ``time.Time``, always
written (the zero time when unset); a nested value is always written, ``{}`` when empty.
A ``list[...]`` field holds strings or wire values.  Times are formatted by :mod:`paxm_core.api.timefmt`.
"""

from __future__ import annotations

import math
from dataclasses import MISSING, field, fields, replace
from datetime import datetime
from typing import Any, ClassVar, Self, TypeVar

from paxm_core.api.json import JSONObject
from paxm_core.api.timefmt import ZERO_TIME, format_time, parse_time
from paxm_core.api.values import value_dataclass

_T = TypeVar("_T")

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


def _json(tag: str, *, first: bool = False) -> dict[str, str | bool]:
    """Field metadata that puts a field on the wire: ``tag`` is upstream's Go struct tag
    (``"name"`` or ``"name,omitempty"``); ``first=True`` writes it before the other fields."""
    name, _, flags = tag.partition(",")
    return {"json": name, "omitempty": flags == "omitempty", "first": first}


#: how a field's annotation is read and written (anything else is a ``list[...]`` or names a
#: nested wire type)
_KINDS = {
    "str": "str",
    "int": "int",
    "bool": "bool",
    "float": "float",
    "float | None": "float",
    "datetime | None": "time",
    "dict[str, str]": "map",
    "tuple[str, ...]": "strings",
}

#: wire type -> its fields on the wire: (attribute, JSON name, kind, omitempty, default)
_PLANS: dict[type, tuple[tuple[str, str, str, bool, object], ...]] = {}


def _plan(cls: type) -> tuple[tuple[str, str, str, bool, object], ...]:
    plan = _PLANS.get(cls)
    if plan is None:
        tagged = [f for f in fields(cls) if "json" in f.metadata]
        tagged.sort(key=lambda f: not f.metadata.get("first", False))  # stable: the rest keep their order
        plan = tuple(
            (f.name, f.metadata["json"], _KINDS.get(str(f.type), str(f.type)), f.metadata["omitempty"], f.default)
            for f in tagged
        )
        _PLANS[cls] = plan
    return plan


def _encode(obj: object) -> JSONObject:
    """``obj``'s JSON object: its tagged fields in order, by the rules of the module docstring."""
    out: JSONObject = {}
    for attr, key, kind, omitempty, _ in _plan(type(obj)):
        value = getattr(obj, attr)
        if kind == "time":
            if value is None:
                if not omitempty:
                    out[key] = ZERO_TIME
                continue
            value = format_time(value)
        elif kind == "float":  # JSON has no NaN or infinity: such a score is unset
            if value is None or not math.isfinite(value):
                if omitempty:
                    continue
                value = 0.0
        elif omitempty and not value:
            continue
        elif kind == "map":
            value = dict(value)
        elif kind == "strings":
            value = list(value)
        elif kind.startswith("list["):
            value = [item.to_json() if isinstance(item, _Wire) else item for item in value]
        elif kind not in _KINDS.values():
            value = value.to_json()
        out[key] = value
    return out


def _decode(cls: type[_T], data: object, what: str, prefix: str = "") -> _T:
    """An instance of ``cls`` from a JSON object; unknown keys are ignored.

    :param what: the type's name in the error for a value that is not an object.
    :param prefix: put before a field's name in its error (``"origin."``).
    :raises ValueError: a value of the wrong type.
    """
    if not data and all(f.default is not MISSING or f.default_factory is not MISSING for f in fields(cls)):  # type: ignore[arg-type]
        return cls()  # an empty attribution is simply unset
    if not isinstance(data, dict):
        raise ValueError(f"{what} must be an object")
    values: dict[str, object] = {}
    for attr, key, kind, _, default in _plan(cls):
        values[attr] = _decode_value(kind, data.get(key), prefix + key, default)
    return cls(**values)


def _decode_value(kind: str, value: object, what: str, default: object) -> object:
    if kind == "str":
        if value is None:
            return ""
        if not isinstance(value, str):
            raise ValueError(f"{what} must be a string")
        return value
    if kind == "time":
        if value is None or value == "":
            return None
        if not isinstance(value, str):
            raise ValueError("timestamps must be RFC 3339 strings")
        return parse_time(value)
    if kind == "map":
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
    if kind == "float":
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{what} must be a number")
        return float(value)
    if kind == "int":
        value = value or 0
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValueError(f"{what} must be an integer")
        return value
    if kind == "bool":
        if value is None:
            return default
        if not isinstance(value, bool):
            raise ValueError(f"{what} must be a boolean")
        return value
    if kind == "strings":
        value = value or []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError(f"{what} must be a list of strings")
        return tuple(value)
    if kind.startswith("list["):
        value = value or []
        if not isinstance(value, list):
            raise ValueError(f"{what} must be a list")
        item_kind = _KINDS.get(kind[5:-1], kind[5:-1])
        return [_decode_value(item_kind, item, f"{what}[{i}]", None) for i, item in enumerate(value)]
    return globals()[kind].from_json(value)


class _Wire:
    """``to_json``/``from_json`` of a wire type, through the one codec, and ``replace``."""

    __slots__ = ()
    #: the type's name in a decoding error, and the prefix of its fields' names there
    _what: ClassVar[str] = "value"
    _prefix: ClassVar[str] = ""

    def to_json(self) -> JSONObject:
        """The JSON object upstream writes for this value."""
        return _encode(self)

    @classmethod
    def from_json(cls, data: object) -> Self:
        """The value a JSON object holds; unknown keys are ignored.

        :raises ValueError: a value of the wrong type.
        """
        return _decode(cls, data, cls._what, cls._prefix)

    def replace(self, **changes: Any) -> Self:
        """Return a copy with ``changes`` applied (frozen values are immutable)."""
        return replace(self, **changes)  # type: ignore[type-var]  # every _Wire is a dataclass


@value_dataclass(frozen=True, slots=True, compiled_init=True)
class MemoryOrigin(_Wire):
    """Where a memory was produced: trusted runtime context, never a caller filter."""

    _what = "origin"
    _prefix = "origin."

    user_id: str = field(default="", metadata=_json("user_id,omitempty"))
    agent_id: str = field(default="", metadata=_json("agent_id,omitempty"))
    session_id: str = field(default="", metadata=_json("session_id,omitempty"))
    turn_id: str = field(default="", metadata=_json("turn_id,omitempty"))

    def is_empty(self) -> bool:
        return not (self.user_id or self.agent_id or self.session_id or self.turn_id)


@value_dataclass(frozen=True, slots=True, compiled_init=True)
class MemoryScope(_Wire):
    """The visibility boundary assigned at write time (``personal``/``team`` + id)."""

    _what = "scope"
    _prefix = "scope."

    type: str = field(default="", metadata=_json("type,omitempty"))
    id: str = field(default="", metadata=_json("id,omitempty"))

    def is_empty(self) -> bool:
        return not (self.type or self.id)


@value_dataclass(frozen=True, slots=True, compiled_init=True)
class Provenance(_Wire):
    """Upstream's v1 attribution shape, kept for compatibility with v1 plugins."""

    _what = "provenance"
    _prefix = "provenance."

    user_id: str = field(default="", metadata=_json("user_id,omitempty"))
    agent_id: str = field(default="", metadata=_json("agent_id,omitempty"))
    scope_type: str = field(default="", metadata=_json("scope_type,omitempty"))
    scope_id: str = field(default="", metadata=_json("scope_id,omitempty"))

    def is_empty(self) -> bool:
        return not (self.user_id or self.agent_id or self.scope_type or self.scope_id)


@value_dataclass(frozen=True, slots=True)
class TurnContext:
    """Capture boundaries of one turn; providers that do not model turns ignore it."""

    session_id: str = ""
    turn_id: str = ""
    started_at: datetime | None = None
    ended_at: datetime | None = None


@value_dataclass(frozen=True, slots=True)
class MemoryRef(_Wire):
    """A stored memory's address: the provider instance name and its id there."""

    _what = "ref"
    _prefix = "ref."

    provider: str = field(metadata=_json("provider"))
    id: str = field(metadata=_json("id"))


@value_dataclass(frozen=True, slots=True, compiled_init=True)
class MemoryItem(_Wire):
    """One memory to write.

    ``admission_text`` and ``turn`` are internal (never serialized), as upstream.
    """

    _what = "memory item"

    text: str = field(metadata=_json("text"))
    # upstream's struct declares the id first; here ``text`` is the one required argument
    id: str = field(default="", metadata=_json("id,omitempty", first=True))
    source: str = field(default="", metadata=_json("source,omitempty"))
    metadata: dict[str, str] = field(default_factory=dict, metadata=_json("metadata,omitempty"))
    created_at: datetime | None = field(default=None, metadata=_json("created_at"))
    tier: str = field(default="", metadata=_json("tier,omitempty"))
    expires_at: datetime | None = field(default=None, metadata=_json("expires_at,omitempty"))
    origin: MemoryOrigin = field(default_factory=MemoryOrigin, metadata=_json("origin"))
    scope: MemoryScope = field(default_factory=MemoryScope, metadata=_json("scope"))
    provenance: Provenance = field(default_factory=Provenance, metadata=_json("provenance"))
    admission_text: str = ""
    turn: TurnContext | None = None


@value_dataclass(frozen=True, slots=True, compiled_init=True)
class SearchQuery(_Wire):
    """A recall request to one provider.

    ``metadata`` is runtime/diagnostic context and must never become a provider-side filter
    (the SQLite provider's trusted ``workspace`` is the one documented exception); only
    ``filters`` may.
    """

    _what = "search query"

    text: str = field(metadata=_json("text"))
    limit: int = field(default=0, metadata=_json("limit,omitempty"))
    metadata: dict[str, str] = field(default_factory=dict, metadata=_json("metadata,omitempty"))
    filters: dict[str, str] = field(default_factory=dict, metadata=_json("filters,omitempty"))
    tiers: tuple[str, ...] = field(default=(), metadata=_json("tiers,omitempty"))


#: ``raw_score_kind`` prefix of a hit found by meaning (embedding similarity) rather than by
#: shared words.  Such a hit need not contain any query word, so term-based checks (the
#: passive insertion filter's ``require_query_terms``) must not reject it; its ``score`` is the
#: provider's calibration of that similarity onto paxm's scale.
SEMANTIC_SCORE_KIND_PREFIX = "semantic:"


@value_dataclass(slots=True, compiled_init=True)
class MemoryHit(_Wire):
    """One recalled memory.

    ``relevance`` and ``score`` are higher-is-better in ``[0, 1]``; ``raw_score`` and
    ``raw_score_kind`` keep the backend's own value.  ``ranking`` is the router's private
    calibrated ranking score and is never serialized.
    """

    _what = "memory hit"

    provider: str = field(metadata=_json("provider"))
    id: str = field(metadata=_json("id"))
    text: str = field(metadata=_json("text"))
    relevance: float = field(default=0.0, metadata=_json("relevance"))
    score: float = field(default=0.0, metadata=_json("score"))
    raw_score: float | None = field(default=None, metadata=_json("raw_score,omitempty"))
    raw_score_kind: str = field(default="", metadata=_json("raw_score_kind,omitempty"))
    source: str = field(default="", metadata=_json("source,omitempty"))
    metadata: dict[str, str] = field(default_factory=dict, metadata=_json("metadata,omitempty"))
    created_at: datetime | None = field(default=None, metadata=_json("created_at"))
    tier: str = field(default="", metadata=_json("tier,omitempty"))
    expires_at: datetime | None = field(default=None, metadata=_json("expires_at,omitempty"))
    origin: MemoryOrigin = field(default_factory=MemoryOrigin, metadata=_json("origin"))
    scope: MemoryScope = field(default_factory=MemoryScope, metadata=_json("scope"))
    provenance: Provenance = field(default_factory=Provenance, metadata=_json("provenance"))
    ranking: float = field(default=0.0, compare=False, repr=False)

    def copy(self, **changes: Any) -> MemoryHit:
        """Return a copy with ``changes`` applied (metadata dict copied)."""
        changes.setdefault("metadata", dict(self.metadata))
        return replace(self, **changes)


@value_dataclass(frozen=True, slots=True)
class ProviderErrorInfo(_Wire):
    """A provider failure reported inside a result (``provider_errors``)."""

    provider: str = field(metadata=_json("provider"))
    required: bool = field(metadata=_json("required"))
    op: str = field(metadata=_json("op"))
    error: str = field(metadata=_json("error"))


@value_dataclass(frozen=True, slots=True)
class ProviderRecall(_Wire):
    """Per-provider diagnostics of one recall (``provider_recalls``)."""

    provider: str = field(metadata=_json("provider"))
    duration_ms: int = field(metadata=_json("duration_ms"))
    outcome: str = field(metadata=_json("outcome"))  # "success" | "error" | "timeout"
    timeout_ms: int = field(default=0, metadata=_json("timeout_ms,omitempty"))
    bulkhead_busy: bool = field(default=False, metadata=_json("bulkhead_busy,omitempty"))
    candidate_count: int = field(default=0, metadata=_json("candidate_count,omitempty"))
    eligible_count: int = field(default=0, metadata=_json("eligible_count,omitempty"))
    raw_score_kinds: tuple[str, ...] = field(default=(), metadata=_json("raw_score_kinds,omitempty"))


@value_dataclass(frozen=True, slots=True)
class ProviderHealth(_Wire):
    """One provider's health as reported by ``config doctor``."""

    provider: str = field(metadata=_json("provider"))
    required: bool = field(metadata=_json("required"))
    ok: bool = field(metadata=_json("ok"))
    error: str = field(default="", metadata=_json("error,omitempty"))
