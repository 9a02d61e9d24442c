"""Per-session economy of passive memory: inject once, re-offer after a compaction, hold back.

A memory enters the session's ledger (:class:`~paxm_core.passive.session_state.SessionState`)
once the answer that carried it whole has reached the hook client, and is not injected into
that session again.  Lost state only empties a ledger, so a memory may be injected once more
but is never withheld.  After a compaction the ledger is emptied durably and the memories still
found by the session's recent queries are offered again.  ``passive.holdback`` gives a
deterministic share of sessions no passive memory, for ``paxm impact``.  See
docs/session-economy.md.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, TypeVar

from paxm_core.api.events import EVENT_SESSION_START, HookEvent, HookResult
from paxm_core.api.json import JSONObject
from paxm_core.passive.session_state import SessionState, ledger_strings, session_hash, session_key

if TYPE_CHECKING:
    from paxm_core.config.model import PassiveConfig

__all__ = ["SessionEconomy", "compaction_kind", "emit", "holdback_arm", "included_hits", "matched_terms", "memory_key"]

#: recent recall queries kept per session to find its memories again after a compaction, and
#: the characters kept of each (its end, as a long prompt's recall query is)
MAX_QUERIES = 4
MAX_QUERY_CHARS = 500
#: memories kept per session ledger (the oldest go first: at worst injected once more)
MAX_IDS = 200
#: answers waiting for their delivery to be confirmed (older ones are forgotten: not recorded)
MAX_PENDING = 256
#: metadata keys a provider or the freshness check may put on a hit, copied into receipts
FRESHNESS_KEYS = ("freshness", "freshness_reason", "stale_reason", "superseded_by")
_WORD = re.compile(r"\w{3,}", re.UNICODE)
#: a recalled memory (a :class:`~paxm_core.api.types.RecallHit`, read through ``getattr``)
Hit = TypeVar("Hit")


def emit(record: Callable[[dict[str, object]], None] | None, kind: str, event: HookEvent, **fields: object) -> None:
    """Hand the ``kind`` record of a hook ``event`` to the telemetry sink ``record``, if any (never raises)."""
    if record is None:
        return
    try:
        record({"kind": kind, "source": "hook", "target": event.target, "hook_event": event.event, **fields})
    except Exception:  # telemetry never breaks a hook
        pass


def memory_key(hit: object) -> str:
    """A memory's identity in a ledger: ``provider:id``, else a hash of its text."""
    provider = str(getattr(hit, "provider", "") or "")
    ident = str(getattr(hit, "id", "") or "")
    if ident:
        return f"{provider}:{ident}"
    text = str(getattr(hit, "text", "") or "").strip()
    return "text:" + hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:24]


def holdback_arm(key: str, ratio: float) -> bool:
    """Whether session ``key`` is held back at ``ratio``: the same key always gives the same answer."""
    if ratio <= 0 or not key:
        return False
    digest = hashlib.sha256(b"paxm-holdback\0" + key.encode("utf-8", "replace")).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64 < ratio


def compaction_kind(event: HookEvent) -> str:
    """``"after"`` for a session start after a compaction, ``"before"`` for a pre-compaction hook,
    ``"clear"`` for a cleared conversation, else ``""``."""
    source = (event.metadata.get("source") or "").strip().lower()
    if event.event == EVENT_SESSION_START:
        if source == "compact":
            return "after"
        if source == "clear":
            return "clear"
        return ""
    if event.native_event.strip().lower() in ("precompact", "precompress"):
        return "before"
    return ""


def included_hits(hits: Sequence[Hit], block: str) -> list[Hit]:
    """The hits of ``hits`` whose whole text is in the rendered ``block`` (an excerpt is not)."""
    from paxm_core.envelope import escape_block_content, guard_memory_text

    out = []
    for hit in hits:
        text = str(getattr(hit, "text", "") or "").strip()
        if text and escape_block_content(guard_memory_text(text)) in block:
            out.append(hit)
    return out


def matched_terms(query: str, text: str, limit: int = 8) -> list[str]:
    """The query's words (3+ characters, lower case, in query order) that the memory's text holds."""
    words = {w.lower() for w in _WORD.findall(text)}
    out: list[str] = []
    for word in _WORD.findall(query):
        lowered = word.lower()
        if lowered in words and lowered not in out:
            out.append(lowered)
            if len(out) >= limit:
                break
    return out


def _outdated(hit: object) -> bool:
    """Whether the hit's metadata marks it stale or superseded (not offered again after a compaction)."""
    meta = getattr(hit, "metadata", None) or {}
    if not isinstance(meta, dict):
        return False
    return str(meta.get("freshness") or "").strip().lower() == "stale" or bool(
        str(meta.get("superseded_by") or "").strip()
    )


def _receipt(hit: object, rank: int, position: int, query: str) -> JSONObject:
    """Why one memory was injected: its rank, scores, matched terms and freshness."""
    meta = getattr(hit, "metadata", None) or {}
    out: JSONObject = {
        "rank": rank,
        "position": position,
        "provider": str(getattr(hit, "provider", "") or ""),
        "id": str(getattr(hit, "id", "") or ""),
        "relevance": round(float(getattr(hit, "relevance", 0.0) or 0.0), 4),
        "score": round(float(getattr(hit, "score", 0.0) or 0.0), 4),
        "matched_terms": matched_terms(query, str(getattr(hit, "text", "") or "")),
    }
    raw = getattr(hit, "raw_score", None)
    if isinstance(raw, int | float):
        out["raw_score"] = round(float(raw), 4)
        kind = str(getattr(hit, "raw_score_kind", "") or "")
        if kind:
            out["raw_score_kind"] = kind
    for name in FRESHNESS_KEYS:
        value = meta.get(name) if isinstance(meta, dict) else None
        if isinstance(value, str) and value.strip():
            out[name] = value.strip()
    return out


class SessionEconomy:
    """Dedupe, compaction re-offer, holdback and injection receipts for one passive runtime.

    :param state: the session state file the ledgers live in.
    :param settings: returns the current ``passive`` config section (a reload counts).
    :param record: telemetry sink for receipts (``Telemetry.record``), optional.
    """

    def __init__(
        self,
        state: SessionState,
        settings: Callable[[], PassiveConfig],
        *,
        record: Callable[[dict[str, object]], None] | None = None,
    ) -> None:
        self.state = state
        self.settings = settings
        self.record = record
        self._lock = threading.Lock()
        #: event id -> (session key, memory keys, query): injected, not yet known delivered
        self._pending: OrderedDict[str, tuple[str, list[str], str]] = OrderedDict()

    # -- holdback -------------------------------------------------------------------------------

    def held_back(self, event: HookEvent, now: datetime) -> bool:
        """Whether ``event``'s session gets no passive memory (chosen once, at its first sight)."""
        key = session_key(event)
        if not key:
            return False
        ledger = self.state.ledger(key)
        if isinstance(ledger.get("holdback"), bool):
            return bool(ledger["holdback"])
        ratio = self.settings().holdback
        if ratio <= 0:
            return False
        arm = holdback_arm(key, ratio)  # the same arm again next time, should this write be lost
        try:
            self.state.update_ledger(key, lambda ledger: ledger.setdefault("holdback", arm), now)
        except OSError:
            pass
        arm_name = "holdback" if arm else "memory"
        emit(self.record, "session_arm", event, session=session_hash(key), arm=arm_name, holdback_ratio=ratio)
        return arm

    # -- dedupe ---------------------------------------------------------------------------------

    def unseen(self, event: HookEvent, hits: Sequence[Hit]) -> tuple[list[Hit], int]:
        """``hits`` without the memories this session was already given; and how many went."""
        if not self.settings().dedupe_enabled:
            return list(hits), 0
        key = session_key(event)
        if not key:
            return list(hits), 0
        seen = set(ledger_strings(self.state.ledger(key), "ids"))
        kept = [hit for hit in hits if memory_key(hit) not in seen]
        return kept, len(hits) - len(kept)

    def offered(
        self,
        event: HookEvent,
        recalled: Sequence[Hit],
        block: str,
        query: str,
        *,
        withheld: int = 0,
        reason: str = "prompt",
        ranked: Sequence[Hit] | None = None,
    ) -> list[Hit]:
        """Note what ``block`` injects (pending until :meth:`delivered`) and record its receipts.

        :param recalled: the hits offered to the block, in order.
        :param ranked: the recall's hits before any filter (ranks are positions in it, from 1);
            ``recalled`` when not given.
        :returns: the hits injected whole.
        """
        injected = included_hits(recalled, block)
        key = session_key(event)
        if key and injected and event.event_id:
            with self._lock:
                self._pending[event.event_id] = (key, [memory_key(h) for h in injected], query)
                while len(self._pending) > MAX_PENDING:
                    self._pending.popitem(last=False)
        if injected or withheld:
            ranks = {id(hit): index for index, hit in enumerate(ranked or recalled, start=1)}
            emit(
                self.record,
                "injection",
                event,
                session=session_hash(key) if key else "",
                reason=reason,
                query=query,
                withheld_count=withheld,
                memories=[
                    _receipt(hit, ranks.get(id(hit), 0), position, query)
                    for position, hit in enumerate(injected, start=1)
                ],
            )
        return injected

    def delivered(self, event_id: str, now: datetime) -> None:
        """The answer to ``event_id`` reached the hook client: its memories enter the ledger."""
        with self._lock:
            pending = self._pending.pop(event_id, None)
        if pending is None:
            return
        key, ids, query = pending
        query = query[-MAX_QUERY_CHARS:]

        def add(ledger: JSONObject) -> None:
            known = [i for i in ledger_strings(ledger, "ids") if i not in ids]
            ledger["ids"] = (known + ids)[-MAX_IDS:]
            queries = [q for q in ledger_strings(ledger, "queries") if q != query]
            ledger["queries"] = (queries + [query])[-MAX_QUERIES:] if query else queries[-MAX_QUERIES:]

        try:
            self.state.update_ledger(key, add, now)
        except OSError:
            pass  # not recorded: at worst injected once more

    def forget(self, event_id: str) -> None:
        """The answer to ``event_id`` did not reach the client: nothing enters the ledger."""
        with self._lock:
            self._pending.pop(event_id, None)

    # -- signals for paxm impact ----------------------------------------------------------------

    def observe(self, event: HookEvent, result: HookResult, now: datetime) -> None:
        """Report the session signals of one handled event (see :mod:`paxm_core.passive.signals`)."""
        if self.record is None:
            return
        from paxm_core.passive.signals import session_signal

        signal = session_signal(self.state, event, result, now)
        if signal is not None:
            emit(self.record, "session_signal", event, **signal)

    # -- compaction -----------------------------------------------------------------------------

    def reset(self, event: HookEvent, now: datetime) -> JSONObject:
        """Empty the session's ledger now (durably); returns what it held."""
        key = session_key(event)
        if not key:
            return {}
        before = self.state.ledger(key)
        if before.get("ids"):
            try:
                self.state.update_ledger(key, lambda ledger: ledger.update(ids=[]), now, durable=True)
            except OSError:
                pass  # the daemon's in-memory ledger is empty already; its next write retries
        return before

    def reoffer(
        self,
        event: HookEvent,
        now: datetime,
        find: Callable[[str, float], Sequence[Hit]],
        render: Callable[[list[Hit]], str],
        budget: float,
    ) -> str:
        """After a compaction: the block that offers the session's still-relevant memories again.

        :param find: ``(query, seconds) -> hits``, the passive recall under a budget.
        :param render: hits -> the passive block (within the context cap).
        :param budget: seconds for every ``find`` together.
        """
        before = self.reset(event, now)
        ids = ledger_strings(before, "ids")
        if not ids or not self.settings().reoffer_enabled or self.held_back(event, now):
            return ""
        wanted = set(ids)
        found: dict[str, Hit] = {}
        queries = ledger_strings(before, "queries")
        deadline = time.monotonic() + budget
        used = ""  # the most recent query that found one: the receipt's query
        for query in reversed(queries):  # the most recent first
            left = deadline - time.monotonic()
            if left <= 0 or len(found) == len(wanted):
                break
            for hit in find(query, left):
                mkey = memory_key(hit)
                if mkey in wanted and mkey not in found and not _outdated(hit):
                    found[mkey] = hit
                    used = used or query
        order = {mkey: index for index, mkey in enumerate(ids)}
        hits = sorted(found.values(), key=lambda hit: order[memory_key(hit)])
        block = render(hits) if hits else ""
        if block:
            self.offered(event, hits, block, used, reason="compaction")
        return block
