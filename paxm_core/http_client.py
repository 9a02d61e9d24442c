"""What the remote memory providers share: one JSON transport over ``httpx``, one mapping of
HTTP failures to ``ProviderError``, and the provider behaviour every remote backend has alike.

:class:`JsonTransport` is the deadline-bound JSON call of the HTTP providers (Mem0, MemOS,
OpenViking); :func:`status_error` and :func:`network_error` map HTTP failures (Zep's SDK calls
use them too); :class:`RemoteProvider`, :func:`remote_hit` and :func:`stored_metadata` hold the
rest.  Nothing here is imported by ``import paxm_core``.

Two costs the hook daemon would pay for every HTTP provider it loads are avoided here, because
the first prompt with three providers misses its 250 ms budget without them
(``benchmarks/hook_bench.py``): ``import httpx`` also imports its command-line client
(``httpx._main``: click, pygments, rich) when those are installed, so that import is answered
"not available" and httpx keeps its stub; and ``httpx.Client`` loads certifi's whole CA bundle
even for a plain ``http://`` server, so such a client gets a TLS context that trusts no CA (a
redirect that reached a TLS server fails verification instead of trusting anything).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from paxm_core.api.errors import ConfigError, DeadlineExceeded, ProviderError
from paxm_core.api.timefmt import format_time, parse_time
from paxm_core.api.types import MemoryHit, MemoryItem, MemoryRef, normalize_tier
from paxm_core.attribution import (
    META_EXPIRES_AT,
    META_TIER,
    attribution_metadata,
    metadata_expires_at,
    restore_attribution,
)

if TYPE_CHECKING:
    from paxm_core.api.deadline import Deadline

_BLOCK_CLI = "httpx" not in sys.modules and "httpx._main" not in sys.modules
if _BLOCK_CLI:
    sys.modules["httpx._main"] = None  # type: ignore[assignment]  # "not importable": see above
try:
    import httpx
finally:
    if _BLOCK_CLI and sys.modules.get("httpx._main", 0) is None:
        del sys.modules["httpx._main"]  # a later explicit ``import httpx._main`` still works

__all__ = [
    "EVAL_PREFIX",
    "HttpStatusError",
    "JsonTransport",
    "RemoteProvider",
    "checked_url",
    "httpx",
    "json_text",
    "network_error",
    "redact",
    "remote_hit",
    "status_error",
    "stored_metadata",
    "time_or_none",
    "url_problems",
]

#: A target (run, graph, cube, directory) whose name starts so is an eval's own: cleanup may delete it whole.
EVAL_PREFIX = "paxm-eval-"
#: The longest server explanation an error message carries.
_MAX_DETAIL = 240


def redact(text: str, secret: str, limit: int = 300) -> str:
    """``text`` with ``secret`` replaced by ``<redacted>``, whitespace collapsed, cut to ``limit`` characters."""
    text = " ".join(str(text).split())
    if secret:
        text = text.replace(secret, "<redacted>")
    return text[:limit]


def json_text(value: object) -> str:
    """A JSON value as metadata text: strings as they are, ``true``/``false``, numbers, other values as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(value, sort_keys=True, default=str)


class HttpStatusError(ProviderError):
    """A non-2xx answer, keeping the status and the server's (redacted) explanation for callers that branch on it."""

    def __init__(self, provider: str, op: str, message: str, *, status: int, detail: str, retryable: bool) -> None:
        super().__init__(provider, op, message, retryable=retryable)
        self.status = status
        self.server_detail = detail


def status_error(
    provider: str, op: str, status: int, detail: str, *, service: str, where: str = "", auth_hint: str = ""
) -> HttpStatusError:
    """The one message for an HTTP error status: what it means, where (``POST /search``), the server's words.

    429 and 5xx are retryable; 401/403 add ``auth_hint`` (``check the Zep api_key``).  ``detail``
    must already be redacted.
    """
    at = f"HTTP {status}, {where}" if where else f"HTTP {status}"
    suffix = f": {detail}" if detail else ""
    known = {
        400: f"{service} rejected the request ({at})",
        404: f"not found ({at})",
        409: f"conflict ({at})",
        422: f"{service} could not process the request ({at})",
        429: f"rate limited by {service} ({at}); retry later",
    }
    if status in (401, 403):
        message = f"authentication failed ({at}); {auth_hint or 'check api_key'}"
    elif status >= 500:
        message = f"{service} server error ({at})"
    else:
        message = known.get(status, f"unexpected HTTP {status}" + (f" ({where})" if where else ""))
    retryable = status == 429 or status >= 500
    return HttpStatusError(provider, op, message + suffix, status=status, detail=detail, retryable=retryable)


def network_error(provider: str, op: str, exc: BaseException, *, service: str, base: str = "") -> ProviderError | None:
    """A retryable ``ProviderError`` for an httpx timeout or connection failure (``None`` for anything else)."""
    at = f" at {base}" if base else ""
    if isinstance(exc, httpx.TimeoutException):
        return ProviderError(provider, op, f"timed out waiting for {service}{at}", retryable=True)
    if isinstance(exc, httpx.TransportError):
        return ProviderError(provider, op, f"cannot reach {service}{at}: {type(exc).__name__}", retryable=True)
    return None


class JsonTransport:
    """JSON requests to one base URL under a paxm deadline, failures as redacted ``ProviderError``s.

    Each call's timeout is what the deadline leaves, capped by ``timeout`` (the provider's
    per-call timeout); an expired deadline raises ``DeadlineExceeded``, a slow or unreachable
    server a retryable ``ProviderError``.  Nothing is retried here: a repeated write could store
    a memory twice, and the router and capture queue retry what is marked ``retryable``.
    Messages never carry ``secret``.  Proxy settings from the environment are ignored
    (``trust_env=False``): a proxy must not see, or swallow, memory traffic.

    A provider overrides :meth:`unwrap` to check an envelope of its own, :meth:`detail` (or
    :attr:`detail_keys`) to find the server's explanation in an error body and :meth:`missing`
    to say what a "not found" answer is.

    :param service: the backend's name in messages (``"MemOS"``).
    :param label: what deadline messages start with (``"memos search: deadline exceeded"``).
    :param auth_hint: what a 401/403 message tells the user to check.
    """

    detail_keys: tuple[str, ...] = ("detail", "error", "message", "msg")

    def __init__(
        self,
        provider: str,
        base_url: str,
        headers: Mapping[str, str],
        secret: str,
        timeout: float,
        *,
        service: str,
        label: str,
        auth_hint: str = "",
    ) -> None:
        self._provider = provider
        self._base = base_url.rstrip("/")
        self._secret = secret
        self._timeout = timeout
        self._service = service
        self._label = label
        self._auth_hint = auth_hint
        verify: Any = True
        if self._base.lower().startswith("http://"):
            import ssl

            verify = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies certificates, trusts none
        self._client = httpx.Client(headers={"Accept": "application/json", **headers}, trust_env=False, verify=verify)
        self._closed = False

    def close(self) -> None:
        """Close the connection pool; later calls fail with "provider is closed"."""
        if not self._closed:
            self._closed = True
            self._client.close()

    def fail(self, op: str, message: str, *, retryable: bool = False) -> ProviderError:
        """A ``ProviderError`` for ``op`` whose message is :func:`redact`-ed."""
        return ProviderError(self._provider, op, redact(message, self._secret), retryable=retryable)

    def detail(self, payload: object) -> str:
        """The server's explanation in an error body (``""`` when none)."""
        if isinstance(payload, dict):
            for key in self.detail_keys:
                value = payload.get(key)
                if value:
                    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
        return ""

    def call(
        self,
        op: str,
        method: str,
        path: str,
        deadline: Deadline,
        body: object = None,
        *,
        params: Mapping[str, str] | None = None,
        missing_ok: bool = False,
    ) -> Any:
        """Send one request; its decoded JSON body (``None`` when empty), once the status is good,
        through :meth:`unwrap`.

        ``missing_ok``: an answer :meth:`missing` recognises (a 404) returns ``None`` instead of failing.
        """
        if self._closed:
            raise ProviderError(self._provider, op, "provider is closed")
        deadline.check(f"{self._label} {op}")
        timeout = deadline.timeout(cap=self._timeout) or self._timeout
        try:
            resp = self._client.request(
                method, self._base + path, json=body, params=params, timeout=httpx.Timeout(max(timeout, 0.05))
            )
        except httpx.HTTPError as exc:
            if isinstance(exc, httpx.TimeoutException) and deadline.expired():
                raise DeadlineExceeded(f"{self._label} {op}: deadline exceeded") from exc
            error = network_error(self._provider, op, exc, service=self._service, base=self._base)
            if error is None:
                raise
            raise error from exc
        try:
            payload = resp.json() if resp.content.strip() else None
        except (json.JSONDecodeError, UnicodeDecodeError):
            payload = None
        if missing_ok and self.missing(resp, payload):
            return None
        if resp.status_code >= 400:
            detail = redact(self.detail(payload) or resp.text, self._secret, _MAX_DETAIL)
            raise status_error(
                self._provider,
                op,
                resp.status_code,
                detail,
                service=self._service,
                where=f"{method} {path}",
                auth_hint=self._auth_hint,
            )
        if payload is None and resp.content.strip():
            raise self.fail(op, f"{self._service} returned a body that is not JSON: {resp.text}")
        return self.unwrap(op, payload)

    def missing(self, resp: httpx.Response, payload: object) -> bool:
        """Whether the answer says the thing asked for does not exist (a 404)."""
        return resp.status_code == 404

    def unwrap(self, op: str, payload: Any) -> Any:
        """What :meth:`call` returns for a decoded body; an API with an envelope checks it here."""
        return payload


def url_problems(url: str) -> list[str]:
    """``[problem]`` unless ``url`` is empty or an ``http(s)://`` URL."""
    url = url.strip()
    if url and not url.startswith(("http://", "https://")):
        return [f"base_url must start with http:// or https:// (got {url!r})"]
    return []


def checked_url(name: str, configured: str, default: str) -> str:
    """``configured`` (else ``default``), refused with a ``ConfigError`` unless it is an http(s) URL."""
    base_url = (configured or default).strip()
    if not base_url.startswith(("http://", "https://")):
        raise ConfigError(f"base_url must be an http(s) URL, got {base_url!r}", path=f"providers.{name}.base_url")
    return base_url


def time_or_none(text: object) -> datetime | None:
    """An RFC 3339 time, or ``None`` for anything that is not one."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return parse_time(text)
    except ValueError:
        return None


def stored_metadata(item: MemoryItem) -> dict[str, str]:
    """What a write carries: item metadata with attribution synced, tier and expiry, ``paxm_source``,
    ``paxm_id`` and ``paxm_created_at``."""
    meta = attribution_metadata(item)
    if item.tier:
        meta[META_TIER] = normalize_tier(item.tier)
    if item.expires_at is not None:
        meta[META_EXPIRES_AT] = format_time(item.expires_at)
    if item.source:
        meta["paxm_source"] = item.source
    if item.id:
        meta["paxm_id"] = item.id
    if item.created_at is not None:
        meta["paxm_created_at"] = format_time(item.created_at)
    return meta


def remote_hit(
    provider: str,
    id: str,
    text: str,
    metadata: dict[str, str],
    *,
    relevance: float,
    raw_score: float | None,
    raw_score_kind: str,
    source: str,
    created_at: datetime | None = None,
    default_tier: str = "",
) -> MemoryHit:
    """A hit whose tier, expiry and attribution come back from the paxm keys in ``metadata``."""
    tier = metadata.get(META_TIER, "")
    hit = MemoryHit(
        provider=provider,
        id=id,
        text=text,
        relevance=relevance,
        score=relevance,
        raw_score=raw_score,
        raw_score_kind=raw_score_kind,
        source=source,
        metadata=metadata,
        created_at=created_at,
        tier=normalize_tier(tier) if tier else default_tier,
        expires_at=metadata_expires_at(metadata),
    )
    return restore_attribution(hit)


class RemoteProvider:
    """What every remote provider does alike; a subclass sets ``label`` and defines ``put``.

    ``label`` starts deadline messages (``memos search``); ``base_capabilities`` are the
    capabilities always offered, plus ``eval_scope_cleanup`` when :meth:`eval_target` (the run,
    graph, cube or directory an eval writes to) starts with :data:`EVAL_PREFIX`.  Providers
    with an HTTP transport keep it in ``_http``; :meth:`close` closes it.
    """

    label = "remote"
    base_capabilities = frozenset({"put_batch", "delete", "attribution"})
    _http: JsonTransport

    def __init__(self, name: str) -> None:
        if not name.strip():
            raise ConfigError(f"{self.label} provider name is required")
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    def eval_target(self) -> str:
        """The name whose :data:`EVAL_PREFIX` makes the whole target an eval's own (``""``: none)."""
        return ""

    def capabilities(self) -> frozenset[str]:
        """:attr:`base_capabilities`, and eval-scope cleanup for a ``paxm-eval-*`` target."""
        if self.eval_target().startswith(EVAL_PREFIX):
            return self.base_capabilities | {"eval_scope_cleanup"}
        return self.base_capabilities

    def eval_only(self, what: str) -> str:
        """The eval target, or a ``ProviderError`` when it is not a dedicated ``paxm-eval-*`` one."""
        target = self.eval_target()
        if not target.startswith(EVAL_PREFIX):
            raise ProviderError(self._name, "cleanup", f"eval cleanup needs a dedicated {EVAL_PREFIX}* {what}")
        return target

    def required_text(self, op: str, text: str, deadline: Deadline) -> str:
        """``text`` stripped, after the deadline check; empty text is refused (``search``: query, else memory)."""
        deadline.check(f"{self.label} {op}")
        text = text.strip()
        if not text:
            raise ProviderError(self._name, op, f"{'query' if op == 'search' else 'memory'} text is required")
        return text

    def own_ref(self, ref: MemoryRef) -> str:
        """The id of ``ref``, refused when the ref belongs to another provider."""
        if ref.provider and ref.provider != self._name:
            raise ProviderError(self._name, "delete", f"ref belongs to provider {ref.provider!r}")
        return ref.id

    def put(self, item: MemoryItem, deadline: Deadline) -> MemoryRef:
        raise NotImplementedError

    def put_batch(self, items: Sequence[MemoryItem], deadline: Deadline) -> list[MemoryRef]:
        """One write per item, in order, after every item's text is checked (none of these APIs adds a batch)."""
        deadline.check(f"{self.label} put")
        for item in items:
            if not item.text.strip():
                raise ProviderError(self._name, "put", "memory text is required")
        return [self.put(item, deadline) for item in items]

    def close(self) -> None:
        """Close the HTTP client; later calls fail with "provider is closed"."""
        self._http.close()
