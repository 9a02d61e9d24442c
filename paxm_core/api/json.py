"""JSON value types for the boundaries where paxm reads or writes JSON.

:data:`JSONValue` is what :func:`json.loads` can return; a decoder narrows it with
``isinstance`` before use.  :data:`JSONObject` is a decoded or to-be-encoded object.  A function
that only passes a value through, or checks it with ``isinstance`` itself, takes ``object``.
"""

from __future__ import annotations

from typing import TypeAlias

__all__ = ["JSONObject", "JSONScalar", "JSONValue"]

#: a JSON scalar: string, number, boolean or ``null``
JSONScalar: TypeAlias = str | int | float | bool | None
#: any JSON value; containers hold JSON values
JSONValue: TypeAlias = JSONScalar | list["JSONValue"] | dict[str, "JSONValue"]
#: a JSON object
JSONObject: TypeAlias = dict[str, JSONValue]
