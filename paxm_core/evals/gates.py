"""``--gate``: when an eval run fails (exit 1); the rules are in docs/evals.md."""

from __future__ import annotations

from paxm_core.api.errors import UsageError
from paxm_core.evals.results import Result

__all__ = ["GATES", "gate_failure", "validate_gate_options"]

GATES = ("none", "adapter", "quality")


def validate_gate_options(gate: str, has_budget: bool) -> None:
    """Reject flag combinations upstream rejects, before any case runs."""
    if gate not in GATES:
        raise UsageError(f"unsupported eval gate {gate!r} (expected one of {', '.join(GATES)})")
    if gate == "adapter" and has_budget:
        raise UsageError("--budget measures provider quality and cannot be used with --gate adapter")
    if gate == "none" and has_budget:
        raise UsageError("--budget cannot be enforced with --gate none; use --gate quality")


def gate_failure(gate: str, result: Result, budget_failures: list[str]) -> str | None:
    """The reason ``result`` fails ``gate``, or ``None`` when it passes."""
    if gate in ("none", "adapter") and result.execution_failed:
        return f"eval execution failed: {result.execution_failed} cases had runtime or provider errors"
    if gate == "none":
        return None
    if gate == "adapter":
        if result.adapter_contract_cases == 0:
            return "adapter gate requires a suite with conversation writes"
        if result.adapter_contract_failed:
            failed, total = result.adapter_contract_failed, result.adapter_contract_cases
            return f"adapter contract failed: {failed} of {total} cases failed"
        return None
    if result.failed:
        return f"eval failed: {result.failed} of {result.case_count} cases failed"
    if budget_failures:
        return f"eval regression budget failed: {len(budget_failures)} metrics outside budget"
    return None
