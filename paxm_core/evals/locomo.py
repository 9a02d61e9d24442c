"""``paxm eval locomo``: LoCoMo's questions through an agent with and without paxm memory.

For each conversation of the user's dataset (:mod:`~paxm_core.evals.locomo_data`) in its own run
directory (:mod:`~paxm_core.evals.locomo_scope`):

1. every dialogue turn is stored as one memory in the run's provider;
2. the **retrieval diagnostic** searches the provider with each asked question (``--limit``
   hits) and scores the evidence turns found: Recall@K, Precision@K, MRR, passed, per category;
3. the **write canary**: one turn asks the agent to remember ``PAXM_EVAL_WRITE_<run>``, its end
   goes through the ``turn_end`` hook, the hook daemon is flushed and stopped, and the token must
   be searchable within 10 s (else the conversation's trials fail: the passive write path is
   broken and the run would measure nothing);
4. every question is asked in each arm (``control``, ``passive``, ``active``) in a fresh session
   (:mod:`~paxm_core.evals.locomo_harness`) and scored: token F1, matched at F1 >= threshold,
   exact match;
5. the run directory is removed (``--keep-memory`` keeps it for ``paxm eval cleanup``).

The result is upstream's ``locomo-agent`` JSON (per-arm summaries with accuracy, mean F1, exact
match, recall use, useful recall, tokens, cost; passive and active lift over control; every
trial) with the retrieval diagnostic under ``retrieval`` (upstream's
``locomo-text-qa-retrieval`` shape).  ``--retrieval-only`` runs steps 1, 2 and 5 alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from paxm_core.api.errors import PaxmError
from paxm_core.api.json import JSONObject, JSONValue
from paxm_core.evals.locomo_data import Conversation, Question, memory_rows, normalize_answer, token_f1

if TYPE_CHECKING:
    from paxm_core.api.protocols import Provider
    from paxm_core.api.types import MemoryHit
    from paxm_core.config import Config
    from paxm_core.evals.locomo_harness import ChatHarness
    from paxm_core.evals.locomo_scope import RunScope

__all__ = ["ARMS", "LocomoOptions", "aggregate_retrieval", "aggregate_trials", "question_prompt", "run_locomo"]

ARMS = ("control", "passive", "active")
CANARY_TIMEOUT = 10.0
#: ``(what happened, trials done, trials in all)`` for progress output
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class LocomoOptions:
    """What ``paxm eval locomo`` was asked for."""

    provider: str = "sqlite"
    run_id: str = ""
    manifest_dir: Path = Path(".")
    arms: tuple[str, ...] = ARMS
    max_questions: int = 0
    match_threshold: float = 0.5
    limit: int = 10
    keep_memory: bool = False
    settle: float = 0.0
    retrieval_only: bool = False


def question_prompt(question: str, arm: str) -> str:
    """Upstream's benchmark prompt; the active arm is told to call ``paxm_recall`` first."""
    prefix = (
        "Answer the benchmark question with only the concise factual answer. "
        "Do not explain your reasoning or inspect the workspace."
    )
    if arm == "active":
        prefix += (
            " Before answering, call the paxm_recall memory tool using the complete question, "
            "then answer from relevant recalled evidence."
        )
    return f"{prefix}\n\nQuestion: {question.strip()}"


def _selected(conversations: list[Conversation], max_questions: int) -> list[tuple[Conversation, list[Question]]]:
    """The questions to ask, in dataset order, at most ``max_questions`` in all (0: every one)."""
    out, left = [], max_questions
    for conversation in conversations:
        questions = list(conversation.questions)
        if max_questions > 0:
            if left <= 0:
                break
            questions = questions[:left]
            left -= len(questions)
        if questions:
            out.append((conversation, questions))
    return out


def run_locomo(
    conversations: list[Conversation],
    config: Config,
    harness: ChatHarness | None,
    opts: LocomoOptions,
    progress: Progress | None = None,
) -> tuple[JSONObject, list[str]]:
    """Run the eval; return ``(result JSON, errors)`` (errors: conversations that could not run).

    A provider that cannot be isolated is a :class:`UsageError` before anything runs.
    """
    from paxm_core.evals.locomo_scope import check_provider

    check_provider(config, opts.provider)  # once, not once per conversation
    started = time.monotonic()
    plan = _selected(conversations, opts.max_questions)
    total = sum(len(qs) for _, qs in plan) * (0 if opts.retrieval_only else len(opts.arms))
    trials: list[JSONObject] = []
    retrieval: list[JSONObject] = []
    errors: list[str] = []
    canaries: list[bool] = []
    report = progress or (lambda *_: None)
    for conversation, questions in plan:
        step = _offset(report, len(trials), total)
        try:
            got_trials, got_retrieval, canary = _run_conversation(conversation, questions, config, harness, opts, step)
        except PaxmError as exc:
            errors.append(f"{conversation.id}: {exc}")
            got_trials = [] if opts.retrieval_only else _failed_trials(conversation.id, questions, opts.arms, str(exc))
            if isinstance(exc, _CanaryFailed):
                got_retrieval = exc.retrieval
            else:
                got_retrieval = [_failed_question(conversation.id, q, str(exc)) for q in questions]
            canary = False
        trials += got_trials
        retrieval += got_retrieval
        canaries.append(canary)
    duration = int((time.monotonic() - started) * 1000)
    diag = aggregate_retrieval(retrieval, opts.provider, len(plan), duration)
    if opts.retrieval_only:
        return diag, errors
    result: JSONObject = {
        "benchmark": "locomo-agent",
        "dataset_version": "official-locomo10",
        "agent": harness.name if harness else "",
        "provider": opts.provider,
        "model": harness.endpoint.model if harness else "",
        "write_canary": bool(canaries) and all(canaries),
        "duration_ms": duration,
    }
    result.update(aggregate_trials(trials, opts.arms))
    result["retrieval"] = diag
    return result, errors


class _CanaryFailed(PaxmError):
    """The write canary failed; the retrieval diagnostic already measured still counts."""

    def __init__(self, message: str, retrieval: list[JSONObject]) -> None:
        super().__init__(message)
        self.retrieval = retrieval


def _offset(report: Progress, done: int, total: int) -> Callable[[str, int], None]:
    """``report`` for one conversation: its trial count is added to the trials before it."""
    return lambda message, n: report(message, done + n, total)


def _run_conversation(
    conversation: Conversation,
    questions: list[Question],
    config: Config,
    harness: ChatHarness | None,
    opts: LocomoOptions,
    report: Callable[[str, int], None],
) -> tuple[list[JSONObject], list[JSONObject], bool]:
    from paxm_core.evals.locomo_scope import COMPLETE, FAILED, prepare_scope, sanitize_scope_id
    from paxm_core.runtime import Runtime

    scope_id = sanitize_scope_id(f"{opts.run_id}-{conversation.id}")
    scope = prepare_scope(config, opts.provider, scope_id, opts.manifest_dir, opts.keep_memory)
    try:
        runtime = Runtime.load(str(scope.config_path))
        try:
            provider = runtime.router.providers[opts.provider]
            stored = _ingest(provider, conversation, scope)
            report(f"{conversation.id}: stored {stored} turns", 0)
            if opts.settle > 0:
                time.sleep(opts.settle)
            retrieval = [_diagnose(provider, conversation.id, q, opts.limit) for q in questions]
            trials: list[JSONObject] = []
            if not opts.retrieval_only and harness is not None:
                trials = _agent_trials(harness, provider, scope, conversation.id, questions, opts, report, retrieval)
        finally:
            runtime.close()
        scope.set_status(COMPLETE)
        return trials, retrieval, bool(trials)
    except BaseException as exc:
        if scope.run_dir.exists():
            scope.set_status(FAILED, str(exc))
        raise
    finally:
        if scope.run_dir.exists():
            scope.cleanup()


def _agent_trials(
    harness: ChatHarness,
    provider: Provider,
    scope: RunScope,
    conversation_id: str,
    questions: list[Question],
    opts: LocomoOptions,
    report: Callable[[str, int], None],
    retrieval: list[JSONObject],
) -> list[JSONObject]:
    """The write canary, then every question in every arm, with the harness serving ``scope``."""
    harness.open(scope)
    try:
        try:
            _write_canary(harness, provider, scope)
        except PaxmError as exc:  # the write path is broken: the trials would measure nothing
            raise _CanaryFailed(str(exc), retrieval) from None
        return _ask(harness, conversation_id, questions, opts, report)
    finally:
        harness.close()


def _ingest(provider: Provider, conversation: Conversation, scope: RunScope) -> int:
    """Store every turn (batches of 50 where the provider takes batches); record the refs."""
    from paxm_core.api.deadline import Deadline
    from paxm_core.api.protocols import SupportsPutBatch
    from paxm_core.api.types import MemoryItem

    items = [
        MemoryItem(text=text, id=dia_id, source="locomo", tier="ltm", metadata=meta)
        for dia_id, text, meta in memory_rows(conversation)
    ]
    for start in range(0, len(items), 50):
        chunk = items[start : start + 50]
        if isinstance(provider, SupportsPutBatch):
            refs = provider.put_batch(chunk, Deadline.after(120))
        else:
            refs = [provider.put(item, Deadline.after(60)) for item in chunk]
        scope.record_refs([{"provider": ref.provider, "id": ref.id} for ref in refs])
    return len(items)


def _hit_id(hit: MemoryHit) -> str:
    for key in ("locomo_dia_id", "paxm_id"):
        value = str((hit.metadata or {}).get(key, "")).strip()
        if value:
            return value
    return str(hit.id)


def _diagnose(provider: Provider, conversation_id: str, question: Question, limit: int) -> JSONObject:
    from paxm_core.api.deadline import Deadline
    from paxm_core.api.types import SearchQuery
    from paxm_core.evals.locomo_data import score_retrieval

    base: JSONObject = {
        "conversation_id": conversation_id,
        "question": question.question,
        "category": question.category,
        "evidence": list(question.evidence),
    }
    query = SearchQuery(text=question.question, limit=limit, metadata={"locomo_conversation_id": conversation_id})
    try:
        hits = provider.search(query, Deadline.after(30))
    except PaxmError as exc:
        return {**base, **score_retrieval([], question.evidence, limit), "passed": False, "error": str(exc)}
    return {**base, **score_retrieval([_hit_id(h) for h in hits], question.evidence, limit)}


def _write_canary(harness: ChatHarness, provider: Provider, scope: RunScope) -> None:
    """A turn asking to remember a token, written by the turn_end hook, must reach the store."""
    from paxm_core.api.deadline import Deadline
    from paxm_core.api.types import SearchQuery
    from paxm_core.evals.locomo_harness import AgentRequest
    from paxm_core.evals.locomo_scope import sanitize_scope_id

    canary = "PAXM_EVAL_WRITE_" + sanitize_scope_id(scope.run_dir.name)
    prompt = f"Remember this exact token for later: {canary}. Reply with exactly STORED."
    try:
        harness.execute(AgentRequest("control", "write-canary", prompt, write_enabled=True))
        harness.flush_writes()
    except PaxmError as exc:
        raise PaxmError(f"agent write canary: {exc}") from None
    deadline = time.monotonic() + CANARY_TIMEOUT
    while True:
        hits = provider.search(SearchQuery(text=canary, limit=10), Deadline.after(10))
        found = [hit for hit in hits if canary in hit.text]
        if found:
            scope.record_refs([{"provider": found[0].provider, "id": found[0].id}])
            return
        if time.monotonic() > deadline:
            raise PaxmError("agent write canary: the canary was not persisted by the turn_end hook")
        time.sleep(0.1)


def _ask(
    harness: ChatHarness,
    conversation_id: str,
    questions: list[Question],
    opts: LocomoOptions,
    report: Callable[[str, int], None],
) -> list[JSONObject]:
    from paxm_core.evals.locomo_harness import AgentRequest

    trials: list[JSONObject] = []
    for index, question in enumerate(questions):
        qid = f"{conversation_id}-q{index + 1:04d}"
        for arm in opts.arms:
            request = AgentRequest(arm, qid, question_prompt(question.question, arm), recall_enabled=arm == "passive")
            trial = _trial(conversation_id, qid, question, arm)
            try:
                response = harness.execute(request)
            except PaxmError as exc:
                trial["error"] = str(exc)
            else:
                trial["response"] = response.to_json()
                f1 = token_f1(response.text, question.answer)
                trial["token_f1"] = f1
                trial["exact_match"] = normalize_answer(response.text) == normalize_answer(question.answer)
                trial["matched"] = f1 >= opts.match_threshold
            trials.append(trial)
            report(f"{qid} {arm}", len(trials))
    return trials


def _trial(conversation_id: str, qid: str, question: Question, arm: str) -> JSONObject:
    return {
        "conversation_id": conversation_id,
        "question_id": qid,
        "question": question.question,
        "reference": question.answer,
        "category": question.category,
        "arm": arm,
        "response": {"text": "", "duration_ms": 0},
        "token_f1": 0.0,
        "exact_match": False,
        "matched": False,
    }


def _failed_trials(
    conversation_id: str, questions: list[Question], arms: tuple[str, ...], error: str
) -> list[JSONObject]:
    out: list[JSONObject] = []
    for index, question in enumerate(questions):
        for arm in arms:
            trial = _trial(conversation_id, f"{conversation_id}-q{index + 1:04d}", question, arm)
            trial["error"] = error
            out.append(trial)
    return out


def _failed_question(conversation_id: str, question: Question, error: str) -> JSONObject:
    from paxm_core.evals.locomo_data import score_retrieval

    return {
        "conversation_id": conversation_id,
        "question": question.question,
        "category": question.category,
        "evidence": list(question.evidence),
        **score_retrieval([], question.evidence, 0),
        "passed": False,
        "error": error,
    }


def aggregate_trials(trials: Sequence[Mapping[str, JSONValue]], arms: tuple[str, ...]) -> JSONObject:
    """Per-arm summaries (upstream's fields), lift over control, trials sorted by question then arm."""
    groups = {arm: _ArmSummary(arm) for arm in arms}
    for trial in trials:
        arm = str(trial.get("arm"))
        groups.setdefault(arm, _ArmSummary(arm)).add(trial)
    for group in groups.values():
        group.finish()
    control = groups["control"].accuracy if "control" in groups else 0.0
    order = {arm: i for i, arm in enumerate(arms)}
    out: JSONObject = {
        "question_count": len({(str(t.get("conversation_id")), str(t.get("question_id"))) for t in trials}),
        "trial_count": len(trials),
    }
    if "passive" in groups:
        out["passive_lift"] = groups["passive"].accuracy - control
    if "active" in groups:
        out["active_lift"] = groups["active"].accuracy - control
    out["summaries"] = [asdict(groups[arm]) for arm in sorted(groups, key=lambda a: order.get(a, len(order)))]
    ordered: list[Mapping[str, JSONValue]] = sorted(
        trials, key=lambda t: (str(t.get("question_id")), order.get(str(t.get("arm")), len(order)))
    )
    out["trials"] = ordered
    return out


def number_of(row: Mapping[str, JSONValue], key: str) -> float:
    """``row[key]`` as a number (missing or not a number: 0)."""
    value = row.get(key)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


@dataclass
class _ArmSummary:
    """One arm's summary; its JSON keys are the field names, in this order (upstream's)."""

    arm: str
    trials: int = 0
    matched: int = 0
    errors: int = 0
    recall_used: int = 0
    useful_recall: int = 0
    accuracy: float = 0.0
    mean_f1: float = 0.0
    exact_match: float = 0.0
    recall_use_rate: float = 0.0
    useful_recall_rate: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    duration_ms: int = 0

    def add(self, trial: Mapping[str, JSONValue]) -> None:
        """Count one trial (a :func:`_trial` object)."""
        response = trial.get("response")
        usage = response if isinstance(response, Mapping) else {}
        self.trials += 1
        self.errors += 1 if trial.get("error") else 0
        self.matched += 1 if trial.get("matched") else 0
        if usage.get("recall_used"):
            self.recall_used += 1
            self.useful_recall += 1 if trial.get("matched") else 0
        self.exact_match += 1 if trial.get("exact_match") else 0
        self.mean_f1 += number_of(trial, "token_f1")
        self.input_tokens += int(number_of(usage, "input_tokens"))
        self.output_tokens += int(number_of(usage, "output_tokens"))
        self.cost += number_of(usage, "cost")
        self.duration_ms += int(number_of(usage, "duration_ms"))

    def finish(self) -> None:
        """Turn the counts into rates once every trial is counted."""
        if not self.trials:
            return
        n = self.trials
        self.accuracy = self.matched / n
        self.mean_f1 /= n
        self.exact_match /= n
        self.recall_use_rate = self.recall_used / n
        if self.recall_used:
            self.useful_recall_rate = self.useful_recall / self.recall_used
        self.cost = round(self.cost, 9)


def aggregate_retrieval(
    questions: Sequence[Mapping[str, JSONValue]], provider: str, conversations: int, ms: int
) -> JSONObject:
    """Upstream's ``locomo-text-qa-retrieval`` result: overall means and categories 1-4."""
    result: JSONObject = {
        "benchmark": "locomo-text-qa-retrieval",
        "dataset_version": "official-locomo10",
        "provider": provider,
        "conversation_count": conversations,
        "question_count": len(questions),
        "passed": sum(1 for q in questions if q.get("passed")),
        "failed": sum(1 for q in questions if not q.get("passed")),
        "execution_failed": sum(1 for q in questions if q.get("error")),
    }
    n = len(questions) or 1
    for key in ("recall_at_k", "precision_at_k"):
        result[key] = sum(number_of(q, key) for q in questions) / n
    result["mrr"] = sum(number_of(q, "reciprocal_rank") for q in questions) / n
    result["duration_ms"] = ms
    result["questions"] = list(questions)
    categories: list[JSONValue] = []
    for category in range(1, 5):
        group = [q for q in questions if q.get("category") == category]
        if group:
            k = len(group)
            categories.append(
                {
                    "category": category,
                    "questions": k,
                    "passed": sum(1 for q in group if q.get("passed")),
                    "recall_at_k": sum(number_of(q, "recall_at_k") for q in group) / k,
                    "precision_at_k": sum(number_of(q, "precision_at_k") for q in group) / k,
                    "mrr": sum(number_of(q, "reciprocal_rank") for q in group) / k,
                }
            )
    result["categories"] = categories
    return result
