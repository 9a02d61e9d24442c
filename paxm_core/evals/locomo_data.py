"""LoCoMo: the dataset file, the memories a conversation becomes, and the answer and retrieval scores.

The dataset is the user's copy of LoCoMo's ``locomo10.json`` (paxm ships none): a JSON list of
conversations, each ``{"sample_id", "conversation": {"speaker_a", "speaker_b", "session_N": [turns],
"session_N_date_time": "..."}, "qa": [{"question", "answer", "evidence": [dia ids], "category"}]}``
with turns ``{"speaker", "dia_id", "text", "blip_caption"?}``.  As upstream does, only categories
1-4 with a question and evidence are asked (category 5, adversarial, has no answer to score).

Each dialogue turn becomes one memory, ``[<session date>] <speaker>: <text>`` (plus
``[Image: <caption>]``), with the ``dia_id`` as its id and in its metadata, so a retrieval hit
names the evidence it is.

Scores are upstream's: answers are normalised (lower case, anything but letters, digits and
spaces becomes a space, the articles a/an/the dropped); token F1 is the multiset overlap of the
normalised tokens; a trial *matches* at F1 >= the threshold (0.5); *exact match* compares the
normalised strings.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from paxm_core.api.errors import UsageError
from paxm_core.api.json import JSONObject

__all__ = [
    "Conversation",
    "Question",
    "Session",
    "Turn",
    "answer_text",
    "load_locomo",
    "memory_rows",
    "normalize_answer",
    "score_retrieval",
    "token_f1",
]

_SESSION_KEY = re.compile(r"^session_(\d+)$")
_ARTICLES = frozenset({"a", "an", "the"})


@dataclass(frozen=True)
class Turn:
    """One dialogue turn."""

    speaker: str
    dia_id: str
    text: str
    caption: str = ""


@dataclass(frozen=True)
class Session:
    """One numbered session of a conversation and its date line."""

    number: int
    date_time: str
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Question:
    """A QA item: the reference answer is kept as JSON text (answers may be numbers)."""

    question: str
    answer: str
    evidence: tuple[str, ...]
    category: int


@dataclass(frozen=True)
class Conversation:
    """A conversation id, its speakers, sessions and the questions asked about it."""

    id: str
    speaker_a: str
    speaker_b: str
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...] = field(default=())


def answer_text(value: object) -> str:
    """The reference answer as text (a number or list is printed as upstream's ``fmt.Sprint``)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def _turns(raw: object, where: str) -> tuple[Turn, ...]:
    if not isinstance(raw, list):
        raise UsageError(f"LoCoMo {where} is not a list of turns")
    turns = []
    for item in raw:
        if not isinstance(item, dict):
            raise UsageError(f"LoCoMo {where} has a turn that is not an object")
        turns.append(
            Turn(
                speaker=str(item.get("speaker") or "").strip(),
                dia_id=str(item.get("dia_id") or "").strip(),
                text=str(item.get("text") or ""),
                caption=str(item.get("blip_caption") or "").strip(),
            )
        )
    return tuple(turns)


def _questions(raw: object) -> tuple[Question, ...]:
    out = []
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, dict):
            continue
        category = item.get("category")
        question = str(item.get("question") or "").strip()
        evidence = item.get("evidence") or []
        if not isinstance(category, int) or isinstance(category, bool) or not 1 <= category <= 4:
            continue
        if not question or not isinstance(evidence, list) or not evidence:
            continue
        out.append(Question(question, answer_text(item.get("answer")), tuple(str(e) for e in evidence), category))
    return tuple(out)


def _conversation(raw: object, index: int) -> Conversation:
    if not isinstance(raw, dict):
        raise UsageError(f"LoCoMo entry {index + 1} is not an object")
    cid = str(raw.get("sample_id") or "").strip() or f"conversation-{index + 1}"
    body = raw.get("conversation")
    if not isinstance(body, dict):
        raise UsageError(f"LoCoMo {cid} has no conversation object")
    speakers = []
    for key in ("speaker_a", "speaker_b"):
        value = body.get(key)
        if not isinstance(value, str) or not value.strip():
            raise UsageError(f"LoCoMo {cid} is missing {key}")
        speakers.append(value.strip())
    sessions = []
    for key, value in body.items():
        match = _SESSION_KEY.match(key)
        if match is None or int(match.group(1)) <= 0:
            continue
        number = int(match.group(1))
        date = body.get(f"session_{number}_date_time")
        sessions.append(Session(number, date if isinstance(date, str) else "", _turns(value, f"{cid} {key}")))
    if not sessions:
        raise UsageError(f"LoCoMo conversation {cid} has no sessions")
    sessions.sort(key=lambda s: s.number)
    return Conversation(cid, speakers[0], speakers[1], tuple(sessions), _questions(raw.get("qa")))


def load_locomo(path: str | Path) -> list[Conversation]:
    """Read a LoCoMo dataset file; a malformed file is a :class:`UsageError` naming what is wrong."""
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


def memory_rows(conversation: Conversation) -> list[tuple[str, str, dict[str, str]]]:
    """``(id, text, metadata)`` of the memory each dialogue turn becomes."""
    rows = []
    for session in conversation.sessions:
        for turn in session.turns:
            text = f"[{session.date_time}] {turn.speaker}: {turn.text.strip()}"
            if turn.caption:
                text += f" [Image: {turn.caption}]"
            metadata = {
                "benchmark": "locomo",
                "locomo_conversation_id": conversation.id,
                "locomo_session": str(session.number),
                "locomo_dia_id": turn.dia_id,
            }
            rows.append((turn.dia_id, text, metadata))
    return rows


def normalize_answer(value: str) -> str:
    """Lower case; anything but letters, digits and spaces -> space; drop a/an/the; single spaces."""
    cleaned = "".join(ch if ch.isalnum() or ch.isspace() else " " for ch in value.strip().lower())
    return " ".join(word for word in cleaned.split() if word not in _ARTICLES)


def token_f1(actual: str, expected: str) -> float:
    """Token F1 of two answers after :func:`normalize_answer` (both empty: 1.0)."""
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
    expected = set(evidence)
    matched: list[str] = []
    rank = 0.0
    for index, hit in enumerate(hit_ids[:limit] if limit > 0 else hit_ids):
        if hit in expected and hit not in matched:
            matched.append(hit)
            rank = rank or 1.0 / (index + 1)
    return {
        "hit_ids": list(hit_ids[:limit] if limit > 0 else hit_ids),
        "matched_evidence": sorted(matched),
        "recall_at_k": len(matched) / len(expected) if expected else 0.0,
        "precision_at_k": len(matched) / limit if limit > 0 else 0.0,
        "reciprocal_rank": rank,
        "passed": len(matched) == len(expected),
    }
