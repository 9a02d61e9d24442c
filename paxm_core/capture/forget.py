"""Find and remove queued copies of memories being forgotten (``paxm forget``).

A capture can still sit in the queue when its memory is forgotten: an episode not yet
delivered to some provider (pending, retry, dead: ``paxm queue retry --dead`` would send it
again), an event of a turn not sealed yet, or a raw hook payload in the inbox.  Left there it
would be delivered later and the memory would come back.  Delivered episodes still hold their
text until pruned, so they are scrubbed too.

How a stored memory is linked to its queued copy, in order of certainty:

1. **Episode id.**  Every episode item carries ``paxm_episode_id`` in its metadata and, at
   providers that keep ids, ``ep_<32 hex>`` (plus ``_<12 hex>`` when one episode made several
   items) as its id.  A forgotten hit's metadata or a forgotten id of that form names the
   episode.
2. **Provider ref.**  A delivered row records the id the provider answered
   (``provider_ref``); forgetting that id names the episode, and the episode's other
   delivered refs are forgotten with it.
3. **Text.**  Captures that no id links (open events, inbox payloads, episodes of providers
   that assign their own ids) match a query when every word of the query occurs in their
   text, case-insensitively: the same text the preview shows, so nothing is removed unseen.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from paxm_core.api.json import JSONObject
from paxm_core.capture._inbox import each_in

__all__ = ["QueuedCopy", "episode_id_of", "find_copies", "linked_refs", "remove_copies", "text_matches"]

_EPISODE_ID = re.compile(r"^(ep_[0-9a-f]{32})(?:_[0-9a-f]{12})?$")
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class QueuedCopy:
    """One capture in the queue that holds (part of) a memory being forgotten.

    :param kind: ``episode`` (sealed turn), ``event`` (open, not sealed yet) or ``inbox``
        (a raw hook payload stored while the daemon was down).
    :param id: the episode id, event id or inbox event id.
    :param text: the capture's text (what the preview's first line comes from).
    :param reason: how it was linked: ``episode id``, ``provider ref`` or ``text``.
    :param undelivered: ``(provider, state)`` of deliveries still owed (episodes only).
    :param delivered: ``(provider, provider_ref)`` of deliveries already made (episodes only).
    """

    kind: str
    id: str
    text: str
    reason: str
    undelivered: tuple[tuple[str, str], ...] = ()
    delivered: tuple[tuple[str, str], ...] = ()

    @property
    def first_line(self) -> str:
        """The first non-empty line of the text (what the preview prints)."""
        return next((line.strip() for line in self.text.splitlines() if line.strip()), "")

    def to_json(self) -> JSONObject:
        return {
            "kind": self.kind,
            "id": self.id,
            "first_line": self.first_line,
            "reason": self.reason,
            "undelivered": [{"provider": p, "state": s} for p, s in self.undelivered],
            "delivered": [{"provider": p, "ref": r} for p, r in self.delivered],
        }


def episode_id_of(memory_id: str) -> str:
    """The episode id a memory id of the form ``ep_<32 hex>[_<12 hex>]`` came from, else ``""``."""
    match = _EPISODE_ID.match(memory_id.strip())
    return match.group(1) if match else ""


def _words(text: str) -> list[str]:
    return [w.casefold() for w in _WORD.findall(text)]


def text_matches(query: str, text: str) -> bool:
    """Whether every word of ``query`` occurs in ``text`` (case-insensitive); an empty query matches nothing."""
    words = _words(query)
    if not words:
        return False
    haystack = text.casefold()
    return all(word in haystack for word in words)


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _event_text(payload: object) -> str:
    item = payload.get("item") if isinstance(payload, dict) else None
    text = item.get("text") if isinstance(item, dict) else None
    return text if isinstance(text, str) else ""


def _episode_text(payload_json: str) -> str:
    try:
        envelope = json.loads(payload_json)
    except ValueError:
        return ""
    events = envelope.get("events") if isinstance(envelope, dict) else None
    if not isinstance(events, list):
        return ""
    return "\n\n".join(t.strip() for t in (_event_text(e) for e in events) if t.strip())


def _inbox_text(raw: bytes, query: str) -> str:
    """The payload's strings, those with the most query words first (what the preview shows)."""
    decoded = raw.decode("utf-8", errors="replace")
    try:
        strings = list(_strings(json.loads(decoded)))
    except ValueError:
        return decoded
    words = _words(query)
    strings.sort(key=lambda text: -sum(word in text.casefold() for word in words))
    return "\n".join(strings)


def _deliveries(
    conn: sqlite3.Connection, episode_id: str
) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]:
    undelivered: list[tuple[str, str]] = []
    delivered: list[tuple[str, str]] = []
    for provider, state, ref in conn.execute(
        "SELECT provider, state, provider_ref FROM capture_deliveries WHERE episode_id = ? ORDER BY provider",
        (episode_id,),
    ):
        if state == "delivered":
            delivered.append((provider, ref))
        else:
            undelivered.append((provider, state))
    return tuple(undelivered), tuple(delivered)


def linked_episodes(conn: sqlite3.Connection, ids: Iterable[str], episode_ids: Iterable[str]) -> dict[str, str]:
    """Episode id -> how it was linked, for forgotten memory ids and known episode ids."""
    linked: dict[str, str] = {}
    for episode in episode_ids:
        if episode.strip():
            linked.setdefault(episode.strip(), "episode id")
    refs: list[str] = []
    for memory_id in ids:
        episode = episode_id_of(memory_id)
        if episode:
            linked.setdefault(episode, "episode id")
        elif memory_id.strip():
            refs.append(memory_id.strip())
    for (episode,) in each_in(
        conn, "SELECT DISTINCT episode_id FROM capture_deliveries WHERE provider_ref IN ({})", refs
    ):
        linked.setdefault(episode, "provider ref")
    return linked


def linked_refs(conn: sqlite3.Connection, episode_ids: Iterable[str]) -> dict[str, list[str]]:
    """Provider -> refs of the delivered copies of ``episode_ids`` (forgotten with them)."""
    out: dict[str, list[str]] = {}
    for episode in episode_ids:
        for provider, ref in conn.execute(
            "SELECT provider, provider_ref FROM capture_deliveries"
            " WHERE episode_id = ? AND state = 'delivered' AND provider_ref != ''",
            (episode,),
        ):
            refs = out.setdefault(provider, [])
            if ref not in refs:
                refs.append(ref)
    return out


def find_copies(
    conn: sqlite3.Connection,
    *,
    ids: Iterable[str] = (),
    episode_ids: Iterable[str] = (),
    query: str = "",
    limit: int = 0,
) -> list[QueuedCopy]:
    """Every capture linked to the forgotten ``ids``/``episode_ids``, then those matching ``query``.

    Linked episodes are always listed; text matches (episodes, open events, inbox payloads,
    oldest first) stop at ``limit`` when it is positive.
    """
    ids = [i for i in ids if i.strip()]
    found: list[QueuedCopy] = []
    seen: set[str] = set()
    for episode, reason in linked_episodes(conn, ids, episode_ids).items():
        row = conn.execute("SELECT payload_json FROM capture_episodes WHERE episode_id = ?", (episode,)).fetchone()
        if row is None:
            continue
        undelivered, delivered = _deliveries(conn, episode)
        found.append(QueuedCopy("episode", episode, _episode_text(row[0]), reason, undelivered, delivered))
        seen.add(episode)
    wanted = set(ids)
    for event_id, payload in conn.execute(
        "SELECT event_id, payload_json FROM capture_events WHERE episode_id = '' ORDER BY created_at, event_id"
    ).fetchall():
        if event_id in wanted:
            found.append(QueuedCopy("event", event_id, _event_text(_loads(payload)), "event id"))
            seen.add(event_id)
    if not _words(query):
        return found
    matched = 0
    for kind, key, text in _text_candidates(conn, query):
        if 0 < limit <= matched:
            break
        if key in seen or not text_matches(query, text):
            continue
        found.append(QueuedCopy(kind, key, text, "text", *(_deliveries(conn, key) if kind == "episode" else ())))
        seen.add(key)
        matched += 1
    return found


def _text_candidates(conn: sqlite3.Connection, query: str) -> Iterator[tuple[str, str, str]]:
    """``(kind, id, text)`` of every episode, open event and waiting inbox payload, oldest first."""
    for episode, payload in conn.execute(
        "SELECT episode_id, payload_json FROM capture_episodes ORDER BY created_at, episode_id"
    ).fetchall():
        yield "episode", episode, _episode_text(payload)
    for event_id, payload in conn.execute(
        "SELECT event_id, payload_json FROM capture_events WHERE episode_id = '' ORDER BY created_at, event_id"
    ).fetchall():
        yield "event", event_id, _event_text(_loads(payload))
    for event_id, raw in conn.execute(
        "SELECT event_id, raw FROM capture_inbox WHERE state IN ('pending', 'failed') ORDER BY received_at, event_id"
    ).fetchall():
        yield "inbox", event_id, _inbox_text(bytes(raw), query)


def _loads(payload: str) -> object:
    try:
        return json.loads(payload)
    except ValueError:
        return None


def remove_copies(
    conn: sqlite3.Connection,
    copies: Iterable[QueuedCopy],
    refresh: Callable[[sqlite3.Connection, Sequence[str]], None],
    providers: Iterable[str] = (),
) -> int:
    """Remove ``copies`` inside the caller's transaction; returns how many captures changed.

    With ``providers`` only the episodes' deliveries to those providers are dropped, and the
    episode itself (its text) only once nobody else is still owed it (``refresh`` then
    recomputes its state).  Without, episodes go whole (events, deliveries, envelope).  Open
    events and inbox payloads always go whole: which providers they reach is decided only when
    they are sealed.  Open events are deleted; inbox payloads are emptied and marked done, so
    a late replay of the same hook payload is still recognised.
    """
    only = sorted({p for p in providers if p.strip()})
    changed = 0
    for copy in copies:
        if copy.kind == "episode":
            if only:
                marks = ",".join("?" * len(only))
                gone = conn.execute(
                    f"DELETE FROM capture_deliveries WHERE episode_id = ? AND provider IN ({marks})"
                    " AND state != 'delivered'",
                    (copy.id, *only),
                ).rowcount
                owed = conn.execute(
                    "SELECT count(*) FROM capture_deliveries WHERE episode_id = ? AND state != 'delivered'",
                    (copy.id,),
                ).fetchone()[0]
                if owed:
                    changed += 1 if gone else 0
                    refresh(conn, [copy.id])
                    continue
            conn.execute("DELETE FROM capture_deliveries WHERE episode_id = ?", (copy.id,))
            conn.execute("DELETE FROM capture_events WHERE episode_id = ?", (copy.id,))
            changed += conn.execute("DELETE FROM capture_episodes WHERE episode_id = ?", (copy.id,)).rowcount
        elif copy.kind == "event":
            gone = conn.execute(
                "DELETE FROM capture_events WHERE event_id = ? AND episode_id = ''", (copy.id,)
            ).rowcount
            if not gone:
                # sealed since the preview (the daemon is running): the episode it joined goes
                row = conn.execute("SELECT episode_id FROM capture_events WHERE event_id = ?", (copy.id,)).fetchone()
                if row is not None and row[0]:
                    changed += remove_copies(conn, [QueuedCopy("episode", row[0], "", "event id")], refresh, only)
                continue
            changed += gone
        elif copy.kind == "inbox":
            changed += conn.execute(
                "UPDATE capture_inbox SET state = 'done', raw = X'', last_error = 'forgotten'"
                " WHERE event_id = ? AND state != 'done'",
                (copy.id,),
            ).rowcount
    return changed
