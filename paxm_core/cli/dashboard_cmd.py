"""``paxm dashboard``: a loopback web page over telemetry, the capture queue and memory."""

from __future__ import annotations

import click

from paxm_core.dashboard.security import DEFAULT_ADDR

__all__ = ["dashboard"]


@click.command()
@click.option(
    "--addr",
    default=DEFAULT_ADDR,
    show_default=True,
    metavar="HOST:PORT",
    help="Loopback address to listen on (127.0.0.1, [::1] or localhost; port 0 picks a free one).",
)
@click.option("--days", type=int, default=7, show_default=True, help="Days the overview covers (0: whole retention).")
@click.option(
    "--open",
    "open_browser",
    is_flag=True,
    help="Open the page in the default browser (signed in with a one-time login code).",
)
@click.pass_context
def dashboard(ctx: click.Context, addr: str, days: int, open_browser: bool) -> None:
    """Show what paxm remembered, recalled and delivered, in a browser.

    Serves a page on a loopback address only.  The printed URL carries a token made for this
    run; anyone without it (other users' browsers, other web pages) is refused.  ``--open``
    gives the browser a one-time login code instead (single use, 60 s), so the token never
    appears on a command line other users can read.  Ctrl-C stops.
    """
    from paxm_core.dashboard.security import parse_addr
    from paxm_core.dashboard.server import DashboardServer

    address = parse_addr(addr)  # refuse a non-loopback address before loading anything
    config = ctx.find_root().obj.config()

    def signed_in() -> None:
        # a code someone else redeemed first leaves the user's browser refused: say when one is used
        click.echo("paxm dashboard: a browser signed in with the one-time login code", err=True)

    server = DashboardServer(config, address, days=days, on_login=signed_in)

    def ready() -> None:
        click.echo(f"paxm dashboard: {server.url}")
        click.echo("(the URL carries this run's access token; Ctrl-C stops)", err=True)
        if open_browser:
            import webbrowser

            # the browser's argv is readable by every local user: a one-time code, never the token
            if not webbrowser.open(server.login_url()):
                click.echo("paxm dashboard: no browser found; open the URL above", err=True)

    try:
        server.serve(on_ready=ready)
    except KeyboardInterrupt:
        pass
