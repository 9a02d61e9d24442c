"""Shared test fakes for paxm and its plugins: providers and an isolated home.

Providers: :class:`MemoryProvider` (in-memory, word-overlap relevance), :class:`ScriptedProvider`
(fixed hits, optional delay/gate/error), :class:`HangingProvider` (blocks until released),
:class:`FailingProvider` (every call raises ``ProviderError``), registered as provider types by
:class:`FakesPlugin` through a real plugin manager (:func:`plugin_manager`).

Fixtures (autouse wherever imported into a ``conftest.py``): :func:`close_built_providers` closes
every provider a test passed to :func:`closed_after_test`; :func:`isolated_home` points HOME and the
XDG dirs at a temp dir and unsets paxm's variables plus those a test suite names in its own
``paxm_unset_env`` fixture (a harness's config-dir variable, say).

:func:`json_server` is a scripted JSON HTTP server on 127.0.0.1 for a remote provider's error paths;
:func:`check_recall_ranks_each_fact_first`, :func:`check_attribution_survives` and
:func:`check_restart_keeps_acknowledged` are what every real-backend suite asks of its server.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest

from paxm_core import Deadline, MemoryHit, MemoryItem, MemoryRef, ProviderConfig, ProviderError, SearchQuery, hookimpl
from paxm_core.api.protocols import Provider
from paxm_core.api.timefmt import parse_time
from paxm_core.api.types import MemoryOrigin, MemoryScope
from paxm_core.plugins import PaxmPluginManager, get_plugin_manager


def _words(text: str) -> set[str]:
    return {w for w in "".join(c.lower() if c.isalnum() else " " for c in text).split() if w}


class IdStoreProvider:
    """The cheapest store a write path can deliver to: ``stored`` keeps each item under its own id.

    Search finds nothing; no locks, copies or deadline checks, so a benchmark's figure is the
    write path's own cost.  Subclass it to add fault injection or counters.
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self.stored: dict[str, MemoryItem] = {}

    @property
    def name(self) -> str:
        return self._name

    def search(self, query: SearchQuery, deadline: Deadline) -> list[MemoryHit]:
        return []

    def health(self, deadline: Deadline) -> None:
        return None

    def put(self, item: MemoryItem, deadline: Deadline) -> MemoryRef:
        self.stored[item.id] = item
        return MemoryRef(self._name, item.id)


class MemoryProvider:
    """In-memory store: relevance = share of query words found; keeps every field it is given."""

    def __init__(self, name: str = "memory") -> None:
        self._name = name
        self.items: dict[str, MemoryItem] = {}
        self.queries: list[SearchQuery] = []
        self.puts: list[MemoryItem] = []
        self.put_calls = 0
        self.closed = False
        self._counter = 0
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self._name

    def search(self, query: SearchQuery, deadline: Deadline) -> list[MemoryHit]:
        deadline.check("search")
        self.queries.append(query)
        wanted = _words(query.text)
        hits: list[MemoryHit] = []
        for item in list(self.items.values()):
            if query.tiers and (item.tier or "ltm") not in query.tiers:
                continue
            found = wanted & _words(item.text)
            if not wanted or not found:
                continue
            hits.append(self._hit(item, len(found) / len(wanted)))
        hits.sort(key=lambda h: -h.relevance)
        return hits[: query.limit] if query.limit else hits

    def _hit(self, item: MemoryItem, relevance: float) -> MemoryHit:
        return MemoryHit(
            provider=self._name,
            id=item.id,
            text=item.text,
            relevance=relevance,
            score=relevance,
            source=item.source,
            metadata=dict(item.metadata),
            created_at=item.created_at,
            tier=item.tier,
            expires_at=item.expires_at,
            origin=item.origin,
            scope=item.scope,
            provenance=item.provenance,
        )

    def put(self, item: MemoryItem, deadline: Deadline) -> MemoryRef:
        deadline.check("put")
        with self._lock:
            self.put_calls += 1
            self._counter += 1
            ident = item.id or f"m{self._counter}"
            self.items[ident] = item.replace(id=ident)
            self.puts.append(item)
        return MemoryRef(self._name, ident)

    def health(self, deadline: Deadline) -> None:
        deadline.check("health")

    def close(self) -> None:
        self.closed = True


class BatchMemoryProvider(MemoryProvider):
    """Same store with ``put_batch`` (records batch sizes)."""

    def __init__(self, name: str = "batch") -> None:
        super().__init__(name)
        self.batches: list[int] = []

    def put_batch(self, items: Sequence[MemoryItem], deadline: Deadline) -> list[MemoryRef]:
        self.batches.append(len(items))
        return [MemoryProvider.put(self, item, deadline) for item in items]

    def cleanup_expired(self, limit: int, deadline: Deadline) -> int:
        now = datetime.now().astimezone()
        gone = [k for k, v in self.items.items() if v.expires_at is not None and v.expires_at <= now][:limit]
        for key in gone:
            del self.items[key]
        return len(gone)


class StringMetadataProvider(MemoryProvider):
    """Keeps only id, text and a string metadata map, like many remote stores."""

    def put(self, item: MemoryItem, deadline: Deadline) -> MemoryRef:
        return super().put(MemoryItem(text=item.text, id=item.id, metadata=dict(item.metadata)), deadline)

    def _hit(self, item: MemoryItem, relevance: float) -> MemoryHit:
        return MemoryHit(provider="", id=item.id, text=item.text, relevance=relevance, metadata=dict(item.metadata))


class ScriptedProvider:
    """Returns fixed hits (copies), optionally after a delay or once a gate opens."""

    def __init__(
        self,
        name: str,
        hits: Sequence[MemoryHit] = (),
        *,
        delay: float = 0.0,
        gate: threading.Event | None = None,
        error: BaseException | None = None,
    ) -> None:
        self._name = name
        self.hits = list(hits)
        self.delay = delay
        self.gate = gate
        self.error = error
        self.queries: list[SearchQuery] = []
        self.deadlines: list[Deadline] = []
        self.calls = 0
        self.puts: list[MemoryItem] = []

    @property
    def name(self) -> str:
        return self._name

    def _wait(self) -> None:
        if self.gate is not None:
            self.gate.wait()
        if self.delay:
            time.sleep(self.delay)
        if self.error is not None:
            raise self.error

    def search(self, query: SearchQuery, deadline: Deadline) -> list[MemoryHit]:
        self.calls += 1
        self.queries.append(query)
        self.deadlines.append(deadline)
        self._wait()
        return [h.copy() for h in self.hits]

    def put(self, item: MemoryItem, deadline: Deadline) -> MemoryRef:
        self.calls += 1
        self.puts.append(item)
        self._wait()
        return MemoryRef(self._name, item.id or f"{self._name}-{len(self.puts)}")

    def health(self, deadline: Deadline) -> None:
        self._wait()


class FailingProvider(ScriptedProvider):
    """Every call raises ``ProviderError`` (a backend that is down)."""

    def __init__(self, name: str = "down", message: str = "backend down") -> None:
        super().__init__(name, error=ProviderError(name, "call", message))


class HangingProvider(ScriptedProvider):
    """Blocks every call until :attr:`release` is set (tests set it in teardown)."""

    def __init__(self, name: str = "stuck") -> None:
        self.release = threading.Event()
        super().__init__(name, gate=self.release)


def hit(
    provider: str,
    id: str,
    text: str,
    relevance: float = 0.0,
    *,
    score: float = 0.0,
    created_at: str | datetime | None = None,
    metadata: dict[str, str] | None = None,
    **extra: Any,
) -> MemoryHit:
    """Build a hit; ``created_at`` may be an RFC 3339 string."""
    created = parse_time(created_at) if isinstance(created_at, str) else created_at
    return MemoryHit(
        provider=provider,
        id=id,
        text=text,
        relevance=relevance,
        score=score,
        created_at=created,
        metadata=dict(metadata or {}),
        **extra,
    )


@dataclass
class FakesPlugin:
    """A plugin registering fake provider types; instances are kept for inspection.

    Provider types: ``memory``, ``batch``, ``strmeta``, ``hanging``, ``raising``, ``failing``, ``slow``
    (``extra["delay"]`` seconds), ``flat`` (all 1.0), ``graded``, ``outofrange``.
    """

    instances: dict[str, Any] = field(default_factory=dict)
    factories: dict[str, Callable[[str, ProviderConfig], Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        def keep(build: Callable[[str, ProviderConfig], Any]) -> Callable[[str, ProviderConfig], Any]:
            def factory(name: str, config: ProviderConfig) -> Any:
                provider = build(name, config)
                self.instances[name] = provider
                return provider

            return factory

        self.factories = {
            "memory": keep(lambda n, c: MemoryProvider(n)),
            "batch": keep(lambda n, c: BatchMemoryProvider(n)),
            "strmeta": keep(lambda n, c: StringMetadataProvider(n)),
            "hanging": keep(lambda n, c: HangingProvider(n)),
            "raising": keep(lambda n, c: ScriptedProvider(n, error=ProviderError(n, "search", "backend down"))),
            "failing": keep(lambda n, c: FailingProvider(n)),
            "slow": keep(lambda n, c: ScriptedProvider(n, [hit(n, "s1", "slow answer", 0.9)], delay=c.extra["delay"])),
            "flat": keep(lambda n, c: ScriptedProvider(n, [hit(n, f"f{i}", f"flat {i}", 1.0) for i in range(4)])),
            "graded": keep(
                lambda n, c: ScriptedProvider(n, [hit(n, f"g{i}", f"graded {i}", 0.9 - i * 0.1) for i in range(4)])
            ),
            "outofrange": keep(
                lambda n, c: ScriptedProvider(
                    n,
                    [hit(n, "o1", "too high", 1.7), hit(n, "o2", "negative", -0.3), hit(n, "o3", "nan", float("nan"))],
                )
            ),
        }

    @hookimpl
    def paxm_register_providers(self, register: Callable[..., None]) -> None:
        for type_name, factory in self.factories.items():
            register(type_name, factory, description=f"test fake {type_name}")

    def release_all(self) -> None:
        for provider in self.instances.values():
            if isinstance(provider, HangingProvider):
                provider.release.set()


def plugin_manager(plugin: FakesPlugin) -> PaxmPluginManager:
    """A hermetic plugin manager with only the fakes registered."""
    pm = get_plugin_manager(load_entrypoints=False)
    pm.register(plugin, name="paxm-test-fakes")
    return pm


#: paxm's own environment variables a test must never inherit from the developer's shell
PAXM_ENV = ("PAXM_API_KEY", "PAXM_CONFIG", "PAXM_LOAD_PLUGINS", "PAXM_RAISE_ERRORS")


@pytest.fixture
def paxm_unset_env() -> tuple[str, ...]:
    """More variables :func:`isolated_home` unsets; override in a conftest (a harness's config dir)."""
    return ()


def home_env(home: Path) -> dict[str, str]:
    """``HOME`` and the XDG base directories under ``home``: what every isolated paxm process sees."""
    return {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
    }


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, paxm_unset_env: tuple[str, ...]) -> Path:
    """Point HOME and the XDG dirs at a fresh temp dir so no test touches the real home."""
    home = tmp_path / "home"
    home.mkdir()
    for name, value in home_env(home).items():
        monkeypatch.setenv(name, value)
    for var in (*PAXM_ENV, *paxm_unset_env):
        monkeypatch.delenv(var, raising=False)
    return home


_P = TypeVar("_P")
#: providers the running test built, closed by :func:`close_built_providers` when it ends
_BUILT: list[Any] = []


def closed_after_test(provider: _P) -> _P:
    """Return ``provider`` (anything with a ``close()``), to be closed when the test ends
    (needs :func:`close_built_providers`)."""
    _BUILT.append(provider)
    return provider


@pytest.fixture(autouse=True)
def close_built_providers() -> Iterator[None]:
    """Close every provider the test built: an unclosed httpx pool is a ResourceWarning, an error here."""
    yield
    while _BUILT:
        _BUILT.pop().close()


#: ``(method, path, headers, decoded body) -> (status, JSON answer)``: what :func:`json_server` replies.
JsonAnswer = Callable[[str, str, Mapping[str, str], Any], tuple[int, Any]]


@contextmanager
def json_server(answer: JsonAnswer) -> Iterator[str]:
    """A threaded HTTP server on 127.0.0.1 answering every request with ``answer``; yields its URL."""
    from http.server import ThreadingHTTPServer

    from paxm_contracttest.fake_models.server import JsonHandler

    class Handler(JsonHandler):
        protocol_version = "HTTP/1.0"

        def _answer(self) -> None:
            body = json.loads(self.read_body() or b"null")
            self.send_json(*answer(self.command, self.path, dict(self.headers), body))

        do_GET = do_POST = do_DELETE = _answer  # noqa: N815

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _soon() -> Deadline:
    return Deadline.after(30)


def check_recall_ranks_each_fact_first(provider: Provider) -> list[MemoryHit]:
    """Three unrelated facts written; each question's top hit is its fact, text intact (the top hits returned)."""
    facts = {
        "coffee": "I prefer dark roast coffee brewed in a french press",
        "deploy": "Production deploys happen on Tuesday after the standup",
        "cat": "The office cat is called Biscuit and sleeps on the printer",
    }
    questions = {
        "coffee": "what roast of coffee do I prefer",
        "deploy": "when do production deploys happen",
        "cat": "what is the office cat called",
    }
    refs = {key: provider.put(MemoryItem(text=text), _soon()) for key, text in facts.items()}
    tops: list[MemoryHit] = []
    for key, question in questions.items():
        hits = provider.search(SearchQuery(text=question, limit=5), _soon())
        assert hits and hits[0].id == refs[key].id, (key, [(h.id, h.relevance, h.text) for h in hits])
        assert hits[0].text == facts[key]
        tops.append(hits[0])
    return tops


def check_attribution_survives(provider: Provider) -> tuple[MemoryRef, MemoryHit]:
    """Origin, scope, tier, source and metadata (case and accents kept) come back on the hit."""
    item = MemoryItem(
        text="zanzibar attribution marker memory",
        source="paxm-test",
        tier="stm",
        metadata={"workspace": "/tmp/Proj É"},
        origin=MemoryOrigin("Todd", "claude-code", "sess-1", "turn-9"),
        scope=MemoryScope("team", "Core"),
    )
    ref = provider.put(item, _soon())
    hit = provider.search(SearchQuery(text="zanzibar attribution marker", limit=5), _soon())[0]
    assert hit.id == ref.id
    assert (hit.origin, hit.scope) == (item.origin, item.scope)
    assert hit.tier == "stm" and hit.source == "paxm-test" and hit.metadata["workspace"] == "/tmp/Proj É"
    return ref, hit


def check_restart_keeps_acknowledged(build: Callable[[], Provider], restart: Callable[[], None]) -> None:
    """Whatever a batch acknowledged before the server restarts is found after it (``build`` makes the provider)."""
    texts = [f"durable memory number {word} kumquat" for word in ("one", "two", "three")]
    before = build()
    refs = before.put_batch([MemoryItem(text=t) for t in texts], _soon())  # type: ignore[attr-defined]
    before.close()  # type: ignore[attr-defined]  # no connection of the old server is reused
    restart()
    after = build()
    for text, ref in zip(texts, refs, strict=True):
        hits = after.search(SearchQuery(text=text, limit=10), _soon())
        assert ref.id in [h.id for h in hits], (text, [h.id for h in hits])
