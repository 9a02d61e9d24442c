"""The dashboard's access rules: loopback bind, Host check, per-run token.

* The server binds only to a loopback address (``localhost`` allowed); anything else is refused
  before a socket is opened.
* Every request must carry a ``Host`` naming a loopback name with the served port, so a page on
  another origin cannot reach the dashboard through DNS rebinding.
* Every request must carry the per-run token: in the ``token`` query parameter of the URL that
  ``paxm dashboard`` prints (exchanged once for an HttpOnly, SameSite=Strict cookie), in that
  cookie, or in the ``X-Paxm-Token`` header.  State-changing requests are POST only and need the
  header (a cookie alone never authorizes a change).
"""

from __future__ import annotations

import ipaddress
import secrets
from dataclasses import dataclass

from paxm_core.errors import UsageError

__all__ = [
    "DEFAULT_ADDR",
    "TOKEN_HEADER",
    "BindAddress",
    "allowed_hosts",
    "cookie_name",
    "new_token",
    "parse_addr",
    "tokens_match",
]

DEFAULT_ADDR = "127.0.0.1:7465"
TOKEN_HEADER = "x-paxm-token"
_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")


@dataclass(frozen=True, slots=True)
class BindAddress:
    """A validated loopback address: ``host`` as given (``::1`` without brackets) and ``port``."""

    host: str
    port: int

    @property
    def url_host(self) -> str:
        """The host as it appears in a URL (IPv6 in brackets)."""
        return f"[{self.host}]" if ":" in self.host else self.host


def parse_addr(addr: str) -> BindAddress:
    """Parse ``host:port`` (``[::1]:port`` for IPv6) and refuse anything that is not loopback.

    Raises :class:`~paxm_core.errors.UsageError` with the reason, e.g. for ``0.0.0.0:7465``.
    """
    text = (addr or "").strip()
    if text.startswith("["):
        host, sep, rest = text[1:].partition("]")
        if not sep or not rest.startswith(":"):
            raise UsageError(f"dashboard --addr {addr!r}: expected HOST:PORT, e.g. {DEFAULT_ADDR}")
        port_text = rest[1:]
    else:
        host, sep, port_text = text.rpartition(":")
        if not sep:
            raise UsageError(f"dashboard --addr {addr!r}: expected HOST:PORT, e.g. {DEFAULT_ADDR}")
    try:
        port = int(port_text)
    except ValueError:
        raise UsageError(f"dashboard --addr {addr!r}: port {port_text!r} is not a number") from None
    if not 0 <= port <= 65535:
        raise UsageError(f"dashboard --addr {addr!r}: port must be 0-65535")
    if not host:
        raise UsageError(
            f"dashboard --addr {addr!r}: an empty host means every interface; the dashboard listens on loopback"
            f" only (use {DEFAULT_ADDR} or localhost:{port or 7465})"
        )
    if host.lower() == "localhost":
        return BindAddress("localhost", port)
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        raise UsageError(
            f"dashboard --addr {addr!r}: {host!r} is not a loopback address; the dashboard listens on"
            " 127.0.0.1, ::1 or localhost only"
        ) from None
    if not ip.is_loopback:
        raise UsageError(
            f"dashboard --addr {addr!r}: {host} is not a loopback address; the dashboard shows your memory"
            " and listens on 127.0.0.1, ::1 or localhost only"
        )
    return BindAddress(str(ip), port)


def allowed_hosts(port: int) -> frozenset[str]:
    """``Host`` header values accepted for a server on ``port``: loopback names with that port."""
    return frozenset(f"{name}:{port}" for name in _LOOPBACK_NAMES)


def new_token() -> str:
    """A fresh per-run token (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def tokens_match(given: str | None, expected: str) -> bool:
    """Constant-time comparison; ``None``/empty never matches."""
    if not given:
        return False
    return secrets.compare_digest(given.encode("utf-8", "replace"), expected.encode("utf-8"))


def cookie_name(port: int) -> str:
    """The session cookie's name; cookies ignore ports, so two dashboards must not share one."""
    return f"paxm_dashboard_{port}"
