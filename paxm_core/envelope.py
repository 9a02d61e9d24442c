"""The ``<paxm-recall>`` envelope, per-hit Markdown and upstream-compatible JSON output.

Recalled text is data, not instructions: it is wrapped in an envelope whose tags cannot be
forged from inside.  The rule is generic for every ``paxm-*`` block (``paxm-recall``,
``paxm-session-identity``, ``paxm-local-time`` and any later one): inside a block, every ``<``
that a parser or a model could read as the start of a ``paxm`` tag (any case, whitespace,
control or zero-width characters or slashes between ``<`` and the name, attributes,
self-closing) is escaped to ``&lt;`` (and a ``>`` closing that tag to ``&gt;``).  Every other
markup opener (``<`` directly followed by a letter, ``/``, ``!`` or ``?``) is escaped to
``&lt;`` as well, because an unterminated tag, comment or processing instruction would make a
parser swallow the real closing tag.  A bare ``<`` (``a < b``) is kept.  So the only markup in
a block is the block's own pair of tags.

Inside the envelope each memory starts with a ``### Memory N (provider)`` heading.  A memory's
own text must not be able to start another one, so :func:`guard_memory_text` gives every line
of memory text that reads as a Markdown heading (a ``#`` first, after any blanks, invisible
characters or backslashes) one more leading backslash: ``\\### Memory 2`` is text, never a
header, and :func:`unguard_memory_text` takes exactly that backslash off again.

Echo suppression (:func:`strip_paxm_blocks`) removes every such block again, in whatever
encoding a harness hands it back, before a hook writes a turn and before a prompt becomes a
recall query, so nothing paxm injected gets remembered or searched for as the user's words.
"""

from __future__ import annotations

import functools
import json
import math
import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from paxm_core.api.json import JSONObject, JSONValue
from paxm_core.api.types import MemoryHit, Provenance
from paxm_core.workspace import memory_project

if TYPE_CHECKING:
    from paxm_core.router.policy import RecallResult

__all__ = [
    "NO_MEMORIES",
    "NO_PROJECT",
    "age",
    "dumps_json",
    "escape_block_content",
    "escape_block_json",
    "guard_memory_text",
    "header_field",
    "hit_ref",
    "unguard_memory_text",
    "wrap_block",
    "go_float",
    "recall_json",
    "render_hit_markdown",
    "render_recall_compact",
    "render_recall_markdown",
    "render_recall_text",
    "strip_paxm_blocks",
    "strip_recall_context",
    "wrap_recall_context",
]

NO_MEMORIES = "No memories found."


# ``<`` (or a full-width / small form of it) then anything a reader may skip (whitespace
# incl. newlines/tabs, C0/C1 controls, zero-width and BOM characters, slashes) then
# ``paxm`` in any case: the start of something that reads as a paxm tag, whatever follows
# the name.  The tag's own ``>`` is escaped too when it comes before the next ``<``.
_SKIPPABLE = r"[\s/\x00-\x1f\x7f-\x9f\u00ad\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]"
_TAG_LIKE = r"[<\uff1c\ufe64](?P<body>" + _SKIPPABLE + r"*paxm[^<>\uff1c\ufe64\uff1e\ufe65]*)(?P<end>[>\uff1e\ufe65]?)"


# Any other markup opener is escaped too: an unterminated start tag (``<a title="x``), a
# comment or CDATA (``<!``) or a processing instruction (``<?``) makes an HTML/XML parser
# swallow text up to a later ``>`` or ``-->``, the block's own closing tag included.
_MARKUP = r"[<\uff1c\ufe64](?=[A-Za-z/!?])"


# The patterns are compiled on first use: their classes reach past Latin-1, which makes
# ``re``'s compiler build 64 K-entry maps (milliseconds of every start that never needs them).
@functools.cache
def _escapers() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """(tag-like, markup)."""
    return re.compile(_TAG_LIKE, re.IGNORECASE), re.compile(_MARKUP)


def _escape_tag(match: re.Match[str]) -> str:
    return "&lt;" + match.group("body") + ("&gt;" if match.group("end") else "")


# A line start: the start of the text or after any character a reader may break a line at.
_LINE_START = r"(?:^|(?<=[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]))"
# Blank or invisible characters that may come before a heading's ``#`` on one line.
_LINE_SKIPPABLE = (
    r"[\t \x00-\x08\x0e-\x1b\x1f\x7f-\x84\x86-\xa0"
    r"\u00ad\u1680\u180e\u2000-\u200f\u202a-\u202f\u205f-\u206f\u3000\ufeff]"
)
_HEADING = r"(?=\\*" + _LINE_SKIPPABLE + r"*[#\uff03\ufe5f])"


@functools.cache
def _heading_escapers() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """(guard, unguard)."""
    return re.compile(_LINE_START + _HEADING), re.compile(_LINE_START + r"\\" + _HEADING)


def guard_memory_text(text: str) -> str:
    """``text`` with one more leading backslash on every line that reads as a Markdown heading.

    So no line of a memory can pass for a ``### Memory N`` header of paxm's output (or any
    heading); :func:`unguard_memory_text` reverses it exactly.
    """
    if "#" not in text and "\uff03" not in text and "\ufe5f" not in text:
        return text
    return _heading_escapers()[0].sub("\\\\", text)


def header_field(value: str) -> str:
    """``value`` on one line (every line break a space): a header field (provider, source, user,
    agent, scope) can never start a line of its own in rendered output."""
    return re.sub(r"[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]", " ", value)


def unguard_memory_text(text: str) -> str:
    """The memory text :func:`guard_memory_text` was given: one leading backslash off each heading line."""
    if "\\" not in text:
        return text
    return _heading_escapers()[1].sub("", text)


def escape_block_content(content: str) -> str:
    """Escape every spelling of a ``paxm`` tag in ``content`` so it cannot open or close a block.

    Text that does not look like a paxm tag is left as is.
    """
    if "<" not in content and "\uff1c" not in content and "\ufe64" not in content:
        return content  # both patterns start with one of these: neither can match
    tag_like, markup = _escapers()
    return markup.sub("&lt;", tag_like.sub(_escape_tag, content))


def escape_block_json(payload: str) -> str:
    """Make a JSON text inert inside a block: ``<``, ``>`` and ``&`` become ``\\u003c``… (same value)."""
    out = payload.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return out.replace("\uff1c", "\\uff1c").replace("\ufe64", "\\ufe64")


def wrap_block(tag: str, attributes: str, content: str) -> str:
    """``<tag attributes>\\ncontent\\n</tag>`` with ``content`` escaped by :func:`escape_block_content`."""
    head = f"<{tag} {attributes}>" if attributes else f"<{tag}>"
    return f"{head}\n{escape_block_content(content)}\n</{tag}>"


def wrap_recall_context(mode: str, content: str) -> str:
    """Wrap ``content`` as ``<paxm-recall version="1" mode="…">``; empty content gives ``""``.

    ``mode`` is ``active`` or ``passive`` (anything else becomes ``unknown``).
    """
    content = content.strip()
    if not content:
        return ""
    mode = mode.strip().lower()
    if mode not in ("active", "passive"):
        mode = "unknown"
    return wrap_block("paxm-recall", f'version="1" mode="{mode}"', content)


# -- echo stripping: paxm's own blocks, in whatever encoding a harness gives them back ----------
#
# A harness may hand paxm's injected blocks back inside the next prompt or transcript: Gemini CLI
# HTML-escapes ``<`` and ``>`` and puts them in ``<hook_context>``, JSON carries ``\u003c`` and
# ``\"``, a transcript may quote them with ``> `` or fence them, and any layer may change
# whitespace.  Each token of a tag is therefore matched in every such spelling.  A block is an
# opening tag ``paxm-NAME`` whose first attribute is ``version="<digits>"`` (paxm writes no other
# kind, and a user who writes ``<paxm-recall>`` in prose is not quoting one) up to its closing
# tag: the same name spelled with the same ``<`` and ``>`` tokens (tags nest like brackets).  Recalled text
# inside a block cannot hold such a tag: the envelope escapes it one level deeper (and for a
# harness that escapes only ``<``/``>``, :func:`paxm_core.integration.guard_escaped_envelope`
# escapes the ``&`` as well), so the deeper spelling never pairs with the real tags.

# Every quantifier below is possessive (``*+``, ``++``) and blocks are paired in Python, not by
# one backtracking pattern: the rule runs on every prompt and turn, and a pattern that can
# backtrack over a long run of blanks costs minutes on a crafted 50 KB text.
_BS = r"(?<!\\)\\++"  # a whole run of backslashes (JSON escaping, once or more)
_AMP = r"(?:&|" + _BS + r"u0026)(?:amp;)*+"  # ``&``, ``&amp;`` ..., or JSON's ``\u0026``
_LT = r"(?:<|" + _BS + r"u003c|" + _AMP + r"(?:lt|#0*+60|#x0*+3c);)"
_GT = r"(?:>|" + _BS + r"u003e|" + _AMP + r"(?:gt|#0*+62|#x0*+3e);)"
# a quote JSON-escaped and then HTML-escaped is ``\&quot;``: a backslash run may precede any spelling
_QT = r"(?:" + _BS + r")?+(?:[\"']|u0022|(?:&|u0026)(?:amp;)*+(?:quot|apos|#0*+3[49]|#x0*+2[27]);)"
_SL = r"(?:/|" + _BS + r"/|" + _BS + r"u002f|" + _AMP + r"(?:sol|#0*+47|#x0*+2f);)"
_WS = r"(?:\s|" + _BS + r"[nrt])"
_NAME = r"paxm(?:-[a-z0-9]++)++"
_ATTR = rf"[a-z][\w:-]*+{_WS}*+={_WS}*+{_QT}[\w.:+-]*+{_QT}"
_OPEN_TAG = (
    rf"(?P<lt>{_LT}){_WS}*+(?P<name>{_NAME}){_WS}++version{_WS}*+={_WS}*+{_QT}\d++{_QT}"
    rf"(?:{_WS}++{_ATTR})*+{_WS}*+(?P<gt>{_GT})"
)
_CLOSE_TAG = rf"(?P<lt>{_LT}){_WS}*+{_SL}{_WS}*+(?P<name>{_NAME}){_WS}*+(?P<gt>{_GT})"
# a quote prefix (``> ``, ``&gt; ``, ``\u003e ``), possibly nested and indented
_QUOTE = r"(?:[ \t]*+" + _GT + r")++[ \t]*+"
_QUOTE_LINE_START = r"(?:^|(?<=[\n\r])|(?<=\\n)|(?<=\\r))"
# a harness's wrapper around injected context, and the label some put before it
_WRAP_NAME = r"(?:hook_context|system-reminder|session_context)"
_LABEL = r"(?:[A-Za-z]++ hook (?:additional context|success)[ \t]*+:)"


@functools.cache
def _strippers() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """(opening tag, closing tag, line break with its quote prefix)."""
    return (
        re.compile(_OPEN_TAG, re.IGNORECASE),
        re.compile(_CLOSE_TAG, re.IGNORECASE),
        re.compile(r"\n(?P<q>" + _QUOTE + r")?+", re.IGNORECASE),
    )


def _quoted(region: str) -> bool:
    """True when every line break inside ``region`` is followed by a quote prefix (``> ``).

    Line breaks are ``\\n`` (a lone ``\\r`` inside recalled text is not one a quoting tool
    splits at).  A region on one line (JSON-escaped line breaks are not line breaks of the
    text) counts as quoted too: a quote prefix before it at the start of its line can only be
    the quoting of the block, where a multi-line block shows whether it was quoted.
    """
    return all(match.group("q") for match in _strippers()[2].finditer(region))


def _spellings(token: str) -> list[str]:
    """``token``, and when it starts with backslashes each shorter run: the extra ones may be text."""
    run = len(token) - len(token.lstrip("\\"))
    return [token[i:] for i in range(max(run, 1))]


def _block_spans(text: str) -> list[tuple[int, int]]:
    """Where the complete blocks of ``text`` are: leftmost first, never overlapping.

    A closing tag ends the latest still open opening tag of the same name spelled with the same
    ``<`` and ``>`` (so a user's quoted opening tag before a real block is not taken as its
    start, and tags nest like brackets).
    """
    opening, closing = _strippers()[:2]
    tags = [(m.start(), 0, m) for m in opening.finditer(text)] + [(m.start(), 1, m) for m in closing.finditer(text)]
    tags.sort(key=lambda tag: (tag[0], tag[1]))
    pending: dict[tuple[str, str, str], list[int]] = {}
    keys_of: dict[int, list[tuple[str, str, str]]] = {}
    spans: list[tuple[int, int]] = []
    for start, closes, match in tags:
        name, gt = match.group("name").lower(), match.group("gt").lower()
        if not closes:
            keys_of[start] = [(lt, name, gt) for lt in _spellings(match.group("lt").lower())]
            for key in keys_of[start]:
                pending.setdefault(key, []).append(start)
            continue
        stack = pending.get((match.group("lt").lower(), name, gt))
        if not stack:
            continue
        begin = stack.pop()
        spans.append((begin, match.end()))
        for key in keys_of[begin]:  # the same opening tag under its other spellings
            others = pending[key]
            if begin in others:
                others.remove(begin)
    chosen: list[tuple[int, int]] = []
    for begin, end in sorted(spans):
        if not chosen or begin >= chosen[-1][1]:
            chosen.append((begin, end))
    return chosen


def _cut_blocks(text: str, cut: str, quoted_cut: str) -> str:
    out: list[str] = []
    at = 0
    for begin, end in _block_spans(text):
        out.append(text[at:begin])
        out.append(quoted_cut if _quoted(text[begin:end]) else cut)
        at = end
    out.append(text[at:])
    return "".join(out)


def _cut_wrappers(text: str, cut: str, quoted_cut: str) -> str:
    """Replace each wrapper or fence that holds nothing but cut blocks with a cut of its own."""
    mark = "(?:" + re.escape(cut) + "|" + re.escape(quoted_cut) + ")"
    fill = "(?:" + _WS + "|" + _GT + "|" + _LABEL + ")"
    inner = fill + "*+" + mark + "(?:" + fill + "|" + mark + ")*+"
    close = _LT + _WS + "*+" + _SL + _WS + "*+(?P=w)" + _WS + "*+" + _GT
    wrapper = re.compile(_LT + _WS + "*+(?P<w>" + _WRAP_NAME + ")" + _WS + "*+" + _GT + inner + close, re.IGNORECASE)
    fence = re.compile(r"(?P<f>`{3,}+|~{3,}+)[\w.+-]*+" + inner + r"(?P=f)", re.IGNORECASE)
    # blocks next to each other (paxm joins them with a line break, a harness may escape it)
    # are one cut: the second one's quote prefix goes too
    adjacent = re.compile(
        "(?P<a>" + mark + ")" + _WS + "*+(?:" + re.escape(cut) + "|(?:" + _QUOTE + ")?+" + re.escape(quoted_cut) + ")",
        re.IGNORECASE,
    )
    for _ in range(8):  # wrappers nest a few deep at most
        before = text
        text = adjacent.sub(lambda m: m.group("a"), text)
        for pattern in (wrapper, fence):
            text = pattern.sub(lambda m: quoted_cut if quoted_cut in m.group(0) or _quoted(m.group(0)) else cut, text)
        if text == before:
            break
    return text


def _unused(text: str, base: int) -> str:
    char = chr(base)
    while char in text:
        char = chr(ord(char) + 1)
    return char


def strip_paxm_blocks(text: str) -> str:
    """``text`` without paxm's own blocks, however a harness encoded them, trimmed.

    Every complete ``paxm-*`` block (``paxm-recall``, ``paxm-session-identity``,
    ``paxm-local-time``, any later one) is removed: raw, HTML-escaped (``&lt;``, ``&#60;``,
    ``&amp;lt;``...), JSON-escaped (``\\u003c``, ``\\"``, ``\\n``, escaped again), with changed
    whitespace, quoted line by line with ``> ``, anywhere in the text.  A harness wrapper
    (``<hook_context>``, ``<system-reminder>``, ``<session_context>``, a Markdown fence) left
    holding nothing but removed blocks goes with them, and so do the quote prefix of a quoted
    block's first line and the blanks between two removed blocks.  Nothing else is touched: an
    unclosed block, a tag without a ``version`` attribute or a mere mention of paxm stays, and
    the rest is kept byte for byte (apart from the outer trim).  Idempotent.
    """
    # until nothing is cut: text on both sides of a cut may join into a block of its own, and
    # stripping must be idempotent (a bound keeps a crafted text from costing more)
    for _ in range(16):
        if "paxm" not in text.lower():
            break
        cut = _unused(text, 0xE000)
        quoted_cut = _unused(text + cut, ord(cut) + 1)
        out = _cut_blocks(text, cut, quoted_cut)
        if cut not in out and quoted_cut not in out:
            break
        out = _cut_wrappers(out, cut, quoted_cut)
        if quoted_cut in out:  # the quote prefix before a quoted block's first line goes with it
            quote = _QUOTE_LINE_START + _QUOTE + "(?=" + re.escape(quoted_cut) + ")"
            out = re.sub(quote, "", out, flags=re.IGNORECASE)
        text = out.replace(cut, "").replace(quoted_cut, "")
    return text.strip()


#: echo suppression's one rule under its historic name
strip_recall_context = strip_paxm_blocks


def _provenance(hit: MemoryHit) -> Provenance:
    if not hit.provenance.is_empty():
        return hit.provenance
    from paxm_core.attribution import META_AGENT_ID, META_SCOPE_ID, META_SCOPE_TYPE, META_USER_ID

    meta = hit.metadata
    scope_type = (meta.get(META_SCOPE_TYPE) or "").strip()
    scope_id = (meta.get(META_SCOPE_ID) or "").strip()
    if not scope_type or not scope_id:
        scope_type, scope_id = "unknown", ""
    return Provenance(
        (meta.get(META_USER_ID) or "").strip(), (meta.get(META_AGENT_ID) or "").strip(), scope_type, scope_id
    )


NO_PROJECT = "(none: every project sees it)"


def hit_ref(hit: MemoryHit) -> str:
    """``provider/id``: how ``paxm forget`` names one memory."""
    return f"{hit.provider}/{hit.id}"


def age(when: datetime | None, now: datetime | None = None) -> str:
    """How long ago ``when`` was, in the largest whole unit (``3 days ago``); ``""`` when unknown."""
    if when is None:
        return ""
    from paxm_core.api.timefmt import utcnow

    moment = when if when.tzinfo is not None else when.replace(tzinfo=UTC)
    seconds = int(((now or utcnow()) - moment).total_seconds())
    for unit, size in (("year", 365 * 86400), ("month", 30 * 86400), ("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            count = seconds // size
            return f"{count} {unit}{'s' if count != 1 else ''} ago"
    return "just now"


def render_hit_markdown(
    index: int, hit: MemoryHit, note: str = "", *, verbose: bool = False, now: datetime | None = None
) -> str:
    """One hit as ``paxm recall`` prints it: heading, id (what ``paxm forget`` takes), project,
    scope, user, agent, when, score, source, text.

    :param note: attributes paxm adds to the heading (:meth:`paxm_core.hit_notes.HitNote.attributes`).
    :param verbose: also the relevance and the backend's own raw score (a BM25 value and the
        like, which means nothing next to the calibrated score without knowing the backend).
    """
    prov = _provenance(hit)
    scope = f"{prov.scope_type}:{prov.scope_id}" if prov.scope_type and prov.scope_id else "unknown"
    lines = [f"### Memory {index} ({hit.provider}){header_field(note)}", f"Id: {hit_ref(hit)}"]
    lines.append(f"Project: {memory_project(hit.metadata) or NO_PROJECT}")
    lines.append(f"Scope: {scope}")
    if prov.user_id:
        lines.append(f"User: {prov.user_id}")
    if prov.agent_id:
        lines.append(f"Agent: {prov.agent_id}")
    if hit.created_at is not None:
        lines.append(f"Stored: {hit.created_at.strftime('%Y-%m-%d %H:%M')} UTC ({age(hit.created_at, now)})")
    lines.append(f"Score: {hit.score:.4f}")
    if verbose:
        lines.append(f"Relevance: {hit.relevance:.4f}")
    if verbose and hit.raw_score is not None:
        kind = f" ({hit.raw_score_kind})" if hit.raw_score_kind else ""
        lines.append(f"Raw score: {hit.raw_score:.4f}{kind}")
    if hit.source:
        lines.append(f"Source: {hit.source}")
    lines = [header_field(line) for line in lines]  # provider, source ... are stored data too
    lines.append("")
    lines.append(guard_memory_text(hit.text.strip()))
    lines.append("")
    return "\n".join(lines) + "\n"


def render_recall_markdown(
    hits: list[MemoryHit], notes: list[str] | None = None, *, verbose: bool = False, now: datetime | None = None
) -> str:
    """All hits as Markdown, or ``No memories found.`` (with a trailing newline).

    :param notes: heading attributes per hit (missing ones: none).
    """
    if not hits:
        return NO_MEMORIES + "\n"
    notes = list(notes or []) + [""] * (len(hits) - len(notes or []))
    return "".join(
        render_hit_markdown(i, hit, notes[i - 1], verbose=verbose, now=now) for i, hit in enumerate(hits, start=1)
    )


def render_recall_text(
    result: RecallResult,
    mode: str = "active",
    notes: list[str] | None = None,
    *,
    verbose: bool = False,
    now: datetime | None = None,
) -> str:
    """What ``paxm recall`` prints: the envelope around the Markdown, or ``No memories found.``."""
    if not result.hits:
        return NO_MEMORIES + "\n"
    return wrap_recall_context(mode, render_recall_markdown(result.hits, notes, verbose=verbose, now=now)) + "\n"


def render_recall_compact(result: RecallResult, *, now: datetime | None = None) -> str:
    """What an agent reads from MCP ``paxm_recall``: per memory one header line (id, project,
    age, source) and its text, in the ``<paxm-recall>`` envelope; no scores, fingerprints or
    repeated identities.  ``No memories found.`` (in the envelope) when there are none."""
    parts: list[str] = []
    for index, hit in enumerate(result.hits, start=1):
        fields = [f"id {hit_ref(hit)}", f"project {memory_project(hit.metadata) or 'none (all projects)'}"]
        when = age(hit.created_at, now)
        if when:
            fields.append(f"stored {when}")
        if hit.source:
            fields.append(f"source {hit.source}")
        head = header_field(f"### Memory {index} ({'; '.join(fields)})")
        parts.append(head + "\n" + guard_memory_text(hit.text.strip()) + "\n")
    if result.timed_out or result.provider_errors:
        failed = ", ".join(sorted({e.provider for e in result.provider_errors})) or "a provider"
        parts.append(header_field(f"(partial result: {failed} did not answer)") + "\n")
    return wrap_recall_context("active", "\n".join(parts) if parts else NO_MEMORIES)


def recall_json(result: RecallResult, mode: str = "active", notes: list[JSONObject] | None = None) -> JSONObject:
    """The ``recall --json`` object: the RecallResult plus ``paxm_context``; ``notes`` adds keys to each hit."""
    out = result.to_json()
    hits = out.get("hits")
    if notes and isinstance(hits, list):
        for hit, extra in zip(hits, notes, strict=False):
            if isinstance(hit, dict):
                hit.update(extra)
    out["paxm_context"] = {"version": 1, "kind": "recall", "mode": mode}
    return out


def go_float(value: float) -> str:
    """Format a float like Go's ``encoding/json``: shortest digits, plain notation in [1e-6, 1e21).

    ``1.0`` is ``1``, ``2.375e-06`` is ``0.000002375``, ``1e-07`` is ``1e-7``; non-finite
    values (which Go refuses to encode) become ``null``.
    """
    if not math.isfinite(value):
        return "null"
    text = repr(value)
    magnitude = abs(value)
    if magnitude != 0 and (magnitude < 1e-6 or magnitude >= 1e21):
        mantissa, _, exponent = text.partition("e")
        sign, digits = exponent[0], exponent[1:].lstrip("0") or "0"
        if sign == "+" and len(digits) < 2:
            digits = digits.rjust(2, "0")  # Go keeps at least two digits on positive exponents
        return f"{mantissa}e{sign}{digits}"
    if "e" not in text:
        # repr's plain form is already the shortest digits; Decimal would only drop the ".0"
        return text[:-2] if text.endswith(".0") else text
    from decimal import Decimal  # here: ~2 ms of the daemon's start, for the rare exponent form

    return format(Decimal(text).normalize(), "f")


def _string(text: str) -> str:
    out = json.dumps(text, ensure_ascii=False)
    # Go escapes these so JSON stays inert inside HTML and other envelopes.
    out = out.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return out.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _encode(value: object, depth: int, key: str = "") -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, str):
        return _string(value)
    pad, inner = "  " * depth, "  " * (depth + 1)
    if isinstance(value, dict):
        if not value:
            return "{}"
        # Go sorts map keys; the only maps in our outputs are string metadata maps.
        items = sorted(value.items()) if key == "metadata" else list(value.items())
        body = ",\n".join(f"{inner}{_string(str(k))}: {_encode(v, depth + 1, str(k))}" for k, v in items)
        return "{\n" + body + "\n" + pad + "}"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        body = ",\n".join(f"{inner}{_encode(v, depth + 1, key)}" for v in value)
        return "[\n" + body + "\n" + pad + "]"
    raise TypeError(f"cannot encode {type(value).__name__} as JSON")


def dumps_json(value: JSONValue) -> str:
    """Serialize like Go's ``json.Encoder`` with a two-space indent, so outputs match upstream byte for byte.

    HTML-significant characters are escaped (``\\u003c``…), floats use Go's shortest
    formatting, metadata keys are sorted, and the text ends with a newline.
    """
    return _encode(value, 0) + "\n"
