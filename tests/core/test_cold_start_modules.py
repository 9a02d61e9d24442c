"""What a cold start imports: ``import paxm_core`` and the hook daemon up to its first answer.

The first prompt after the daemon is down waits for the daemon's imports (issue #23's
"first prompt" row); these tests pin that ``import paxm_core`` loads none of its submodules
and that answering the first prompt imports no module only a later event, another harness,
an HTTP provider or a command needs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import paxm_core


def _fresh(code: str, env: dict[str, str] | None = None, *args: str) -> Any:
    out = subprocess.run(
        [sys.executable, "-P", "-c", code, *args], capture_output=True, text=True, check=True, timeout=120, env=env
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_paxm_core_loads_none_of_its_submodules() -> None:
    got = _fresh(
        "import sys, json; before = set(sys.modules); import paxm_core;"
        " print(json.dumps({'new': sorted(set(sys.modules) - before)}))"
    )
    # not even typing or importlib: the public names are imported when first used
    assert set(got["new"]) <= {"paxm_core", "__future__"}, got["new"]


def test_every_public_name_resolves_lazily_and_is_cached() -> None:
    got = _fresh(
        "import json, paxm_core; names = list(paxm_core.__all__);"
        " ok = [n for n in names if getattr(paxm_core, n) is not None];"
        " cached = [n for n in names if n in vars(paxm_core)];"
        " ns = {}; exec('from paxm_core import *', ns);"
        " print(json.dumps({'ok': ok, 'cached': cached, 'star': sorted(k for k in ns if k != '__builtins__'),"
        " 'dir': sorted(set(names) - set(dir(paxm_core)))}))"
    )
    names = sorted(paxm_core.__all__)
    assert sorted(got["ok"]) == names  # type: ignore[arg-type]
    assert sorted(got["cached"]) == names  # type: ignore[arg-type]
    assert got["star"] == names
    assert got["dir"] == []
    from paxm_core.api.types import MemoryItem

    assert paxm_core.MemoryItem is MemoryItem


def test_an_unknown_name_is_an_attribute_error() -> None:
    import pytest

    with pytest.raises(AttributeError, match="no attribute 'NoSuchThing'"):
        _ = paxm_core.NoSuchThing  # type: ignore[attr-defined]
    with pytest.raises(ImportError):
        exec("from paxm_core import NoSuchThing", {})


#: the daemon's start and first answer, as ``benchmarks/hook_bench.py``'s in-process probe does
FIRST_ANSWER = """
import json, sys, time
from paxm_core.passive.daemon import HookDaemon
daemon = HookDaemon(sys.argv[1], idle_timeout=60)
daemon.lock.acquire()
daemon._open()
daemon._drain()
raw = json.dumps({"session_id": "s1", "cwd": "/w", "prompt": "what did we decide about the cache?"})
answer = daemon.processor.handle_hook(
    {"v": 2, "event_id": "evt_%d" % time.time_ns(), "target": "claude", "event": "user_input",
     "owner": "", "mode": "text", "captured_at": time.time(), "raw": raw}
)
modules = sorted(sys.modules)
analyzer = sys.modules.get("paxm_provider_sqlite.retrieval.analyzer")
tokenize = sys.modules.get("tokenize")
compiled = {
    # the CJK classes (~6 ms of re's compiler) wait for the first CJK text
    "cjk": analyzer is None or analyzer._cjk_patterns is not None,
    # inspect's text-signature parse (tokenize's big regex, ~5 ms) is not needed by dataclasses
    "tokenize": tokenize is not None and tokenize._compile.cache_info().currsize > 0,
}
from paxm_core.plugins import shared_plugin_manager
# one plugin manager: the runtime's is the one config validation built
shared = daemon.runtime.plugin_manager is shared_plugin_manager()
# the delivery loop starts after the first answer has left (the daemon's _after_answer)
worker_started = daemon.worker._thread is not None
daemon._shutdown()
daemon.lock.release()
print(json.dumps({"ok": bool(answer.get("ok")), "modules": modules, "compiled": compiled, "shared": shared,
                  "worker_started": worker_started}))
"""

#: the provider plugins a default config does not name: only the configured providers' are imported
UNCONFIGURED_PROVIDERS = (
    "paxm_provider_postgres",
    "paxm_provider_mem0",
    "paxm_provider_memos",
    "paxm_provider_zep",
    "paxm_provider_openviking",
    "paxm_provider_jsonrpc",
    "paxm_provider_sqlite_hybrid",
)

#: modules the first answer must not need (top-level package names or exact module names)
NOT_ON_THE_FIRST_ANSWER = (
    "httpx",  # HTTP providers only, and only when built
    "yaml",  # the parsed config is cached
    "click",
    "mcp",
    "tomlkit",  # Codex's installer
    "importlib.metadata",  # the entry-point index is cached
    "decimal",  # envelope.go_float formats plain floats without it
    "secrets",  # tokens and leases come from os.urandom: secrets imports hmac and random
    "hmac",
    "random",
    "concurrent.futures",  # passive.workers: concurrent.futures imports logging (~5 ms with it)
    "logging",
    "socket",  # the unix listener is a bare _socket.socket; the loopback one starts after the answer
    "selectors",
    "base64",  # paxm_core.tools imports it where a session id is made
    "getpass",  # only when $USER is unset (it brings termios)
    "paxm_core.cli",
    "paxm_core.dashboard",
    "paxm_core.backfill",
    "paxm_integration_codex",  # only the harness whose hook arrived is imported
    "paxm_integration_opencode",
    "paxm_integration_pi",
    "paxm_integration_ide",
    *UNCONFIGURED_PROVIDERS,
)


def _first_answer(tmp_path: Path, http_providers: tuple[str, ...] = ()) -> dict[str, object]:
    """The in-process probe's report of a cold start (the second start: caches are written)."""
    from paxm_core.config import load_config, save_config
    from paxm_core.config.model import RouteConfig
    from paxm_core.plugins import installed_provider_catalog

    config_path = tmp_path / "config.yaml"
    config = load_config(config_path, provider_types=installed_provider_catalog())
    config.identity.user_id = "alice"
    config.providers["sqlite"].path = str(tmp_path / "memory.sqlite")
    config.agents["claude"].enabled = True
    for name in http_providers:  # as benchmarks/hook_bench.py's 3-provider start: refused at once
        config.providers[name].enabled = True
        config.providers[name].base_url = "http://127.0.0.1:9"
        if name == "mem0":
            config.providers[name].user_id = "alice"
        for profile in config.recall_profiles.values():
            profile.providers.append(RouteConfig(name=name, required=False, timeout=0.5))
    save_config(config, config_path)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "HOME": str(tmp_path)}
    env.pop("PAXM_LOAD_PLUGINS", None)
    # the first start writes the entry-point index and the parsed-config cache; the second is
    # the cold start every later first prompt sees
    first = _fresh(FIRST_ANSWER, env, str(config_path))
    second = _fresh(FIRST_ANSWER, env, str(config_path))
    assert first["ok"] and second["ok"]
    return second


def test_the_daemons_first_answer_imports_nothing_it_does_not_need(tmp_path: Path) -> None:
    second = _first_answer(tmp_path)
    loaded = set(second["modules"])  # type: ignore[call-overload]
    unwanted = {
        name for name in loaded for banned in NOT_ON_THE_FIRST_ANSWER if name == banned or name.startswith(banned + ".")
    }
    assert not unwanted, sorted(unwanted)
    assert "paxm_integration_claude_code" in loaded  # the harness that asked is there
    assert "paxm_provider_sqlite" in loaded  # the configured provider is there
    assert second["compiled"] == {"cjk": False, "tokenize": False}
    assert second["shared"] is True
    assert second["worker_started"] is False


def test_http_providers_first_answer_loads_their_plugins_and_answers(tmp_path: Path) -> None:
    """Two best-effort HTTP providers whose servers refuse at once: the first answer still comes."""
    second = _first_answer(tmp_path, ("mem0", "memos"))
    loaded = set(second["modules"])  # type: ignore[call-overload]
    assert {"httpx", "paxm_provider_mem0", "paxm_provider_memos"} <= loaded
