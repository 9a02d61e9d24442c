"""``ProviderContract``: the checks every paxm provider must pass, as a test class to subclass.

The provider is built the way paxm builds it: the installed ``paxm`` entry points are loaded
(:func:`paxm_core.plugins.get_plugin_manager`), the type is looked up and its factory is
called with an instance name and a :class:`~paxm_core.ProviderConfig`.  Passing the suite
therefore also proves the packaging.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar

import pytest

from paxm_contracttest.checks import check_hit_faithful, check_ref, check_scores, describe_hits
from paxm_core import (
    CAP_ATTRIBUTION,
    CAP_CLEANUP_EXPIRED,
    CAP_CLOSE,
    CAP_DELETE,
    CAP_EVAL_SCOPE,
    CAP_PUT_BATCH,
    CAP_TURN_BOUNDARIES,
    Deadline,
    DeadlineExceeded,
    MemoryHit,
    MemoryItem,
    MemoryOrigin,
    MemoryRef,
    MemoryScope,
    PaxmError,
    Provider,
    ProviderConfig,
    ProviderError,
    ProviderNotInstalled,
    ProviderType,
    SearchQuery,
    SupportsCapabilities,
    capabilities_of,
)
from paxm_core.plugins import PaxmPluginManager, get_plugin_manager

__all__ = ["ContractHarness", "ProviderContract", "ReadAfterWrite"]

#: Capabilities the suite knows how to exercise, with the method each one needs.
CAPABILITY_METHODS = {
    CAP_PUT_BATCH: "put_batch(items, deadline)",
    CAP_DELETE: "delete(ref, deadline)",
    CAP_CLEANUP_EXPIRED: "cleanup_expired(limit, deadline)",
    CAP_CLOSE: "close()",
    CAP_TURN_BOUNDARIES: "preserve_turn_boundaries() returning True",
    CAP_EVAL_SCOPE: "cleanup_eval_scope(deadline)",
    CAP_ATTRIBUTION: "origin/scope round trip (declared, or advertised via capabilities())",
}


@dataclass(frozen=True)
class ReadAfterWrite:
    """How long a written memory may take to become searchable (eventually consistent backends).

    :param timeout: seconds to keep retrying a search before failing (``0`` = must be immediate).
    :param interval: seconds between retries.
    """

    timeout: float = 0.0
    interval: float = 0.25


class ContractHarness:
    """What the checks share: the provider, its name, timeouts and the read-after-write policy."""

    def __init__(
        self,
        provider: Provider,
        name: str,
        expected: frozenset[str],
        read_after_write: ReadAfterWrite,
        call_timeout: float,
    ) -> None:
        self.provider = provider
        self.name = name
        self.expected = expected
        self.read_after_write = read_after_write
        self.call_timeout = call_timeout

    def deadline(self) -> Deadline:
        """A fresh deadline for one provider call."""
        return Deadline.after(self.call_timeout)

    @staticmethod
    def token() -> str:
        """A unique, tokenizer-friendly word identifying one test's memories."""
        return "paxmcontract" + uuid.uuid4().hex[:16]

    def put(self, item: MemoryItem) -> MemoryRef:
        return check_ref(self.provider.put(item, self.deadline()), self.name)

    def search(self, text: str, limit: int = 10, **changes: Any) -> list[MemoryHit]:
        hits = self.provider.search(SearchQuery(text=text, limit=limit, **changes), self.deadline())
        assert isinstance(hits, list), f"search must return a list of MemoryHit, got {type(hits).__name__}"
        for hit in hits:
            assert isinstance(hit, MemoryHit), f"search returned {type(hit).__name__}, not paxm_core.MemoryHit"
        return hits

    def find(self, text: str, ref: MemoryRef, **changes: Any) -> MemoryHit:
        """Search ``text`` (retrying per :class:`ReadAfterWrite`) until ``ref`` is among the hits."""
        started = time.monotonic()
        while True:
            hits = self.search(text, **changes)
            for hit in hits:
                if hit.id == ref.id:
                    return hit
            waited = time.monotonic() - started
            if waited >= self.read_after_write.timeout:
                pytest.fail(
                    f"search for {text!r} did not return the memory just written (ref id {ref.id!r}) "
                    f"after {waited:.2f}s; got {describe_hits(hits)}. If the backend is eventually "
                    f"consistent, override the paxm_read_after_write fixture.",
                    pytrace=False,
                )
            time.sleep(self.read_after_write.interval)

    def absent(self, text: str, ref_id: str) -> bool:
        """True when ``ref_id`` stops showing up for ``text`` within the read-after-write window."""
        started = time.monotonic()
        while True:
            if all(hit.id != ref_id for hit in self.search(text)):
                return True
            if time.monotonic() - started >= self.read_after_write.timeout:
                return False
            time.sleep(self.read_after_write.interval)

    def require(self, capability: str) -> None:
        """Skip when the capability is neither declared nor present; fail when declared but missing."""
        present = capabilities_of(self.provider)
        if capability == CAP_ATTRIBUTION and capability in self.expected:
            return  # a promise about data, not a method: the round-trip check itself judges it
        if capability in self.expected and capability not in present:
            pytest.fail(
                f"the provider declares {capability!r} but does not implement {CAPABILITY_METHODS[capability]}",
                pytrace=False,
            )
        if capability not in self.expected and capability not in present:
            pytest.skip(f"{capability!r} is not declared by this provider")


class ProviderContract:
    """Subclass in your provider's tests and set ``provider_type``.

    Class attributes (the plain way to say what the fixtures of the same name return):

    ``provider_type``
        The ``type`` string your plugin registers (required, here or as the fixture).
    ``expected_capabilities``
        The capability names that must work, spelled out so that losing one fails your CI.

    Fixtures to override (all optional):

    ``paxm_provider_type``
        The ``type`` string your plugin registers (default: ``provider_type``).
    ``paxm_provider_config``
        The :class:`~paxm_core.ProviderConfig` to build from; parametrize it to run the whole
        suite against several configurations.  Default: ``path`` under ``tmp_path``.
    ``paxm_expected_capabilities``
        Capability names that must work.  Default: ``expected_capabilities``; when that is
        ``None`` too, what the type declares when
        registering plus what the provider advertises through ``capabilities()``.  A declared
        capability the provider lacks fails; undeclared ones present as methods are exercised too.
    ``paxm_provider``
        The provider object itself (bypasses the entry point; use only for wrapping).
    ``paxm_read_after_write``
        A :class:`ReadAfterWrite` for eventually consistent backends.
    ``paxm_provider_name`` / ``paxm_call_timeout`` / ``paxm_plugin_manager``
        Instance name (``"contract"``), seconds per call (30), and the plugin manager.

    Every check carries the ``paxm_contract`` marker (``pytest -m paxm_contract``).
    """

    pytestmark = [pytest.mark.paxm_contract]

    #: the ``type`` string the plugin registers (or override the ``paxm_provider_type`` fixture)
    provider_type: ClassVar[str | None] = None
    #: the capabilities that must work; ``None``: what the type registers and advertises
    expected_capabilities: ClassVar[frozenset[str] | None] = None

    # -- fixtures ---------------------------------------------------------------------------

    @pytest.fixture
    def paxm_provider_type(self) -> str:
        if self.provider_type is not None:
            return self.provider_type
        pytest.fail(
            f"{type(self).__name__} must override the paxm_provider_type fixture, or set provider_type, "
            "to the provider type your plugin registers, e.g.\n\n"
            '    class TestMyStoreContract(ProviderContract):\n        provider_type = "mystore"\n',
            pytrace=False,
        )

    @pytest.fixture
    def paxm_provider_name(self) -> str:
        return "contract"

    @pytest.fixture
    def paxm_provider_config(self, paxm_provider_type: str, tmp_path: Path) -> ProviderConfig:
        return ProviderConfig(type=paxm_provider_type, enabled=True, path=str(tmp_path / "paxm-contract-store"))

    @pytest.fixture
    def paxm_expected_capabilities(self) -> Iterable[str] | None:
        return self.expected_capabilities

    @pytest.fixture
    def paxm_read_after_write(self) -> ReadAfterWrite:
        return ReadAfterWrite()

    @pytest.fixture
    def paxm_call_timeout(self) -> float:
        return 30.0

    @pytest.fixture
    def paxm_plugin_manager(self) -> PaxmPluginManager:
        return get_plugin_manager()

    @pytest.fixture
    def paxm_provider_spec(self, paxm_plugin_manager: PaxmPluginManager, paxm_provider_type: str) -> ProviderType:
        try:
            return paxm_plugin_manager.provider_type(paxm_provider_type)
        except ProviderNotInstalled as exc:
            errors = "; ".join(f"{e.plugin}: {e.error}" for e in paxm_plugin_manager.load_errors)
            pytest.fail(
                f"{exc}. The contract suite builds providers through the installed 'paxm' entry points: "
                f"install your package (pip install -e .) and declare it in pyproject.toml under "
                f"[project.entry-points.paxm]." + (f" Plugins that failed to load: {errors}" if errors else ""),
                pytrace=False,
            )

    @pytest.fixture
    def paxm_provider(
        self, paxm_provider_spec: ProviderType, paxm_provider_name: str, paxm_provider_config: ProviderConfig
    ) -> Iterator[Provider]:
        provider = paxm_provider_spec.factory(paxm_provider_name, paxm_provider_config)
        yield provider
        close: Callable[[], None] | None = getattr(provider, "close", None)
        if callable(close):
            with contextlib.suppress(Exception):  # test_close judges close(); teardown only tidies
                close()

    @pytest.fixture
    def paxm_harness(
        self,
        paxm_provider: Provider,
        paxm_provider_name: str,
        paxm_provider_spec: ProviderType,
        paxm_expected_capabilities: Iterable[str] | None,
        paxm_read_after_write: ReadAfterWrite,
        paxm_call_timeout: float,
    ) -> ContractHarness:
        if paxm_expected_capabilities is None:
            expected = set(paxm_provider_spec.capabilities)
            if isinstance(paxm_provider, SupportsCapabilities):
                expected |= set(paxm_provider.capabilities())
        else:
            expected = set(paxm_expected_capabilities)
        unknown = expected - set(CAPABILITY_METHODS)
        if paxm_expected_capabilities is not None and unknown:
            pytest.fail(
                f"paxm_expected_capabilities lists unknown capabilities {sorted(unknown)}; "
                f"known: {sorted(CAPABILITY_METHODS)}",
                pytrace=False,
            )
        expected -= unknown  # extra names a plugin registers are documentation only
        return ContractHarness(
            paxm_provider, paxm_provider_name, frozenset(expected), paxm_read_after_write, paxm_call_timeout
        )

    # -- identity and health ------------------------------------------------------------------

    def test_provider_is_registered_through_entry_point(
        self, paxm_provider_spec: ProviderType, paxm_provider_type: str
    ) -> None:
        assert paxm_provider_spec.type == paxm_provider_type
        assert callable(paxm_provider_spec.factory), "the registered factory must be callable"

    def test_name_is_stable(self, paxm_harness: ContractHarness) -> None:
        provider = paxm_harness.provider
        assert isinstance(provider, Provider), (
            "the factory must return an object with name, search(query, deadline), put(item, deadline) "
            "and health(deadline)"
        )
        assert provider.name == paxm_harness.name, (
            f"provider.name is {provider.name!r}; it must be the instance name the factory was given "
            f"({paxm_harness.name!r})"
        )
        assert provider.name == provider.name, "provider.name must not change between reads"

    def test_health(self, paxm_harness: ContractHarness) -> None:
        result: object = paxm_harness.provider.health(paxm_harness.deadline())  # type: ignore[func-returns-value]
        assert result is None, (
            f"health must return None when healthy (and raise ProviderError when not), got {result!r}"
        )

    # -- write and read -------------------------------------------------------------------------

    def test_put_returns_ref_for_this_provider(self, paxm_harness: ContractHarness) -> None:
        paxm_harness.put(MemoryItem(text=f"contract put {paxm_harness.token()}", source="paxm-contracttest"))

    def test_search_returns_written_memory_faithfully(self, paxm_harness: ContractHarness) -> None:
        token = paxm_harness.token()
        text = f"The deploy key for {token} rotates every Monday"
        ref = paxm_harness.put(MemoryItem(text=text, source="paxm-contracttest"))
        hit = paxm_harness.find(token, ref)
        check_hit_faithful(hit, ref, text, paxm_harness.name)

    def test_scores_are_higher_is_better_in_unit_interval(self, paxm_harness: ContractHarness) -> None:
        token = paxm_harness.token()
        exact = f"{token} quarterly ranking report"
        partial = f"{token} unrelated grocery list"
        ref = paxm_harness.put(MemoryItem(text=exact))
        paxm_harness.put(MemoryItem(text=partial))
        paxm_harness.find(exact, ref)
        hits = paxm_harness.search(exact)
        check_scores(hits)
        best = next((hit for hit in hits if hit.id == ref.id), None)
        assert best is not None, f"a repeated search for {exact!r} lost the memory just found: {describe_hits(hits)}"
        for other in hits:
            assert best.relevance >= other.relevance, (
                f"the memory equal to the query has relevance {best.relevance!r} but {other.id!r} "
                f"({other.text!r}) has {other.relevance!r}: relevance must be higher-is-better "
                f"(convert distances, e.g. 1 - d/2)"
            )

    def test_origin_and_scope_round_trip(self, paxm_harness: ContractHarness) -> None:
        paxm_harness.require(CAP_ATTRIBUTION)
        token = paxm_harness.token()
        item = MemoryItem(
            text=f"attribution check {token}",
            origin=MemoryOrigin("contract-user", "contract-agent", "contract-session", "contract-turn"),
            scope=MemoryScope("team", "contract-team"),
        )
        ref = paxm_harness.put(item)
        hit = paxm_harness.find(token, ref)
        assert (hit.origin, hit.scope) == (item.origin, item.scope), (
            f"attribution did not round-trip: got origin {hit.origin.to_json()} scope {hit.scope.to_json()}, "
            f"wrote origin {item.origin.to_json()} scope {item.scope.to_json()}"
        )

    def test_metadata_is_never_a_filter(self, paxm_harness: ContractHarness) -> None:
        token = paxm_harness.token()
        ref = paxm_harness.put(
            MemoryItem(text=f"metadata is context {token}", metadata={"paxm_contract_kind": "stored"})
        )
        # Runtime context that differs from what was stored must not hide the memory.
        paxm_harness.find(
            token,
            ref,
            metadata={
                "paxm_contract_kind": "something-else",
                "session_id": "another-session",
                "source": "contract-probe",
                "hook_event": "UserPromptSubmit",
            },
        )

    # -- deadlines --------------------------------------------------------------------------------

    @pytest.mark.parametrize("operation", ["health", "put", "search"])
    @pytest.mark.parametrize("kind", ["cancelled", "expired"])
    def test_deadline_is_honoured(self, paxm_harness: ContractHarness, operation: str, kind: str) -> None:
        deadline = Deadline.cancelled_now() if kind == "cancelled" else Deadline(time.monotonic() - 1.0)
        provider = paxm_harness.provider
        token = paxm_harness.token()
        calls: dict[str, Callable[[], object]] = {
            "health": lambda: provider.health(deadline),
            "put": lambda: provider.put(MemoryItem(text=f"never stored {token}"), deadline),
            "search": lambda: provider.search(SearchQuery(text=token, limit=5), deadline),
        }
        try:
            calls[operation]()
        except (DeadlineExceeded, ProviderError):
            pass
        else:
            pytest.fail(
                f"{operation} with an already {kind} Deadline returned normally; it must raise "
                f"DeadlineExceeded (deadline.check(...)) or ProviderError before doing any work",
                pytrace=False,
            )
        if operation == "put":
            time.sleep(paxm_harness.read_after_write.timeout)
            leaked = [hit for hit in paxm_harness.search(token) if token in hit.text]
            assert not leaked, f"a put with a {kind} deadline still stored the memory: {describe_hits(leaked)}"

    # -- capabilities -------------------------------------------------------------------------------

    def test_declared_capabilities_are_implemented(self, paxm_harness: ContractHarness) -> None:
        present = capabilities_of(paxm_harness.provider) | {CAP_ATTRIBUTION}
        missing = sorted(paxm_harness.expected - present)
        assert not missing, "declared but not implemented: " + ", ".join(
            f"{cap} (needs {CAPABILITY_METHODS[cap]})" for cap in missing
        )

    def test_put_batch(self, paxm_harness: ContractHarness) -> None:
        paxm_harness.require(CAP_PUT_BATCH)
        token = paxm_harness.token()
        items = [MemoryItem(text=f"{token} batch {word}") for word in ("alpha", "bravo", "charlie")]
        refs = paxm_harness.provider.put_batch(items, paxm_harness.deadline())  # type: ignore[attr-defined]
        assert isinstance(refs, list) and len(refs) == len(items), (
            f"put_batch of {len(items)} items returned {refs!r}; it must return one ref per item, in order"
        )
        for ref in refs:
            check_ref(ref, paxm_harness.name, "put_batch")
        assert len({ref.id for ref in refs}) == len(refs), f"put_batch returned duplicate ids: {refs!r}"
        for item, ref in zip(items, refs, strict=True):
            hit = paxm_harness.find(item.text, ref)
            assert hit.text == item.text, (
                f"put_batch refs are out of order: ref {ref.id!r} holds {hit.text!r}, expected {item.text!r}"
            )

    def test_delete(self, paxm_harness: ContractHarness) -> None:
        paxm_harness.require(CAP_DELETE)
        token = paxm_harness.token()
        ref = paxm_harness.put(MemoryItem(text=f"delete me {token}"))
        paxm_harness.find(token, ref)
        paxm_harness.provider.delete(ref, paxm_harness.deadline())  # type: ignore[attr-defined]
        assert paxm_harness.absent(token, ref.id), f"memory {ref.id!r} is still searchable after delete"

    def test_cleanup_expired(self, paxm_harness: ContractHarness) -> None:
        paxm_harness.require(CAP_CLEANUP_EXPIRED)
        token = paxm_harness.token()
        now = datetime.now(UTC)
        paxm_harness.put(
            MemoryItem(
                text=f"{token} expired note",
                tier="stm",
                created_at=now - timedelta(hours=2),
                expires_at=now - timedelta(hours=1),
            )
        )
        fresh = paxm_harness.put(MemoryItem(text=f"{token} fresh note", tier="ltm"))
        removed = paxm_harness.provider.cleanup_expired(100, paxm_harness.deadline())  # type: ignore[attr-defined]
        assert isinstance(removed, int) and not isinstance(removed, bool), (
            f"cleanup_expired must return the number of memories removed, got {removed!r}"
        )
        assert removed >= 1, "cleanup_expired removed nothing although a memory expired an hour ago"
        paxm_harness.find(f"{token} fresh note", fresh)

    def test_close(self, paxm_harness: ContractHarness) -> None:
        paxm_harness.require(CAP_CLOSE)
        provider = paxm_harness.provider
        provider.close()  # type: ignore[attr-defined]
        provider.close()  # type: ignore[attr-defined]  # closing twice must be harmless
        with pytest.raises(PaxmError):
            provider.search(SearchQuery(text="after close", limit=1), paxm_harness.deadline())

    def test_turn_boundaries(self, paxm_harness: ContractHarness) -> None:
        paxm_harness.require(CAP_TURN_BOUNDARIES)
        assert paxm_harness.provider.preserve_turn_boundaries() is True  # type: ignore[attr-defined]

    def test_eval_scope_cleanup(self, paxm_harness: ContractHarness) -> None:
        paxm_harness.require(CAP_EVAL_SCOPE)
        paxm_harness.provider.cleanup_eval_scope(paxm_harness.deadline())  # type: ignore[attr-defined]

    # -- through the router -------------------------------------------------------------------------

    def test_router_neutrality(self, paxm_harness: ContractHarness) -> None:
        from paxm_core.router import Route, Router, SearchPolicy

        token = paxm_harness.token()
        text = f"router neutrality {token}"
        ref = paxm_harness.put(MemoryItem(text=text))
        direct = paxm_harness.find(token, ref)
        name = paxm_harness.name
        router = Router({name: paxm_harness.provider}, required={name})
        policy = SearchPolicy(routes=[Route(name, required=True)], limit=10)
        result = router.search(SearchQuery(text=token, limit=10), policy, paxm_harness.deadline())
        routed = [hit for hit in result.hits if hit.id == ref.id]
        assert routed, f"the router lost the provider's hit {ref.id!r}: got {describe_hits(result.hits)}"
        assert routed[0].relevance == direct.relevance, (
            f"relevance changed through a single-provider router: {direct.relevance!r} -> {routed[0].relevance!r}"
        )
        assert routed[0].score == direct.relevance, (
            f"score through a weight-1 router without recency must equal relevance {direct.relevance!r}, "
            f"got {routed[0].score!r}"
        )
