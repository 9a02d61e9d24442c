"""``paxm eval provider jsonrpc``: upstream's checks, order, names and report shape (``paxm-jsonrpc-provider-v1``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from paxm_core import Deadline, MemoryHit, MemoryItem, MemoryOrigin, MemoryRef, MemoryScope, PaxmError, SearchQuery
from paxm_core.api.json import JSONObject
from paxm_provider_jsonrpc.provider import JsonRpcProvider, PluginCapabilities

__all__ = ["PROTOCOL", "Check", "ConformanceResult", "run_conformance"]

PROTOCOL = "paxm-jsonrpc-provider-v1"


@dataclass
class Check:
    """One conformance check; ``required`` failures fail the run."""

    name: str
    required: bool = True
    passed: bool = False
    skipped: bool = False
    error: str = ""

    def to_json(self) -> JSONObject:
        """Upstream's check row: ``skipped`` and ``error`` only when set."""
        return {k: v for k, v in asdict(self).items() if v or k in ("name", "required", "passed")}


@dataclass
class ConformanceResult:
    """The report: ``passed`` is false when any required check failed."""

    protocol: str = PROTOCOL
    passed: bool = True
    capabilities: PluginCapabilities = field(default_factory=PluginCapabilities)
    checks: list[Check] = field(default_factory=list)
    duration_ms: int = 0

    def to_json(self) -> JSONObject:
        return {**asdict(self), "checks": [check.to_json() for check in self.checks]}

    def text_lines(self) -> list[str]:
        """Upstream's text report: a header, then ``PASS``/``FAIL``/``SKIP`` per check."""
        lines = [f"paxm JSON-RPC provider conformance: passed={str(self.passed).lower()} protocol={self.protocol}"]
        for check in self.checks:
            status = "SKIP" if check.skipped else ("PASS" if check.passed else "FAIL")
            line = f"  {status:<5} {check.name}"
            if check.error:
                line += f": {check.error}"
            lines.append(line)
        return lines


class _Failed(Exception):
    pass


def _found(hits: list[MemoryHit], ref_id: str, want_text: str, metadata: tuple[str, str] | None = None) -> bool:
    for hit in hits:
        if hit.id == ref_id and want_text in hit.text:
            if metadata is None or hit.metadata.get(metadata[0]) == metadata[1]:
                return True
    return False


def _attribution_error(hits: list[MemoryHit], ref_id: str, item: MemoryItem) -> str:
    for hit in hits:
        if hit.id != ref_id:
            continue
        if hit.origin != item.origin or hit.scope != item.scope:
            return (
                f"search attribution = origin {hit.origin.to_json()} scope {hit.scope.to_json()}, "
                f"want origin {item.origin.to_json()} scope {item.scope.to_json()}"
            )
        return ""
    return f"search did not return written ref {ref_id!r} for attribution check"


class _Kit:
    """A conformance run in progress: the provider, its report, and how each check is recorded."""

    def __init__(self, provider: JsonRpcProvider) -> None:
        self.provider = provider
        self.started = time.monotonic()
        self.result = ConformanceResult()

    def deadline(self) -> Deadline:
        return Deadline.after(self.provider.timeout)

    def run(self, name: str, body: Callable[[], Any]) -> tuple[bool, Any]:
        """Run one check; a plugin fault fails it (and the run) instead of raising."""
        check = Check(name)
        value: Any = None
        try:
            value = body()
            check.passed = True
        except (PaxmError, _Failed) as exc:
            check.error = str(exc)
            self.result.passed = False
        self.result.checks.append(check)
        return check.passed, value

    def skip(self, name: str) -> None:
        # upstream reports skipped checks as not required
        self.result.checks.append(Check(name, required=False, skipped=True))

    def finish(self) -> ConformanceResult:
        self.result.duration_ms = int((time.monotonic() - self.started) * 1000)
        return self.result


def run_conformance(provider: JsonRpcProvider) -> ConformanceResult:
    """Run every check against ``provider`` and return the report (never raises for plugin faults)."""
    kit = _Kit(provider)
    kit.run("health", lambda: provider.health(kit.deadline()))
    ok, caps = kit.run("capabilities", lambda: provider.plugin_capabilities(kit.deadline()))
    if not ok:
        return kit.finish()
    kit.result.capabilities = caps

    token = f"paxm-conformance-{time.time_ns()}"
    item = MemoryItem(
        text=f"Remember {token}",
        metadata={"paxm_conformance": token},
        origin=MemoryOrigin("conformance-user", "conformance-agent", "conformance-session", "conformance-turn"),
        scope=MemoryScope("personal", "conformance-user"),
    )
    put_ok, ref = kit.run("put acknowledgement", lambda: provider.put(item, kit.deadline()))
    if put_ok:
        _written_checks(kit, caps, token, item, ref)
    batch_refs = _put_batch_check(kit, caps, token)
    if caps.delete and put_ok:
        kit.run("delete lifecycle", lambda: _delete_lifecycle(kit, token, ref, batch_refs))
    else:
        kit.skip("delete lifecycle")
    return kit.finish()


def _written_checks(kit: _Kit, caps: PluginCapabilities, token: str, item: MemoryItem, ref: MemoryRef) -> None:
    """The checks of the memory ``put`` wrote: its ref id, search fidelity and attribution."""
    provider = kit.provider
    query = SearchQuery(text=token, limit=10, metadata=dict(item.metadata))

    def stable_ref() -> None:
        if not ref.id.strip():
            raise _Failed("put returned an empty ref id")

    kit.run("stable ref id", stable_ref)

    def search_fidelity() -> None:
        hits = provider.search(query, kit.deadline())
        if not _found(hits, ref.id, token, ("paxm_conformance", token)):
            raise _Failed("search did not faithfully return written id, text, and metadata")

    kit.run("search fidelity", search_fidelity)
    if caps.attribution:

        def attribution() -> None:
            error = _attribution_error(provider.search_wire(query, kit.deadline()), ref.id, item)
            if error:
                raise _Failed(error)

        kit.run("attribution fidelity", attribution)
    else:
        kit.skip("attribution fidelity")


def _put_batch_check(kit: _Kit, caps: PluginCapabilities, token: str) -> list[MemoryRef]:
    """Write two memories in one batch and check each is searchable; returns the refs it got."""
    provider = kit.provider
    batch_items = [
        MemoryItem(
            text=f"{token} batch {word}",
            origin=MemoryOrigin(f"batch-user-{n}", "batch-agent", "batch-session", f"batch-turn-{n}"),
            scope=MemoryScope("team", "team-1"),
        )
        for n, word in ((1, "one"), (2, "two"))
    ]
    batch_refs: list[MemoryRef] = []

    def put_batch() -> None:
        refs = provider.put_batch(batch_items, kit.deadline())
        batch_refs.extend(refs)
        if len(refs) != 2:
            raise _Failed(f"putBatch returned {len(refs)} refs, want 2")
        seen: set[str] = set()
        for index, (batch_ref, batch_item) in enumerate(zip(refs, batch_items, strict=True)):
            if not batch_ref.id.strip() or batch_ref.id in seen:
                raise _Failed(f"putBatch ref {index} has an empty or duplicate id")
            seen.add(batch_ref.id)
            query = SearchQuery(text=batch_item.text, limit=10)
            if not _found(provider.search(query, kit.deadline()), batch_ref.id, batch_item.text):
                raise _Failed(f"putBatch ref {batch_ref.id} is not faithfully searchable")
            if caps.attribution:
                error = _attribution_error(provider.search_wire(query, kit.deadline()), batch_ref.id, batch_item)
                if error:
                    raise _Failed(f"putBatch attribution: {error}")

    kit.run("putBatch" if caps.put_batch else "putBatch fallback", put_batch)
    return batch_refs


def _delete_lifecycle(kit: _Kit, token: str, ref: MemoryRef, batch_refs: list[MemoryRef]) -> None:
    """Delete the written memory (it must stop being searchable), then clean up the batch's."""
    provider = kit.provider
    provider.delete(ref, kit.deadline())
    hits = provider.search(SearchQuery(text=token, limit=10), kit.deadline())
    if any(hit.id == ref.id for hit in hits):
        raise _Failed("deleted ref is still searchable")
    for batch_ref in batch_refs:
        try:
            provider.delete(batch_ref, kit.deadline())
        except PaxmError as exc:
            raise _Failed(f"clean batch ref {batch_ref.id}: {exc}") from None
