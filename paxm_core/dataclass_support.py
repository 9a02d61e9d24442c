"""Dataclasses without the methods ``@dataclass`` compiles from source on every import.

``@dataclass`` builds ``__init__``, ``__repr__``, ``__eq__`` and ``__hash__`` by compiling
generated source text each time a module is imported: about a millisecond per class, which the
hook daemon's cold start pays for every class on its path (``benchmarks/hook_bench.py``, first
prompt).  The wire types (:mod:`paxm_core.types`), the hook events and the provider
descriptions therefore use ``@dataclass(init=False, repr=False, eq=False)``: ``__init__`` is
written in the class (its signature is the class's API), and :func:`value_methods` adds the
other three, built from the fields without compiling anything.
``tests/core/test_types_dataclass.py`` compares each class with a ``@dataclass`` twin.  They
stay dataclasses: ``fields``, ``replace``, ``asdict``, frozen-ness and pickling behave as before.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields as dataclass_fields
from operator import attrgetter
from typing import Any, TypeVar

__all__ = ["FACTORY", "set_field", "value_methods"]

_T = TypeVar("_T")


class _Factory:
    """The default of a field with a ``default_factory`` (``@dataclass`` shows it so too)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<factory>"


#: the ``__init__`` default of a field with a ``default_factory``: "call the factory"
FACTORY: Any = _Factory()

#: how a frozen dataclass's ``__init__`` sets a field (its own ``__setattr__`` refuses)
set_field = object.__setattr__


def value_methods(cls: type[_T]) -> type[_T]:
    """Give a ``@dataclass(init=False, repr=False, eq=False)`` the ``__repr__``, ``__eq__`` and
    ``__hash__`` that ``@dataclass`` would have generated, without compiling any source.

    Apply it above ``@dataclass``.  The fields' ``repr``/``compare``/``hash`` flags are honoured,
    and a class that is not frozen is unhashable, as ``@dataclass(eq=True)`` makes it.
    """
    fields = dataclass_fields(cls)  # type: ignore[arg-type]
    shown = tuple(f.name for f in fields if f.repr)
    compared = _tuple_getter(tuple(f.name for f in fields if f.compare))
    hashed = _tuple_getter(tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash)))

    def __repr__(self: Any) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in shown)
        return f"{self.__class__.__qualname__}({inner})"

    def __eq__(self: Any, other: Any) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return bool(compared(self) == compared(other))

    def __hash__(self: Any) -> int:
        return hash(hashed(self))

    __repr__.__qualname__ = f"{cls.__qualname__}.__repr__"
    __eq__.__qualname__ = f"{cls.__qualname__}.__eq__"
    __hash__.__qualname__ = f"{cls.__qualname__}.__hash__"
    cls.__repr__ = __repr__  # type: ignore[method-assign]
    cls.__eq__ = __eq__  # type: ignore[method-assign]
    cls.__hash__ = __hash__ if cls.__dataclass_params__.frozen else None  # type: ignore[assignment,attr-defined]
    return cls


def _tuple_getter(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """``obj -> (obj.a, obj.b, ...)`` at C speed (``attrgetter`` of one name returns no tuple)."""
    if not names:
        return lambda obj: ()
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return attrgetter(*names)
