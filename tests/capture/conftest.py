"""Capture-queue fixtures; shared helpers live in ``_helpers.py`` (importable as ``_capture_helpers``)."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from paxm_core.capture import CaptureQueue
from paxm_core.router import Router

_spec = importlib.util.spec_from_file_location("_capture_helpers", Path(__file__).with_name("_helpers.py"))
assert _spec is not None and _spec.loader is not None
helpers = importlib.util.module_from_spec(_spec)
sys.modules["_capture_helpers"] = helpers
_spec.loader.exec_module(helpers)


@pytest.fixture
def clock() -> Any:
    return helpers.Clock()


@pytest.fixture
def queue_path(tmp_path: Path) -> Path:
    return tmp_path / "hooks" / "capture.sqlite"


@pytest.fixture
def open_queue(queue_path: Path) -> Iterator[Any]:
    opened: list[CaptureQueue] = []

    def factory(**kwargs: Any) -> CaptureQueue:
        kwargs.setdefault("routes", {"default": ["sqlite"]})
        q = CaptureQueue(queue_path, **kwargs)
        opened.append(q)
        return q

    yield factory
    for q in opened:
        q.close()


@pytest.fixture
def make_router() -> Iterator[Any]:
    routers: list[Router] = []

    def factory(*providers: Any) -> Router:
        router = Router({p.name: p for p in providers})
        routers.append(router)
        return router

    yield factory
    for router in routers:
        router.close()
