"""One HTTP exchange with Mem0 under a paxm deadline, failures mapped to clear ``ProviderError``s.

The client timeout is the time the deadline leaves (capped by the provider's own timeout),
so no call runs past what the router gave it.  Nothing is retried here: a repeated
``POST /memories`` could store a memory twice, and the router and capture queue already
retry what is marked ``retryable``.  Error messages name the operation and the HTTP status,
carry the server's ``detail`` text when it has one, and never contain the API key.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from paxm_core import Deadline, ProviderError
from paxm_core.http_client import httpx, new_client

__all__ = ["HttpStatusError", "Transport"]

_MAX_DETAIL = 240


class HttpStatusError(ProviderError):
    """A non-2xx answer, keeping the status and the server's detail text for callers that branch on it."""

    def __init__(self, provider: str, op: str, message: str, *, status: int, detail: str, retryable: bool) -> None:
        super().__init__(provider, op, message, retryable=retryable)
        self.status = status
        self.server_detail = detail


def _detail_of(response: httpx.Response) -> str:
    """The server's own explanation: ``detail`` / ``error`` / ``message`` of a JSON body, else the text."""
    raw = response.content[:4096].decode("utf-8", errors="replace")
    text = raw.strip()
    try:
        payload = json.loads(raw)
    except ValueError:
        payload = None
    if isinstance(payload, dict):
        for key in ("detail", "error", "message"):
            value = payload.get(key)
            if value:
                text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
                break
    return " ".join(text.split())


class Transport:
    """A base URL, auth headers and an ``httpx.Client``; ``call`` performs one request.

    :param provider: instance name, for error messages.
    :param service: ``Mem0`` or ``Mem0 Cloud``, for error messages.
    :param secret: the API key, scrubbed from every message.
    """

    def __init__(
        self,
        provider: str,
        service: str,
        base_url: str,
        headers: Mapping[str, str],
        *,
        secret: str,
        timeout: float,
        auth_hint: str,
    ) -> None:
        self.provider = provider
        self.service = service
        self.timeout = timeout
        self._secret = secret
        self._auth_hint = auth_hint
        self._client = new_client(
            base_url,
            base_url=base_url,
            headers={"Accept": "application/json", **headers},
            timeout=timeout,
            follow_redirects=False,
            trust_env=False,  # never route a memory store through an ambient proxy
        )
        self.closed = False

    def _scrub(self, text: str) -> str:
        if self._secret:
            text = text.replace(self._secret, "<redacted>")
        return text[:_MAX_DETAIL]

    def call(
        self,
        op: str,
        method: str,
        path: str,
        deadline: Deadline,
        *,
        body: Any = None,
        params: Mapping[str, str] | None = None,
    ) -> Any:
        """Send one request and return its decoded JSON (``None`` for an empty body)."""
        if self.closed:
            raise ProviderError(self.provider, op, "provider is closed")
        deadline.check(f"{self.provider} {op}")
        timeout = deadline.timeout(cap=self.timeout) or self.timeout
        kwargs: dict[str, Any] = {"timeout": max(0.05, timeout)}
        if body is not None:
            kwargs["json"] = body
        if params:
            kwargs["params"] = dict(params)
        try:
            response = self._client.request(method, path, **kwargs)
        except httpx.TimeoutException as exc:
            if deadline.expired():
                raise ProviderError(self.provider, op, "deadline exceeded", retryable=True) from None
            raise ProviderError(
                self.provider, op, f"timed out waiting for {self.service} ({method} {path})", retryable=True
            ) from exc
        except httpx.TransportError as exc:
            raise ProviderError(
                self.provider,
                op,
                f"cannot reach {self.service} at {self._client.base_url}: {type(exc).__name__}",
                retryable=True,
            ) from None
        if not 200 <= response.status_code < 300:
            raise self._status_error(op, method, path, response)
        if not response.content.strip():
            return None
        try:
            return response.json()
        except ValueError:
            raise ProviderError(
                self.provider, op, f"{self.service} answered {method} {path} with a body that is not JSON"
            ) from None

    def _status_error(self, op: str, method: str, path: str, response: httpx.Response) -> HttpStatusError:
        status = response.status_code
        detail = self._scrub(_detail_of(response))
        where = f"{method} {path}"
        suffix = f": {detail}" if detail else ""
        retryable = False
        if status == 400:
            message = f"{self.service} rejected the request (HTTP 400, {where}){suffix}"
        elif status in (401, 403):
            message = f"authentication failed (HTTP {status}, {where}); {self._auth_hint}{suffix}"
        elif status == 404:
            message = f"not found (HTTP 404, {where}){suffix}"
        elif status == 422:
            message = f"{self.service} could not process the request (HTTP 422, {where}){suffix}"
        elif status == 429:
            message = f"rate limited by {self.service} (HTTP 429, {where}); retry later{suffix}"
            retryable = True
        elif status >= 500:
            message = f"{self.service} server error (HTTP {status}, {where}){suffix}"
            retryable = True
        else:
            message = f"unexpected HTTP {status} ({where}){suffix}"
        return HttpStatusError(self.provider, op, message, status=status, detail=detail, retryable=retryable)

    def close(self) -> None:
        """Close the connection pool; later calls fail with "provider is closed"."""
        if not self.closed:
            self.closed = True
            self._client.close()
