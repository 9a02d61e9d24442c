"""The dashboard's access rules: loopback bind, Host check, per-run token.

* The server binds only to a loopback address (``localhost`` allowed); anything else is refused
  before a socket is opened.
* Every request must carry a ``Host`` naming a loopback name with the served port, so a page on
  another origin cannot reach the dashboard through DNS rebinding.
* Every request must carry the per-run token: in the ``token`` query parameter of the URL that
  ``paxm dashboard`` prints (exchanged once for an HttpOnly, SameSite=Strict cookie), in that
  cookie, or in the ``X-Paxm-Token`` header.  State-changing requests are POST only and need the
  header (a cookie alone never authorizes a change).
* ``--open`` never puts the token on the browser's command line, which every local user can
  read (``/proc/<pid>/cmdline``): the browser gets ``/login?code=…`` with a one-time code
  (:class:`OneTimeCodes`: single use, expires after 60 s) that is exchanged for the same cookie.
"""

from __future__ import annotations

import ipaddress
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from paxm_core.api.errors import UsageError

__all__ = [
    "DEFAULT_ADDR",
    "TOKEN_HEADER",
    "LOGIN_CODE_SECONDS",
    "BindAddress",
    "OneTimeCodes",
    "allowed_hosts",
    "cookie_name",
    "new_token",
    "parse_addr",
    "tokens_match",
]

DEFAULT_ADDR = "127.0.0.1:7465"
TOKEN_HEADER = "x-paxm-token"
_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
#: how long a one-time login code stays valid: enough for a browser to start
LOGIN_CODE_SECONDS = 60.0


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

    Raises :class:`~paxm_core.api.errors.UsageError` with the reason, e.g. for ``0.0.0.0:7465``.
    """
    text = (addr or "").strip()
    if text.startswith("["):
        host, sep, rest = text[1:].partition("]")
        sep, port_text = (sep if rest.startswith(":") else ""), rest[1:]
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


class OneTimeCodes:
    """Login codes for the browser ``--open`` starts: each works once, and only for ``ttl`` seconds.

    A code is what goes on the browser's command line instead of the run's token; a local user
    who reads it there finds it used or expired.

    :param ttl: seconds a code stays valid.
    :param clock: monotonic seconds (tests pass their own).
    """

    def __init__(self, ttl: float = LOGIN_CODE_SECONDS, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self._clock = clock
        self._codes: dict[str, float] = {}  # code -> expiry
        self._lock = threading.Lock()

    def issue(self) -> str:
        """A fresh code (256 bits, URL-safe), valid for ``ttl`` seconds."""
        code = secrets.token_urlsafe(32)
        with self._lock:
            self._codes[code] = self._clock() + self.ttl
        return code

    def redeem(self, given: str | None) -> bool:
        """Whether ``given`` is a live code; a live code is spent by this call, whatever follows."""
        if not given:
            return False
        now = self._clock()
        with self._lock:
            for code, expiry in list(self._codes.items()):
                if expiry <= now:
                    del self._codes[code]  # expired codes never come back
                elif tokens_match(given, code):
                    del self._codes[code]
                    return True
        return False
