"""Run the dashboard: bind a loopback socket, print the URL with this run's token, serve."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import TYPE_CHECKING

from paxm_core.api.errors import UsageError
from paxm_core.dashboard.security import BindAddress, OneTimeCodes, new_token

if TYPE_CHECKING:
    import uvicorn

    from paxm_core.config.model import Config

__all__ = ["DashboardServer"]


class DashboardServer:
    """One dashboard run: a bound socket, a token and the uvicorn server around the app.

    The socket is bound in the constructor, so the port (``--addr 127.0.0.1:0`` picks one) and
    the URL are known before serving starts.
    """

    def __init__(
        self,
        config: Config,
        address: BindAddress,
        *,
        days: int = 7,
        token: str | None = None,
        on_login: Callable[[], None] | None = None,
    ) -> None:
        from paxm_core.dashboard.app import create_app
        from paxm_core.dashboard.data import DashboardData

        family = socket.AF_INET6 if ":" in address.host else socket.AF_INET
        host = "127.0.0.1" if address.host == "localhost" else address.host
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, address.port))
        except OSError as exc:
            sock.close()
            raise UsageError(f"dashboard cannot listen on {address.url_host}:{address.port}: {exc.strerror}") from exc
        self.socket = sock
        self.port = int(sock.getsockname()[1])
        self.address = BindAddress(address.host, self.port)
        self.token = token or new_token()
        self.codes = OneTimeCodes()
        self.data = DashboardData(config)
        self.app = create_app(
            self.data, token=self.token, port=self.port, days=days, codes=self.codes, on_login=on_login
        )
        self._server: uvicorn.Server | None = None

    @property
    def url(self) -> str:
        """The URL to open: it carries the token once; the page swaps it for a cookie."""
        return f"http://{self.address.url_host}:{self.port}/?token={self.token}"

    def login_url(self) -> str:
        """A URL for a browser this command starts: a one-time code (single use, 60 s), never the token."""
        return f"http://{self.address.url_host}:{self.port}/login?code={self.codes.issue()}"

    def serve(self, on_ready: Callable[[], None] | None = None) -> None:
        """Serve until :meth:`stop` (or Ctrl-C); ``on_ready`` runs once the server accepts requests."""
        import uvicorn

        config = uvicorn.Config(
            self.app,
            log_level="warning",
            access_log=False,  # the URL carries the token; it must not land in a log
            lifespan="off",
            server_header=False,
            proxy_headers=False,
        )
        server = uvicorn.Server(config)
        self._server = server
        if on_ready is not None:
            original = server.startup

            async def startup(sockets: list[socket.socket] | None = None) -> None:
                await original(sockets=sockets)
                on_ready()

            server.startup = startup  # type: ignore[method-assign]
        self.socket.listen(128)
        try:
            server.run(sockets=[self.socket])
        finally:
            self.data.close()
            self.socket.close()

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
