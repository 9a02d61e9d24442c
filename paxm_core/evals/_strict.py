"""Strict JSON decoding helpers shared by suites, budgets and saved results.

Upstream decodes these files with Go's ``DisallowUnknownFields``; we are at least as strict
(also rejecting duplicate keys and wrongly typed values) and name the JSON path of the
offending value in every message, so a typo in a 3,000-line suite is easy to find.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from paxm_core.evals.errors import EvalFileError

__all__ = ["Obj", "read_json_file"]


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
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

    def __init__(self, value: Any, path: str, what: str) -> None:
        if not isinstance(value, dict):
            raise EvalFileError(f"{what}: {path or 'top level'}: expected an object, got {_kind(value)}")
        self._data: dict[str, Any] = value
        self._path = path
        self._what = what
        self._seen: set[str] = set()

    def fail(self, key: str, message: str) -> EvalFileError:
        """An error about ``key`` of this object."""
        return EvalFileError(f"{self._what}: {self.at(key)}: {message}")

    def at(self, key: str) -> str:
        """The JSON path of ``key``."""
        return f"{self._path}.{key}" if self._path else key

    def has(self, key: str) -> bool:
        """Whether ``key`` is present and not null."""
        return self._data.get(key) is not None

    def _get(self, key: str) -> Any:
        self._seen.add(key)
        return self._data.get(key)

    def text(self, key: str) -> str:
        value = self._get(key)
        if value is None:
            return ""
        if not isinstance(value, str):
            raise self.fail(key, f"expected a string, got {_kind(value)}")
        return value

    def integer(self, key: str) -> int:
        value = self._get(key)
        if value is None:
            return 0
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                return int(value)
            raise self.fail(key, f"expected an integer, got {_kind(value)}")
        return value

    def number(self, key: str) -> float:
        value = self._get(key)
        if value is None:
            return 0.0
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise self.fail(key, f"expected a number, got {_kind(value)}")
        return float(value)

    def flag(self, key: str) -> bool:
        value = self._get(key)
        if value is None:
            return False
        if not isinstance(value, bool):
            raise self.fail(key, f"expected true or false, got {_kind(value)}")
        return value

    def texts(self, key: str) -> list[str]:
        out: list[str] = []
        for index, item in enumerate(self.array(key)):
            if not isinstance(item, str):
                raise EvalFileError(f"{self._what}: {self.at(key)}[{index}]: expected a string, got {_kind(item)}")
            out.append(item)
        return out

    def text_map(self, key: str) -> dict[str, str]:
        value = self._get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.fail(key, f"expected an object of strings, got {_kind(value)}")
        for name, item in value.items():
            if not isinstance(item, str):
                raise EvalFileError(f"{self._what}: {self.at(key)}.{name}: expected a string, got {_kind(item)}")
        return dict(value)

    def array(self, key: str) -> list[Any]:
        value = self._get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(key, f"expected an array, got {_kind(value)}")
        return value

    def obj(self, key: str) -> Obj | None:
        value = self._get(key)
        if value is None:
            return None
        return Obj(value, self.at(key), self._what)

    def objs(self, key: str) -> Iterable[Obj]:
        for index, item in enumerate(self.array(key)):
            yield Obj(item, f"{self.at(key)}[{index}]", self._what)

    def done(self) -> None:
        """Reject keys that no getter consumed (upstream's ``DisallowUnknownFields``)."""
        unknown = sorted(set(self._data) - self._seen)
        if unknown:
            names = ", ".join(repr(name) for name in unknown)
            where = self._path or "top level"
            raise EvalFileError(f"{self._what}: {where}: unknown field {names}")


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"
