"""Router test fixtures: fakes loaded by path, routers closed and hanging providers released."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest


def load_fakes() -> ModuleType:
    name = "paxm_router_test_fakes"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("fakes.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


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
