"""The dashboard's HTTP application (Starlette): the page, its assets and the JSON API (docs/dashboard.md).

Every route needs the Host check and the token (:mod:`paxm_core.dashboard.security`).  Bad
parameters answer 400 ``{"error": ...}``; a foreign Host 403; a missing or wrong token 401.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.resources import files

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from paxm_core.api.errors import PaxmError, UsageError
from paxm_core.api.json import JSONValue
from paxm_core.dashboard.data import MAX_PAGE, DashboardData, EventFilter
from paxm_core.dashboard.security import TOKEN_HEADER, OneTimeCodes, allowed_hosts, cookie_name, tokens_match

__all__ = ["create_app"]

_ASSETS = {
    "app.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}
_SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self';"
        " base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
    "cross-origin-resource-policy": "same-origin",
}


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _refused(message: str) -> Response:
    """A 401 for the page (not the API): plain text the person reads."""
    return Response(f"paxm dashboard: {message}\n", status_code=401, media_type="text/plain; charset=utf-8")


def _asset(name: str) -> str:
    return files("paxm_core.dashboard").joinpath("static", name).read_text(encoding="utf-8")


class _Guard:
    """ASGI middleware: Host check, token check, security headers on every response."""

    def __init__(self, app: ASGIApp, *, token: str, port: int) -> None:
        self.app = app
        self.token = token
        self.hosts = allowed_hosts(port)
        self.cookie = cookie_name(port)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        response = self._refuse(request)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {k.lower() for k, _ in headers}
                for key, value in _SECURITY_HEADERS.items():
                    if key.encode() not in present:
                        headers.append((key.encode(), value.encode()))
                message = {**message, "headers": headers}
            await send(message)

        if response is not None:
            await response(scope, receive, send_with_headers)
            return
        await self.app(scope, receive, send_with_headers)

    def _refuse(self, request: Request) -> Response | None:
        host = request.headers.get("host", "").lower()
        if host not in self.hosts:
            # A name that resolves to 127.0.0.1 but is not ours: a DNS-rebinding page, or a proxy.
            return _error(403, f"forbidden Host {host!r}: the dashboard answers only to {sorted(self.hosts)[0]}")
        header = request.headers.get(TOKEN_HEADER)
        if request.method not in ("GET", "HEAD"):
            # Changes need the header: a cookie is sent by the browser on its own, a header is not.
            if not tokens_match(header, self.token):
                return _error(401, f"missing or wrong {TOKEN_HEADER} header")
            return None
        if request.url.path == "/" and "token" in request.query_params:
            return None  # the endpoint checks and exchanges it
        if request.url.path == "/login":
            return None  # the endpoint redeems the one-time code
        if tokens_match(header, self.token) or tokens_match(request.cookies.get(self.cookie), self.token):
            return None
        if request.url.path.startswith("/api/"):
            return _error(401, "missing or wrong dashboard token; open the URL printed by 'paxm dashboard'")
        return _refused("open the URL printed by 'paxm dashboard' (it carries this run's token).")


def _int_param(request: Request, name: str, default: int, *, low: int, high: int) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise UsageError(f"{name} must be an integer, got {raw!r}") from None
    if not low <= value <= high:
        raise UsageError(f"{name} must be between {low} and {high}, got {value}")
    return value


def create_app(
    data: DashboardData,
    *,
    token: str,
    port: int,
    days: int = 7,
    codes: OneTimeCodes | None = None,
    on_login: Callable[[], None] | None = None,
) -> Starlette:
    """The ASGI app serving ``data``; ``port`` is the bound port (for the Host check and cookie).

    ``codes`` are the one-time login codes ``/login`` accepts (none: every code is refused);
    ``on_login`` runs after each code is redeemed (the command tells the terminal).
    """
    return Starlette(
        routes=[*_page_routes(token, port, days, codes, on_login), *_api_routes(data, days)],
        middleware=[Middleware(_Guard, token=token, port=port)],
        exception_handlers={404: _not_found, 405: _not_allowed},
    )


def _page_routes(
    token: str, port: int, days: int, codes: OneTimeCodes | None, on_login: Callable[[], None] | None
) -> list[Route]:
    """``/`` (the page, or the token exchanged for the cookie), ``/login`` and ``/static/<file>``."""
    cookie = cookie_name(port)

    def signed_in() -> Response:
        # The cookie, then "/" without the credential: it leaves the address bar and history.
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(cookie, token, httponly=True, samesite="strict", path="/")
        return response

    def index(request: Request) -> Response:
        given = request.query_params.get("token")
        if given is not None:
            if not tokens_match(given, token):
                return _refused("wrong token.")
            return signed_in()
        page = _asset("index.html").replace("{{TOKEN}}", token).replace("{{DAYS}}", str(days))
        return Response(page, media_type="text/html; charset=utf-8")

    def login(request: Request) -> Response:
        if codes is None or not codes.redeem(request.query_params.get("code")):
            return _refused("this login link is used or expired; open the URL printed by 'paxm dashboard'.")
        if on_login is not None:
            on_login()
        return signed_in()

    def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _ASSETS:
            return _error(404, "not found")
        return Response(_asset(name), media_type=_ASSETS[name])

    return [
        Route("/", index, methods=["GET"]),
        Route("/login", login, methods=["GET"]),
        Route("/static/{name}", asset, methods=["GET"]),
    ]


def _api(fn: Callable[[Request], JSONValue]) -> Callable[[Request], Response]:
    """An endpoint answering ``fn(request)`` as JSON, and a bad request, lookup or provider failure as an error."""

    def endpoint(request: Request) -> Response:
        try:
            return JSONResponse(fn(request))
        except UsageError as exc:
            return _error(400, str(exc))
        except LookupError as exc:
            return _error(404, str(exc.args[0] if exc.args else exc))
        except PaxmError as exc:
            return _error(502, str(exc))

    return endpoint


def _event_filter(request: Request) -> EventFilter:
    p = request.query_params
    texts = {
        name: p.get(name, "").strip() for name in ("source", "profile", "q", "state", "mode", "hit_provider", "hit_q")
    }
    kinds = tuple(k.strip() for k in p.get("kind", "").split(",") if k.strip())
    return EventFilter(kinds=kinds, session=p.get("session", ""), **texts)


def _api_routes(data: DashboardData, days: int) -> list[Route]:
    """The JSON API under ``/api/`` (see the module docstring for each route's parameters)."""

    def summary(request: Request) -> JSONValue:
        return data.summary(_int_param(request, "days", days, low=-1, high=100_000))

    def events(request: Request) -> JSONValue:
        flt = _event_filter(request)
        limit = _int_param(request, "limit", 50, low=1, high=MAX_PAGE)
        offset = _int_param(request, "offset", 0, low=0, high=10**9)
        return data.query_events(flt, limit=limit, offset=offset)

    def session(request: Request) -> JSONValue:
        key = request.query_params.get("key", "")
        if not key:
            raise UsageError("key (the session key) is required")
        return data.session(key)

    def queue(request: Request) -> JSONValue:
        return data.queue(
            state=request.query_params.get("state", "").strip(),
            provider=request.query_params.get("provider", "").strip(),
            limit=_int_param(request, "limit", 50, low=1, high=MAX_PAGE),
            offset=_int_param(request, "offset", 0, low=0, high=10**9),
        )

    def injections(request: Request) -> JSONValue:
        return data.injections(limit=_int_param(request, "limit", 50, low=1, high=MAX_PAGE))

    def memories(request: Request) -> JSONValue:
        return data.search_memories(
            request.query_params.get("q", ""),
            profile=request.query_params.get("profile", "").strip(),
            limit=_int_param(request, "limit", 20, low=1, high=100),
            project=request.query_params.get("project", "").strip(),
        )

    return [
        Route("/api/info", _api(lambda r: data.info()), methods=["GET"]),
        Route("/api/summary", _api(summary), methods=["GET"]),
        Route("/api/events", _api(events), methods=["GET"]),
        Route("/api/facets", _api(lambda r: data.facets()), methods=["GET"]),
        Route("/api/sessions", _api(lambda r: data.sessions()), methods=["GET"]),
        Route("/api/session", _api(session), methods=["GET"]),
        Route("/api/queue", _api(queue), methods=["GET"]),
        Route("/api/queue/retry", _api(lambda r: data.retry_dead()), methods=["POST"]),
        Route("/api/memories", _api(memories), methods=["GET"]),
        Route("/api/injections", _api(injections), methods=["GET"]),
    ]


async def _not_found(request: Request, exc: Exception) -> Response:
    return _error(404, "not found")


async def _not_allowed(request: Request, exc: Exception) -> Response:
    return _error(405, f"{request.method} is not allowed here")
