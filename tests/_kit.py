"""Small helpers the core's test folders share."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

#: the ``http_server`` fixture: a handler class in, the served ``http://127.0.0.1:PORT`` URL out
ServeHttp = Callable[[type[BaseHTTPRequestHandler]], str]


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler that keeps its access log off the test output."""

    def log_message(self, *_: object) -> None:
        pass

    def reply(self, status: int, body: bytes, content_type: str | None = None) -> None:
        """Answer with ``status`` and ``body`` (and a ``Content-Type`` when one is given)."""
        self.send_response(status)
        if content_type is not None:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def load_module(name: str, path: Path, *, register: bool = False) -> ModuleType:
    """Run the Python file at ``path`` as a module called ``name`` and return it.

    ``register``: the module goes into ``sys.modules`` under ``name`` before it runs, so its
    dataclasses (and later ``import name`` statements) find it; one already there is returned.
    """
    if register and name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    if register:
        sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def use_plugins(monkeypatch: pytest.MonkeyPatch, **plugins: object) -> None:
    """Every plugin manager paxm builds in this test holds the SQLite provider and ``plugins`` only."""
    import paxm_provider_sqlite
    from paxm_core.plugins import get_plugin_manager

    pm = get_plugin_manager(load_entrypoints=False)
    pm.register(paxm_provider_sqlite, name="sqlite")
    for name, plugin in plugins.items():
        pm.register(plugin, name=name)
    monkeypatch.setattr("paxm_core.plugins.get_plugin_manager", lambda load_entrypoints=True, **_: pm)
    # the process's lazy registry (installed_provider_catalog) is built from it too: never keep it
    monkeypatch.setattr("paxm_core.plugins._REGISTRY_MANAGERS", {})


def integration_plugin(integration: Any) -> object:
    """A plugin that registers ``integration``."""
    from paxm_core import hookimpl

    class Plugin:
        @hookimpl
        def paxm_register_integrations(self, register: Any) -> None:
            register(integration)

    return Plugin()
