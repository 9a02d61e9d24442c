"""In-memory providers for the pytester tests; copied verbatim into each pytester dir."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from paxm_contracttest import ProviderContract
from paxm_core import MemoryHit, MemoryRef, ProviderError, hookimpl
from paxm_core.plugins import get_plugin_manager


def _terms(text):
    return {t for t in re.split(r"[^0-9a-z]+", text.lower()) if t}


class GoodProvider:
    """A correct provider with every capability."""

    def __init__(self, name, config):
        self._name = name
        self.items = {}
        self.closed = False
        self.counter = 0

    @property
    def name(self):
        return self._name

    def _check(self, op, deadline):
        if self.closed:
            raise ProviderError(self._name, op, "provider is closed")
        deadline.check(op)

    def health(self, deadline):
        self._check("health", deadline)

    def _ref_id(self, item):
        self.counter += 1
        return item.id or f"m{self.counter}"

    def put(self, item, deadline):
        self._check("put", deadline)
        ref_id = self._ref_id(item)
        self.items[ref_id] = item
        return MemoryRef(self._name, ref_id)

    def put_batch(self, items, deadline):
        return [self.put(item, deadline) for item in items]

    def delete(self, ref, deadline):
        self._check("delete", deadline)
        self.items.pop(ref.id, None)

    def cleanup_expired(self, limit, deadline):
        self._check("cleanup", deadline)
        now = datetime.now(UTC)
        gone = [k for k, v in self.items.items() if v.expires_at is not None and v.expires_at <= now][:limit]
        for key in gone:
            del self.items[key]
        return len(gone)

    def close(self):
        self.closed = True

    def preserve_turn_boundaries(self):
        return True

    def relevance(self, matched, wanted):
        return matched / wanted

    def text_of(self, item):
        return item.text

    def accepts(self, item, query):
        return all(item.metadata.get(k) == v for k, v in query.filters.items())

    def search(self, query, deadline):
        self._check("search", deadline)
        wanted = _terms(query.text)
        hits = []
        for ref_id, item in self.items.items():
            matched = len(wanted & _terms(item.text))
            if not matched or not self.accepts(item, query):
                continue
            rel = self.relevance(matched, len(wanted))
            hits.append(
                MemoryHit(
                    self._name,
                    ref_id,
                    self.text_of(item),
                    relevance=rel,
                    score=rel,
                    raw_score=float(matched),
                    raw_score_kind="term_matches",
                    origin=item.origin,
                    scope=item.scope,
                )
            )
        hits.sort(key=lambda h: -h.relevance)
        return hits[: query.limit or 10]


class Plugin:
    def __init__(self, type_name, factory, capabilities):
        self.type_name = type_name
        self.factory = factory
        self.capabilities = capabilities

    @hookimpl
    def paxm_register_providers(self, register):
        register(self.type_name, self.factory, capabilities=self.capabilities)


ALL_CAPS = ("put_batch", "delete", "cleanup_expired", "close", "turn_boundaries", "attribution")


def contract_for(factory, capabilities=ALL_CAPS):
    """A ProviderContract subclass whose plugin manager holds just ``factory`` as type 'fake'."""

    class Contract(ProviderContract):
        @pytest.fixture
        def paxm_provider_type(self):
            return "fake"

        @pytest.fixture
        def paxm_plugin_manager(self):
            pm = get_plugin_manager(load_entrypoints=False)
            pm.register(Plugin("fake", factory, capabilities), name="fake-plugin")
            return pm

    return Contract
