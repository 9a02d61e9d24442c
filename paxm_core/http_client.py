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
:func:`new_client`.  Nothing here is imported by ``import paxm_core``.
"""

from __future__ import annotations

import sys
from typing import Any

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

__all__ = ["httpx", "new_client"]


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
