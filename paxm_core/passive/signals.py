"""Session signals for ``paxm impact``: turns, corrections, repeated questions and tool calls of a
session, counted from its hook events with no text kept (docs/impact.md)."""

from __future__ import annotations

import hashlib
import re
from datetime import datetime

from paxm_core.api.events import EVENT_TOOL_FAILURE, EVENT_TOOL_USE, EVENT_USER_INPUT, HookEvent, HookResult
from paxm_core.api.json import JSONObject
from paxm_core.passive.session_state import SessionState, ledger_strings, session_hash, session_key

__all__ = ["is_correction", "prompt_fingerprint", "session_signal"]

_WORD = re.compile(r"\w{3,}", re.UNICODE)
#: prompt fingerprints kept per session to notice a question asked again
MAX_PROMPTS = 64
#: a prompt that opens like this corrects the agent ("no, we switched to X", "that's wrong")
_CORRECTION = re.compile(
    r"^\W*(?:no\b|nope\b|wrong\b|incorrect\b|not (?:that|what|quite)\b|that(?:'s| is) (?:not|wrong|incorrect)\b"
    r"|actually\b|undo\b|revert\b|stop\b|don'?t\b|do not\b|you (?:forgot|missed|broke|misunderstood)\b"
    r"|i (?:said|meant|told you)\b|we (?:switched|moved|changed|no longer)\b)",
    re.IGNORECASE,
)


def is_correction(prompt: str) -> bool:
    """Whether a user's prompt opens by correcting the agent (a plain, documented word list)."""
    return bool(_CORRECTION.match(prompt))


def prompt_fingerprint(prompt: str) -> str:
    """The prompt's distinct words (3+ characters, lower case), sorted and hashed: ``""`` if none.

    The same question asked again, in another order or case or with other punctuation, has
    the same fingerprint; only the hash is kept.
    """
    words = sorted({w.lower() for w in _WORD.findall(prompt)})
    if not words:
        return ""
    return hashlib.sha256(" ".join(words).encode("utf-8", "replace")).hexdigest()[:16]


def session_signal(
    state: SessionState, event: HookEvent, result: HookResult, now: datetime
) -> dict[str, object] | None:
    """The fields of one handled event's ``session_signal`` record, or ``None`` when it says nothing."""
    if result.ignored or event.event not in (EVENT_USER_INPUT, EVENT_TOOL_USE, EVENT_TOOL_FAILURE):
        return None
    key = session_key(event)
    if not key:
        return None
    signal: dict[str, object] = {"session": session_hash(key)}
    if event.event == EVENT_USER_INPUT:
        from paxm_core.envelope import strip_recall_context

        prompt = strip_recall_context(event.prompt)
        fingerprint = prompt_fingerprint(prompt)
        repeated = False

        def note(ledger: JSONObject) -> None:
            nonlocal repeated
            prints = ledger_strings(ledger, "prompts")
            repeated = bool(fingerprint) and fingerprint in prints
            if fingerprint and not repeated:
                ledger["prompts"] = (prints + [fingerprint])[-MAX_PROMPTS:]

        ledger = state.update_ledger(key, note, now)
        signal.update(
            turns=1,
            corrections=int(is_correction(prompt)),
            repeats=int(repeated),
            injected=len(result.hits) if result.recall_context else 0,
        )
    else:
        ledger = state.ledger(key)
        signal.update(tool_calls=1, tool_failures=int(event.event == EVENT_TOOL_FAILURE))
    arm = ledger.get("holdback")
    if isinstance(arm, bool):
        signal["arm"] = "holdback" if arm else "memory"
    return signal
