"""JSON value types for the boundaries where paxm reads or writes JSON.

:data:`JSONValue` covers what :func:`json.loads` returns and what :func:`json.dumps` writes; a
decoder narrows it with ``isinstance`` (``dict``, ``list``, ``str``...) before use.  Nested
containers are read-only (``Sequence``, ``Mapping``), so a ``list[str]`` or a ``dict[str, int]``
is a JSON value as it is; :data:`JSONObject` is a mutable top-level object.  A function that only
passes a value through, or checks it with ``isinstance`` itself, takes ``object``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

__all__ = ["JSONObject", "JSONScalar", "JSONValue"]

#: a JSON scalar: string, number, boolean or ``null``
JSONScalar: TypeAlias = str | int | float | bool | None
#: any JSON value; containers hold JSON values
JSONValue: TypeAlias = JSONScalar | Sequence["JSONValue"] | Mapping[str, "JSONValue"]
#: a JSON object
JSONObject: TypeAlias = dict[str, JSONValue]
