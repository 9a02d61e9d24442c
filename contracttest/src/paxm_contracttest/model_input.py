"""Checks on what a real harness sent its model, for the end-to-end tests of integrations.

A passive hook's output reaches the model inside the harness's request. These helpers answer
the two questions every harness's end-to-end test asks of that text: did a recall envelope
carry this marker, and did anything of paxm's own plumbing (a traceback, a hook error, a raw
daemon frame) leak in with it? A harness that escapes the text it forwards (Gemini CLI sends
HTML entities) passes its spelling of the tags.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["HOOK_NOISE", "PASSIVE_CLOSE", "PASSIVE_OPEN", "assert_no_hook_noise", "recalled"]

#: the opening tag of the envelope passive recall injects
PASSIVE_OPEN = '<paxm-recall version="1" mode="passive">'
#: the closing tag of every recall envelope
PASSIVE_CLOSE = "</paxm-recall>"
#: text that must never reach a model: a fail-open hook is silent
HOOK_NOISE = ("Traceback", "paxm hook:", "PAXM-HOOK", "timed out")


def assert_no_hook_noise(
    text: str,
    *,
    extra: Iterable[str] = (),
    open_tag: str = "<paxm-recall",
    close_tag: str = PASSIVE_CLOSE,
) -> None:
    """Assert ``text`` holds none of :data:`HOOK_NOISE` (nor ``extra``) and only whole envelopes.

    :param extra: more strings this harness's own error output would contain.
    :param open_tag: the start of an envelope's opening tag as the harness forwards it.
    :param close_tag: the closing tag as the harness forwards it.
    """
    for bad in (*HOOK_NOISE, *extra):
        assert bad not in text, f"{bad!r} reached the model:\n{text[:3000]}"
    assert text.count(open_tag) == text.count(close_tag), text[:3000]


def recalled(text: str, marker: str, *, open_tag: str = PASSIVE_OPEN, close_tag: str = PASSIVE_CLOSE) -> bool:
    """True when ``marker`` stands inside the first passive recall envelope of ``text``.

    An envelope that is never closed counts as no recall (:func:`assert_no_hook_noise` says why).
    """
    start = text.find(open_tag)
    end = text.find(close_tag, start) if start >= 0 else -1
    return end >= 0 and marker in text[start:end]
