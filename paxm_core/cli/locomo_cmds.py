"""``paxm eval locomo`` and ``paxm eval cleanup`` (registered lazily by :mod:`paxm_core.cli.eval_cmds`)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import click

from paxm_core.api.errors import PaxmError, UsageError
from paxm_core.api.json import JSONValue
from paxm_core.cli.common import echo_json, json_flag, parse_seconds
from paxm_core.cli.eval_cmds import write_output

if TYPE_CHECKING:
    from collections.abc import Callable

    from paxm_core.config.model import Config
    from paxm_core.progress import Progress

__all__ = ["cleanup", "locomo"]

#: without a terminal (CI logs, a pipe), a progress line every this many trials
PROGRESS_EVERY = 25


def _arms(value: str) -> tuple[str, ...]:
    from paxm_core.evals.locomo import ARMS

    for item in value.split(","):  # never empty: "" is an unsupported arm
        if item.strip() not in ARMS:
            raise UsageError(f"unsupported eval arm {item!r} (choose from {', '.join(ARMS)})")
    return tuple(dict.fromkeys(item.strip() for item in value.split(",")))


def _user_config(config_path: str | None) -> Config:
    """The user's config (``--config``/default), or the built-in one when there is none yet."""
    from paxm_core.config import config_exists, default_config, load_config
    from paxm_core.plugins import installed_provider_catalog

    catalog = installed_provider_catalog()
    if config_exists(config_path):
        return load_config(config_path, provider_types=catalog)
    return default_config(config_path, catalog)


def _validate(
    retrieval_only: bool, limit: int, base_url: str, model: str, max_questions: int, all_q: bool, threshold: float
) -> None:
    if retrieval_only:
        if limit <= 0:
            raise UsageError("--limit must be positive")
        return
    if not base_url or not model:
        raise UsageError("the LoCoMo agent eval needs --base-url URL and --model NAME (or --retrieval-only)")
    if max_questions <= 0 and not all_q:
        raise UsageError("the LoCoMo agent eval makes paid model calls; choose --max-questions N or pass --all")
    if max_questions < 0 or not 0 < threshold <= 1 or limit <= 0:
        raise UsageError("invalid LoCoMo eval limits (--max-questions >= 0, 0 < --match-threshold <= 1, --limit > 0)")


def _progress(show_bar: bool) -> tuple[Progress, Callable[[str, int, int], None]]:
    """Progress on stderr: a line per conversation step, and the bar on a terminal."""
    from paxm_core.progress import progress as progress_bar

    bar = progress_bar("locomo", 0, show=show_bar)

    def report(message: str, done: int, total: int) -> None:
        if message.endswith(" turns"):  # a conversation is stored: one line, above the bar
            if bar.enabled:
                bar.close()
            click.echo(f"locomo: {message}", err=True)
        elif not bar.enabled and done and (done % PROGRESS_EVERY == 0 or done == total):
            click.echo(f"locomo: {done}/{total} trials", err=True)  # no terminal: a line now and then
        bar.update(done, total)

    return bar, report


@click.command("locomo")
@click.option("--dataset", "dataset_path", required=True, metavar="PATH", help="Your copy of LoCoMo's locomo10.json.")
@click.option(
    "--base-url", default="", metavar="URL", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1."
)
@click.option("--model", default="", metavar="NAME", help="Model name sent to the endpoint (recorded in the result).")
@click.option(
    "--api-key-env",
    default="OPENAI_API_KEY",
    show_default=True,
    metavar="VAR",
    help="Environment variable with the key.",
)
@click.option("--provider", "provider_name", default="sqlite", show_default=True, help="Configured provider to use.")
@click.option("--arms", default="control,passive,active", show_default=True, help="Comma-separated arms to run.")
@click.option("--max-questions", default=0, type=int, help="Ask at most N questions in all (paid calls).")
@click.option("--all", "all_questions", is_flag=True, help="Ask every eligible question.")
@click.option("--match-threshold", default=0.5, show_default=True, type=float, help="Token F1 for a matched answer.")
@click.option("--limit", default=10, show_default=True, type=int, help="Hits per question in the retrieval diagnostic.")
@click.option("--timeout", default="3m", show_default=True, help="Timeout of each model call.")
@click.option("--settle", default="0s", show_default=True, help="Wait after storing the turns before asking.")
@click.option("--input-price", default=0.0, type=float, help="USD per million input tokens (when usage has no cost).")
@click.option("--output-price", default=0.0, type=float, help="USD per million output tokens.")
@click.option("--retrieval-only", is_flag=True, help="Only the retrieval diagnostic: no model calls.")
@click.option("--keep-memory", is_flag=True, help="Keep the run directories (remove them with eval cleanup).")
@click.option("--run-id", default="", help="Run id (default: a new one); run directories are <id>-<conversation>.")
@click.option("--manifest-dir", default="", metavar="DIR", help="Run directories (default <data dir>/eval-runs).")
@json_flag()
@click.option("--output", "output_path", metavar="PATH", help="Also write the result JSON to PATH (mode 0600).")
@click.pass_context
def locomo(
    ctx: click.Context,
    /,
    dataset_path: str,
    base_url: str,
    model: str,
    api_key_env: str,
    provider_name: str,
    arms: str,
    max_questions: int,
    all_questions: bool,
    match_threshold: float,
    limit: int,
    timeout: str,
    settle: str,
    input_price: float,
    output_price: float,
    retrieval_only: bool,
    keep_memory: bool,
    run_id: str,
    manifest_dir: str,
    as_json: bool,
    output_path: str | None,
) -> None:
    """Ask LoCoMo's questions through an agent with no memory, passive memory and active memory.

    Stores each conversation of your LoCoMo file in an isolated run directory, scores retrieval
    of the evidence turns per category, checks the passive write path with a canary, then asks
    every question in each arm against the OpenAI-compatible endpoint you name: token F1,
    exact match, lift over control, tokens and cost.  Exits 1 if any trial failed to run.
    """
    from paxm_core.evals.locomo import LocomoOptions, load_locomo, run_locomo
    from paxm_core.evals.locomo_harness import ChatEndpoint, ChatHarness
    from paxm_core.evals.locomo_scope import default_manifest_dir

    _validate(retrieval_only, limit, base_url, model, max_questions, all_questions, match_threshold)
    chosen_arms = _arms(arms)
    timeout_s, settle_s = parse_seconds(timeout, "--timeout"), parse_seconds(settle, "--settle")
    config = _user_config(ctx.find_root().obj.config_path if ctx.find_root().obj else None)
    conversations = load_locomo(dataset_path)
    harness = None
    if not retrieval_only:
        key = os.environ.get(api_key_env, "") if api_key_env else ""
        endpoint = ChatEndpoint(base_url, model, api_key=key, timeout=timeout_s)
        harness = ChatHarness(endpoint, input_price=input_price, output_price=output_price)
    run_opts = LocomoOptions(
        provider=provider_name,
        run_id=run_id or time.strftime("locomo-%Y%m%dT%H%M%S") + f"-{os.getpid()}",
        manifest_dir=Path(manifest_dir).expanduser() if manifest_dir else default_manifest_dir(),
        arms=chosen_arms,
        max_questions=0 if all_questions else max_questions,
        match_threshold=match_threshold,
        limit=limit,
        keep_memory=keep_memory,
        settle=settle_s,
        retrieval_only=retrieval_only,
    )
    bar, report = _progress(show_bar=not as_json and sys.stderr.isatty())
    with bar:
        result, errors = run_locomo(conversations, config, harness, run_opts, report)
    if output_path:
        write_output(output_path, result, ascii=True)
    if as_json:
        echo_json(result, ascii=True)
    else:
        click.echo(_report(result), nl=False)
    for error in errors:
        click.echo(f"locomo: {error}", err=True)
    _exit_status(result, errors)


def _exit_status(result: Mapping[str, JSONValue], errors: list[str]) -> None:
    if errors:
        raise PaxmError(f"LoCoMo eval failed for {len(errors)} conversation(s)")
    for summary in _objects(result.get("summaries")):
        if summary.get("errors"):
            raise PaxmError(f"LoCoMo agent eval {summary.get('arm')} arm had {summary.get('errors')} execution errors")
    if result.get("execution_failed"):
        raise PaxmError(f"LoCoMo eval execution failed for {result.get('execution_failed')} questions")


def _objects(value: JSONValue) -> list[Mapping[str, JSONValue]]:
    """The objects of a JSON array (nothing for anything else)."""
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []


def _retrieval_lines(diag: Mapping[str, JSONValue]) -> list[str]:
    from paxm_core.evals.locomo_harness import number_of as n

    lines = [
        f"  retrieval ({diag.get('provider')}): {diag.get('passed')}/{diag.get('question_count')} passed  "
        f"recall@k {n(diag, 'recall_at_k'):.3f}  precision@k {n(diag, 'precision_at_k'):.3f}  mrr {n(diag, 'mrr'):.3f}"
    ]
    for cat in _objects(diag.get("categories")):
        lines.append(
            f"    category {cat.get('category')}: {cat.get('passed')}/{cat.get('questions')}  "
            f"recall@k {n(cat, 'recall_at_k'):.3f}  precision@k {n(cat, 'precision_at_k'):.3f}  mrr {n(cat, 'mrr'):.3f}"
        )
    return lines


def _report(result: Mapping[str, JSONValue]) -> str:
    from paxm_core.evals.locomo_harness import number_of as n

    if result.get("benchmark") != "locomo-agent":
        header = f"paxm eval: {result.get('benchmark')} ({result.get('provider')})"
        return "\n".join([header, *_retrieval_lines(result)]) + "\n"
    lines = [
        f"paxm eval: {result.get('benchmark')}  agent={result.get('agent')}  provider={result.get('provider')}  "
        f"model={result.get('model')}",
        f"  agent write canary: {str(result.get('write_canary')).lower()}",
        f"  questions: {result.get('question_count')}  trials: {result.get('trial_count')}  "
        f"duration: {n(result, 'duration_ms') / 1000:.1f}s",
    ]
    for s in _objects(result.get("summaries")):
        lines.append(
            f"  {str(s.get('arm')):<7} accuracy {n(s, 'accuracy') * 100:.1f}%  mean-f1 {n(s, 'mean_f1'):.3f}  "
            f"exact {n(s, 'exact_match') * 100:.1f}%  recall-used {s.get('recall_used')}/{s.get('trials')}  "
            f"useful {n(s, 'useful_recall_rate') * 100:.1f}%  errors {s.get('errors')}  "
            f"tokens {s.get('input_tokens')}/{s.get('output_tokens')}  cost ${n(s, 'cost'):.4f}"
        )
    lifts = [(arm, arm + "_lift") for arm in ("passive", "active")]
    lift = [f"{arm} {n(result, key) * 100:+.1f}pp" for arm, key in lifts if key in result]
    if lift:
        lines.append("  memory lift: " + "  ".join(lift))
    retrieval = result.get("retrieval")
    lines += _retrieval_lines(retrieval if isinstance(retrieval, Mapping) else {})
    return "\n".join(lines) + "\n"


@click.command("cleanup")
@click.option("--run", "run_id", default="", metavar="ID", help="A run id, or its prefix: every conversation of it.")
@click.option("--stale", is_flag=True, help="Every run left behind that is neither cleaned nor kept.")
@click.option("--manifest-dir", default="", metavar="DIR", help="Run directories (default <data dir>/eval-runs).")
@json_flag('Print {"cleaned": [...], "errors": [...]}.')
def cleanup(run_id: str, stale: bool, manifest_dir: str, as_json: bool) -> None:
    """Remove eval run directories (memories, config, manifest) that a LoCoMo run left behind.

    ``--run ID`` also removes runs kept with ``--keep-memory``.  Exits 1 when nothing matched
    or a run could not be removed.
    """
    from paxm_core.evals.locomo_scope import clean_runs, default_manifest_dir

    directory = Path(manifest_dir).expanduser() if manifest_dir else default_manifest_dir()
    cleaned, errors = clean_runs(directory, run_id, stale)
    if as_json:
        echo_json({"cleaned": cleaned, "errors": errors}, ascii=True)
    else:
        for name in cleaned:
            click.echo(f"cleaned eval run: {name}")
    if errors:
        raise PaxmError("; ".join(errors))
    if not cleaned:
        raise PaxmError("no matching eval runs required cleanup")
