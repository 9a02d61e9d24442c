"""Strict JSON decoding of suites, budgets and saved results.

At least as strict as upstream's ``DisallowUnknownFields`` (duplicate keys and wrong types are
refused too), and every message names the JSON path, so a typo in a 3,000-line suite is easy to find.
"""

from __future__ import annotations

import json
import math
import types
from collections.abc import Iterable
from dataclasses import fields
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar, get_args, get_origin, get_type_hints

from paxm_core.api.errors import UsageError
from paxm_core.api.json import JSONObject
from paxm_core.api.timefmt import parse_time

__all__ = ["INTERNAL", "EvalFileError", "Obj", "decode", "encode", "read_json_file"]

_T = TypeVar("_T")
_S = TypeVar("_S", str, bool, int, float)

#: field metadata of a dataclass field that is neither written nor read
INTERNAL = {"internal": True}


class EvalFileError(UsageError):
    """A suite, budget or saved result is unreadable or invalid; the message names the file and JSON path."""


def _reject_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def read_json_file(path: Path, what: str) -> Any:
    """Read and parse ``path``; any failure becomes an :class:`EvalFileError` naming the file."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise EvalFileError(f"read {what} {path}: {exc.strerror or exc}") from exc
    try:
        return json.loads(data, object_pairs_hook=_reject_duplicates)
    except (ValueError, UnicodeDecodeError) as exc:
        raise EvalFileError(f"decode {what} {path}: {exc}") from exc


class Obj:
    """A JSON object being decoded: typed getters that record which keys were consumed.

    Call :meth:`done` last; it rejects any key no getter asked for.  ``null`` counts as absent,
    as in Go.
    """

    def __init__(self, value: object, path: str, what: str) -> None:
        if not isinstance(value, dict):
            raise EvalFileError(f"{what}: {path or 'top level'}: expected an object, got {_kind(value)}")
        self._data: dict[str, Any] = value
        self._path = path
        self._what = what
        self._seen: set[str] = set()

    def fail(self, key: str, message: str) -> EvalFileError:
        return EvalFileError(f"{self._what}: {self.at(key)}: {message}")

    def at(self, key: str) -> str:
        return f"{self._path}.{key}" if self._path else key

    def has(self, key: str) -> bool:
        """Whether ``key`` is present and not null."""
        return self._data.get(key) is not None

    def _get(self, key: str) -> Any:
        self._seen.add(key)
        return self._data.get(key)

    def scalar(self, key: str, kind: type[_S]) -> _S:
        """``key`` as a ``str``, ``bool``, ``int`` (a whole float too) or finite ``float``."""
        value = self._get(key)
        if value is None:
            return kind()
        if kind is int and isinstance(value, float) and value.is_integer():
            value = int(value)
        number = kind is float and isinstance(value, int | float) and math.isfinite(value)
        if isinstance(value, bool) is not (kind is bool) or not (number if kind is float else isinstance(value, kind)):
            raise self.fail(key, f"expected {_EXPECTED[kind]}, got {_kind(value)}")
        return kind(value)

    def _items(self, key: str, kind: type) -> list[Any]:
        value = self._get(key)
        if value is None:
            return []
        if kind is dict and isinstance(value, dict):
            return list(value.items())
        if kind is list and isinstance(value, list):
            return list(enumerate(value))
        raise self.fail(key, f"expected {_EXPECTED[kind]}, got {_kind(value)}")

    def texts(self, key: str) -> list[str]:
        for index, item in self._items(key, list):
            if not isinstance(item, str):
                raise EvalFileError(f"{self._what}: {self.at(key)}[{index}]: expected a string, got {_kind(item)}")
        return [item for _, item in self._items(key, list)]

    def text_map(self, key: str) -> dict[str, str]:
        for name, item in self._items(key, dict):
            if not isinstance(item, str):
                raise EvalFileError(f"{self._what}: {self.at(key)}.{name}: expected a string, got {_kind(item)}")
        return dict(self._data.get(key) or {})

    def obj(self, key: str) -> Obj | None:
        value = self._get(key)
        return None if value is None else Obj(value, self.at(key), self._what)

    def read(self, key: str, kind: Any) -> Any:
        """``key`` decoded by the type ``kind`` (a field's annotation); ``null`` is its zero value."""
        if kind in _EXPECTED and kind not in (list, dict):
            return self.scalar(key, kind)
        if kind == dict[str, str]:
            return self.text_map(key)
        origin, args = get_origin(kind), get_args(kind)
        if origin in (list, tuple):
            if args[0] is str:
                values: list[Any] = self.texts(key)
            else:
                values = [
                    decode(args[0], Obj(o, f"{self.at(key)}[{i}]", self._what)) for i, o in self._items(key, list)
                ]
            return tuple(values) if origin is tuple else values
        if kind == datetime | None:
            raw = self.scalar(key, str)
            try:
                return parse_time(raw) if raw else None
            except ValueError as exc:
                raise self.fail(key, str(exc)) from exc
        sub = self.obj(key)
        if origin is types.UnionType:  # ``X | None``: an optional object
            return None if sub is None else decode(args[0], sub)
        if sub is None:
            raise self.fail(key, "is required")
        return decode(kind, sub)

    def done(self) -> None:
        """Reject keys that no getter consumed (upstream's ``DisallowUnknownFields``)."""
        unknown = sorted(set(self._data) - self._seen)
        if unknown:
            names = ", ".join(repr(name) for name in unknown)
            where = self._path or "top level"
            raise EvalFileError(f"{self._what}: {where}: unknown field {names}")


_EXPECTED: dict[type, str] = {
    str: "a string",
    bool: "true or false",
    int: "an integer",
    float: "a number",
    list: "an array",
    dict: "an object of strings",
}


#: how a message names a JSON value's kind (a bool before a number: ``True`` is an ``int`` too)
_KINDS = ((type(None), "null"), (bool, "a boolean"), ((int, float), "a number"), (str, "a string"), (list, "an array"))


def _kind(value: object) -> str:
    return next((name for kinds, name in _KINDS if isinstance(value, kinds)), "an object")


def decode(cls: type[_T], obj: Obj) -> _T:
    """The dataclass ``cls`` from ``obj``, each field read by its annotation; unknown keys are refused."""
    hints = get_type_hints(cls)
    values = {f.name: obj.read(f.name, hints[f.name]) for f in fields(cls) if f.init and not f.metadata.get("internal")}  # type: ignore[arg-type]
    obj.done()
    return cls(**values)


def encode(value: object, always: Iterable[str]) -> JSONObject:
    """A dataclass as JSON in field order; fields not in ``always`` are left out when empty (``omitempty``)."""
    keep = set(always)
    out: JSONObject = {}
    for f in fields(value):  # type: ignore[arg-type]
        item = getattr(value, f.name)
        if f.metadata.get("internal") or not (item or f.name in keep):
            continue
        if isinstance(item, (list, tuple)):
            item = [x.to_json() if hasattr(x, "to_json") else x for x in item]
        out[f.name] = item
    return out
