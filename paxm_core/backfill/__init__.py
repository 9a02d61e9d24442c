"""``paxm backfill``: past agent sessions become memory through the capture queue.

See ``docs/backfill.md``.  :mod:`~paxm_core.backfill.sources` finds the integrations that can
read their harness's stored transcripts (``SupportsTranscripts``), :mod:`.checkpoint` keeps
what is done (resumable), :mod:`.runner` renders past turns exactly as live hooks would and
delivers them in batches, :mod:`.rate` holds remote providers to a rate.
"""

from __future__ import annotations

__all__: list[str] = []
