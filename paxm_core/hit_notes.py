"""What paxm says about a recalled memory beside its text: freshness and supersession.

:func:`notes_for` computes a :class:`HitNote` per hit, :func:`for_injection` applies the passive
rule, and :meth:`HitNote.attributes` renders it on the memory's heading line, which the memory's
own text cannot reach (heading-like lines are guarded, attribute values entity-escaped).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from paxm_core.api.json import JSONObject
from paxm_core.api.values import value_dataclass
from paxm_core.freshness import Freshness

if TYPE_CHECKING:
    from paxm_core.config.model import Config

__all__ = ["HitNote", "attribute_value", "for_injection", "notes_for", "passive_hits"]


def attribute_value(value: str) -> str:
    """``value`` safe inside a double-quoted attribute on one line (``&``, ``"``, ``<``, ``>`` escaped)."""
    from paxm_core.envelope import header_field

    value = header_field(value)
    return value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")


@value_dataclass(frozen=True)
class HitNote:
    """Freshness and supersession of one hit."""

    freshness: Freshness = Freshness()
    #: the id of the newer memory that supersedes this one (``""``: none)
    superseded_by: str = ""

    def attributes(self, *, show_fresh: bool = False) -> str:
        """`` freshness="stale" reason="..." superseded_by="..."`` (leading space), ``""`` when nothing to say.

        :param show_fresh: also say ``freshness="fresh"`` for a memory whose anchors all resolve.
        """
        parts: list[str] = []
        if self.freshness.stale:
            parts.append('freshness="stale"')
            if self.freshness.reason:
                parts.append(f'reason="{attribute_value(self.freshness.reason)}"')
        elif show_fresh and self.freshness.anchored:
            parts.append('freshness="fresh"')
        if self.superseded_by:
            parts.append(f'superseded_by="{attribute_value(self.superseded_by)}"')
        return (" " + " ".join(parts)) if parts else ""

    def to_json(self) -> JSONObject:
        """The keys ``--json`` adds to a hit: ``freshness`` for an anchored or stale memory, and
        ``superseded_by`` when superseded (none for a plain memory: upstream's shape is kept)."""
        out: JSONObject = {}
        if self.freshness.anchored or self.freshness.stale:
            out["freshness"] = self.freshness.to_json()
        if self.superseded_by:
            out["superseded_by"] = self.superseded_by
        return out


_EMPTY = HitNote()


def notes_for(hits: Sequence[Any], config: Config | None) -> list[HitNote]:
    """One note per hit, under ``config.freshness`` (both checks on when ``config`` is ``None``)."""
    switches = getattr(config, "freshness", None)
    anchors_on = switches is None or switches.anchors_on
    supersession_on = switches is None or switches.supersession_on
    if not hits or not (anchors_on or supersession_on):
        return [_EMPTY] * len(hits)
    if anchors_on:
        from paxm_core.freshness import default_checker

        states = default_checker().check_hits(hits)
    else:
        states = [Freshness()] * len(hits)
    newer: dict[int, int] = {}
    if supersession_on and len(hits) > 1:
        from paxm_core.supersession import superseded_by

        newer = superseded_by(hits)
    return [
        HitNote(state, str(getattr(hits[newer[i]], "id", "") or "") if i in newer else "")
        for i, state in enumerate(states)
    ]


def for_injection(
    hits: Sequence[Any], notes: Sequence[HitNote], choose: Callable[[list[Any]], list[Any]] | None = None
) -> tuple[list[Any], list[HitNote]]:
    """The hits a passive prompt gets, with their notes.

    ``choose`` (the insertion filter) runs on the non-stale hits, and on all of them only when it
    keeps none of those; a memory that supersedes another moves just above it.
    """
    pick = choose or list
    note_of = {id(hit): note for hit, note in zip(hits, notes, strict=True)}
    fresh = [hit for hit in hits if not note_of[id(hit)].freshness.stale]
    chosen = pick(fresh) if fresh else []
    if not chosen and len(fresh) < len(hits):
        chosen = pick(list(hits))
    pairs = [(hit, note_of.get(id(hit), _EMPTY)) for hit in chosen]
    ids = [str(getattr(hit, "id", "") or "") for hit, _ in pairs]
    for index in range(len(pairs)):
        newer = pairs[index][1].superseded_by
        if newer and newer in ids[index + 1 :]:
            at = ids.index(newer, index + 1)
            pairs.insert(index, pairs.pop(at))
            ids.insert(index, ids.pop(at))
    return [hit for hit, _ in pairs], [note for _, note in pairs]


def passive_hits(
    hits: Sequence[Any], config: Config | None, choose: Callable[[list[Any]], list[Any]]
) -> tuple[list[Any], list[str]]:
    """What a passive prompt injects: the chosen hits (:func:`for_injection`) and each one's heading attributes."""
    chosen, notes = for_injection(hits, notes_for(hits, config), choose)
    return chosen, [note.attributes() for note in notes]
