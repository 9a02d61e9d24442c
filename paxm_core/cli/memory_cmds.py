"""``paxm remember`` and ``paxm recall``: the active memory loop on the command line."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from paxm_core.envelope import dumps_json, recall_json, render_recall_text
from paxm_core.errors import UsageError
from paxm_core.textsafe import printable

__all__ = ["recall", "remember"]


def _state(ctx: click.Context) -> object:
    from paxm_core.cli import CliState

    state = ctx.find_object(CliState)
    if state is None:  # invoked outside the root group (tests calling the command directly)
        state = CliState(os.environ.get("PAXM_CONFIG") or None)
        ctx.obj = state
        ctx.call_on_close(state.close)
    return state


def _read_stdin() -> str:
    return sys.stdin.read()


def _workspace(runtime: Any) -> str:
    from paxm_core.workspace import resolve_workspace

    return resolve_workspace(mode=runtime.config.workspace.effective_mode)


@click.command()
@click.option("--text", "text", metavar="TEXT", help="Memory text.")
@click.option("--stdin", "from_stdin", is_flag=True, help="Read the memory text from stdin.")
@click.option("--profile", default="", metavar="NAME", help="Write profile: default, stm, ltm or a custom one.")
@click.option("--source", default="cli", show_default=True, help="Source label stored with the memory.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def remember(ctx: click.Context, text: str | None, from_stdin: bool, profile: str, source: str, as_json: bool) -> None:
    """Store a memory through a write profile."""
    value = _read_stdin() if from_stdin else (text or "")
    if not value.strip():
        raise UsageError("memory text is required (use --text TEXT or --stdin)")
    runtime = _state(ctx).runtime()  # type: ignore[attr-defined]
    result = runtime.tools.remember(
        value, profile=profile or None, source=source, session_id=runtime.cli_session_id(_workspace(runtime))
    )
    if not as_json:
        for name in result.queued:
            click.echo(f"note: queued for {name}; the capture queue delivers it (paxm queue status)", err=True)
    if as_json:
        click.echo(dumps_json(result.to_json()), nl=False)
        return
    for ref in result.refs:
        click.echo(printable(f"stored memory: {ref.provider}/{ref.id}"))


@click.command()
@click.option("--query", "-q", "query", metavar="TEXT", help="What to recall.")
@click.option("--stdin", "from_stdin", is_flag=True, help="Read the query from stdin.")
@click.option("--profile", default="", metavar="NAME", help="Recall profile (default: default).")
@click.option("--limit", default=0, type=int, help="Maximum memories to return (0: the profile's max_results).")
@click.option("--json", "as_json", is_flag=True, help="Print the RecallResult as JSON.")
@click.option(
    "--hook-event",
    "hook_event",
    is_flag=True,
    hidden=True,
    help="Legacy: run upstream's default agent's user_input hook from stdin.",
)
@click.pass_context
def recall(
    ctx: click.Context, query: str | None, from_stdin: bool, profile: str, limit: int, as_json: bool, hook_event: bool
) -> None:
    """Recall memories relevant to a query."""
    if hook_event:
        # Upstream's legacy entry point: the payload on stdin is a user_input hook event of
        # upstream's default agent (data in config.defaults, not a harness the core knows).
        from paxm_core.cli.hook_cmds import hook
        from paxm_core.config.defaults import LEGACY_HOOK_TARGET

        ctx.invoke(hook, target=LEGACY_HOOK_TARGET, event="user_input", mode="", json_out=as_json)
        return
    value = _read_stdin() if from_stdin else (query or "")
    if not value.strip():
        raise UsageError("recall query is required (use --query TEXT or --stdin)")
    runtime = _state(ctx).runtime()  # type: ignore[attr-defined]
    workspace = _workspace(runtime)
    result = runtime.tools.recall(
        value,
        profile=profile or None,
        limit=limit if limit > 0 else None,  # as upstream, 0 or less means the profile's max_results
        workspace=workspace or None,
        session_id=runtime.cli_session_id(workspace),
    )
    if not as_json:
        for recalled in result.provider_recalls:
            if recalled.outcome == "skipped":
                click.echo(f"note: {recalled.provider} skipped (no answer within limits.optional_grace)", err=True)
    from paxm_core.hit_notes import notes_for

    notes = notes_for(result.hits, runtime.config)
    if as_json:
        click.echo(dumps_json(recall_json(result, "active", [n.to_json() for n in notes])), nl=False)
        return
    attributes = [n.attributes(show_fresh=True) for n in notes]
    # memory text is untrusted: control characters are shown, never sent raw to a terminal
    click.echo(printable(render_recall_text(result, "active", attributes)), nl=False)
