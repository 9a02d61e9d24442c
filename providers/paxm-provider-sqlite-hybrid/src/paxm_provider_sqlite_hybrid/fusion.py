"""Fusing the lexical ranking with the dense one (``docs/hybrid-retrieval.md``, How recall works).

Hits matching every query term (and otherwise the lexical best and its ties) lead in their own
order; every other place goes by reciprocal-rank fusion.  Scores never increase down the list
and no hit falls below its own evidence, so thresholds that admitted a memory with ``sqlite``
still admit it.

A captured turn that only asks the question comes after every answer.  Words decide that for a
lexical hit (the lexical store's rule); for a memory only the dense ranking found, which shares
no word with the query, its own answer decides (:func:`says_nothing`).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from paxm_provider_sqlite.retrieval.analyzer import index_text
from paxm_provider_sqlite.retrieval.ranking import FILLER_WORDS, QUESTION_ONLY_FACTOR, asks
from paxm_provider_sqlite_hybrid import calibration

__all__ = ["DENSE_WEIGHT", "LEXICAL_WEIGHT", "RRF_K", "UNRELATED_FACTOR", "Ranked", "fuse", "says_nothing"]

#: Reciprocal-rank fusion constant: 60 is the usual value; smaller favours each list's head.
RRF_K = 60
#: Weight of a lexical rank in the fusion.
LEXICAL_WEIGHT = 1.0
#: Weight of a dense rank in the fusion.
DENSE_WEIGHT = 1.0
#: Share of its lexical score a partial match keeps when its meaning is unrelated to the query.
UNRELATED_FACTOR = 0.5
#: Lexical stages whose hits lead the result unchanged (every query term matched).
LEADING_STAGES = frozenset({"exact", "strict", "recent"})
_PROMPT = re.compile(r"user input:\s*", re.IGNORECASE)
_REPLY = re.compile(r"assistant response:\s*", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
#: Lexical scores this close are a tie (the lexical store copies a score onto the hit it promotes).
_TIE = 1e-9


@dataclass
class Ranked:
    """One memory in the fused result: where each ranking put it, and its scores."""

    key: str
    lexical_rank: int | None = None
    dense_rank: int | None = None
    lexical_score: float = 0.0
    cosine: float | None = None
    fused: float = 0.0
    score: float = 0.0

    runner_up: bool = False
    #: A partial lexical match whose meaning is unrelated (its cosine is under the cut-off).
    unrelated: bool = False
    #: A captured turn that only asks the question (``ranking.asks_only``, :func:`says_nothing`).
    asks: bool = False

    @property
    def weak(self) -> bool:
        """Found by the dense ranking alone, more than the margin below its best hit."""
        return self.runner_up and self.lexical_rank is None

    @property
    def by_meaning(self) -> bool:
        """Whether the calibrated cosine, not the lexical score, is this hit's evidence."""
        if self.cosine is None or self.weak:
            return False
        return calibration.to_score(self.cosine) > min(self.lexical_score, 1.0)

    @property
    def evidence(self) -> float:
        """The better of the lexical score and the calibrated cosine (``0`` for neither).

        A memory only the dense ranking found, more than :data:`calibration.MARGIN` below
        its best cosine, is a neighbour of the answer rather than an answer: it keeps its
        place but scores :data:`calibration.RUNNER_UP_SCORE`, under the router's default
        floors, so a recall with default thresholds does not show it.
        """
        dense = calibration.to_score(self.cosine) if self.cosine is not None else 0.0
        if self.weak:
            dense = min(dense, calibration.RUNNER_UP_SCORE)
        lexical = min(self.lexical_score, 1.0) * (UNRELATED_FACTOR if self.unrelated else 1.0)
        evidence = max(lexical, dense)
        # a copy of the question is the closest text to it there is: its cosine says nothing
        return evidence * QUESTION_ONLY_FACTOR if self.asks else evidence


def fuse(
    lexical: Sequence[tuple[str, float]],
    dense: Sequence[tuple[str, float]],
    stage: str,
    limit: int,
    asking: Collection[str] = (),
    lexical_cosines: Mapping[str, float] | None = None,
) -> list[Ranked]:
    """The fused ranking of ``lexical`` ``(key, score)`` and ``dense`` ``(key, cosine)`` lists.

    Both lists are best first.  ``stage`` is the lexical stage that produced ``lexical``: with
    a leading stage its hits keep the head of the result.  ``asking``: keys of captured turns
    that only ask the question; they come after every answer, their evidence scaled as the
    lexical store scales their score.  ``lexical_cosines``: the cosine of lexical hits that
    have a vector; a partial match (not a leading stage) under the cut-off shares words with
    the query but not its meaning (a lexical trap), and its lexical score counts
    :data:`UNRELATED_FACTOR` of itself.  At most ``limit`` entries.
    """
    entries: dict[str, Ranked] = {}
    for rank, (key, score) in enumerate(lexical):
        entries[key] = Ranked(key, lexical_rank=rank, lexical_score=score)
    # the best answer sets the runner-up margin: a copy of the question is always nearest
    best = next((cosine for key, cosine in dense if key not in asking), 0.0)
    for rank, (key, cosine) in enumerate(dense):
        entry = entries.setdefault(key, Ranked(key))
        entry.dense_rank, entry.cosine = rank, cosine
        entry.runner_up = cosine < best - calibration.MARGIN
    leading = stage in LEADING_STAGES
    for key, cosine in (lexical_cosines or {}).items():
        matched = entries.get(key)
        if matched is not None and matched.lexical_rank is not None and not leading:
            matched.unrelated = cosine < calibration.CUTOFF
    for entry in entries.values():
        entry.asks = entry.key in asking
        if entry.lexical_rank is not None:
            entry.fused += LEXICAL_WEIGHT / (RRF_K + entry.lexical_rank + 1)
        if entry.dense_rank is not None:
            entry.fused += DENSE_WEIGHT / (RRF_K + entry.dense_rank + 1)
    # The lexical store's best hit, and the hits it tied to it (a conversation's settled
    # decision, a newer correction: each takes the score of the hit it is placed above), lead in
    # the lexical order: the dense ranking can add to them and reorder what follows, but a
    # hit only meaning supports never goes above them.  With a leading stage that is every
    # lexical hit.  A partial match unrelated by meaning (a lexical trap) is not protected.
    head = _lexical_head(lexical, entries, leading)
    chosen = {entry.key for entry in head}
    rest = [entry for entry in entries.values() if entry.key not in chosen]
    # Runners-up (found by meaning alone, well below the best such hit) come after every other
    # hit, and the question's copies after the answers: they fill the limit but never sit
    # above an answer, nor borrow its score.
    rest.sort(key=lambda e: (not e.weak, not e.asks, e.fused, e.evidence), reverse=True)
    ranked = (head + rest)[:limit]
    _assign_scores(ranked)
    return ranked


def _assign_scores(ranked: list[Ranked]) -> None:
    """Scores that never increase down the list and never fall below a hit's own evidence."""
    best = 0.0
    for entry in reversed(ranked):
        best = max(best, entry.evidence)
        entry.score = best


def _lexical_head(lexical: Sequence[tuple[str, float]], entries: Mapping[str, Ranked], leading: bool) -> list[Ranked]:
    """The lexical hits that lead the fused result, in the lexical order.

    With a leading stage: every lexical hit that is not a copy of the question.  Otherwise the
    hits whose lexical score ties the best one's (the lexical store gives a settled decision or
    a newer correction the score of the hit it places it above), less question copies and
    partial matches unrelated by meaning.
    """
    top = lexical[0][1] if lexical else 0.0
    head = []
    for key, score in lexical:
        if not leading and score < top - _TIE:
            break
        entry = entries[key]
        if not entry.asks and not (entry.unrelated and not leading):
            head.append(entry)
    return head


def says_nothing(text: str) -> bool:
    """Whether a captured turn only asks: no answer, or an answer that says nothing of its own.

    The question-copy test for a memory the dense ranking found and the lexical one did not.
    The lexical store's test (``ranking.asks_only``: no answer sentence holds a query word) is
    right for a hit its words found, and wrong for one meaning found: the answer to a
    paraphrased question shares none of its words by definition.  Here the answer's sentences
    alone decide: those that ask (end with ``?``) or add nothing to the user's words but
    ``ranking.FILLER_WORDS`` ("Good question: how are branches named?") are not an answer.
    """
    indexed = index_text(text)
    if not asks(f" {indexed.terms} {indexed.extras} "):
        return False  # not a captured turn, or the user stated something
    prompt = _PROMPT.search(text)
    replies = list(_REPLY.finditer(text))
    if prompt is None or not replies or prompt.end() > replies[-1].start():
        return True  # a prompt stored without an answer
    asked = set(index_text(text[prompt.end() : replies[-1].start()]).terms.split()) | FILLER_WORDS
    for sentence in _SENTENCE_END.split(text[replies[-1].end() :]):
        sentence = sentence.strip()
        if sentence and not sentence.endswith("?") and not set(index_text(sentence).terms.split()) <= asked:
            return False
    return True
