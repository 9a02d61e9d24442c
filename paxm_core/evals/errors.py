"""Errors raised by the eval runner.

Both are :class:`~paxm_core.api.errors.PaxmError` subclasses, so the CLI prints ``Error: <message>``
and exits 1.  They live here rather than in ``paxm_core/api/errors.py`` only because that module
belongs to another area; moving them there later changes no behaviour.
"""

from __future__ import annotations

from paxm_core.api.errors import PaxmError, UsageError

__all__ = ["EvalFileError", "EvalRecallError", "GateFailed"]


class EvalFileError(UsageError):
    """A suite, budget or saved result file is unreadable, not strict JSON or invalid.

    Raised by :func:`~paxm_core.evals.suite.load_suite`, :func:`~paxm_core.evals.regression.load_budget`
    and :func:`~paxm_core.evals.regression.load_result`; the message names the file and the
    JSON path of the offending field (``cases[3].recall.mode: ...``).
    """


class GateFailed(PaxmError):
    """The selected ``--gate`` failed (failed cases, budget violations, execution errors).

    Raised by ``paxm eval run`` after the report has been printed, so the user sees the
    report and then ``Error: eval failed: 3 of 100 cases failed`` with exit code 1.
    """


class EvalRecallError(PaxmError):
    """The hook runtime reported a passive recall failure.

    Hooks fail open (a prompt must always go through), so the runner turns the reported
    errors into this exception and the case becomes an execution failure.
    """
