"""``import paxm_core`` must stay light: hook processes start on every prompt."""

from __future__ import annotations

import json
import subprocess
import sys

FORBIDDEN = ("httpx", "yaml", "click", "mcp", "zep_cloud", "requests", "pydantic", "sqlite3")


def test_import_paxm_core_loads_no_heavy_or_optional_modules() -> None:
    code = "import sys, json, paxm_core; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = {name.split(".")[0] for name in json.loads(out.stdout)}
    assert not loaded & set(FORBIDDEN), loaded & set(FORBIDDEN)


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
