"""Keep paxm's envelope rule intact when Gemini CLI HTML-escapes the injected context.

Gemini CLI replaces ``<`` and ``>`` in a hook's ``additionalContext`` with ``&lt;`` / ``&gt;``
and leaves ``&`` alone, so the real ``<paxm-recall ...>`` tags reach the model as
``&lt;paxm-recall ...&gt;``.  paxm's envelope already escapes a forged tag inside recalled
text to ``&lt;/paxm-recall&gt;``, which is then byte-identical to the real tag as the model
sees it.  Escaping the ``&`` of every already-escaped tag once more keeps the forgery
distinguishable (``&amp;lt;/paxm-recall&gt;``) whether or not a release escapes ``&`` too.
The guard is :func:`paxm_core.integration.guard_escaped_envelope` (Qwen Code needs it too).
"""

from __future__ import annotations

from paxm_core.integration import guard_escaped_envelope

__all__ = ["guard_escaped_envelope"]
