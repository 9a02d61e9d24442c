"""The wire types' written-out dataclass methods behave as ``@dataclass`` would generate them.

``paxm_core.types`` writes ``__init__``, ``__repr__``, ``__eq__`` and ``__hash__`` by hand (the
generated ones are compiled on every import, which the hook daemon's cold start pays for).
Each class is compared here with a twin built by :func:`dataclasses.make_dataclass` from the
same fields and parameters, i.e. with the methods ``@dataclass`` itself generates.
"""

from __future__ import annotations

import dataclasses
import inspect
import pickle
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paxm_contracttest.dataclass_twin import dataclass_twin
from paxm_core import generated_file as GF
from paxm_core import integration as I
from paxm_core import plugin_index as X
from paxm_core import plugins as G
from paxm_core import protocols as P
from paxm_core import types as T
from paxm_core.capture import model as CM
from paxm_core.config import model as CF
from paxm_core.passive import events as E
from paxm_core.passive import policy as PP
from paxm_core.passive.client_command import HookArgv
from paxm_core.passive.compose import PassiveWrite
from paxm_core.passive.insertion import InsertionPolicy
from paxm_core.passive.templates import _Node
from paxm_core.provider_config import ProviderConfig
from paxm_core.router import fanout as FO
from paxm_core.router import forget as FG
from paxm_core.router import policy as RP
from paxm_core.telemetry import metrics as M
from paxm_core.telemetry.history import HistorySummary
from paxm_core.telemetry.settings import TelemetrySettings

CLASSES = [
    T.MemoryOrigin,
    T.MemoryScope,
    T.Provenance,
    T.TurnContext,
    T.MemoryRef,
    T.MemoryItem,
    T.SearchQuery,
    T.MemoryHit,
    T.ProviderErrorInfo,
    T.ProviderRecall,
    T.ProviderHealth,
    E.HookMessage,
    E.HookEvent,
    E.HookResult,
    P.ConfigKey,
    P.ProviderType,
    I.Finding,
    I.PastTurn,
    G.LoadError,
    G.PluginInfo,
    X.EntryPointRecord,
    X.PluginIndex,
]
#: the classes built by ``value_dataclass`` (a shared ``__init__``, no written one)
GENERIC = [
    *(getattr(CF, name) for name in CF.__all__ if name.endswith("Config") and name != "ProviderConfig"),
    *(
        getattr(CM, name)
        for name in (
            "CaptureEvent",
            "AppendResult",
            "InboxEntry",
            "DrainReport",
            "DeliveryClaim",
            "DeliveryOutcome",
            "DeadDelivery",
            "QueueStatus",
            "FlushReport",
        )
    ),
    RP.Route,
    RP.SearchPolicy,
    RP.PutPolicy,
    RP.RecallResult,
    RP.RememberResult,
    PP.WriteSettings,
    PP.RecallSettings,
    PP.HookSettings,
    ProviderConfig,
    *(getattr(M, name) for name in ("Counter", "DailyMetric", "Metrics")),
    FO.Outcome,
    FG.ProviderForget,
    FG.ForgetResult,
    PassiveWrite,
    InsertionPolicy,
    HookArgv,
    HistorySummary,
    TelemetrySettings,
    GF.NativeEvent,
    GF.GeneratedFile,
    _Node,
]
CLASSES += GENERIC


TWINS = {cls: dataclass_twin(cls) for cls in CLASSES}

_text = st.text(max_size=8)
_time = st.none() | st.datetimes(timezones=st.just(UTC))
_STRATEGIES: dict[str, st.SearchStrategy[Any]] = {
    "str": _text,
    "int": st.integers(-5, 5),
    "bool": st.booleans(),
    "float": st.floats(allow_nan=False) | st.just(float("nan")),
    "float | None": st.none() | st.floats(allow_nan=False),
    "datetime | None": _time,
    "dict[str, str]": st.dictionaries(_text, _text, max_size=2),
    "tuple[str, ...]": st.lists(_text, max_size=2).map(tuple),
}


def _value(type_name: str) -> st.SearchStrategy[Any]:
    if type_name in _STRATEGIES:
        return _STRATEGIES[type_name]
    nested = {"MemoryOrigin": T.MemoryOrigin, "MemoryScope": T.MemoryScope, "Provenance": T.Provenance}
    if type_name in nested:
        cls = nested[type_name]
        return st.builds(cls, *[_text for _ in dataclasses.fields(cls)])
    if type_name == "TurnContext | None":
        return st.none() | st.builds(T.TurnContext, _text, _text, _time, _time)
    if type_name == "list[HookMessage]":
        return st.lists(st.builds(E.HookMessage, _text, _text, _text), max_size=2)
    if type_name in ("list[str]", "list[Any]"):
        return st.lists(_text, max_size=2)
    if type_name == "frozenset[str]":
        return st.frozensets(_text, max_size=2)
    if type_name == "tuple[ConfigKey, ...]":
        return st.lists(st.builds(P.ConfigKey, _text), max_size=2).map(tuple)
    # callables, ``Any``, ``object``: any value with a stable repr will do
    return st.sampled_from([None, 0, "v", ("t",), len])


@st.composite
def _kwargs(draw: st.DrawFn, cls: type) -> dict[str, Any]:
    """Keyword arguments for ``cls``: every required field, a random subset of the others."""
    out = {}
    for f in dataclasses.fields(cls):
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        if required or draw(st.booleans()):
            out[f.name] = draw(_value(str(f.type)))
    return out


def _outcome(func: Any) -> tuple[str, Any]:
    try:
        return ("ok", func())
    except Exception as exc:
        return (type(exc).__name__, str(exc))


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_the_class_is_still_a_frozen_slotted_dataclass(cls: type) -> None:
    twin = TWINS[cls]
    assert dataclasses.is_dataclass(cls)
    assert [f.name for f in dataclasses.fields(cls)] == [f.name for f in dataclasses.fields(twin)]
    assert cls.__dataclass_params__.frozen == twin.__dataclass_params__.frozen  # type: ignore[attr-defined]
    assert getattr(cls, "__slots__", None) == getattr(twin, "__slots__", None)
    assert cls.__match_args__ == twin.__match_args__  # type: ignore[attr-defined]
    ours, theirs = inspect.signature(cls), inspect.signature(twin)
    assert [(p.name, p.kind) for p in ours.parameters.values()] == [
        (p.name, p.kind) for p in theirs.parameters.values()
    ]
    assert [repr(p.default) for p in ours.parameters.values()] == [repr(p.default) for p in theirs.parameters.values()]
    assert (cls.__hash__ is None) == (twin.__hash__ is None)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_methods_match_the_generated_ones(cls: type, data: st.DataObject) -> None:
    twin = TWINS[cls]
    first, second = data.draw(_kwargs(cls)), data.draw(_kwargs(cls))
    a, b = cls(**first), cls(**second)
    ta, tb = twin(**first), twin(**second)
    assert repr(a) == repr(ta)
    assert (a == b) == (ta == tb)
    assert (a == a) == (ta == ta)  # noqa: PLR0124  # NaN fields make even this False
    assert (a != b) == (ta != tb)
    assert (a == ta) is False and a.__eq__(ta) is NotImplemented  # another class is never equal
    assert _outcome(lambda: hash(a) == hash(cls(**first))) == _outcome(lambda: hash(ta) == hash(twin(**first)))
    assert _outcome(lambda: hash(a))[0] == _outcome(lambda: hash(ta))[0]
    # positional construction, in field order
    positional = [first[f.name] for f in dataclasses.fields(cls) if f.name in first]
    if len(positional) == len(first) and list(first) == [f.name for f in dataclasses.fields(cls)][: len(first)]:
        assert repr(cls(*positional)) == repr(twin(*positional))
    # default factories give every instance its own value
    for f in dataclasses.fields(cls):
        if f.default_factory is not dataclasses.MISSING and f.name not in first:
            assert getattr(a, f.name) == getattr(ta, f.name)
            if isinstance(getattr(a, f.name), dict):
                assert getattr(a, f.name) is not getattr(cls(**first), f.name)
    name = dataclasses.fields(cls)[0].name
    assert _outcome(lambda: setattr(a, name, "x")) == _outcome(lambda: setattr(ta, name, "x"))
    c, tc = cls(**first), twin(**first)
    assert _outcome(lambda: delattr(c, name)) == _outcome(lambda: delattr(tc, name))
    assert _outcome(lambda: setattr(c, "not_a_field", 1))[0] == _outcome(lambda: setattr(tc, "not_a_field", 1))[0]
    # dataclasses' helpers and pickling
    changes = data.draw(_kwargs(cls))
    assert repr(dataclasses.replace(a, **changes)) == repr(dataclasses.replace(ta, **changes))
    assert _outcome(lambda: repr(dataclasses.asdict(a))) == _outcome(lambda: repr(dataclasses.asdict(ta)))
    assert _outcome(lambda: repr(dataclasses.astuple(a))) == _outcome(lambda: repr(dataclasses.astuple(ta)))
    restored = pickle.loads(pickle.dumps(a))
    # not repr: a frozenset rebuilt by unpickling may iterate in another order than the original
    assert type(restored) is cls
    assert restored == a or "nan" in repr(a)  # a NaN field is unequal to a copy of itself


def test_memory_item_replace_and_required_arguments() -> None:
    item = T.MemoryItem("text", id="m1", created_at=datetime(2026, 1, 2, tzinfo=UTC))
    assert item.replace(tier="stm") == T.MemoryItem(
        "text", id="m1", tier="stm", created_at=datetime(2026, 1, 2, tzinfo=UTC)
    )
    with pytest.raises(TypeError):
        T.MemoryItem()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        T.MemoryItem("a", nope=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        item.replace(nope=1)
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'text'"):
        item.text = "x"  # type: ignore[misc]
    hit = T.MemoryHit("p", "1", "t", ranking=0.5)
    assert hit == T.MemoryHit("p", "1", "t", ranking=0.9)  # ranking is not compared
    assert "ranking" not in repr(hit)
    hit.score = 0.7  # hits stay mutable
    assert hit.copy(score=0.1).score == 0.1 and hit.score == 0.7
    with pytest.raises(TypeError):
        hash(hit)


@pytest.mark.parametrize("cls", GENERIC, ids=lambda c: c.__name__)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_the_shared_init_fails_as_the_generated_one(cls: type, data: st.DataObject) -> None:
    """Wrong calls raise the same ``TypeError``, word for word, as ``@dataclass``'s ``__init__``."""
    twin = TWINS[cls]
    names = [f.name for f in dataclasses.fields(cls)]
    good = data.draw(_kwargs(cls))
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
        ((), {}),  # every required argument missing
        ((), {**good, "not_a_field": 1}),
        (tuple([None] * (len(names) + data.draw(st.integers(1, 2)))), {}),  # too many positional
        (("x",), {names[0]: "y"}),  # the first argument twice
        ((), {k: v for k, v in good.items() if data.draw(st.booleans())}),
    ]
    for args, kwargs in calls:
        ours = _outcome(lambda a=args, k=kwargs: repr(cls(*a, **k)))
        assert ours == _outcome(lambda a=args, k=kwargs: repr(twin(*a, **k)))


@pytest.mark.parametrize("cls", GENERIC, ids=lambda c: c.__name__)
def test_every_instance_gets_its_own_factory_value(cls: type) -> None:
    factories = [f for f in dataclasses.fields(cls) if f.default_factory is not dataclasses.MISSING]
    required = {
        f.name: None
        for f in dataclasses.fields(cls)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }
    a, b, twin = cls(**required), cls(**required), TWINS[cls](**required)
    for f in factories:
        assert getattr(a, f.name) == getattr(twin, f.name)
        if isinstance(getattr(a, f.name), (list, dict, set)) or dataclasses.is_dataclass(getattr(a, f.name)):
            assert getattr(a, f.name) is not getattr(b, f.name)
    assert repr(a) == repr(twin)


def test_a_nested_config_round_trips_through_pickle_replace_and_asdict() -> None:
    config = CF.Config(version=2, providers={})
    config.agents["claude"] = CF.AgentConfig(enabled=True)
    config.identity.user_id = "u"
    assert pickle.loads(pickle.dumps(config)) == config
    changed = dataclasses.replace(config, version=3)
    assert changed.version == 3 and changed.agents is config.agents
    assert dataclasses.asdict(config)["agents"]["claude"]["enabled"] is True
    assert config != CF.Config()  # eq compares the nested values
    with pytest.raises(TypeError, match="unhashable"):
        hash(config)


@pytest.mark.parametrize("cls", [_Node], ids=lambda c: c.__name__)
def test_an_undocumented_class_gets_the_docstring_dataclass_would_give(cls: type) -> None:
    # value_dataclass sets it without inspect's text-signature parse of object.__init__
    assert cls.__doc__ == TWINS[cls].__doc__
    assert cls.__doc__.startswith(cls.__name__ + "(kind" if cls is _Node else cls.__name__ + "(route")


def test_a_documented_class_keeps_its_docstring() -> None:
    assert RP.Route.__doc__ and not RP.Route.__doc__.startswith("Route(")
