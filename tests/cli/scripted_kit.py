"""A paxm config with a required SQLite provider and a scripted JSON-RPC plugin beside it (it
hangs, fails or answers as ``mode`` says), and ``paxm`` runs against it, timed."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

PAXM = [sys.executable, "-c", "from paxm_core.cli import main; main()"]
SCRIPTED = Path(__file__).parents[2] / "providers" / "paxm-provider-jsonrpc" / "tests" / "plugins" / "scripted.py"


def scripted_config(
    tmp_path: Path, name: str, *, mode: str = "hang", required: bool = False, limits: dict[str, str] | None = None
) -> Path:
    """``tmp_path/cfg/config.json``: SQLite (required) and the scripted plugin ``name`` in the
    default recall and write profiles; the plugin keeps its store in ``tmp_path/<name>.json``."""
    path = tmp_path / "cfg" / "config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    plugin = {"name": name, "required": required}
    text: dict[str, object] = {
        "version": 1,
        "identity": {"user_id": "alice"},
        "providers": {
            "sqlite": {"type": "sqlite", "enabled": True, "path": str(tmp_path / "memory.sqlite")},
            name: {
                "type": "jsonrpc",
                "enabled": True,
                "command": sys.executable,
                "args": [str(SCRIPTED)],
                "env": {"SCRIPTED_MODE": mode, "SCRIPTED_STORE": str(tmp_path / f"{name}.json")},
                "timeout": "60s",
            },
        },
        "recall_profiles": {"default": {"providers": [{"name": "sqlite", "required": True}, plugin]}},
        "write_profiles": {"default": {"providers": [{"name": "sqlite", "required": True}, plugin]}},
    }
    if limits:
        text["limits"] = limits
    path.write_text(json.dumps(text))
    return path


def paxm_timed(config: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """``paxm --config config ARGS`` in a fresh process, and its wall time in seconds."""
    started = time.monotonic()
    out = subprocess.run([*PAXM, "--config", str(config), *args], capture_output=True, text=True, timeout=120)
    return out, time.monotonic() - started
