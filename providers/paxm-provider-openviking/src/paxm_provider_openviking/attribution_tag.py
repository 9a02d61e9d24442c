"""paxm's metadata as one OpenViking search tag ``paxm_meta=<hex of the UTF-8 JSON>``.

OpenViking lower-cases tags and rejects a second ``=``; lower-case hex survives both byte for byte.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

__all__ = ["TAG_KEY", "decode_tags", "encode_tag"]

TAG_KEY = "paxm_meta"


def encode_tag(metadata: Mapping[str, str]) -> str:
    """``paxm_meta=<hex>`` for ``metadata`` (keys sorted, so equal maps give equal tags)."""
    payload = json.dumps(dict(metadata), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return f"{TAG_KEY}={payload.encode('utf-8').hex()}"


def decode_tags(tags: Iterable[object] | None) -> dict[str, str]:
    """The map stored by :func:`encode_tag` among a hit's tags; ``{}`` when absent or damaged."""
    for tag in tags or ():
        if not isinstance(tag, str) or not tag.startswith(TAG_KEY + "="):
            continue
        try:
            decoded = json.loads(bytes.fromhex(tag.split("=", 1)[1]).decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            return {}
        if isinstance(decoded, dict):
            return {str(k): v for k, v in decoded.items() if isinstance(v, str)}
    return {}
