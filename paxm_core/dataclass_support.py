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

:func:`value_dataclass` does the same for a class without a written ``__init__`` (the config
model, the capture model, the router's and the passive runtime's policies): its ``__init__`` is
one shared function driven by a per-class plan of the fields, with the signature ``@dataclass``
would give it (``inspect.signature``), and a frozen class gets its ``__setattr__``/``__delattr__``
as closures, not compiled text.  Type checkers see ``@dataclass`` (``dataclass_transform``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, FrozenInstanceError, dataclass, field
from dataclasses import fields as dataclass_fields
from operator import attrgetter
from typing import Any, TypeVar, dataclass_transform, overload

__all__ = ["FACTORY", "set_field", "value_dataclass", "value_methods"]

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


@overload
def value_dataclass(cls: type[_T], /) -> type[_T]: ...


@overload
def value_dataclass(*, frozen: bool = False, slots: bool = False) -> Callable[[type[_T]], type[_T]]: ...


@dataclass_transform(field_specifiers=(field,))
def value_dataclass(
    cls: type[_T] | None = None, /, *, frozen: bool = False, slots: bool = False
) -> type[_T] | Callable[[type[_T]], type[_T]]:
    """``@dataclass`` / ``@dataclass(frozen=..., slots=...)`` without compiling any source.

    The class is a dataclass (``fields``, ``replace``, ``asdict``, ``__dataclass_params__``,
    ``__match_args__``) whose ``__init__``, ``__repr__``, ``__eq__``, ``__hash__`` and, when
    frozen, ``__setattr__``/``__delattr__`` behave as the generated ones.  ``InitVar`` fields
    and ``kw_only`` are not supported (none of paxm's classes uses them); a class that defines
    its own ``__init__`` keeps it.
    """

    def wrap(target: type[_T]) -> type[_T]:
        return _build(target, frozen=frozen, slots=slots)

    return wrap if cls is None else wrap(cls)


def _build(cls: type[_T], *, frozen: bool, slots: bool) -> type[_T]:
    written = sorted({"__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__"} & set(cls.__dict__))
    if written:  # @dataclass would keep them (and derive the hash from them): not supported here
        raise TypeError(f"value_dataclass: {cls.__qualname__} writes {', '.join(written)}; use @dataclass")
    own_init = "__init__" in cls.__dict__
    # ``@dataclass`` names an undocumented class by its signature, found with ``inspect``; with
    # init=False that is object's, parsed from its text signature by ``tokenize`` (whose regex
    # compile costs ~5 ms on the daemon's start).  A placeholder skips that; the docstring
    # ``@dataclass`` would give is set below, from the ``__init__`` the class ends up with.
    undocumented = not cls.__dict__.get("__doc__")
    if undocumented:
        cls.__doc__ = cls.__name__
    # frozen=False: ``@dataclass`` would compile __setattr__/__delattr__ for a frozen class
    built = dataclass(init=False, repr=False, eq=False, frozen=False, slots=slots)(cls)
    if frozen:
        _freeze(built, cls)
    if not own_init:
        _add_init(built, frozen=frozen)
    if undocumented:
        built.__doc__ = _signature_doc(built)
    return value_methods(built)


def _signature_doc(cls: type) -> str:
    """The docstring ``@dataclass`` gives a class without one: its name and signature."""
    import inspect  # dataclasses imported it already: free

    try:
        # a written-out ``__init__`` under postponed annotations says ``-> 'None'``: the same
        # docstring as the generated one, so writing ``__init__`` out for speed changes nothing
        text = str(inspect.signature(cls)).replace(" -> None", "").replace(" -> 'None'", "")
        return cls.__name__ + text
    except (TypeError, ValueError):
        return cls.__name__


def _freeze(cls: type, original: type) -> None:
    """What ``@dataclass(frozen=True)`` adds: refuse assignment and deletion of fields.

    ``original`` is the class as written: with ``slots=True`` the dataclass is a new class, and
    the methods ``@dataclass`` generates refer to the written one (so on a slotted instance only
    the field names are refused, and another name fails in ``super()``); kept so, the twin
    tests compare the two.
    """
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    frozen_params = object.__new__(type(params))
    for name in type(params).__slots__:
        object.__setattr__(frozen_params, name, getattr(params, name))
    object.__setattr__(frozen_params, "frozen", True)
    cls.__dataclass_params__ = frozen_params  # type: ignore[attr-defined]
    names = frozenset(f.name for f in dataclass_fields(cls))
    written: Any = original  # mypy narrows ``type(self) is written`` into a non-type

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is written or name in names:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(written, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is written or name in names:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(written, self).__delattr__(name)

    __setattr__.__qualname__ = f"{cls.__qualname__}.__setattr__"
    __delattr__.__qualname__ = f"{cls.__qualname__}.__delattr__"
    cls.__setattr__ = __setattr__  # type: ignore[method-assign,assignment]
    cls.__delattr__ = __delattr__  # type: ignore[method-assign,assignment]
    if cls is not original:  # slotted: pickling restores the slots around the refusing __setattr__, as @dataclass does
        field_names = tuple(f.name for f in dataclass_fields(cls))

        def __getstate__(self: Any) -> list[Any]:
            return [getattr(self, name) for name in field_names]

        def __setstate__(self: Any, state: list[Any]) -> None:
            for name, value in zip(field_names, state, strict=False):
                object.__setattr__(self, name, value)

        cls.__getstate__ = __getstate__  # type: ignore[method-assign,assignment]
        cls.__setstate__ = __setstate__  # type: ignore[attr-defined]


def _add_init(cls: type, *, frozen: bool) -> None:
    """An ``__init__`` for ``cls``'s fields: positional or keyword, defaults and factories."""
    import inspect  # dataclasses imported it already: free

    fields = dataclass_fields(cls)
    qualname = f"{cls.__qualname__}.__init__"
    arguments = tuple(f.name for f in fields if f.init)
    accepted = frozenset(arguments)
    required = tuple(f.name for f in fields if f.init and f.default is MISSING and f.default_factory is MISSING)
    # (name, default, factory): every field the generated __init__ sets, in order
    plan = tuple(
        (f.name, f.default, None if f.default_factory is MISSING else f.default_factory)
        for f in fields
        if f.init or f.default is not MISSING or f.default_factory is not MISSING
    )
    set_value = object.__setattr__ if frozen else setattr
    post_init = getattr(cls, "__post_init__", None) is not None

    lowest = len(required) + 1  # the counts in CPython's messages include ``self``
    takes = f"{lowest}" if lowest == len(arguments) + 1 else f"from {lowest} to {len(arguments) + 1}"

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if len(args) > len(arguments):
            plural = "" if len(arguments) == 0 else "s"
            raise TypeError(f"{qualname}() takes {takes} positional argument{plural} but {len(args) + 1} were given")
        for name in kwargs:
            if name not in accepted:
                raise TypeError(f"{qualname}() got an unexpected keyword argument {name!r}")
            if name in arguments[: len(args)]:
                raise TypeError(f"{qualname}() got multiple values for argument {name!r}")
        given = dict(zip(arguments, args, strict=False))
        given.update(kwargs)
        missing = [name for name in required if name not in given]
        if missing:
            raise TypeError(f"{qualname}() missing {_missing_message(missing)}")
        for name, default, factory in plan:
            if name in given and given[name] is not FACTORY:
                value = given[name]
            elif factory is not None:
                value = factory()
            else:
                value = default
            set_value(self, name, value)
        if post_init:
            self.__post_init__()

    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    parameters = [inspect.Parameter("self", kind)]
    for f in fields:
        if f.init:
            default = FACTORY if f.default_factory is not MISSING else f.default
            shown = inspect.Parameter.empty if default is MISSING else default
            parameters.append(inspect.Parameter(f.name, kind, default=shown, annotation=f.type))
    __init__.__signature__ = inspect.Signature(parameters, return_annotation=None)  # type: ignore[attr-defined]
    __init__.__qualname__ = qualname
    cls.__init__ = __init__  # type: ignore[misc]


def _missing_message(names: list[str]) -> str:
    """``2 required positional arguments: 'a' and 'b'``, worded as CPython words it."""
    quoted = [repr(name) for name in names]
    if len(quoted) == 1:
        listed = quoted[0]
    elif len(quoted) == 2:
        listed = f"{quoted[0]} and {quoted[1]}"
    else:
        listed = ", ".join(quoted[:-1]) + f", and {quoted[-1]}"
    plural = "" if len(names) == 1 else "s"
    return f"{len(names)} required positional argument{plural}: {listed}"
