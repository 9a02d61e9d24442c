"""Capture-queue fixtures; shared helpers live in ``_helpers.py`` (importable as ``_capture_helpers``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from paxm_core.capture import CaptureQueue
from paxm_core.router import Router
from tests._kit import load_module

helpers = load_module("_capture_helpers", Path(__file__).with_name("_helpers.py"), register=True)


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
