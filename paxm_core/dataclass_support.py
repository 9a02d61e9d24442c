"""Helpers for dataclasses whose ``__init__``/``__repr__``/``__eq__``/``__hash__`` are written out.

``@dataclass`` builds those methods by compiling generated source text each time a module is
imported: about a millisecond per class, which the hook daemon's cold start pays for every
class on its path (``benchmarks/hook_bench.py``, first prompt).  The wire types
(:mod:`paxm_core.types`), the hook events and the provider descriptions therefore use
``@dataclass(init=False, repr=False, eq=False)`` with the methods written in the class, doing
exactly what the generated ones do; ``tests/core/test_types_dataclass.py`` compares each with a
``@dataclass`` twin.  They stay dataclasses: ``fields``, ``replace``, ``asdict``, frozen-ness and
pickling behave as before.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FACTORY", "set_field"]


class _Factory:
    """The default of a field with a ``default_factory`` (``@dataclass`` shows it so too)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<factory>"


#: the ``__init__`` default of a field with a ``default_factory``: "call the factory"
FACTORY: Any = _Factory()

#: how a frozen dataclass's ``__init__`` sets a field (its own ``__setattr__`` refuses)
set_field = object.__setattr__
