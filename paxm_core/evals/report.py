"""The human-readable eval report (upstream's layout)."""

from __future__ import annotations

from paxm_core.evals.regression import Comparison
from paxm_core.evals.results import Result

__all__ = ["format_comparison", "format_report"]


def format_report(result: Result) -> str:
    """Summary, per-category lines and one ``FAIL <id>: ...`` line per failed case."""
    lines = [
        f"paxm eval: {result.suite} (v{result.version})",
        f"cases: {result.case_count}  passed: {result.passed}  failed: {result.failed}  "
        f"duration: {result.duration_ms}ms",
    ]
    if result.execution_failed:
        lines.append(f"execution failures: {result.execution_failed}")
    lines.append(
        f"recall@k: {result.recall_at_k:.3f}  precision@k: {result.precision_at_k:.3f}  "
        f"mrr: {result.mrr:.3f}  false-positive rate: {result.false_positive_rate:.3f}"
    )
    if result.adapter_contract_cases:
        lines.append(
            f"adapter contract: {result.adapter_contract_passed}/{result.adapter_contract_cases} passed  "
            f"failed: {result.adapter_contract_failed}"
        )
    if result.write_case_count:
        lines.append(
            f"writes: {result.writes}/{result.write_case_count}  write recall: {result.write_recall:.3f}  "
            f"write precision: {result.write_precision:.3f}  "
            f"write false-positive rate: {result.write_false_positive_rate:.3f}"
        )
        lines.append(
            f"results: {result.result_count}  returned context: {result.returned_context_bytes} bytes  "
            f"write total: {result.write_duration_us / 1000:.3f}ms  "
            f"recall total: {result.recall_duration_us / 1000:.3f}ms"
        )
    for group in result.categories:
        lines.append(
            f"  {group.name:<20} {group.passed:3d}/{group.case_count:<3d}  recall@k {group.recall_at_k:.3f}  "
            f"precision@k {group.precision_at_k:.3f}  mrr {group.mrr:.3f}"
        )
        if group.write_case_count:
            lines.append(
                f"  {'':<20} write recall {group.write_recall:.3f}  write precision {group.write_precision:.3f}  "
                f"write false-positive rate {group.write_false_positive_rate:.3f}"
            )
    for case in result.cases:
        if case.passed:
            continue
        line = f"FAIL {case.id}"
        if case.error:
            line += f": {case.error}"
        for label, values in (
            ("missing", case.missing),
            ("forbidden", case.forbidden_hits),
            ("unexpected", case.unexpected_hits),
            ("write-missing", case.write_missing),
            ("write-forbidden", case.write_forbidden),
            ("metadata", case.metadata_mismatches),
        ):
            if values:
                line += f" {label}={','.join(values)}"
        if case.adapter_contract_errors:
            line += f" adapter={','.join(case.adapter_contract_errors)}"
        lines.append(line)
    return "\n".join(lines) + "\n"


def format_comparison(comparison: Comparison) -> str:
    """Deltas against a saved result."""
    lines = [
        f"comparison: {comparison.baseline_suite} -> {comparison.current_suite}",
        f"  passed {comparison.passed_delta:+d}  recall@k {comparison.recall_at_k_delta:+.3f}  "
        f"precision@k {comparison.precision_at_k_delta:+.3f}  mrr {comparison.mrr_delta:+.3f}  "
        f"false-positive rate {comparison.false_positive_rate_delta:+.3f}  "
        f"duration {comparison.duration_ms_delta:+d}ms",
    ]
    if comparison.has_write_deltas:
        lines.append(
            f"  write recall {comparison.write_recall_delta:+.3f}  "
            f"write precision {comparison.write_precision_delta:+.3f}  "
            f"write false-positive rate {comparison.write_false_positive_rate_delta:+.3f}"
        )
    return "\n".join(lines) + "\n"
