"""Row <-> hit conversion shared by the provider and the retrieval pipeline."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["decode_metadata", "encode_metadata"]


def encode_metadata(meta: dict[str, str]) -> str:
    """Metadata as stored in ``metadata_json`` (compact; non-ASCII kept readable)."""
    return json.dumps(meta, ensure_ascii=False, separators=(",", ":")) if meta else "{}"


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
