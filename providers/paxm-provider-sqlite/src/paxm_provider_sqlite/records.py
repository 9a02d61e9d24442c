"""Row <-> hit conversion shared by the provider and the retrieval pipeline."""

from __future__ import annotations

import json
from json.encoder import encode_basestring as _quote  # what json.dumps uses when ensure_ascii=False
from typing import Any

__all__ = ["decode_metadata", "encode_metadata"]


def encode_metadata(meta: dict[str, str]) -> str:
    """Exactly ``json.dumps(meta, ensure_ascii=False, separators=(",", ":"))``, string pairs joined
    with the json module's own C escaper (several times cheaper on the write path)."""
    if not meta:
        return "{}"
    try:
        return "{" + ",".join([f"{_quote(k)}:{_quote(v)}" for k, v in meta.items()]) + "}"
    except TypeError:  # a non-string key or value: the encoder's own conversions apply
        return json.dumps(meta, ensure_ascii=False, separators=(",", ":"))


def decode_metadata(text: str | None) -> dict[str, str]:
    """Parse ``metadata_json``; anything that is not a JSON object of strings is dropped, never fatal."""
    if not text or text == "{}":
        return {}
    try:
        data: Any = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in data.items() if v is not None}
