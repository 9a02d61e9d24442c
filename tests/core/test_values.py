"""Classes built by ``@value_dataclass`` behave as ``@dataclass`` would generate them.

Each one is compared with a twin made by :func:`dataclasses.make_dataclass` from the same
fields and parameters, i.e. with the methods ``@dataclass`` itself compiles: signature,
``repr``, equality, hashing, frozen-ness, the ``TypeError`` of a wrong call word for word,
``replace``/``asdict``/pickling and the docstring.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pickle
from datetime import UTC
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paxm_core.api import values

MODULES = (
    "paxm_core.anchors",
    "paxm_core.freshness",
    "paxm_core.hit_notes",
    "paxm_core.api.events",
    "paxm_core.api.integration",
    "paxm_core.api.protocols",
    "paxm_core.api.provider_config",
    "paxm_core.api.types",
    "paxm_core.capture.model",
    "paxm_core.config.catalog",
    "paxm_core.config.model",
    "paxm_core.passive.policy",
    "paxm_core.plugin_index",
    "paxm_core.plugins",
    "paxm_core.router.fanout",
    "paxm_core.router.forget",
    "paxm_core.router.policy",
    "paxm_core.telemetry.metrics",
    "paxm_core.telemetry.settings",
    "paxm_provider_sqlite.retrieval.analyzer",
    "paxm_provider_sqlite.retrieval.model",
)


def _built_by_values(cls: type) -> bool:
    # __repr__, not __init__: with compiled_init=True the __init__ is the one @dataclass compiles
    method = cls.__dict__.get("__repr__")
    return getattr(getattr(method, "__code__", None), "co_filename", "") == values.__file__


CLASSES = [
    cls
    for module in MODULES
    for cls in vars(importlib.import_module(module)).values()
    if isinstance(cls, type) and dataclasses.is_dataclass(cls) and cls.__module__ == module and _built_by_values(cls)
]


def _twin(cls: type) -> type:
    specs = []
    for f in dataclasses.fields(cls):
        kwargs: dict[str, Any] = {"repr": f.repr, "compare": f.compare, "hash": f.hash, "init": f.init}
        if f.default is not dataclasses.MISSING:
            kwargs["default"] = f.default
        if f.default_factory is not dataclasses.MISSING:
            kwargs["default_factory"] = f.default_factory
        specs.append((f.name, f.type, dataclasses.field(**kwargs)))
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    twin = dataclasses.make_dataclass(cls.__name__, specs, frozen=params.frozen, slots="__slots__" in cls.__dict__)
    twin.__qualname__ = cls.__qualname__
    if cls.__doc__ and not cls.__doc__.startswith(cls.__name__ + "("):
        twin.__doc__ = cls.__doc__
    return twin


TWINS = {cls: _twin(cls) for cls in CLASSES}

_text = st.text(max_size=6)
_STRATEGIES: dict[str, st.SearchStrategy[Any]] = {
    "str": _text,
    "int": st.integers(-3, 3),
    "bool": st.booleans(),
    "float": st.floats(allow_nan=False, allow_infinity=False),
    "float | None": st.none() | st.floats(allow_nan=False, allow_infinity=False),
    "datetime | None": st.none() | st.datetimes(timezones=st.just(UTC)),
    "dict[str, str]": st.dictionaries(_text, _text, max_size=2),
    "tuple[str, ...]": st.lists(_text, max_size=2).map(tuple),
    "list[str]": st.lists(_text, max_size=2),
}


def _kwargs(draw: st.DrawFn, cls: type) -> dict[str, Any]:
    """Every required field and a random subset of the others; values by annotation."""
    out = {}
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        if required or draw(st.booleans()):
            strategy = _STRATEGIES.get(str(f.type), st.sampled_from([None, 0, "v", ("t",)]))
            out[f.name] = draw(strategy)
    return out


def _outcome(func: Any) -> tuple[str, Any]:
    try:
        return ("ok", func())
    except Exception as exc:
        return (type(exc).__name__, str(exc))


def test_the_classes_on_the_start_paths_are_found() -> None:
    names = {cls.__qualname__ for cls in CLASSES}
    assert {"Config", "LimitsConfig", "Route", "SearchPolicy", "CaptureEvent", "Metrics", "ProviderType"} <= names
    assert len(CLASSES) >= 60


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_the_class_has_the_generated_shape(cls: type) -> None:
    twin = TWINS[cls]
    assert [f.name for f in dataclasses.fields(cls)] == [f.name for f in dataclasses.fields(twin)]
    assert cls.__dataclass_params__.frozen == twin.__dataclass_params__.frozen  # type: ignore[attr-defined]
    assert getattr(cls, "__slots__", None) == getattr(twin, "__slots__", None)
    assert cls.__match_args__ == twin.__match_args__  # type: ignore[attr-defined]
    assert str(inspect.signature(cls)) == str(inspect.signature(twin))
    assert (cls.__hash__ is None) == (twin.__hash__ is None)
    assert cls.__doc__ == twin.__doc__


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_methods_and_errors_match_the_generated_ones(cls: type, data: st.DataObject) -> None:
    twin = TWINS[cls]
    first, second = data.draw(st.composite(_kwargs)(cls)), data.draw(st.composite(_kwargs)(cls))
    a, b, ta, tb = cls(**first), cls(**second), twin(**first), twin(**second)
    assert repr(a) == repr(ta)
    assert (a == b) == (ta == tb) and (a != b) == (ta != tb)
    assert a.__eq__(ta) is NotImplemented  # another class is never equal
    assert _outcome(lambda: hash(a) == hash(cls(**first))) == _outcome(lambda: hash(ta) == hash(twin(**first)))
    for f in dataclasses.fields(cls):  # every instance gets its own factory value
        if f.default_factory is not dataclasses.MISSING and f.name not in first:
            assert repr(getattr(a, f.name)) == repr(getattr(ta, f.name))
            if isinstance(getattr(a, f.name), (list, dict, set)):
                assert getattr(a, f.name) is not getattr(cls(**first), f.name)
    name = dataclasses.fields(cls)[0].name
    assert _outcome(lambda: setattr(a, name, "x")) == _outcome(lambda: setattr(ta, name, "x"))
    c, tc = cls(**first), twin(**first)
    assert _outcome(lambda: delattr(c, name)) == _outcome(lambda: delattr(tc, name))
    assert _outcome(lambda: setattr(c, "not_a_field", 1))[0] == _outcome(lambda: setattr(tc, "not_a_field", 1))[0]
    assert repr(dataclasses.replace(a, **second)) == repr(dataclasses.replace(ta, **second))
    assert _outcome(lambda: repr(dataclasses.asdict(a))) == _outcome(lambda: repr(dataclasses.asdict(ta)))
    # (the twin is no importable class: not pickled; a lambda default is never picklable)
    restored = _outcome(lambda: pickle.loads(pickle.dumps(a)))
    if restored[0] == "ok":
        assert type(restored[1]) is cls and repr(restored[1]) == repr(a)
    names = [f.name for f in dataclasses.fields(cls) if f.init]
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
        ((), {}),
        ((), {**first, "not_a_field": 1}),
        (tuple([None] * (len(names) + 1)), {}),
        (("x",), {names[0]: "y"} if names else {}),
    ]
    for args, kwargs in calls:
        ours = _outcome(lambda a=args, k=kwargs: repr(cls(*a, **k)))
        assert ours == _outcome(lambda a=args, k=kwargs: repr(twin(*a, **k)))


def test_a_class_that_writes_its_own_methods_is_refused() -> None:
    class Written:
        x: int = 0

        def __eq__(self, other: object) -> bool:
            return True

    with pytest.raises(TypeError, match="writes __eq__"):
        values.value_dataclass(Written)
