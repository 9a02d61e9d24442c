"""``@value_dataclass``: a dataclass whose methods are not compiled from source on import.

Python 3.11's ``@dataclass`` writes ``__init__``, ``__repr__``, ``__eq__`` (and, when frozen,
``__hash__``, ``__setattr__``, ``__delattr__``) as source text and compiles each with ``exec``
every time the module is imported: about 2.6M instructions for a plain class and 4.7M for a
frozen slotted one.  The hook daemon's start (the first prompt after the daemon was down) and
``paxm recall`` import about a hundred such classes, most of them configuration and policy
records built a few times per process.  Those use ``@value_dataclass``: the same dataclass
(``fields``, ``replace``, ``asdict``, ``__match_args__``, frozen-ness, slots, pickling), whose
``__init__`` is one shared function driven by the class's fields (with the signature
``@dataclass`` gives it) and whose other methods are closures.  Types built in hot loops
(``MemoryItem``, ``MemoryHit``, ``SearchQuery`` and the attribution they hold) use
``@value_dataclass(compiled_init=True)``: their ``__init__`` (and, frozen, ``__setattr__`` and
``__delattr__``) is the one ``@dataclass`` compiles, faster per call, and only ``__repr__``,
``__eq__`` and ``__hash__`` are shared.  ``InitVar`` and ``kw_only`` are not supported; a class that writes its own
``__repr__``/``__eq__``/``__hash__``/``__setattr__``/``__delattr__`` uses ``@dataclass``.
``tests/core/test_values.py`` compares every class built so with its ``@dataclass`` twin.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import MISSING, Field, FrozenInstanceError, dataclass, field, fields
from operator import attrgetter
from typing import Any, TypeVar, dataclass_transform, overload

__all__ = ["value_dataclass"]

_T = TypeVar("_T")


class _Factory:
    """The signature's default of a field with a ``default_factory`` (shown as ``@dataclass`` does)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY: Any = _Factory()


@overload
def value_dataclass(cls: type[_T], /) -> type[_T]: ...


@overload
def value_dataclass(
    *, frozen: bool = False, slots: bool = False, compiled_init: bool = False
) -> Callable[[type[_T]], type[_T]]: ...


@dataclass_transform(field_specifiers=(field,))
def value_dataclass(
    cls: type[_T] | None = None, /, *, frozen: bool = False, slots: bool = False, compiled_init: bool = False
) -> type[_T] | Callable[[type[_T]], type[_T]]:
    """``@dataclass`` / ``@dataclass(frozen=..., slots=...)`` without compiling any source.

    :param compiled_init: let ``@dataclass`` compile ``__init__`` (and, frozen, the refusing
        ``__setattr__``/``__delattr__``): for types built in hot loops.
    """

    def wrap(target: type[_T]) -> type[_T]:
        return _build(target, frozen=frozen, slots=slots, compiled_init=compiled_init)

    return wrap if cls is None else wrap(cls)


def _build(cls: type[_T], *, frozen: bool, slots: bool, compiled_init: bool = False) -> type[_T]:
    written = sorted({"__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__"} & set(cls.__dict__))
    if written:
        raise TypeError(f"value_dataclass: {cls.__qualname__} writes {', '.join(written)}; use @dataclass")
    # without a docstring @dataclass would parse object's text signature (tokenize's regexes);
    # a placeholder skips that, and the docstring @dataclass gives is set below
    undocumented = not cls.__dict__.get("__doc__")
    if undocumented:
        cls.__doc__ = cls.__name__
    if compiled_init:  # @dataclass's own __init__ (and frozen methods); no __hash__ without eq
        built = dataclass(init=True, repr=False, eq=False, frozen=frozen, slots=slots)(cls)
        all_fields = fields(built)  # type: ignore[arg-type]
    else:
        built = dataclass(init=False, repr=False, eq=False, frozen=False, slots=slots)(cls)
        all_fields = fields(built)  # type: ignore[arg-type]
        if frozen:
            _freeze(built, cls, all_fields)
        _add_init(built, all_fields, frozen=frozen)
    _add_value_methods(built, all_fields, frozen=frozen)
    if undocumented:
        built.__doc__ = built.__name__ + str(inspect.signature(built)).replace(" -> None", "")
    return built


def _add_value_methods(cls: type, all_fields: tuple[Field[Any], ...], *, frozen: bool) -> None:
    """``__repr__``, ``__eq__`` and (frozen) ``__hash__`` as ``@dataclass`` generates them."""
    shown = tuple(f.name for f in all_fields if f.repr)
    compared = _tuple_getter(tuple(f.name for f in all_fields if f.compare))
    hashed = _tuple_getter(tuple(f.name for f in all_fields if (f.compare if f.hash is None else f.hash)))

    def __repr__(self: Any) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in shown)
        return f"{self.__class__.__qualname__}({inner})"

    def __eq__(self: Any, other: Any) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return bool(compared(self) == compared(other))

    def __hash__(self: Any) -> int:
        return hash(hashed(self))

    for method in (__repr__, __eq__, __hash__):
        method.__qualname__ = f"{cls.__qualname__}.{method.__name__}"
    cls.__repr__ = __repr__  # type: ignore[method-assign,assignment]
    cls.__eq__ = __eq__  # type: ignore[method-assign,assignment]
    cls.__hash__ = __hash__ if frozen else None  # type: ignore[method-assign,assignment]


def _tuple_getter(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """``obj -> (obj.a, obj.b, ...)`` (``attrgetter`` of one name returns no tuple)."""
    if not names:
        return lambda obj: ()
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return attrgetter(*names)


def _freeze(cls: type, original: type, all_fields: tuple[Field[Any], ...]) -> None:
    """What ``@dataclass(frozen=True)`` adds: assignment and deletion of fields are refused.

    ``original`` is the class as written (``slots=True`` makes a new class, and the methods
    ``@dataclass`` generates refer to the written one, so this does too).
    """
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    frozen_params = object.__new__(type(params))
    for name in type(params).__slots__:
        object.__setattr__(frozen_params, name, getattr(params, name))
    object.__setattr__(frozen_params, "frozen", True)
    cls.__dataclass_params__ = frozen_params  # type: ignore[attr-defined]
    names = frozenset(f.name for f in all_fields)
    written: Any = original

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
    if cls is not original:  # slotted: unpickling sets the slots past the refusing __setattr__
        field_names = tuple(f.name for f in all_fields)

        def __getstate__(self: Any) -> list[Any]:
            return [getattr(self, name) for name in field_names]

        def __setstate__(self: Any, state: list[Any]) -> None:
            for name, value in zip(field_names, state, strict=False):
                object.__setattr__(self, name, value)

        cls.__getstate__ = __getstate__  # type: ignore[method-assign,assignment]
        cls.__setstate__ = __setstate__  # type: ignore[attr-defined]


def _add_init(cls: type, all_fields: tuple[Field[Any], ...], *, frozen: bool) -> None:
    """An ``__init__`` for the fields: positional or keyword, defaults, factories, the same errors."""
    qualname = f"{cls.__qualname__}.__init__"
    arguments = tuple(f.name for f in all_fields if f.init)
    accepted = frozenset(arguments)
    required = tuple(f.name for f in all_fields if f.init and f.default is MISSING and f.default_factory is MISSING)
    # (name, default, factory) of every field the generated __init__ sets, in order
    plan = tuple(
        (f.name, f.default, None if f.default_factory is MISSING else f.default_factory)
        for f in all_fields
        if f.init or f.default is not MISSING or f.default_factory is not MISSING
    )
    set_value = object.__setattr__ if frozen else setattr
    post_init = getattr(cls, "__post_init__", None) is not None
    lowest = len(required) + 1  # CPython's counts include ``self``
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
            if name in given and given[name] is not _FACTORY:
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
    for f in all_fields:
        if f.init:
            default = _FACTORY if f.default_factory is not MISSING else f.default
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
