"""The self-hosted MemOS provider (``type: memos``): synchronous fast-mode writes, searchable on
return, with paxm's metadata in ``info``; see ``docs/providers/memos.md``.
"""

from __future__ import annotations

from typing import Any

from paxm_core import ConfigError, Deadline, MemoryItem, MemoryRef, ProviderConfig, resolve_secret
from paxm_core.http_client import stored_metadata
from paxm_provider_memos import DEFAULT_CUBE, DEFAULT_TIMEOUT, DEFAULT_USER, SELF_HOSTED_URL, validate_memos
from paxm_provider_memos.base import MemOSBase, MemOSTransport
from paxm_provider_memos.response import memory_ids

__all__ = ["MemOSProvider"]


def item_info(item: MemoryItem, write_id: str) -> dict[str, str]:
    """The string map stored with a memory: item metadata, attribution, lifecycle, paxm ids and the write id."""
    return {**stored_metadata(item), "paxm_write_id": write_id}


class MemOSProvider(MemOSBase):
    """One MemOS user + memory cube on a self-hosted product server."""

    label = "memos"

    def __init__(self, name: str, config: ProviderConfig) -> None:
        super().__init__(name)
        self._user_id = (config.user_id or DEFAULT_USER).strip()
        self._cube = config.text("mem_cube_id", DEFAULT_CUBE)
        problems = validate_memos(config)
        if problems:
            raise ConfigError("; ".join(problems), path=f"providers.{name}")
        self._mode = config.text("search_mode", "fast").lower()
        base_url = (config.base_url or SELF_HOSTED_URL).strip()
        key = resolve_secret(config.api_key)
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._http = MemOSTransport(name, base_url, headers, key, config.timeout or DEFAULT_TIMEOUT)

    def eval_target(self) -> str:
        return self._cube

    def health(self, deadline: Deadline) -> None:
        """``GET /health`` answers 200 with a healthy envelope."""
        self._http.call("health", "GET", "/health", deadline)

    def ensure_target(self, deadline: Deadline) -> tuple[str, str]:
        """Check the server answers and the user/cube is searchable (MemOS creates cubes on first write)."""
        self.health(deadline)
        self._http.call("ensure target", "POST", "/product/search", deadline, self._search_body("paxm setup check", 1))
        return f"{self._user_id}/{self._cube}", "exists"

    def _search_body(self, text: str, top_k: int) -> dict[str, Any]:
        return {
            "query": text,
            "user_id": self._user_id,
            "readable_cube_ids": [self._cube],
            "mode": self._mode,
            "top_k": top_k,
            "relativity": 0,
            "include_preference": False,
            "search_tool_memory": False,
            "include_skill_memory": False,
            "internet_search": False,
        }

    def put(self, item: MemoryItem, deadline: Deadline) -> MemoryRef:
        text, write_id = self._write(item, deadline)
        body = {
            "user_id": self._user_id,
            "writable_cube_ids": [self._cube],
            "async_mode": "sync",
            "mode": "fast",
            "messages": [{"role": "user", "content": text}],
            "info": item_info(item, write_id),
        }
        payload = self._http.call("put", "POST", "/product/add", deadline, body)
        ids = memory_ids(payload.get("data") if isinstance(payload, dict) else payload)
        # fast mode stores one memory per message; without an id the write id is the receipt
        return MemoryRef(self._name, ids[0] if ids else write_id)

    def delete(self, ref: MemoryRef, deadline: Deadline) -> None:
        """Delete by memory id; exactly one delete mode is sent (MemOS rejects mixed modes)."""
        self._delete_ids("delete", [self.own_ref(ref)], deadline)

    def _delete_ids(self, op: str, ids: list[str], deadline: Deadline) -> None:
        body = {"writable_cube_ids": [self._cube], "memory_ids": ids}
        self._http.call(op, "POST", "/product/delete_memory", deadline, body)

    def cleanup_eval_scope(self, deadline: Deadline) -> None:
        """Delete every memory of a dedicated ``paxm-eval-*`` cube (by listing, then deleting ids)."""
        self.eval_only("cube")
        body = {"user_id": self._user_id, "memory_type": "text_mem", "mem_cube_ids": [self._cube]}
        payload = self._http.call("cleanup", "POST", "/product/get_all", deadline, body)
        ids = memory_ids(payload.get("data") if isinstance(payload, dict) else payload)
        if ids:
            self._delete_ids("cleanup", ids, deadline)
