"""Router test fixtures: fakes loaded by path, routers closed and hanging providers released."""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest


def load_fakes() -> ModuleType:
    """The shared fakes of paxm-contracttest (``paxm_contracttest.fakes``)."""
    from paxm_contracttest import fakes

    return fakes


@pytest.fixture
def fakes() -> ModuleType:
    """The fake-provider module (``MemoryProvider``, ``ScriptedProvider``, ``hit`` ...)."""
    return load_fakes()


@pytest.fixture
def make_router() -> Iterator[Any]:
    """Build routers that are closed (and whose hanging providers are released) after the test."""
    from paxm_core.router import Router

    built: list[Router] = []

    def make(providers: dict[str, Any], required: Any = (), **kwargs: Any) -> Router:
        router = Router(providers, required, **kwargs)
        built.append(router)
        return router

    yield make
    fakes = load_fakes()
    for router in built:
        for provider in router.providers.values():
            if isinstance(provider, fakes.HangingProvider):
                provider.release.set()
        router.close()
