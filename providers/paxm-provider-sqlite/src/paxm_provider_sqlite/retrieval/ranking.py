"""Ranking rules applied after a stage has chosen and ordered its candidates: answers over
questions (a turn that only asks is scaled by :data:`QUESTION_ONLY_FACTOR`) and newer decisions
win (``docs/sqlite-provider.md``, Ranking rules).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Protocol, TypeVar

from paxm_provider_sqlite.retrieval.analyzer import Group, index_text
from paxm_provider_sqlite.timestamps import parse_stamp

__all__ = [
    "QUESTION_ONLY_FACTOR",
    "SUBJECT_SHARE",
    "SUPERSEDE_AFTER",
    "SUPERSEDE_BAND",
    "FILLER_WORDS",
    "TEMPLATE_WORDS",
    "answer_terms",
    "asks",
    "asks_only",
    "echoes",
    "only_asks",
    "rerank",
]

#: Score multiplier of a turn matched only through its question: under the first-prompt passive
#: share (0.35 of the best), so an answered question's copies take no passive slot.
QUESTION_ONLY_FACTOR = 0.3
#: Share of the smaller content-word set two memories must have in common to be on one subject.
SUBJECT_SHARE = 0.4
#: How much newer a memory must be to supersede another: less is one exchange (or memories written
#: together), not a correction; a correction later in the same session counts.
SUPERSEDE_AFTER = timedelta(minutes=5)
#: A newer memory supersedes one it scores at least this share of.
SUPERSEDE_BAND = 0.5
#: Candidates examined for supersession (the head of the ranking; each pair is a set intersection).
SUPERSEDE_WINDOW = 50

_USER_MARK = " user input "
_ANSWER_MARK = " assistant respons "
#: Words of the capture template, never a subject.
TEMPLATE_WORDS = frozenset({"claud", "code", "user", "input", "assistant", "respons", "turn", "messag"})


class Ranked(Protocol):
    """What the rules read and write on a candidate (``search.Light``)."""

    rowid: int
    score: float
    created_at: str
    hay: str

    def tokens(self) -> set[str]:
        """The distinct tokens of the stored term streams."""
        ...


_R = TypeVar("_R", bound=Ranked)


#: First words of a user input that asks, as the analyzer stores them: a prompt starting
#: otherwise ("Remember: release branches are named ...", "We decided ...") states something,
#: and is never demoted.
QUESTION_WORDS = frozenset(
    index_text(
        "what how why which where when who whom whose is are was were do does did can could should would "
        "will shall may might has have had any anyone"
    ).terms.split()
)


def asks(hay: str) -> bool:
    """Whether a stored term stream is a captured turn whose user input asks (starts with a question word)."""
    start = hay.find(_USER_MARK)
    if start < 0:
        return False  # not a captured turn: a note, a fact, a summary
    # a user who stated something (a decision, an instruction) gave an answer too
    return hay[start + len(_USER_MARK) :].split(" ", 1)[0] in QUESTION_WORDS


def answer_terms(hay: str) -> int:
    """How many indexed terms a stored turn's answer has (0 without one; a note counts whole)."""
    cut = hay.rfind(_ANSWER_MARK)
    if cut < 0:
        return 0 if hay.find(_USER_MARK) >= 0 else hay.count(" ")
    return hay.count(" ", cut + len(_ANSWER_MARK))


def only_asks(hay: str, groups: Sequence[Group]) -> bool:
    """Whether a stored turn asks a question and matches ``groups`` only there (no answer holds any of them)."""
    if not asks(hay):
        return False
    start = hay.find(_USER_MARK)
    cut = hay.rfind(_ANSWER_MARK)
    if cut < start:
        return True  # a prompt stored without an answer
    answer = hay[cut + len(_ANSWER_MARK) :]
    tokens = set(answer.split())
    return not any(g.present(" " + answer, tokens) for g in groups)


#: Words of an acknowledgement or of a question said back, never the substance of an answer.
FILLER_WORDS = frozenset(
    index_text(
        "good great sure okay ok yes right question asked asking ask wondering wonder want like prefer "
        "let me check think get back you your we our i it that this the a an and or to of do does "
        "is are was were be been am"
    ).terms.split()
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_PROMPT_MARK = re.compile(r"user input:\s*", re.IGNORECASE)
_REPLY_MARK = re.compile(r"assistant response:\s*", re.IGNORECASE)


def echoes(text: str, groups: Sequence[Group]) -> bool:
    """Whether a captured turn's answer only says the question back.

    Its sentences that ask (end with ``?``) and those that add no word to the user's input but
    :data:`FILLER_WORDS` ("Good question: how should release branches be named?", "You asked
    how release branches are named.") are not answers; when what is left holds none of the
    query's ``groups``, the turn matched through the question alone.
    """
    replies = list(_REPLY_MARK.finditer(text))
    prompt = _PROMPT_MARK.search(text)
    if not replies or prompt is None or prompt.end() > replies[-1].start():
        return False
    asked = set(index_text(text[prompt.end() : replies[-1].start()]).terms.split()) | FILLER_WORDS
    kept = []
    for sentence in _SENTENCE_END.split(text[replies[-1].end() :]):
        sentence = sentence.strip()
        if not sentence or sentence.endswith("?"):
            continue
        if not set(index_text(sentence).terms.split()) <= asked:
            kept.append(sentence)
    indexed = index_text(" ".join(kept))
    hay = f" {indexed.terms} {indexed.extras} "
    tokens = set(hay.split())
    return not any(g.present(hay, tokens) for g in groups)


def asks_only(text: str, groups: Sequence[Group]) -> bool:
    """Whether a stored memory's ``text`` is a captured turn that only asks (:func:`only_asks`, :func:`echoes`).

    For rankings that hold the text rather than the term streams (the hybrid's dense hits).
    """
    indexed = index_text(text)
    hay = f" {indexed.terms} {indexed.extras} "
    if not asks(hay):
        return False
    return only_asks(hay, groups) or echoes(text, groups)


def _content(cand: Ranked) -> frozenset[str]:
    return frozenset(t for t in cand.tokens() if len(t) > 3 and t not in TEMPLATE_WORDS and not t.isdigit())


def _same_subject(a: frozenset[str], b: frozenset[str]) -> bool:
    smaller = min(len(a), len(b))
    return smaller > 0 and len(a & b) >= SUBJECT_SHARE * smaller


def _supersede(cands: list[_R], askers: set[int]) -> None:
    """Move each newer same-subject memory above the older one it follows (in place).

    A turn that only asks (``askers``: their ``id``) decides nothing, so it supersedes nothing.
    """
    head = cands[:SUPERSEDE_WINDOW]
    if len(head) < 2:
        return
    # created_at is fixed-width text: when the whole window spans less than the gap, no pair can
    # supersede (memories written together, the common case of a fresh store or a batch)
    first, last = parse_stamp(min(c.created_at for c in head)), parse_stamp(max(c.created_at for c in head))
    if first is None or last is None or last - first < SUPERSEDE_AFTER:
        return
    content: dict[int, frozenset[str]] = {}
    when = {id(c): parse_stamp(c.created_at) for c in head}
    i = 0
    while i < len(head):
        old = head[i]
        born = when[id(old)]
        best = None
        for cand in head[i + 1 :]:
            at = when[id(cand)]
            if id(cand) in askers:
                continue
            if born is None or at is None or at - born < SUPERSEDE_AFTER:
                continue
            if cand.score < old.score * SUPERSEDE_BAND:
                continue
            for c in (old, cand):
                if id(c) not in content:
                    content[id(c)] = _content(c)
            if not _same_subject(content[id(old)], content[id(cand)]):
                continue
            if best is None or at > when[id(best)]:  # type: ignore[operator]
                best = cand
        if best is not None:
            head.remove(best)
            best.score = max(best.score, old.score)
            head.insert(i, best)  # the superseded one is re-examined one place down
        i += 1
    cands[:SUPERSEDE_WINDOW] = head


def rerank(cands: list[_R], groups: Sequence[Group], texts: Mapping[int, str] | None = None) -> None:
    """Apply both rules to an ordered candidate list, in place (still best first).

    ``texts`` (stored text by ``rowid``) holds the turns that ask and are answered with a query
    word; one whose answer only says the question back (:func:`echoes`) only asks too.
    """
    askers = set()
    texts = texts or {}
    for cand in cands:
        text = texts.get(cand.rowid)
        if only_asks(cand.hay, groups) or (text is not None and echoes(text, groups)):
            cand.score *= QUESTION_ONLY_FACTOR
            askers.add(id(cand))
    if askers:
        cands.sort(key=lambda c: c.score, reverse=True)  # stable: ties keep the stage's order
    _supersede(cands, askers)
