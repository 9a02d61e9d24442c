"""Durable capture queue: hook events -> episodes -> per-provider deliveries.

See ``docs/capture-queue.md``.  ``_inbox`` is the stdlib-only part the hook client loads by
path; everything else is imported from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from paxm_core.capture.model import (
    AppendResult,
    CaptureEvent,
    DeadDelivery,
    DeliveryClaim,
    DeliveryOutcome,
    DrainReport,
    FlushReport,
    InboxEntry,
    QueueStatus,
    session_key_for,
)
from paxm_core.capture.queue import CaptureQueue, Routes
from paxm_core.capture.worker import DeliveryRouter, DeliveryWorker, provider_concurrency

if TYPE_CHECKING:
    from paxm_core.config.model import Config, WriteProfileConfig

__all__ = [
    "AppendResult",
    "CaptureEvent",
    "CaptureQueue",
    "DeadDelivery",
    "DeliveryClaim",
    "DeliveryOutcome",
    "DeliveryRouter",
    "DeliveryWorker",
    "DrainReport",
    "FlushReport",
    "InboxEntry",
    "QueueStatus",
    "Routes",
    "default_queue_path",
    "open_queue",
    "provider_concurrency",
    "routes_from_write_profiles",
    "session_key_for",
]


def routes_from_write_profiles(write_profiles: Mapping[str, WriteProfileConfig]) -> Routes:
    """``Config.write_profiles`` -> the queue's profile-to-providers mapping."""
    return {name: [r.name for r in profile.providers if r.name] for name, profile in write_profiles.items()}


def default_queue_path(config: Config) -> str:
    """``capture_queue.path`` of a ``Config``, else ``<configdir>/hooks/capture.sqlite``."""
    return str(config.capture_queue_path)


def open_queue(config: Config, *, recover: bool, routes: bool = False) -> CaptureQueue:
    """The capture queue of ``config``; ``routes`` and ``recover`` for delivering from it."""
    section = config.capture_queue
    return CaptureQueue(
        config.capture_queue_path,
        routes=routes_from_write_profiles(config.write_profiles) if routes else None,
        retry_min=section.retry_min or 0,
        max_attempts=section.max_attempts or 0,
        recover=recover,
    )
