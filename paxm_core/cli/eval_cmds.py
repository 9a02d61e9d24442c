"""``paxm eval``: eval suites (``eval run``), provider conformance checks (``eval provider``), LoCoMo
(``eval locomo``) and the removal of LoCoMo run directories (``eval cleanup``)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from paxm_core.api.errors import PaxmError, UsageError
from paxm_core.cli.common import echo_json, json_flag

if TYPE_CHECKING:
    from paxm_core.evals.results import CaseResult

__all__ = ["eval_group"]

#: subcommands that live in other modules: name -> (module, attribute)
_LAZY_SUBCOMMANDS = {
    "locomo": ("paxm_core.cli.locomo_cmds", "locomo"),
    "cleanup": ("paxm_core.cli.locomo_cmds", "cleanup"),
}


class _EvalGroup(click.Group):
    """``paxm eval``; ``locomo`` and ``cleanup`` are imported only when used."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *_LAZY_SUBCOMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in _LAZY_SUBCOMMANDS:
            return self.commands.get(cmd_name)
        from importlib import import_module

        module, attr = _LAZY_SUBCOMMANDS[cmd_name]
        command: click.Command = getattr(import_module(module), attr)
        return command


@click.group("eval", cls=_EvalGroup)
def eval_group() -> None:
    """Measure recall quality on eval suites and check provider plugins."""


class _ProviderGroup(click.Group):
    """Provider distributions add ``paxm eval provider <type>`` through ``paxm_register_commands``."""

    @staticmethod
    def _load_plugins(ctx: click.Context) -> None:
        getattr(ctx.find_root().command, "_load_plugin_commands", lambda: None)()

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._load_plugins(ctx)
        return super().list_commands(ctx)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands:
            self._load_plugins(ctx)
        return super().get_command(ctx, cmd_name)


@eval_group.group("provider", cls=_ProviderGroup)
def provider() -> None:
    """Check provider plugins against the paxm provider protocol (each provider distribution adds its own)."""


@eval_group.command("run")
@click.option(
    "--suite",
    "suite_path",
    required=True,
    metavar="PATH",
    help="Suite file, or a directory containing suite.json (upstream's format v1).",
)
@click.option(
    "--gate",
    type=click.Choice(["none", "adapter", "quality"]),
    default="none",
    show_default=True,
    help="Failure policy: none (execution errors only), adapter (write contract), quality (every case + budget).",
)
@click.option(
    "--budget", "budget_path", metavar="PATH", help="Regression budget JSON to enforce (needs --gate quality)."
)
@json_flag()
@click.option("--output", "output_path", metavar="PATH", help="Also write the result JSON to PATH (mode 0600).")
@click.option("--compare", "compare_path", metavar="RESULT", help="Compare with a result saved by --output.")
@click.option(
    "--provider-type",
    default="",
    metavar="TYPE",
    help="Run the cases on this installed provider type instead of the default store (e.g. a plugin's variant).",
)
def run(
    suite_path: str,
    gate: str,
    budget_path: str | None,
    as_json: bool,
    output_path: str | None,
    compare_path: str | None,
    provider_type: str,
) -> None:
    """Run every case of a suite in its own temporary SQLite store, through the production runtime.

    Prints Recall@K, Precision@K, MRR, the false-positive rate, per-category lines and one
    FAIL line per failed case.  Exits 1 when the gate fails.
    """
    from paxm_core.evals.gates import gate_failure, validate_gate_options
    from paxm_core.evals.regression import check_budget, compare, load_budget, load_result
    from paxm_core.evals.report import format_comparison, format_report
    from paxm_core.evals.runner import Runner
    from paxm_core.evals.suite import load_suite

    validate_gate_options(gate, budget_path is not None)
    suite = load_suite(suite_path)
    if gate == "adapter" and not any(case.is_write_case for case in suite.cases):
        raise UsageError("adapter gate requires a suite with conversation writes")
    # Read the other inputs before running, so a typo fails in a second, not after the run.
    budget = load_budget(budget_path) if budget_path else None
    baseline = load_result(compare_path) if compare_path else None

    from paxm_core.progress import progress as progress_bar

    with progress_bar("eval", len(suite.cases), show=not as_json) as bar:

        def on_case(done: int, total: int, case: CaseResult) -> None:
            if bar.enabled and not case.passed:
                bar.close()  # the failure line goes above the bar, which redraws on the next case
                click.echo(f"eval: FAIL {case.id} ({done}/{total})", err=True)
            bar.update(done, total)

        result = Runner(progress=on_case, provider_type=provider_type).run(suite)

    comparison = compare(baseline, result) if baseline is not None else None
    budget_failures = check_budget(result, budget) if budget is not None else []
    if output_path:
        write_output(output_path, result.to_json())
    if as_json:
        payload: dict[str, Any] = result.to_json()
        if comparison is not None or budget is not None:
            payload = {"result": payload}
            if comparison is not None:
                payload["comparison"] = comparison.to_json()
            if budget_failures:
                payload["budget_failures"] = budget_failures
        echo_json(payload)
    else:
        click.echo(format_report(result), nl=False)
        if comparison is not None:
            click.echo(format_comparison(comparison), nl=False)
        for failure in budget_failures:
            click.echo(f"BUDGET FAIL: {failure}")
    reason = gate_failure(gate, result, budget_failures)
    if reason is not None:
        raise PaxmError(reason)  # after the report is printed


def write_output(output_path: str, value: object, *, ascii: bool = False) -> None:
    """Write ``value`` as JSON to ``--output`` PATH, a new file 0600 (results can quote memory ids and errors)."""
    from paxm_core.private_files import open_private

    path, text = Path(output_path).expanduser(), json.dumps(value, indent=2, ensure_ascii=ascii) + "\n"
    try:  # a new file is 0600; an existing one must be a regular file of yours (never a link)
        fd = open_private(path, os.O_WRONLY | os.O_TRUNC)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        raise UsageError(f"write --output {path}: {exc.strerror or exc}") from exc
