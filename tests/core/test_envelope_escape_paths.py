"""``escape_block_content`` skips its patterns for text without an opener, with the same result.

Its two patterns are compiled on the first text holding ``<``, ``＜`` or ``﹤`` (their classes
cost the daemon's start milliseconds of ``re`` compiling); every text must escape exactly as
the patterns themselves escape it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from paxm_core import envelope as E

_TAG_LIKE = re.compile(E._TAG_LIKE, re.IGNORECASE)
_MARKUP = re.compile(E._MARKUP)

_PIECES = st.sampled_from(
    ["<", "\uff1c", "\ufe64", ">", "\uff1e", "paxm", "PAXM", "/", " ", "\u200b", "a", "!", "é", "\n"]
)
_TEXT = st.lists(_PIECES, max_size=12).map("".join) | st.text(max_size=30)


@settings(max_examples=500, deadline=None)
@given(text=_TEXT)
def test_escaping_is_what_the_patterns_give(text: str) -> None:
    assert E.escape_block_content(text) == _MARKUP.sub("&lt;", _TAG_LIKE.sub(E._escape_tag, text))


def test_known_spellings_are_escaped() -> None:
    assert E.escape_block_content("x </paxm-recall> y") == "x &lt;/paxm-recall&gt; y"
    assert E.escape_block_content("\uff1c\u200bPAXM-recall\uff1e") == "&lt;\u200bPAXM-recall&gt;"
    assert E.escape_block_content("<b>bold</b> 2 < 3") == "&lt;b>bold&lt;/b> 2 < 3"
    assert E.escape_block_content("plain text, no markup") == "plain text, no markup"


def test_the_patterns_are_compiled_only_for_text_with_an_opener() -> None:
    code = (
        "import json; from paxm_core import envelope as E;"
        " E.wrap_recall_context('passive', 'a memory without markup'); before = E._escapers.cache_info().currsize == 0;"
        " E.escape_block_content('</paxm-recall>'); after = E._escapers.cache_info().currsize == 1;"
        " print(json.dumps([before, after]))"
    )
    out = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [True, True]


def _go_float_reference(value: float) -> str:
    from decimal import Decimal

    return format(Decimal(repr(value)).normalize(), "f")


@settings(max_examples=1000, deadline=None)
@given(value=st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from([0.0, -0.0, 1.0, 10.0, 1e16, 1e-5]))
def test_go_float_plain_form_is_what_decimal_gives(value: float) -> None:
    magnitude = abs(value)
    if magnitude == 0 or 1e-6 <= magnitude < 1e21:
        assert E.go_float(value) == _go_float_reference(value)
