#!/usr/bin/env python3
"""A paxm JSON-RPC provider (protocol v1) in Python, standard library only.

The reference for the protocol from the plugin's side: paxm starts this program once per
request, writes one JSON-RPC request line to stdin and reads one response from stdout.
Memories live in a JSON file named by $PAXM_SAMPLE_PROVIDER_STORE (default
./paxm-python-provider.json).  Diagnostics go to stderr only.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = -32601, -32602, -32603


class RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def store_path() -> str:
    return os.environ.get("PAXM_SAMPLE_PROVIDER_STORE", "").strip() or "paxm-python-provider.json"


def load() -> dict[str, dict[str, Any]]:
    try:
        with open(store_path(), encoding="utf-8") as fh:
            return dict(json.load(fh).get("items") or {})
    except FileNotFoundError:
        return {}


def save(items: dict[str, dict[str, Any]]) -> None:
    path = os.path.abspath(store_path())
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".store-")  # created 0600
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump({"items": items}, fh, indent=2)
    os.replace(tmp, path)  # atomic: readers see the old or the new file


@contextmanager
def locked() -> Iterator[None]:
    """paxm may run requests in parallel: serialize read-modify-write."""
    with open(store_path() + ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def strings(value: Any, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise RpcError(INVALID_PARAMS, f"{what} must be an object of strings")
    return dict(value)


def put(items: dict[str, dict[str, Any]], raw: Any) -> dict[str, str]:
    if not isinstance(raw, dict) or not isinstance(raw.get("text"), str) or not raw["text"].strip():
        raise RpcError(INVALID_PARAMS, "text is required")
    ref_id = str(raw.get("id") or "").strip() or f"py-{uuid.uuid4().hex}"
    items[ref_id] = {
        "text": raw["text"],
        "source": raw.get("source") or "",
        "metadata": strings(raw.get("metadata"), "metadata"),
        "created_at": raw.get("created_at") or datetime.now(UTC).isoformat().replace("+00:00", "Z"),
        "tier": raw.get("tier") or "",
        "expires_at": raw.get("expires_at") or "",
        "origin": raw.get("origin") or {},
        "scope": raw.get("scope") or {},
    }
    return {"id": ref_id}


def terms(text: str) -> set[str]:
    return {t for t in re.split(r"\W+", text.lower()) if t}


def search(query: Any) -> list[dict[str, Any]]:
    if not isinstance(query, dict) or not isinstance(query.get("text"), str):
        raise RpcError(INVALID_PARAMS, "text is required")
    filters = strings(query.get("filters"), "filters")  # metadata is context, never a filter
    tiers = query.get("tiers") or []
    limit = query.get("limit") if isinstance(query.get("limit"), int) and query["limit"] > 0 else 10
    wanted = terms(query["text"])
    now = datetime.now(UTC)
    hits = []
    for ref_id, item in load().items():
        expires = item.get("expires_at")
        if expires and datetime.fromisoformat(expires.replace("Z", "+00:00")) <= now:
            continue
        if tiers and (item.get("tier") or "ltm") not in tiers:
            continue
        if any(item["metadata"].get(k) != v for k, v in filters.items()):
            continue
        matched = len(wanted & terms(item["text"]))
        if wanted and not matched:
            continue
        relevance = matched / len(wanted) if wanted else 1.0  # higher is better, in [0, 1]
        hit = {
            "id": ref_id,
            "relevance": relevance,
            "score": relevance,
            "raw_score": matched,
            "raw_score_kind": "python_term_matches",
        }
        hit.update({k: v for k, v in item.items() if v})
        hits.append(hit)
    hits.sort(key=lambda h: (h["relevance"], h.get("created_at", "")), reverse=True)
    return hits[:limit]


def dispatch(method: Any, params: Any) -> Any:
    if method == "paxm.health":
        load()  # an unreadable store is unhealthy
        return {"ok": True}
    if method == "paxm.capabilities":
        return {"put_batch": True, "delete": True, "attribution": True}
    if method == "paxm.search":
        return {"hits": search(params)}
    if method in ("paxm.put", "paxm.putBatch", "paxm.delete"):
        with locked():
            items = load()
            if method == "paxm.put":
                result: Any = {"ref": put(items, params)}
            elif method == "paxm.putBatch":
                if not isinstance(params, dict) or not isinstance(params.get("items"), list):
                    raise RpcError(INVALID_PARAMS, "items must be a list")
                result = {"refs": [put(items, item) for item in params["items"]]}
            else:
                if not isinstance(params, dict) or not str(params.get("id") or "").strip():
                    raise RpcError(INVALID_PARAMS, "ref id is required")
                result = {"deleted": items.pop(params["id"], None) is not None}
            save(items)
            return result
    raise RpcError(METHOD_NOT_FOUND, f"method not found: {method}")


def main() -> int:
    try:
        request = json.loads(sys.stdin.readline())
    except ValueError as exc:
        print(f"decode request: {exc}", file=sys.stderr)
        return 1
    frame: dict[str, Any] = {"jsonrpc": "2.0", "id": request.get("id")}
    try:
        frame["result"] = dispatch(request.get("method"), request.get("params"))
    except RpcError as exc:
        frame["error"] = {"code": exc.code, "message": str(exc)}
    except Exception as exc:  # report, don't crash silently: paxm shows the message and our stderr
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        frame["error"] = {"code": INTERNAL_ERROR, "message": str(exc)}
    sys.stdout.write(json.dumps(frame) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
