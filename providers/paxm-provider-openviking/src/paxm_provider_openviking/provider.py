"""The OpenViking provider (``type: openviking``): one memory file per memory, paxm's metadata in a
search tag; see ``docs/providers/openviking.md`` for why not a session.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from paxm_core import Deadline, MemoryHit, MemoryItem, MemoryRef, ProviderConfig, SearchQuery
from paxm_core.api.errors import ConfigError, ProviderError
from paxm_core.api.provider_config import resolve_secret
from paxm_core.http_client import JsonTransport, RemoteProvider, httpx, remote_hit, stored_metadata, time_or_none
from paxm_provider_openviking import DEFAULT_DIR, DEFAULT_TIMEOUT, DEFAULT_URL, DEFAULT_USER, validate

__all__ = ["OpenVikingProvider", "OpenVikingTransport", "decode_tags", "encode_tag"]

_MAX_LIMIT = 100
_SAFE_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
TAG_KEY = "paxm_meta"


# paxm's metadata travels as one search tag ``paxm_meta=<hex of the UTF-8 JSON>``: OpenViking
# lower-cases tags and rejects a second ``=``; lower-case hex survives both byte for byte.
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


class OpenVikingTransport(JsonTransport):
    """OpenViking's JSON calls: its ``{status, result, error}`` envelope is judged whatever the HTTP status."""

    detail_keys = ("detail", "message", "error")

    def __init__(self, provider: str, base_url: str, headers: Mapping[str, str], secret: str, timeout: float):
        super().__init__(provider, base_url, headers, secret, timeout, service="OpenViking", label="openviking")

    def detail(self, payload: object) -> str:
        """``CODE: message`` of the envelope's ``error`` object, else the usual keys."""
        error = payload.get("error") if isinstance(payload, dict) else None
        if isinstance(error, dict):
            code = error.get("code") or ""
            message = error.get("message") or ""
            return f"{code}: {message}".strip(": ") if (code or message) else ""
        return super().detail(payload)

    def missing(self, resp: httpx.Response, payload: object) -> bool:
        """A 404 whose envelope says ``NOT_FOUND`` (not a route the server lacks)."""
        error = payload.get("error") if isinstance(payload, dict) else None
        return resp.status_code == 404 and isinstance(error, dict) and str(error.get("code") or "") == "NOT_FOUND"

    def unwrap(self, op: str, payload: Any) -> Any:
        """The envelope's ``result``, unless it says ``status: "error"`` (some failures come as HTTP 200)."""
        if not isinstance(payload, dict):
            raise self.fail(op, "OpenViking returned no JSON envelope")
        status = str(payload.get("status", "")).lower()
        if status != "ok":
            raise self.fail(op, f"OpenViking error: {self.detail(payload) or 'status ' + repr(status)}")
        return payload.get("result")


class OpenVikingProvider(RemoteProvider):
    """One OpenViking user namespace, paxm's memories in one directory of it."""

    label = "openviking"
    _http: OpenVikingTransport

    def __init__(self, name: str, config: ProviderConfig) -> None:
        super().__init__(name)
        problems = validate(config)
        if problems:
            raise ConfigError("; ".join(problems), path=f"providers.{name}")
        base_url = (config.base_url or DEFAULT_URL).strip()
        self._user = (config.user_id or DEFAULT_USER).strip()
        self._dir = str(config.option("memory_dir") or DEFAULT_DIR).strip()
        self._root = f"viking://user/{self._user}/memories/{self._dir}"
        key = resolve_secret(config.api_key)
        self._http = OpenVikingTransport(
            name, base_url, {"X-API-Key": key} if key else {}, key, config.timeout or DEFAULT_TIMEOUT
        )

    def eval_target(self) -> str:
        return self._dir

    def preserve_turn_boundaries(self) -> bool:
        """A captured turn is stored as one memory file, unsplit (as upstream)."""
        return True

    # -- health and setup ---------------------------------------------------------------

    def health(self, deadline: Deadline) -> None:
        """``GET /api/v1/stats/memories``: an authenticated, tenant-scoped read (as upstream)."""
        self._http.call("health", "GET", "/api/v1/stats/memories", deadline)

    def ensure_target(self, deadline: Deadline) -> tuple[str, str]:
        """Find paxm's memory directory, creating it when missing; a wrong key fails here."""
        found = self._http.call(
            "ensure target", "GET", "/api/v1/fs/stat", deadline, params={"uri": self._root}, missing_ok=True
        )
        if found is not None:
            return self._root, "exists"
        self._http.call("ensure target", "POST", "/api/v1/fs/mkdir", deadline, {"uri": self._root})
        return self._root, "created"

    # -- write --------------------------------------------------------------------------

    def _uri_for(self, item: MemoryItem) -> str:
        # a stable item id gives a stable file: a re-delivered episode replaces, never duplicates
        stem = f"paxm-{item.id}" if item.id and _SAFE_ID.match(item.id) else uuid.uuid4().hex
        return f"{self._root}/{stem}.md"

    def put(self, item: MemoryItem, deadline: Deadline) -> MemoryRef:
        text = self.required_text("put", item.text, deadline)
        uri = self._uri_for(item)
        body = {
            "uri": uri,
            "content": text,
            "mode": "replace",
            "wait": True,
            "tags": [encode_tag(stored_metadata(item))],
        }
        result = self._http.call("put", "POST", "/api/v1/content/write", deadline, body)
        stored = result.get("uri") if isinstance(result, Mapping) else None
        if isinstance(result, Mapping) and str(result.get("vector_status", "complete")) not in ("complete", "skipped"):
            raise ProviderError(
                self._name,
                "put",
                f"OpenViking stored {uri} but did not index it (vector_status {result.get('vector_status')!r})",
                retryable=True,
            )
        return MemoryRef(self._name, str(stored or uri))

    # -- read ---------------------------------------------------------------------------

    def search(self, query: SearchQuery, deadline: Deadline) -> list[MemoryHit]:
        text = self.required_text("search", query.text, deadline)
        limit = min(_MAX_LIMIT, query.limit) if query.limit > 0 else 10
        body = {"query": text, "context_type": "memory", "limit": limit, "level": 2}
        result = self._http.call("search", "POST", "/api/v1/search/find", deadline, body)
        memories = result.get("memories") if isinstance(result, Mapping) else None
        hits = [self._hit(obj) for obj in memories or [] if isinstance(obj, Mapping)]
        found = [hit for hit in hits if hit is not None][:limit]
        found.sort(key=lambda h: h.relevance, reverse=True)
        return found

    def _hit(self, obj: Mapping[str, Any]) -> MemoryHit | None:
        uri = obj.get("uri")
        text = obj.get("abstract") or obj.get("overview")
        if not isinstance(uri, str) or not uri or not isinstance(text, str) or not text.strip():
            return None
        metadata = decode_tags(obj.get("tags") if isinstance(obj.get("tags"), list) else None)
        metadata["openviking_uri"] = uri
        for key in ("level", "category", "match_reason", "overview"):
            value = obj.get(key)
            if value not in (None, ""):
                metadata[f"openviking_{key}"] = str(value)
        raw = obj.get("score")
        if isinstance(raw, int | float) and not isinstance(raw, bool) and raw == raw:
            raw_score: float | None = float(raw)
            relevance = min(1.0, max(0.0, float(raw)))
            kind = "openviking_score"
        else:
            raw_score, relevance, kind = None, 1.0, "openviking_unscored"
        created = time_or_none(metadata.get("paxm_created_at"))
        source = metadata.get("paxm_source", "")
        return remote_hit(
            self._name,
            uri,
            text,
            metadata,
            relevance=relevance,
            raw_score=raw_score,
            raw_score_kind=kind,
            source=source,
            created_at=created,
            default_tier="ltm",
        )

    # -- delete and cleanup -------------------------------------------------------------

    def delete(self, ref: MemoryRef, deadline: Deadline) -> None:
        """Remove one memory file; only files under this provider's directory."""
        self.own_ref(ref)
        if not ref.id.startswith(self._root + "/") or ".." in ref.id:
            raise ProviderError(self._name, "delete", f"{ref.id!r} is not a memory paxm wrote under {self._root}")
        self._http.call("delete", "DELETE", "/api/v1/fs", deadline, params={"uri": ref.id, "wait": "true"})

    def cleanup_eval_scope(self, deadline: Deadline) -> None:
        """Remove the whole directory, only when it is a dedicated ``paxm-eval-*`` one."""
        self.eval_only("memory_dir")
        self._http.call(
            "cleanup",
            "DELETE",
            "/api/v1/fs",
            deadline,
            params={"uri": self._root, "recursive": "true", "wait": "true"},
            missing_ok=True,
        )
