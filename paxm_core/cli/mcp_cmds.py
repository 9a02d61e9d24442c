"""``paxm mcp serve``: paxm as an MCP server over stdio."""

from __future__ import annotations

import click

__all__ = ["mcp"]


@click.group()
def mcp() -> None:
    """Serve paxm memory to MCP clients (Claude Code, Codex, OpenCode, ...)."""


@mcp.command()
@click.option("--agent", "agent", default="", metavar="NAME", help="Configured agent whose identity writes carry.")
@click.pass_context
def serve(ctx: click.Context, agent: str) -> None:
    """Run the stdio MCP server (tools: paxm_recall, paxm_remember, paxm_history, paxm_config_doctor)."""
    from paxm_core.mcp_server import serve as run

    run(ctx.find_root().obj.config_path, agent_name=agent)
