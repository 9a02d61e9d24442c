"""``paxm eval locomo``: LoCoMo's questions through an agent with and without paxm memory (docs/locomo.md).

Per conversation, in its own run directory (:mod:`~paxm_core.evals.locomo_scope`): store every
turn, score retrieval of the evidence turns, check the passive write path with a canary, ask
every question in each arm (:mod:`~paxm_core.evals.locomo_harness`), remove the directory.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from paxm_core.api.errors import PaxmError, UsageError
from paxm_core.api.json import JSONObject, JSONValue
from paxm_core.evals.locomo_harness import number_of

if TYPE_CHECKING:
    from paxm_core.api.protocols import Provider
    from paxm_core.api.types import MemoryHit
    from paxm_core.config import Config
    from paxm_core.evals.locomo_harness import ChatHarness
    from paxm_core.evals.locomo_scope import RunScope

__all__ = [
    "ARMS",
    "Conversation",
    "LocomoOptions",
    "Question",
    "aggregate_retrieval",
    "aggregate_trials",
    "load_locomo",
    "normalize_answer",
    "question_prompt",
    "run_locomo",
    "score_retrieval",
    "token_f1",
]

ARMS = ("control", "passive", "active")
CANARY_TIMEOUT = 10.0
_SESSION_KEY = re.compile(r"^session_(\d+)$")
#: ``(what happened, trials done, trials in all)`` for progress output
Progress = Callable[[str, int, int], None]
_Step = Callable[[str, int], None]


# -- the dataset -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Question:
    """A QA item: the reference answer is kept as text (answers may be numbers)."""

    question: str
    answer: str
    evidence: tuple[str, ...]
    category: int


@dataclass(frozen=True)
class Conversation:
    """A conversation: its speakers, the ``(dia_id, text, metadata)`` memory of each turn, its questions."""

    id: str
    speaker_a: str
    speaker_b: str
    memories: tuple[tuple[str, str, dict[str, str]], ...]
    questions: tuple[Question, ...] = ()


def answer_text(value: object) -> str:
    """The reference answer as text (a number or list as upstream's ``fmt.Sprint`` prints it)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def _questions(raw: object) -> tuple[Question, ...]:
    """Categories 1-4 with a question and evidence, as upstream asks (5 is adversarial: no answer)."""
    out = []
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, dict):
            continue
        category, evidence = item.get("category"), item.get("evidence") or []
        question = str(item.get("question") or "").strip()
        if not isinstance(category, int) or isinstance(category, bool) or not 1 <= category <= 4:
            continue
        if question and isinstance(evidence, list) and evidence:
            out.append(Question(question, answer_text(item.get("answer")), tuple(str(e) for e in evidence), category))
    return tuple(out)


def _turn_memories(
    where: str, cid: str, number: int, date: str, turns: object
) -> list[tuple[str, str, dict[str, str]]]:
    """Each turn as ``[<date>] <speaker>: <text>`` (plus ``[Image: <caption>]``), its dia_id as id."""
    if not isinstance(turns, list):
        raise UsageError(f"LoCoMo {where} is not a list of turns")
    out = []
    for turn in turns:
        if not isinstance(turn, dict):
            raise UsageError(f"LoCoMo {where} has a turn that is not an object")
        dia_id = str(turn.get("dia_id") or "").strip()
        text = f"[{date}] {str(turn.get('speaker') or '').strip()}: {str(turn.get('text') or '').strip()}"
        caption = str(turn.get("blip_caption") or "").strip()
        if caption:
            text += f" [Image: {caption}]"
        meta = {
            "benchmark": "locomo",
            "locomo_conversation_id": cid,
            "locomo_session": str(number),
            "locomo_dia_id": dia_id,
        }
        out.append((dia_id, text, meta))
    return out


def _conversation(raw: object, index: int) -> Conversation:
    if not isinstance(raw, dict):
        raise UsageError(f"LoCoMo entry {index + 1} is not an object")
    cid = str(raw.get("sample_id") or "").strip() or f"conversation-{index + 1}"
    body = raw.get("conversation")
    if not isinstance(body, dict):
        raise UsageError(f"LoCoMo {cid} has no conversation object")
    speakers = [body.get(key) for key in ("speaker_a", "speaker_b")]
    for key, value in zip(("speaker_a", "speaker_b"), speakers, strict=True):
        if not isinstance(value, str) or not value.strip():
            raise UsageError(f"LoCoMo {cid} is missing {key}")
    matches = [(int(m.group(1)), key) for key in body if (m := _SESSION_KEY.match(key)) and int(m.group(1)) > 0]
    if not matches:
        raise UsageError(f"LoCoMo conversation {cid} has no sessions")
    memories = []
    for n, key in sorted(matches, key=lambda pair: pair[0]):
        date = body.get(f"session_{n}_date_time")
        memories += _turn_memories(f"{cid} {key}", cid, n, date if isinstance(date, str) else "", body[key])
    a, b = (str(s).strip() for s in speakers)
    return Conversation(cid, a, b, tuple(memories), _questions(raw.get("qa")))


def load_locomo(path: str | Path) -> list[Conversation]:
    """Read the user's ``locomo10.json``; a malformed file is a :class:`UsageError` naming what is wrong."""
    file = Path(path).expanduser()
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"read LoCoMo dataset {file}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise UsageError(f"decode LoCoMo dataset {file}: {exc}") from None
    if not isinstance(data, list) or not data:
        raise UsageError("LoCoMo dataset is empty")
    return [_conversation(item, index) for index, item in enumerate(data)]


# -- scores (upstream's) -----------------------------------------------------------------------


def normalize_answer(value: str) -> str:
    """Lower case; anything but letters, digits and spaces -> space; drop a/an/the; single spaces."""
    cleaned = "".join(ch if ch.isalnum() or ch.isspace() else " " for ch in value.strip().lower())
    return " ".join(word for word in cleaned.split() if word not in ("a", "an", "the"))


def token_f1(actual: str, expected: str) -> float:
    """Token F1 (multiset overlap) of two normalised answers (both empty: 1.0)."""
    got, want = normalize_answer(actual).split(), normalize_answer(expected).split()
    if not got or not want:
        return 1.0 if len(got) == len(want) else 0.0
    common = sum((Counter(got) & Counter(want)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(got), common / len(want)
    return 2 * precision * recall / (precision + recall)


def score_retrieval(hit_ids: list[str], evidence: tuple[str, ...], limit: int) -> JSONObject:
    """Recall@K, Precision@K (matched / K), reciprocal rank and pass for one question's hits."""
    hits = hit_ids[:limit] if limit > 0 else hit_ids
    matched: list[str] = []
    rank = 0.0
    for index, hit in enumerate(hits):
        if hit in evidence and hit not in matched:
            matched.append(hit)
            rank = rank or 1.0 / (index + 1)
    expected = set(evidence)
    return {
        "hit_ids": list(hits),
        "matched_evidence": sorted(matched),
        "recall_at_k": len(matched) / len(expected) if expected else 0.0,
        "precision_at_k": len(matched) / limit if limit > 0 else 0.0,
        "reciprocal_rank": rank,
        "passed": len(matched) == len(expected),
    }


# -- the run -----------------------------------------------------------------------------------


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
            questions = questions[: max(left, 0)]
            left -= len(questions)
        if questions:
            out.append((conversation, questions))
    return out


class _CanaryFailed(PaxmError):
    """The write canary failed; the retrieval diagnostic already measured still counts."""

    def __init__(self, message: str, retrieval: list[JSONObject]) -> None:
        super().__init__(message)
        self.retrieval = retrieval


def run_locomo(
    conversations: list[Conversation],
    config: Config,
    harness: ChatHarness | None,
    opts: LocomoOptions,
    progress: Progress | None = None,
) -> tuple[JSONObject, list[str]]:
    """Run the eval; return ``(result JSON, errors of conversations that could not run)``.

    A provider that cannot be isolated is a :class:`UsageError` before anything runs.
    """
    from paxm_core.evals.locomo_scope import check_provider

    check_provider(config, opts.provider)
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
            got_trials, got_retrieval = _run_conversation(conversation, questions, config, harness, opts, step)
            canaries.append(bool(got_trials))
        except PaxmError as exc:
            canaries.append(False)
            errors.append(f"{conversation.id}: {exc}")
            got_trials = [] if opts.retrieval_only else _trials(conversation.id, questions, opts.arms, str(exc))
            got_retrieval = (
                exc.retrieval
                if isinstance(exc, _CanaryFailed)
                else [_retrieval_row(conversation.id, q, [], 0, str(exc)) for q in questions]
            )
        trials += got_trials
        retrieval += got_retrieval
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


def _offset(report: Progress, done: int, total: int) -> _Step:
    """``report`` for one conversation: its trial count is added to the trials before it."""
    return lambda message, n: report(message, done + n, total)


def _run_conversation(
    conversation: Conversation,
    questions: list[Question],
    config: Config,
    harness: ChatHarness | None,
    opts: LocomoOptions,
    report: _Step,
) -> tuple[list[JSONObject], list[JSONObject]]:
    from paxm_core.evals.locomo_scope import COMPLETE, FAILED, prepare_scope
    from paxm_core.runtime import Runtime

    scope = prepare_scope(
        config, opts.provider, f"{opts.run_id}-{conversation.id}", opts.manifest_dir, opts.keep_memory
    )
    try:
        runtime = Runtime.load(str(scope.config_path))
        try:
            provider = runtime.router.providers[opts.provider]
            _ingest(provider, conversation, scope)
            report(f"{conversation.id}: stored {len(conversation.memories)} turns", 0)
            if opts.settle > 0:
                time.sleep(opts.settle)
            retrieval = [_diagnose(provider, conversation.id, q, opts.limit) for q in questions]
            trials: list[JSONObject] = []
            if not opts.retrieval_only and harness is not None:
                harness.open(scope)
                try:
                    try:
                        _write_canary(harness, provider, scope)
                    except PaxmError as exc:  # the write path is broken: the trials would measure nothing
                        raise _CanaryFailed(str(exc), retrieval) from None
                    trials = _ask(harness, conversation.id, questions, opts, report)
                finally:
                    harness.close()
        finally:
            runtime.close()
        scope.set_status(COMPLETE)
        return trials, retrieval
    except BaseException as exc:
        if scope.run_dir.exists():
            scope.set_status(FAILED, str(exc))
        raise
    finally:
        if scope.run_dir.exists():
            scope.cleanup()


def _ingest(provider: Provider, conversation: Conversation, scope: RunScope) -> None:
    """Store every turn (batches of 50 where the provider takes batches); record the refs."""
    from paxm_core.api.deadline import Deadline
    from paxm_core.api.protocols import SupportsPutBatch
    from paxm_core.api.types import MemoryItem

    items = [
        MemoryItem(text=text, id=dia_id, source="locomo", tier="ltm", metadata=meta)
        for dia_id, text, meta in conversation.memories
    ]
    for start in range(0, len(items), 50):
        chunk = items[start : start + 50]
        if isinstance(provider, SupportsPutBatch):
            refs = provider.put_batch(chunk, Deadline.after(120))
        else:
            refs = [provider.put(item, Deadline.after(60)) for item in chunk]
        scope.record_refs([{"provider": ref.provider, "id": ref.id} for ref in refs])


def _retrieval_row(cid: str, question: Question, hit_ids: list[str], limit: int, error: str = "") -> JSONObject:
    """One question of the retrieval diagnostic (an error fails it)."""
    row: JSONObject = {
        "conversation_id": cid,
        "question": question.question,
        "category": question.category,
        "evidence": list(question.evidence),
        **score_retrieval(hit_ids, question.evidence, limit),
    }
    if error:
        row |= {"passed": False, "error": error}
    return row


def _diagnose(provider: Provider, cid: str, question: Question, limit: int) -> JSONObject:
    from paxm_core.api.deadline import Deadline
    from paxm_core.api.types import SearchQuery

    query = SearchQuery(text=question.question, limit=limit, metadata={"locomo_conversation_id": cid})
    try:
        hits = provider.search(query, Deadline.after(30))
    except PaxmError as exc:
        return _retrieval_row(cid, question, [], limit, str(exc))
    return _retrieval_row(cid, question, [_hit_id(h) for h in hits], limit)


def _hit_id(hit: MemoryHit) -> str:
    for key in ("locomo_dia_id", "paxm_id"):
        value = str((hit.metadata or {}).get(key, "")).strip()
        if value:
            return value
    return str(hit.id)


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
    harness: ChatHarness, cid: str, questions: list[Question], opts: LocomoOptions, report: _Step
) -> list[JSONObject]:
    from paxm_core.evals.locomo_harness import AgentRequest

    trials = _trials(cid, questions, opts.arms)
    for done, trial in enumerate(trials, start=1):
        arm, question = str(trial["arm"]), str(trial["question"])
        prompt = question_prompt(question, arm)
        try:
            response = harness.execute(AgentRequest(arm, str(trial["question_id"]), prompt, arm == "passive"))
        except PaxmError as exc:
            trial["error"] = str(exc)
        else:
            reference = str(trial["reference"])
            trial["response"] = response.to_json()
            trial["token_f1"] = f1 = token_f1(response.text, reference)
            trial["exact_match"] = normalize_answer(response.text) == normalize_answer(reference)
            trial["matched"] = f1 >= opts.match_threshold
        report(f"{trial['question_id']} {arm}", done)
    return trials


def _trials(cid: str, questions: list[Question], arms: tuple[str, ...], error: str = "") -> list[JSONObject]:
    """Every question in every arm, not yet asked (or failed with ``error``)."""
    out: list[JSONObject] = []
    for index, question in enumerate(questions):
        for arm in arms:
            trial: JSONObject = {
                "conversation_id": cid,
                "question_id": f"{cid}-q{index + 1:04d}",
                "question": question.question,
                "reference": question.answer,
                "category": question.category,
                "arm": arm,
                "response": {"text": "", "duration_ms": 0},
                "token_f1": 0.0,
                "exact_match": False,
                "matched": False,
            }
            if error:
                trial["error"] = error
            out.append(trial)
    return out


# -- the result --------------------------------------------------------------------------------


def aggregate_trials(trials: Sequence[Mapping[str, JSONValue]], arms: tuple[str, ...]) -> JSONObject:
    """Per-arm summaries (upstream's fields), lift over control, trials sorted by question then arm."""
    by_arm: dict[str, list[Mapping[str, JSONValue]]] = {arm: [] for arm in arms}
    for trial in trials:
        by_arm.setdefault(str(trial.get("arm")), []).append(trial)
    order = {arm: i for i, arm in enumerate(arms)}
    summaries = [_arm_summary(arm, by_arm[arm]) for arm in sorted(by_arm, key=lambda a: order.get(a, len(order)))]
    accuracy = {str(s["arm"]): number_of(s, "accuracy") for s in summaries}
    out: JSONObject = {
        "question_count": len({(str(t.get("conversation_id")), str(t.get("question_id"))) for t in trials}),
        "trial_count": len(trials),
    }
    for arm in ("passive", "active"):
        if arm in accuracy:
            out[f"{arm}_lift"] = accuracy[arm] - accuracy.get("control", 0.0)
    out["summaries"] = list(summaries)
    ordered: list[Mapping[str, JSONValue]] = sorted(
        trials, key=lambda t: (str(t.get("question_id")), order.get(str(t.get("arm")), len(order)))
    )
    out["trials"] = ordered
    return out


def _arm_summary(arm: str, trials: list[Mapping[str, JSONValue]]) -> JSONObject:
    """One arm's summary: upstream's keys, in upstream's order."""
    n = len(trials)
    usages = [u if isinstance(u := t.get("response"), Mapping) else {} for t in trials]
    used = [t for t, usage in zip(trials, usages, strict=True) if usage.get("recall_used")]
    matched = sum(1 for t in trials if t.get("matched"))
    useful = sum(1 for t in used if t.get("matched"))
    return {
        "arm": arm,
        "trials": n,
        "matched": matched,
        "errors": sum(1 for t in trials if t.get("error")),
        "recall_used": len(used),
        "useful_recall": useful,
        "accuracy": matched / n if n else 0.0,
        "mean_f1": sum(number_of(t, "token_f1") for t in trials) / n if n else 0.0,
        "exact_match": sum(1 for t in trials if t.get("exact_match")) / n if n else 0.0,
        "recall_use_rate": len(used) / n if n else 0.0,
        "useful_recall_rate": useful / len(used) if used else 0.0,
        "input_tokens": sum(int(number_of(u, "input_tokens")) for u in usages),
        "output_tokens": sum(int(number_of(u, "output_tokens")) for u in usages),
        "cost": round(sum((number_of(u, "cost") for u in usages), 0.0), 9),
        "duration_ms": sum(int(number_of(u, "duration_ms")) for u in usages),
    }


def _means(rows: Sequence[Mapping[str, JSONValue]]) -> JSONObject:
    n = len(rows) or 1
    return {
        "recall_at_k": sum(number_of(q, "recall_at_k") for q in rows) / n,
        "precision_at_k": sum(number_of(q, "precision_at_k") for q in rows) / n,
        "mrr": sum(number_of(q, "reciprocal_rank") for q in rows) / n,
    }


def aggregate_retrieval(
    questions: Sequence[Mapping[str, JSONValue]], provider: str, conversations: int, ms: int
) -> JSONObject:
    """Upstream's ``locomo-text-qa-retrieval`` result: overall means and categories 1-4."""
    passed = sum(1 for q in questions if q.get("passed"))
    result: JSONObject = {
        "benchmark": "locomo-text-qa-retrieval",
        "dataset_version": "official-locomo10",
        "provider": provider,
        "conversation_count": conversations,
        "question_count": len(questions),
        "passed": passed,
        "failed": len(questions) - passed,
        "execution_failed": sum(1 for q in questions if q.get("error")),
        **_means(questions),
        "duration_ms": ms,
        "questions": list(questions),
    }
    categories: list[JSONValue] = []
    for category in range(1, 5):
        group = [q for q in questions if q.get("category") == category]
        if group:
            passed = sum(1 for q in group if q.get("passed"))
            categories.append({"category": category, "questions": len(group), "passed": passed, **_means(group)})
    result["categories"] = categories
    return result
