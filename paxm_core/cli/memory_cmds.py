"""``paxm remember`` and ``paxm recall``: the active memory loop on the command line."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

import click

from paxm_core.api.errors import UsageError
from paxm_core.attribution import CLI_AGENT
from paxm_core.envelope import dumps_json, recall_json, render_recall_text
from paxm_core.textsafe import printable

if TYPE_CHECKING:
    from paxm_core.cli import CliState
    from paxm_core.runtime import Runtime

__all__ = ["recall", "remember"]


def _state(ctx: click.Context) -> CliState:
    from paxm_core.cli import CliState

    state = ctx.find_object(CliState)
    if state is None:  # invoked outside the root group (tests calling the command directly)
        state = CliState(os.environ.get("PAXM_CONFIG") or None)
        ctx.obj = state
        ctx.call_on_close(state.close)
    return state


def _workspace(runtime: Runtime, project: str | None = None) -> str:
    """The project the CLI works in: ``--project PATH`` or the working directory, by the config's mode."""
    from paxm_core.workspace import resolve_workspace

    if project is not None and not project.strip():
        raise UsageError("--project needs a path (use --all-projects to search every project)")
    return resolve_workspace(project, mode=runtime.config.workspace.effective_mode)


_PROJECT_HELP = "Project directory (default: the current one; a path inside a git repository means its repository)."


@click.command()
@click.argument("words", nargs=-1, metavar="[TEXT]...")
@click.option("--text", "text", metavar="TEXT", help="Memory text (or give it as arguments).")
@click.option("--stdin", "from_stdin", is_flag=True, help="Read the memory text from stdin.")
@click.option("--profile", default="", metavar="NAME", help="Write profile: default, stm, ltm or a custom one.")
@click.option("--source", default="cli", show_default=True, help="Source label stored with the memory.")
@click.option("--project", "project", default=None, metavar="PATH", help=_PROJECT_HELP)
@click.option("--global", "no_project", is_flag=True, help="Store it for no project: every project sees it.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def remember(
    ctx: click.Context,
    words: tuple[str, ...],
    text: str | None,
    from_stdin: bool,
    profile: str,
    source: str,
    project: str | None,
    no_project: bool,
    as_json: bool,
) -> None:
    """Store a memory through a write profile.

    The memory belongs to the current project (docs/projects.md): recall from that project, or
    from a directory above it, finds it; --global stores it for every project.
    """
    if sum((bool(words), text is not None, from_stdin)) > 1:
        raise UsageError("give the memory text once: as arguments, with --text, or with --stdin")
    if no_project and project is not None:
        raise UsageError("--global and --project exclude each other")
    value = sys.stdin.read() if from_stdin else (" ".join(words) if words else (text or ""))
    if not value.strip():
        raise UsageError('memory text is required (paxm remember "TEXT", --text TEXT or --stdin)')
    runtime = _state(ctx).runtime()
    here = _workspace(runtime)
    owner = here if project is None else _workspace(runtime, project)
    result = runtime.tools.remember(
        value,
        profile=profile or None,
        source=source,
        session_id=runtime.cli_session_id(here),
        workspace=None if no_project else owner or None,  # the project rule: docs/projects.md
        agent_name=CLI_AGENT,
    )
    if as_json:
        click.echo(dumps_json(result.to_json()), nl=False)
        return
    for name in result.queued:
        click.echo(f"note: queued for {name}; the capture queue delivers it (paxm queue status)", err=True)
    for ref in result.refs:
        click.echo(printable(f"stored memory: {ref.provider}/{ref.id}"))


@click.command()
@click.argument("words", nargs=-1, metavar="[QUERY]...")
@click.option("--query", "-q", "query", metavar="TEXT", help="What to recall (or give it as arguments).")
@click.option("--stdin", "from_stdin", is_flag=True, help="Read the query from stdin.")
@click.option("--profile", default="", metavar="NAME", help="Recall profile (default: default).")
@click.option("--limit", default=0, type=int, help="Maximum memories to return (0: the profile's max_results).")
@click.option("--project", "project", default=None, metavar="PATH", help=_PROJECT_HELP)
@click.option("--all-projects", "all_projects", is_flag=True, help="Search the memories of every project.")
@click.option("--verbose", is_flag=True, help="Also show each memory's relevance and the backend's raw score.")
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
    ctx: click.Context,
    words: tuple[str, ...],
    query: str | None,
    from_stdin: bool,
    profile: str,
    limit: int,
    project: str | None,
    all_projects: bool,
    verbose: bool,
    as_json: bool,
    hook_event: bool,
) -> None:
    """Recall memories relevant to a query, from the current project.

    A recall sees the current project's memories and those stored for every project
    (docs/projects.md). When it finds fewer than asked for, it says how many matches other
    projects hold; --project PATH or --all-projects shows them.
    """
    if hook_event:
        # Upstream's legacy entry point: the payload on stdin is a user_input hook event of
        # upstream's default agent (data in config.defaults, not a harness the core knows).
        from paxm_core.cli.hook_cmds import hook
        from paxm_core.config.defaults import LEGACY_HOOK_TARGET

        ctx.invoke(hook, target=LEGACY_HOOK_TARGET, event="user_input", mode="", json_out=as_json)
        return
    if all_projects and project is not None:
        raise UsageError("--all-projects and --project exclude each other")
    if sum((bool(words), query is not None, from_stdin)) > 1:
        raise UsageError("give the query once: as arguments, with --query, or with --stdin")
    value = sys.stdin.read() if from_stdin else (" ".join(words) if words else (query or ""))
    if not value.strip():
        raise UsageError('recall query is required (paxm recall "QUERY", --query QUERY or --stdin)')
    runtime = _state(ctx).runtime()
    here = _workspace(runtime)
    scope = "" if all_projects else (_workspace(runtime, project) if project is not None else here)
    result = runtime.tools.recall(
        value,
        profile=profile or None,
        limit=limit if limit > 0 else None,  # as upstream, 0 or less means the profile's max_results
        workspace=scope or None,
        session_id=runtime.cli_session_id(here),
    )
    others = runtime.tools.elsewhere(
        value, workspace=scope, profile=profile or None, limit=limit if limit > 0 else None, shown=len(result.hits)
    )
    from paxm_core.hit_notes import notes_for

    notes = notes_for(result.hits, runtime.config)
    if as_json:
        out = recall_json(result, "active", [n.to_json() for n in notes])
        out["project"] = scope  # "" with --all-projects
        out["other_projects"] = [{"project": name, "matches": count} for name, count in others]
        click.echo(dumps_json(out), nl=False)
        return
    for recalled in result.provider_recalls:
        if recalled.outcome == "skipped":
            click.echo(f"note: {recalled.provider} skipped (no answer within limits.optional_grace)", err=True)
    attributes = [n.attributes(show_fresh=True) for n in notes]
    # memory text is untrusted: control characters are shown, never sent raw to a terminal
    click.echo(printable(render_recall_text(result, "active", attributes, verbose=verbose)), nl=False)
    if others:
        click.echo(printable(_elsewhere_note(scope, others, bool(result.hits))), err=True)


def _elsewhere_note(scope: str, others: list[tuple[str, int]], found: bool) -> str:
    """What other projects hold beyond ``scope``, and how to see it (``note: ...``, for stderr)."""
    total = sum(count for _, count in others)
    names = ", ".join(f"{name} ({count})" for name, count in others[:3]) + (", ..." if len(others) > 3 else "")
    matches = f"{total} match{'es' if total != 1 else ''}"
    head = f"{matches} more in other projects" if found else f"nothing in {scope} matches; {matches} in other projects"
    return f"note: {head}: {names}\n      see them with --all-projects, or --project PATH"
