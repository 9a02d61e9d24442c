"""``paxm hybrid status|backfill``: vectors for memories written before the hybrid was enabled."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable
from typing import Any

import click

from paxm_core import Deadline, ProviderConfig
from paxm_core.api.errors import PaxmError

__all__ = ["hybrid"]

TYPE = "sqlite-hybrid"


def _targets(ctx: click.Context, name: str, path: str) -> list[tuple[str, ProviderConfig]]:
    if path:
        return [(name or TYPE, ProviderConfig(type=TYPE, enabled=True, path=path))]
    cfg = ctx.find_root().obj.config()
    found = [(n, p) for n, p in cfg.enabled_providers().items() if p.type == TYPE and (not name or n == name)]
    if not found:
        which = f"named {name!r} " if name else ""
        raise PaxmError(f"no enabled {TYPE} provider {which}in {cfg.path} (or pass --path DB)")
    return found


def _with_targets(fn: Any) -> Any:
    fn = click.option("--json", "as_json", is_flag=True, help="Print JSON.")(fn)
    fn = click.option("--path", default="", metavar="DB", help="A database file instead of the configured providers.")(
        fn
    )
    return click.option("--provider", "name", default="", metavar="NAME", help="Only this provider instance.")(fn)


@click.group("hybrid")
def hybrid() -> None:
    """The sqlite-hybrid provider's embedding vectors (model all-MiniLM-L6-v2, offline)."""


@hybrid.command("status")
@_with_targets
@click.pass_context
def status_cmd(ctx: click.Context, name: str, path: str, as_json: bool) -> None:
    """How many memories of each sqlite-hybrid store have a vector."""

    def counts(inst: str, prov: Any) -> dict[str, Any]:
        total, done = prov.vector_status(Deadline.none())
        return {"memories": total, "vectors": done}

    def line(row: dict[str, Any]) -> str:
        missing = row["memories"] - row["vectors"]
        hint = f"; run `paxm hybrid backfill --provider {row['provider']}`" if missing else ""
        return f"{row['provider']}: {row['vectors']}/{row['memories']} memories have vectors{hint}"

    _report(ctx, name, path, as_json, counts, line)


@hybrid.command("backfill")
@_with_targets
@click.option("--batch", default=64, show_default=True, type=click.IntRange(1, 4096), help="Memories per commit.")
@click.pass_context
def backfill_cmd(ctx: click.Context, name: str, path: str, as_json: bool, batch: int) -> None:
    """Embed every memory that has no vector yet.

    Safe to interrupt and re-run: each batch commits, and a re-run continues with what is
    still missing.  Shows a progress bar on a terminal; ``--json`` prints one summary.
    """
    show_bar = not as_json and sys.stderr.isatty()

    def embed(inst: str, prov: Any) -> dict[str, Any]:
        total, done = prov.vector_status(Deadline.none())
        missing, embedded = total - done, 0
        bar = click.progressbar(length=missing, label=f"{inst}: embedding", file=sys.stderr) if show_bar else None
        with bar if bar is not None else contextlib.nullcontext():
            while True:
                step, left = prov.backfill_step(batch, Deadline.none())
                if not step:
                    break
                embedded += step
                if bar is not None:
                    bar.update(step)
                if not left:
                    break
        total, done = prov.vector_status(Deadline.none())
        return {"embedded": embedded, "memories": total, "vectors": done}

    def line(row: dict[str, Any]) -> str:
        return f"{row['provider']}: embedded {row['embedded']}; {row['vectors']}/{row['memories']} have vectors"

    _report(ctx, name, path, as_json, embed, line)


def _report(
    ctx: click.Context,
    name: str,
    path: str,
    as_json: bool,
    row: Callable[[str, Any], dict[str, Any]],
    line: Callable[[dict[str, Any]], str],
) -> None:
    """Open each target provider in turn, ``row`` it, and print the rows as JSON or ``line`` each."""
    from paxm_provider_sqlite_hybrid.provider import HybridSQLiteProvider

    report = []
    for inst, config in _targets(ctx, name, path):
        # No background preload: the command loads the model itself only if it embeds something.
        prov = HybridSQLiteProvider(inst, config, warm=False)
        try:
            report.append({"provider": inst, "path": str(prov.path), **row(inst, prov)})
        finally:
            prov.close()
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    for each in report:
        click.echo(line(each))
