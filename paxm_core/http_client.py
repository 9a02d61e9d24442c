"""``httpx`` for the HTTP providers, imported and configured so a client costs what it uses.

Two costs the hook daemon would otherwise pay for every HTTP provider it loads, in start-up
time and resident memory (measured by ``benchmarks/hook_bench.py``):

* ``import httpx`` imports its command-line client (``httpx._main``: click, pygments, rich)
  whenever those happen to be installed; a library never runs that CLI, so the import is
  answered "not available" and ``httpx`` falls back to its stub ``main`` (about 3 MiB and a
  third of httpx's import time);
* ``httpx.Client`` builds a TLS context and loads certifi's whole CA bundle even for a
  plain ``http://`` server (every self-hosted memory server on 127.0.0.1); such a client gets
  a TLS context with no trusted CA at all, so a redirect or misconfiguration that reached a
  TLS server would fail verification instead of trusting anything (about 1.5 MiB).

Import ``httpx`` from here (``from paxm_core.http_client import httpx``) and build clients with
:func:`new_client`.  :class:`JsonTransport` is the deadline-bound JSON call most HTTP providers
make (timeouts from the deadline, HTTP failures mapped to ``ProviderError``, the secret never in
a message); a provider subclasses it for its own envelope rules.  Nothing here is imported by
``import paxm_core``.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from paxm_core.api.errors import DeadlineExceeded, ProviderError
from paxm_core.api.json import JSONValue

if TYPE_CHECKING:
    from collections.abc import Mapping

    from paxm_core.api.deadline import Deadline

if "httpx" not in sys.modules:
    _blocked = "httpx._main" not in sys.modules
    if _blocked:
        sys.modules["httpx._main"] = None  # type: ignore[assignment]  # "not importable": see above
    try:
        import httpx
    finally:
        if _blocked and sys.modules.get("httpx._main", 0) is None:
            del sys.modules["httpx._main"]  # a later explicit ``import httpx._main`` still works
else:
    import httpx

__all__ = ["JsonTransport", "httpx", "new_client", "redact"]


def new_client(server: str, **options: Any) -> httpx.Client:
    """An ``httpx.Client`` for talking to ``server`` (a URL); ``options`` go to ``httpx.Client``.

    When ``server`` is ``http://`` and no ``verify`` option is given, TLS verification gets a
    context trusting no CA instead of certifi's bundle (never used for plain HTTP; see the
    module docstring).  ``https://`` servers keep httpx's default verification.  Pass
    ``base_url`` in ``options`` when the client should resolve relative paths.
    """
    if "verify" not in options and server.strip().lower().startswith("http://"):
        import ssl

        options["verify"] = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies certificates, trusts none
    return httpx.Client(**options)


def redact(text: str, secret: str, limit: int = 300) -> str:
    """``text`` with ``secret`` replaced by ``<redacted>``, whitespace collapsed, cut to ``limit`` characters."""
    text = " ".join(str(text).split())
    if secret:
        text = text.replace(secret, "<redacted>")
    return text[:limit]


class JsonTransport:
    """JSON requests to one base URL under a paxm deadline, failures as redacted ``ProviderError``s.

    Every timeout comes from the deadline (``default_timeout`` when it has none); an expired
    deadline raises ``DeadlineExceeded``, a slow or unreachable server a retryable
    ``ProviderError``.  Messages name the operation and ``service`` and never carry ``secret``.
    The client ignores proxy settings from the environment (``trust_env=False``): a proxy must
    not see, or swallow, memory traffic.

    A provider subclasses it for its envelope: its ``call`` runs :meth:`send`, then
    :meth:`check_status`, then its own checks of the decoded body; :meth:`detail` picks the
    server's explanation out of an error body.

    :param provider: the provider instance's name, for errors.
    :param service: the backend's name in messages (``"MemOS"``).
    :param label: what deadline messages start with (``"memos"``: ``"memos search: deadline exceeded"``).
    """

    def __init__(
        self,
        provider: str,
        base_url: str,
        headers: Mapping[str, str],
        secret: str,
        default_timeout: float,
        *,
        service: str,
        label: str,
    ) -> None:
        self._provider = provider
        self._base = base_url.rstrip("/")
        self._secret = secret
        self._default_timeout = default_timeout
        self._service = service
        self._label = label
        self._client = new_client(self._base, headers={"Accept": "application/json", **headers}, trust_env=False)
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Close the connection pool; later calls fail with "provider is closed"."""
        if not self._closed:
            self._closed = True
            self._client.close()

    def fail(self, op: str, message: str, *, retryable: bool = False) -> ProviderError:
        """A ``ProviderError`` for ``op`` whose message is :func:`redact`-ed."""
        return ProviderError(self._provider, op, redact(message, self._secret), retryable=retryable)

    def detail(self, payload: object) -> str:
        """The server's explanation in an error body (``""`` when none); providers override it."""
        return ""

    def send(
        self,
        op: str,
        method: str,
        path: str,
        deadline: Deadline,
        body: JSONValue = None,
        *,
        params: Mapping[str, str] | None = None,
    ) -> tuple[httpx.Response, Any]:
        """Send one request; the response and its decoded JSON (``None`` when empty or not JSON)."""
        if self._closed:
            raise ProviderError(self._provider, op, "provider is closed")
        deadline.check(f"{self._label} {op}")
        timeout = deadline.timeout(cap=None)
        if timeout is None:
            timeout = self._default_timeout
        try:
            resp = self._client.request(
                method, self._base + path, json=body, params=params, timeout=httpx.Timeout(max(timeout, 0.001))
            )
        except httpx.TimeoutException as exc:
            if deadline.expired():
                raise DeadlineExceeded(f"{self._label} {op}: deadline exceeded") from exc
            raise self.fail(op, f"timed out waiting for {self._service} at {self._base}", retryable=True) from exc
        except httpx.TransportError as exc:
            raise self.fail(
                op, f"cannot reach {self._service} at {self._base}: {type(exc).__name__}", retryable=True
            ) from exc
        try:
            payload = resp.json() if resp.content else None
        except (json.JSONDecodeError, UnicodeDecodeError):
            payload = None
        return resp, payload

    def check_status(self, op: str, resp: httpx.Response, payload: object) -> None:
        """Raise for an HTTP error status (401/403 name the api_key; 429 and 5xx are retryable)
        and for a body that is not JSON."""
        if resp.status_code >= 400:
            detail = self.detail(payload) or resp.text
            if resp.status_code in (401, 403):
                raise self.fail(op, f"authentication failed (HTTP {resp.status_code}); check api_key: {detail}")
            retryable = resp.status_code == 429 or resp.status_code >= 500
            raise self.fail(op, f"HTTP {resp.status_code}: {detail}", retryable=retryable)
        if payload is None and resp.content:
            raise self.fail(op, f"{self._service} returned a body that is not JSON: {resp.text}")
