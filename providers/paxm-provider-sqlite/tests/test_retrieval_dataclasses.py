"""The retrieval pipeline's value classes behave as the ``@dataclass`` classes they replace.

They are built with :func:`paxm_core.dataclass_support.value_dataclass` (no methods compiled
from source on the daemon's start); each is compared with a twin that ``@dataclass`` itself
generates from the same fields.
"""

from __future__ import annotations

import dataclasses
import inspect
import pickle
from typing import Any

import pytest

from paxm_contracttest.dataclass_twin import dataclass_twin
from paxm_provider_sqlite.retrieval import analyzer as A
from paxm_provider_sqlite.retrieval import excerpt as X
from paxm_provider_sqlite.retrieval import model as M

#: (class, sample positional arguments)
SAMPLES: list[tuple[type, tuple[Any, ...]]] = [
    (M.Request, ("deploy cache", 5, ("ltm",), "/w", {"a": "b"})),
    (M.Candidate, (1, "m1", "text", "src", "{}", "2026-01-01", "ltm", "", 1.5, 0.5, 0.1, 0.2, 3, {"k": "v"})),
    (M.Trace, (["a"], ["b"], {"exact": 1}, 1, 2, 3, "exact")),
    (A.IndexedText, ("a b", "ab", 3)),
    (A.Group, (("deploy",), ("de", "ploy"), "deploy", True)),
    (A.QueryAnalysis, ([A.Group(("x",))], ["x"], ["x"])),
    (X._Scored, (0, 2, True, False, 0.5)),
]


def _params(cls: type) -> str:
    """The ``__init__`` parameters as text (a written ``__init__`` annotates its return)."""
    return str(inspect.signature(cls).replace(return_annotation=inspect.Signature.empty))


def _hash(value: object) -> object:
    try:
        return hash(value)
    except TypeError as exc:
        return str(exc)


def _required(cls: type) -> tuple[Any, ...]:
    return tuple(
        f"v{i}"
        for i, f in enumerate(dataclasses.fields(cls))
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    )


@pytest.mark.parametrize(("cls", "args"), SAMPLES, ids=lambda v: getattr(v, "__name__", ""))
def test_the_methods_match_the_generated_ones(cls: type, args: tuple[Any, ...]) -> None:
    twin = dataclass_twin(cls)
    assert dataclasses.is_dataclass(cls)
    assert cls.__dataclass_params__.frozen == twin.__dataclass_params__.frozen  # type: ignore[attr-defined]
    assert _params(cls) == _params(twin)
    ours, theirs = cls(*args), twin(*args)
    assert repr(ours) == repr(theirs)
    assert dataclasses.astuple(ours) == dataclasses.astuple(theirs)
    assert ours == cls(*args) and ours != cls(*_required(cls))
    assert (ours == theirs) is False  # a different class, as with two @dataclass classes
    if cls.__dataclass_params__.frozen:  # type: ignore[attr-defined]
        assert _hash(ours) == _hash(theirs)  # a dict field fails in both
        with pytest.raises(dataclasses.FrozenInstanceError):
            ours.__setattr__(dataclasses.fields(cls)[0].name, None)
    else:
        with pytest.raises(TypeError, match="unhashable"):
            hash(ours)
    assert pickle.loads(pickle.dumps(ours)) == ours
    assert dataclasses.replace(ours) == ours


@pytest.mark.parametrize(("cls", "args"), SAMPLES, ids=lambda v: getattr(v, "__name__", ""))
def test_defaults_and_factories_match(cls: type, args: tuple[Any, ...]) -> None:
    twin = dataclass_twin(cls)
    required = _required(cls)
    a, b, theirs = cls(*required), cls(*required), twin(*required)
    assert repr(a) == repr(theirs)
    for f in dataclasses.fields(cls):
        if f.default_factory is not dataclasses.MISSING:
            assert getattr(a, f.name) is not getattr(b, f.name)
    with pytest.raises(TypeError):
        cls(*args, "one too many")
