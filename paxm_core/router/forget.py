"""Router-level forget: delete ids on several providers at once, each in its lane and budget.

Every provider answers for itself: the ids it deleted, the ids it did not have, the ids it
accepted without being able to say whether they existed (``SupportsDelete.delete`` returned
``None``), and the ids that failed.  A provider without the ``delete`` capability is reported
``unsupported`` and never called.  One provider timing out or failing never stops the others.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import field

from paxm_core.api.deadline import Deadline
from paxm_core.api.errors import DeadlineExceeded
from paxm_core.api.json import JSONObject
from paxm_core.api.types import MemoryRef
from paxm_core.api.values import value_dataclass
from paxm_core.router.bulkhead import Lane
from paxm_core.router.fanout import Outcome, error_text, fan_out
from paxm_core.router.policy import FORGET_TIMEOUT, Route

__all__ = ["FORGET_TIMEOUT", "ForgetResult", "ProviderForget", "forget"]


@value_dataclass
class ProviderForget:
    """What one provider did with the ids it was asked to forget.

    ``status`` is ``ok`` (every id answered), ``partial`` (some ids failed), ``failed`` (none
    succeeded), or ``unsupported`` (the provider cannot delete; nothing was asked).
    """

    provider: str
    status: str = "ok"
    deleted: list[str] = field(default_factory=list)
    not_found: list[str] = field(default_factory=list)
    accepted: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    unsupported: list[str] = field(default_factory=list)
    duration_ms: int = 0

    def to_json(self) -> JSONObject:
        return {
            "provider": self.provider,
            "status": self.status,
            "deleted": list(self.deleted),
            "not_found": list(self.not_found),
            "accepted": list(self.accepted),
            "failed": [{"id": key, "error": value} for key, value in self.failed.items()],
            "unsupported": list(self.unsupported),
            "duration_ms": self.duration_ms,
        }


@value_dataclass
class ForgetResult:
    """Per-provider outcomes of one forget, sorted by provider name."""

    providers: list[ProviderForget] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        """Whether any delete failed (``paxm forget`` then exits non-zero)."""
        return any(p.failed for p in self.providers)

    def gone(self, memory_id: str) -> bool:
        """Whether some provider deleted or accepted ``memory_id``."""
        return any(memory_id in p.deleted or memory_id in p.accepted for p in self.providers)

    def to_json(self) -> JSONObject:
        return {"providers": [p.to_json() for p in self.providers], "failed": self.failed}


class _Progress:
    """The answers one provider gave so far; read after a timeout to keep what was done."""

    def __init__(self, name: str) -> None:
        self.lock = threading.Lock()
        self.result = ProviderForget(name)

    def record(self, memory_id: str, answer: object) -> None:
        with self.lock:
            if answer is False:
                self.result.not_found.append(memory_id)
            elif answer is True:
                self.result.deleted.append(memory_id)
            else:
                self.result.accepted.append(memory_id)

    def fail(self, memory_id: str, error: str) -> None:
        with self.lock:
            self.result.failed[memory_id] = error


def forget(
    lane: Callable[[str, str], Lane],
    delete: Callable[[str, MemoryRef, Deadline], object],
    supports: Callable[[str], bool],
    targets: Mapping[str, Sequence[str]],
    *,
    timeout: float | None = FORGET_TIMEOUT,
    deadline: Deadline | None = None,
) -> ForgetResult:
    """Delete ``targets`` (provider -> ids) concurrently; see :meth:`Router.forget`.

    :param lane: the router's bulkhead lanes (op ``delete``).
    :param delete: ``(provider, ref, deadline) -> True | False | None``.
    :param supports: whether a provider has the delete capability.
    :param timeout: each provider's budget for all its ids (``None``: only ``deadline``).
    """
    result = ForgetResult()
    progress: dict[str, _Progress] = {}
    routes: list[Route] = []
    for name in sorted(targets):
        ids = _ids(targets[name])
        if not ids:
            continue
        if not supports(name):
            result.providers.append(ProviderForget(name, status="unsupported", unsupported=ids))
            continue
        progress[name] = _Progress(name)
        routes.append(Route(name, required=False, timeout=timeout))

    def work(route: Route, budget: Deadline) -> None:
        _delete_ids(delete, route.name, _ids(targets[route.name]), progress[route.name], budget)

    outcomes = fan_out(lane, "delete", routes, deadline or Deadline.none(), work) if routes else []
    for outcome in outcomes:
        result.providers.append(_provider_result(progress[outcome.route.name], outcome, targets[outcome.route.name]))
    result.providers.sort(key=lambda p: p.provider)
    return result


def _ids(ids: Sequence[str]) -> list[str]:
    """The non-blank ids, each once, in order."""
    return list(dict.fromkeys(i for i in ids if i.strip()))


def _delete_ids(
    delete: Callable[[str, MemoryRef, Deadline], object],
    provider: str,
    ids: list[str],
    state: _Progress,
    budget: Deadline,
) -> None:
    """Delete ``ids`` on one provider in turn, recording each answer; a timeout stops the rest."""
    for memory_id in ids:
        if budget.expired():
            raise DeadlineExceeded("delete deadline exceeded")
        try:
            answer = delete(provider, MemoryRef(provider, memory_id), budget)
        except DeadlineExceeded:
            raise
        except Exception as exc:  # one id failing does not stop the others
            state.fail(memory_id, error_text(exc))
            continue
        state.record(memory_id, answer)


def _provider_result(state: _Progress, outcome: Outcome[None], ids: Sequence[str]) -> ProviderForget:
    """One provider's :class:`ProviderForget`: what it answered, and the rest failed with its error."""
    with state.lock:  # a timed-out provider may still be answering: its result is copied under the lock
        entry = copy.deepcopy(state.result)
    entry.duration_ms = outcome.duration_ms
    if outcome.error is not None:
        # whatever was not answered before the error (a timeout, a dead connection)
        done = {*entry.deleted, *entry.not_found, *entry.accepted, *entry.failed}
        reason = error_text(outcome.error)
        for memory_id in _ids(ids):
            if memory_id not in done:
                entry.failed[memory_id] = reason
    if entry.failed:
        entry.status = "partial" if entry.deleted or entry.not_found or entry.accepted else "failed"
    return entry
