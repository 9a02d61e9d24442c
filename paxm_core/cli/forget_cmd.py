"""``paxm forget``: delete memories by id or by query, everywhere, queued copies included.

An operator command (never an MCP tool: an agent must not erase what the user told it to
keep).  It shows what it would delete and asks first; without a terminal it needs ``--yes``.
"""

from __future__ import annotations

import sys
from collections.abc import Collection, Container
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import click

from paxm_core.api.errors import PaxmError, RecallError, UsageError
from paxm_core.api.json import JSONObject
from paxm_core.cli.common import echo_json, json_flag, parse_seconds
from paxm_core.textsafe import printable

if TYPE_CHECKING:
    from paxm_core.api.types import MemoryHit, ProviderErrorInfo
    from paxm_core.capture.forget import QueuedCopy
    from paxm_core.router.core import Router
    from paxm_core.router.forget import ForgetResult
    from paxm_core.runtime import Runtime

__all__ = ["forget"]


@dataclass
class _Plan:
    """What one ``paxm forget`` will do: provider ids, the hits they came from, queued copies."""

    mode: str
    targets: dict[str, list[str]] = field(default_factory=dict)
    hits: list[MemoryHit] = field(default_factory=list)
    linked: dict[str, list[str]] = field(default_factory=dict)
    copies: list[QueuedCopy] = field(default_factory=list)
    search_errors: list[ProviderErrorInfo] = field(default_factory=list)
    queue_path: str = ""
    queue_error: str = ""

    def add(self, provider: str, memory_id: str) -> None:
        ids = self.targets.setdefault(provider, [])
        if memory_id not in ids:
            ids.append(memory_id)

    @property
    def empty(self) -> bool:
        return not any(self.targets.values()) and not self.copies


def _first_line(text: str) -> str:
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    return line if len(line) <= 100 else line[:99] + "…"


def _split_id(raw: str, enabled: Container[str]) -> tuple[str, str]:
    """``provider/id`` (as ``paxm remember`` prints) when the prefix is an enabled provider."""
    head, sep, tail = raw.partition("/")
    if sep and tail and head in enabled:
        return head, tail
    return "", raw


def _plan(
    runtime: Runtime, ids: tuple[str, ...], query: str, chosen: list[str], limit: int, budget: float
) -> tuple[_Plan, list[str]]:
    from paxm_core.api.deadline import Deadline
    from paxm_core.api.types import SearchQuery
    from paxm_core.capture import open_queue
    from paxm_core.router.policy import Route, SearchPolicy

    router = runtime.router
    plan = _Plan("query" if query else "ids")
    episode_ids: list[str] = []
    given: list[str] = []
    if query:
        policy = SearchPolicy(routes=[Route(name, timeout=budget) for name in chosen], limit=limit)
        try:
            found = router.search(SearchQuery(query, limit=limit), policy, Deadline.after(budget + 1))
        except RecallError as exc:  # no route is required here, but keep whatever came back
            found = exc.result
        plan.hits = list(found.hits)
        plan.search_errors = list(found.provider_errors)
        for hit in plan.hits:
            plan.add(hit.provider, hit.id)
            episode = (hit.metadata.get("paxm_episode_id") or "").strip()
            if episode and episode not in episode_ids:
                episode_ids.append(episode)
    else:
        for raw in ids:
            provider, memory_id = _split_id(raw.strip(), router.providers)
            if not memory_id:
                raise UsageError(f"empty memory id in {raw!r}")
            given.append(memory_id)
            if provider and provider not in chosen:
                raise UsageError(f"{raw}: provider {provider!r} is not among --provider {', '.join(chosen)}")
            for name in [provider] if provider else chosen:
                plan.add(name, memory_id)
    path = Path(runtime.config.capture_queue_path)
    plan.queue_path = str(path)
    if path.exists():
        try:
            with open_queue(runtime.config, recover=False) as queue:
                all_ids = [i for ids_ in plan.targets.values() for i in ids_]
                plan.copies = queue.queued_copies(ids=all_ids, episode_ids=episode_ids, query=query, limit=limit)
                linked = [c.id for c in plan.copies if c.kind == "episode" and c.reason != "text"]
                for provider, refs in queue.delivered_refs(linked).items():
                    for ref in refs if provider in chosen else ():
                        if ref not in plan.targets.get(provider, []):
                            plan.linked.setdefault(provider, []).append(ref)
                            plan.add(provider, ref)
        except PaxmError as exc:
            plan.queue_error = str(exc)
    return plan, given


def _preview_lines(plan: _Plan, router: Router) -> list[str]:
    from paxm_core.api.protocols import CAP_DELETE

    lines: list[str] = []
    can = {name for name in plan.targets if CAP_DELETE in router.capabilities(name)}
    if plan.mode == "query":
        deletable = [h for h in plan.hits if h.provider in can]
        kept = [h for h in plan.hits if h.provider not in can]
        if deletable:
            lines.append(f"Memories to delete ({len(deletable)}):")
            lines += [f"  {h.provider}  {h.id}  {_first_line(h.text)}" for h in deletable]
        if kept:
            lines.append(f"Found but NOT deletable (provider cannot delete) ({len(kept)}):")
            lines += [f"  {h.provider}  {h.id}  {_first_line(h.text)}" for h in kept]
    else:
        by_id: dict[str, list[str]] = {}
        for name, ids in plan.targets.items():
            for memory_id in ids:
                if memory_id not in plan.linked.get(name, []):
                    by_id.setdefault(memory_id, []).append(name)
        lines.append(f"Memory ids to delete ({len(by_id)}):")
        for memory_id, names in by_id.items():
            ok = [n for n in names if n in can]
            no = [n for n in names if n not in can]
            text = f"  {memory_id}  on: {', '.join(ok) or 'no provider that can delete'}"
            if no:
                text += f" (cannot delete on: {', '.join(no)})"
            lines.append(text)
    if any(plan.linked.values()):
        lines.append("Copies of the same captured turns on other providers (delivered from the queue):")
        for name, refs in sorted(plan.linked.items()):
            lines += [f"  {name}  {ref}" for ref in refs]
    if plan.copies:
        lines.append(f"Queued captures to remove, never to be delivered ({len(plan.copies)}):")
        for copy in plan.copies:
            if copy.kind == "episode":
                owed = ", ".join(f"{p} ({s})" for p, s in copy.undelivered) or "already delivered"
                where = f"owed to: {owed}"
            elif copy.kind == "event":
                where = "turn still open"
            else:
                where = "raw hook payload, daemon was down"
            lines.append(f"  {copy.kind}  {copy.id}  [{where}; linked by {copy.reason}]  {_first_line(copy.text)}")
            if any(state == "delivering" for _, state in copy.undelivered):
                lines.append("    note: a delivery is in flight; if it lands, run paxm forget again")
    for err in plan.search_errors:
        lines.append(f"warning: search on {err.provider} failed ({err.error}); its memories are not listed")
    if plan.queue_error:
        lines.append(f"warning: the capture queue could not be read: {plan.queue_error}")
    # memory text and ids are stored data: control characters are shown, never sent raw
    return [printable(line) for line in lines]


def _confirm(yes: bool, err: bool) -> None:
    if yes:
        return
    if not sys.stdin.isatty():
        raise UsageError("refusing to forget without confirmation: stdin is not a terminal; re-run with --yes")
    if not click.confirm("Delete these for good?", default=False, err=err):
        raise PaxmError("aborted; nothing was deleted")


@click.command("forget")
@click.argument("ids", nargs=-1, metavar="[ID]...")
@click.option("--query", "-q", "query", default="", metavar="TEXT", help="Forget the memories a search finds.")
@click.option(
    "--provider",
    "providers",
    multiple=True,
    metavar="NAME",
    help="Only on this provider (repeatable; default: every enabled one).",
)
@click.option(
    "--limit", default=10, show_default=True, type=int, help="Most memories (and queued captures) a query selects."
)
@click.option("--timeout", default="30s", show_default=True, metavar="DURATION", help="Budget per provider.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation (needed without a terminal).")
@json_flag("Print per-provider results as JSON.")
@click.pass_context
def forget(
    ctx: click.Context,
    ids: tuple[str, ...],
    query: str,
    providers: tuple[str, ...],
    limit: int,
    timeout: str,
    yes: bool,
    as_json: bool,
) -> None:
    """Delete memories by ID (or PROVIDER/ID) or by --query, on every provider that can delete.

    Shows what will be deleted (id, provider, first line) and asks first.  Queued captures of
    the same memories that are not delivered yet are removed too, so they never come back.
    Exits 1 if a delete failed, a provider could not be searched, or an ID was found nowhere.
    """
    query = query.strip()
    budget = _check_args(ids, query, limit, timeout)
    runtime = ctx.find_root().obj.runtime()
    router = runtime.router
    chosen = _chosen_providers(providers, router.providers)
    plan, given = _plan(runtime, ids, query, chosen, limit, budget)
    result: ForgetResult | None = None
    removed = 0
    if plan.empty:  # only a query can find nothing: ids always have a provider to try
        if not as_json:
            click.echo(printable(f"nothing matches {query!r}; nothing was deleted"))
            for line in _preview_lines(plan, router):
                click.echo(line)
    else:
        if not (as_json and yes):
            for line in _preview_lines(plan, router):
                click.echo(line, err=as_json)
        _confirm(yes, as_json)
        removed = _remove_queued(runtime, plan, providers)
        result = router.forget({k: v for k, v in plan.targets.items() if v}, timeout=budget)
        if not as_json:
            _print_report(result, plan, removed)
    if as_json:
        echo_json(_report(plan, result, removed, given, query))
    problems = _problems(plan, result, _not_found(plan, result, given))
    if problems:
        raise PaxmError("; ".join(problems))


def _check_args(ids: tuple[str, ...], query: str, limit: int, timeout: str) -> float:
    """Reject a bad command line before anything is opened; returns the --timeout budget in seconds."""
    if bool(ids) == bool(query):
        raise UsageError("give memory IDs or --query TEXT (one of them)")
    if limit <= 0:
        raise UsageError("--limit must be a positive number")
    return parse_seconds(timeout, "--timeout", positive=True)


def _chosen_providers(providers: tuple[str, ...], enabled: Collection[str]) -> list[str]:
    """The --provider names (deduplicated, in order), or every enabled provider without one."""
    chosen = list(dict.fromkeys(p.strip() for p in providers if p.strip())) or list(enabled)
    unknown = [p for p in chosen if p not in enabled]
    if unknown:
        raise UsageError(f"provider(s) not enabled: {', '.join(unknown)} (enabled: {', '.join(enabled) or 'none'})")
    if not chosen:
        raise UsageError("no memory providers are enabled")
    return chosen


def _remove_queued(runtime: Runtime, plan: _Plan, providers: tuple[str, ...]) -> int:
    """Drop the plan's queued copies; a queue failure is recorded on the plan, not raised."""
    from paxm_core.capture import open_queue

    removed = 0
    if plan.copies:
        try:
            with open_queue(runtime.config, recover=False) as queue:
                removed = queue.forget_copies(plan.copies, providers)
        except PaxmError as exc:
            plan.queue_error = str(exc)
    return removed


def _problems(plan: _Plan, result: ForgetResult | None, not_found: list[str]) -> list[str]:
    problems: list[str] = []
    if result is not None and result.failed:
        problems.append("some deletes failed: " + ", ".join(p.provider for p in result.providers if p.failed))
    if plan.queue_error and plan.copies:
        problems.append(f"queued copies were not removed: {plan.queue_error}")
    if plan.search_errors:
        # memories there could not be looked for, so some may remain
        problems.append("could not search: " + ", ".join(e.provider for e in plan.search_errors))
    if not_found:
        problems.append("not found anywhere: " + ", ".join(not_found))
    return problems


def _not_found(plan: _Plan, result: ForgetResult | None, given: list[str]) -> list[str]:
    """The given ids no provider deleted and no queued capture holds."""
    from paxm_core.capture.forget import episode_id_of

    queued = {c.id for c in plan.copies}
    # an id a provider gave a queued episode counts as found: its episode was
    refs = {ref for c in plan.copies for _, ref in c.delivered}
    return [
        i
        for i in given
        if (result is None or not result.gone(i))
        and i not in queued
        and episode_id_of(i) not in queued
        and i not in refs
    ]


def _report(plan: _Plan, result: ForgetResult | None, removed: int, given: list[str], query: str) -> JSONObject:
    not_found = _not_found(plan, result, given)
    out: JSONObject = {"mode": plan.mode}
    if plan.mode == "query":
        out["query"] = query
        out["hits"] = [{"provider": h.provider, "id": h.id, "first_line": _first_line(h.text)} for h in plan.hits]
    else:
        out["ids"] = list(given)
    out["providers"] = [p.to_json() for p in result.providers] if result is not None else []
    out["linked"] = {name: list(refs) for name, refs in sorted(plan.linked.items())}
    out["queue"] = {
        "path": plan.queue_path,
        "copies": [c.to_json() for c in plan.copies],
        "removed": removed,
        "error": plan.queue_error,
    }
    out["search_errors"] = [e.to_json() for e in plan.search_errors]
    out["not_found"] = not_found
    out["ok"] = not _problems(plan, result, not_found)
    return out


def _say(line: str) -> None:
    click.echo(printable(line))


def _print_report(result: ForgetResult, plan: _Plan, removed: int) -> None:
    for entry in result.providers:
        name = entry.provider
        if entry.status == "unsupported":
            _say(f"{name}: cannot delete (no delete support): {', '.join(entry.unsupported)}")
            continue
        for ids, label in (
            (entry.deleted, "deleted"),
            (entry.accepted, "delete accepted"),
            (entry.not_found, "not found"),
        ):
            if ids:
                _say(f"{name}: {label}: {', '.join(ids)}")
        for memory_id, error in entry.failed.items():
            _say(f"{name}: FAILED {memory_id}: {error}")
    if plan.copies:
        _say(f"capture queue: removed {removed} queued capture(s)")
