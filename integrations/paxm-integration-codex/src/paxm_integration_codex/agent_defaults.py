"""Upstream's default ``agents.codex`` settings, as raw config data (the YAML shape)."""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["codex_agent_defaults"]


def _write(mode: str, *, flush: bool = False) -> dict[str, Any]:
    buffer: dict[str, Any] = {"enabled": True, "flush_count": 10}
    if flush:
        buffer["flush"] = True
    return {"enabled": True, "profile": "ltm", "template": "{{ .safe_text }}", "mode": mode, "buffer": buffer}


_DEFAULTS: dict[str, Any] = {
    "enabled": True,
    "active_recall": {"enabled": True, "profile": "default", "output": "markdown"},
    "hooks": {
        "session_start": {"write": _write("session_start")},
        "user_input": {
            "recall": {
                "enabled": True,
                "profile": "passive",
                "query_template": "{{ .prompt }}",
                "max_results": 2,
                "timeout_extra": "100ms",
                "output": "markdown",
                "insertion": {"min_score": 0.8, "max_items": 2, "require_query_terms": True},
                "initial": {
                    "enabled": True,
                    "profile": "passive_initial",
                    "max_results": 5,
                    "insertion": {"min_score": 0.35, "max_items": 5},
                },
            },
            "write": _write("user_input"),
        },
        "turn_end": {"write": _write("turn_end", flush=True)},
    },
}


def codex_agent_defaults() -> dict[str, Any]:
    """A fresh copy: session start write, prompt recall (first prompt: wider) + write, turn-end write."""
    return copy.deepcopy(_DEFAULTS)
