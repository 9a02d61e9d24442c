"""MemOS Cloud (``type: memos-cloud``), on the wire of MemTensor's official client; see ``docs/providers/memos.md``.

An add answers with a task id, so a write's receipt is its own write id; delete is not offered.
"""

from __future__ import annotations

from typing import Any

from paxm_core import ConfigError, Deadline, MemoryItem, MemoryRef, ProviderConfig, resolve_secret
from paxm_core.http_client import checked_url
from paxm_provider_memos import CLOUD_URL, DEFAULT_TIMEOUT, DEFAULT_USER
from paxm_provider_memos.base import MemOSBase, MemOSTransport
from paxm_provider_memos.selfhosted import item_info

__all__ = ["MemOSCloudProvider"]


class MemOSCloudProvider(MemOSBase):
    """One MemOS Cloud user (optionally narrowed to an agent)."""

    label = "memos-cloud"
    base_capabilities = frozenset({"put_batch", "attribution"})
    _source = "memos_cloud"
    _search_path = "/search/memory"

    def __init__(self, name: str, config: ProviderConfig) -> None:
        super().__init__(name)
        key = resolve_secret(config.api_key)
        if not key:
            raise ConfigError(
                "needs an API key: set api_key (or api_key: env:MEMOS_API_KEY)", path=f"providers.{name}.api_key"
            )
        self._user_id = (config.user_id or DEFAULT_USER).strip()
        self._agent_id = config.agent_id.strip()
        base_url = checked_url(name, config.base_url, CLOUD_URL)
        headers = {"Authorization": f"Token {key}", "Content-Type": "application/json"}
        self._http = MemOSTransport(name, base_url, headers, key, config.timeout or DEFAULT_TIMEOUT)

    def _search_body(self, text: str, limit: int) -> dict[str, Any]:
        body: dict[str, Any] = {
            "user_id": self._user_id,
            "query": text,
            "memory_limit_number": limit,
            "include_preference": False,
            "include_tool_memory": False,
        }
        if self._agent_id:
            body["filter"] = {"agent_id": self._agent_id}
        return body

    def health(self, deadline: Deadline) -> None:
        """A one-result search: proves the URL, the key and the user (Cloud has no health route)."""
        self._http.call("health", "POST", "/search/memory", deadline, self._search_body("paxm health check", 1))

    def ensure_target(self, deadline: Deadline) -> tuple[str, str]:
        """Check the key against the user before setup saves (Cloud creates users on first write)."""
        self.health(deadline)
        return self._user_id, "exists"

    def put(self, item: MemoryItem, deadline: Deadline) -> MemoryRef:
        text, write_id = self._write(item, deadline)
        body: dict[str, Any] = {
            "user_id": self._user_id,
            "conversation_id": write_id,
            "messages": [{"role": "user", "content": text}],
            "info": item_info(item, write_id),
            "source": "paxm",
            # synchronous, so what put acknowledged is searchable when it returns
            "async_mode": False,
        }
        if self._agent_id:
            body["agent_id"] = self._agent_id
        self._http.call("put", "POST", "/add/message", deadline, body)
        return MemoryRef(self._name, write_id)
