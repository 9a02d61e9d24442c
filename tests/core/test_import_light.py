"""``import paxm_core`` must stay light: hook processes start on every prompt."""

from __future__ import annotations

import json
import subprocess
import sys

FORBIDDEN = (
    "httpx",
    "yaml",
    "click",
    "mcp",
    "zep_cloud",
    "requests",
    "pydantic",
    "sqlite3",
    "starlette",
    "uvicorn",
    "anyio",
)


def test_import_paxm_core_loads_no_heavy_or_optional_modules() -> None:
    code = "import sys, json, paxm_core; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = {name.split(".")[0] for name in json.loads(out.stdout)}
    assert not loaded & set(FORBIDDEN), loaded & set(FORBIDDEN)


def test_dashboard_is_loaded_only_by_its_command() -> None:
    # The dashboard pulls in Starlette and uvicorn: neither the package, the hook path nor the
    # CLI's other commands may import it.
    code = (
        "import sys, json, paxm_core, paxm_core.passive.daemon, paxm_core.cli, paxm_core.cli.memory_cmds;"
        " print(json.dumps(sorted(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(json.loads(out.stdout))
    assert not {m for m in loaded if m.startswith("paxm_core.dashboard")}, loaded
    assert not {m.split(".")[0] for m in loaded} & {"starlette", "uvicorn"}
    help_out = subprocess.run(
        [sys.executable, "-c", "import sys; from paxm_core.cli import main; main(['dashboard', '--help'])"],
        capture_output=True,
        text=True,
    )
    assert help_out.returncode == 0 and "--addr" in help_out.stdout


def test_public_api_is_declared() -> None:
    import paxm_core

    for name in paxm_core.__all__:
        assert hasattr(paxm_core, name), name
    for required in (
        "MemoryItem",
        "MemoryHit",
        "MemoryRef",
        "SearchQuery",
        "MemoryOrigin",
        "MemoryScope",
        "Provider",
        "SupportsPutBatch",
        "PaxmError",
        "ProviderError",
        "hookimpl",
        "Deadline",
    ):
        assert required in paxm_core.__all__


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}; import sys, json; print(json.dumps(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
    )
    return {name.split(".")[0] for name in json.loads(out.stdout)}


def test_the_daemon_loads_plugins_without_their_installers_or_sdks() -> None:
    # The hook daemon registers every installed plugin; an integration's installer (Codex's
    # TOML editor) is imported when it installs, an HTTP provider's client when it is built.
    loaded = _modules_after("from paxm_core.plugins import get_plugin_manager; get_plugin_manager().integrations()")
    assert "tomlkit" not in loaded
    assert "paxm_integration_codex" in loaded  # registered all the same


def test_http_providers_import_httpx_without_its_command_line_client() -> None:
    loaded = _modules_after(
        "import paxm_provider_mem0.selfhosted, paxm_provider_memos.selfhosted, paxm_provider_openviking.provider"
    )
    assert "httpx" in loaded
    assert not loaded & {"click", "pygments", "rich"}, loaded & {"click", "pygments", "rich"}
