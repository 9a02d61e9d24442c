"""Keep paxm's envelope rule intact when Gemini CLI HTML-escapes the injected context.

Gemini CLI replaces ``<`` and ``>`` in a hook's ``additionalContext`` with ``&lt;`` / ``&gt;``
and leaves ``&`` alone, so the real ``<paxm-recall ...>`` tags reach the model as
``&lt;paxm-recall ...&gt;``.  paxm's envelope already escapes a forged tag inside recalled
text to ``&lt;/paxm-recall&gt;``, which is then byte-identical to the real tag as the model
sees it.  Escaping the ``&`` of every already-escaped tag once more keeps the forgery
distinguishable (``&amp;lt;/paxm-recall&gt;``) whether or not a release escapes ``&`` too.
"""

from __future__ import annotations

import re

__all__ = ["guard_escaped_envelope"]

# ``&lt;``, ``&#60;``/``&#060;``, ``&#x3c;`` before a paxm-recall tag name (any case)
_ESCAPED_TAG = re.compile(r"&(lt|#0*60|#x0*3c);(/?paxm-recall)", re.IGNORECASE)


def guard_escaped_envelope(context: str) -> str:
    """``context`` with every already-escaped ``paxm-recall`` tag escaped once more (real tags untouched)."""
    return _ESCAPED_TAG.sub(lambda m: f"&amp;{m.group(1)};{m.group(2)}", context)
