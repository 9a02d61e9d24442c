"""``paxm eval run``: upstream's eval suites run through the production runtime.

Submodules: :mod:`~paxm_core.evals.suite` (strict suite format v1),
:mod:`~paxm_core.evals.runner` (isolated per-case runtime), :mod:`~paxm_core.evals.writer`
(hook writes for conversation-write cases), :mod:`~paxm_core.evals.scoring`
(metrics), :mod:`~paxm_core.evals.regression` (budgets, ``--compare``),
:mod:`~paxm_core.evals.gates` (``--gate``) and :mod:`~paxm_core.evals.report` (text output).
"""

from __future__ import annotations

from paxm_core.evals.errors import EvalFileError, GateFailed
from paxm_core.evals.gates import GATES, gate_failure, validate_gate_options
from paxm_core.evals.regression import Budget, Comparison, check_budget, compare, load_budget, load_result
from paxm_core.evals.report import format_comparison, format_report
from paxm_core.evals.results import CaseResult, GroupResult, Result
from paxm_core.evals.runner import UNSUPPORTED_WRITE, ConversationWriter, Runner, WrittenItem
from paxm_core.evals.scoring import aggregate, score_conversation_write, score_retrieval
from paxm_core.evals.suite import Case, Suite, load_suite
from paxm_core.evals.writer import HookConversationWriter

__all__ = [
    "GATES",
    "UNSUPPORTED_WRITE",
    "Budget",
    "Case",
    "CaseResult",
    "Comparison",
    "ConversationWriter",
    "EvalFileError",
    "GateFailed",
    "GroupResult",
    "HookConversationWriter",
    "Result",
    "Runner",
    "Suite",
    "WrittenItem",
    "aggregate",
    "check_budget",
    "compare",
    "format_comparison",
    "format_report",
    "gate_failure",
    "load_budget",
    "load_result",
    "load_suite",
    "score_conversation_write",
    "score_retrieval",
    "validate_gate_options",
]
