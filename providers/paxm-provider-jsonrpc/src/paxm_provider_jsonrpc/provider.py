"""The ``jsonrpc`` provider: paxm's provider contract mapped onto a plugin executable."""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from paxm_core import (
    CAP_ATTRIBUTION,
    CAP_DELETE,
    CAP_PUT_BATCH,
    ConfigError,
    Deadline,
    MemoryHit,
    MemoryItem,
    MemoryRef,
    PaxmError,
    ProviderConfig,
    ProviderError,
    SearchQuery,
    restore_attribution,
    sync_attribution,
)
from paxm_provider_jsonrpc import DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_TIMEOUT, validate
from paxm_provider_jsonrpc.transport import METHOD_NOT_FOUND, RpcError, StdioTransport

__all__ = ["CAPABILITY_PROBE_TIMEOUT", "JsonRpcProvider", "PluginCapabilities"]

#: Longest wait for ``paxm.capabilities`` when asked without a deadline.
CAPABILITY_PROBE_TIMEOUT = 2.0
#: After a failed probe, seconds before the plugin is asked again.
CAPABILITY_RETRY_AFTER = 60.0

HEALTH = "paxm.health"
SEARCH = "paxm.search"
PUT = "paxm.put"
PUT_BATCH = "paxm.putBatch"
DELETE = "paxm.delete"
CAPABILITIES = "paxm.capabilities"


@dataclass(frozen=True, slots=True)
class PluginCapabilities:
    """What a plugin advertises through ``paxm.capabilities`` (all false for legacy plugins)."""

    put_batch: bool = False
    delete: bool = False
    attribution: bool = False

    def names(self) -> frozenset[str]:
        pairs = ((CAP_PUT_BATCH, self.put_batch), (CAP_DELETE, self.delete), (CAP_ATTRIBUTION, self.attribution))
        return frozenset(name for name, on in pairs if on)


def _configured_secrets(config: ProviderConfig, env: Mapping[str, str]) -> list[str]:
    """Every credential value this instance is configured with (redacted from plugin errors).

    The same keys paxm redacts in ``config show``: ``api_key`` and secret-looking extra keys,
    plus ``env`` entries whose name looks like a credential (``*_KEY``, ``*TOKEN*`` ...).
    """
    from paxm_core import is_secret_option
    from paxm_core.api.provider_config import resolve_secret

    values = [config.api_key]
    values += [str(v) for k, v in config.extra.items() if is_secret_option(str(k)) and isinstance(v, str)]
    values += [v for k, v in env.items() if is_secret_option(k)]
    out: set[str] = set()
    for value in values:
        for candidate in (value, resolve_secret(value)):
            if candidate and len(candidate.strip()) >= 4:  # shorter values would redact ordinary words
                out.add(candidate.strip())
    return sorted(out, key=len, reverse=True)


def _resolve_command(command: str) -> str:
    """``~`` expanded; a relative path (``./plugin``) made absolute against the working directory.

    ``Path("./plugin")`` drops the ``./``, which turns a file beside the user into a ``PATH``
    lookup; a bare name (no slash) is that lookup on purpose.  A config file's relative
    ``command`` arrives already resolved against the config's directory (config normalizing).
    """
    expanded = os.path.expanduser(command)
    if os.sep not in expanded and not (os.altsep and os.altsep in expanded):
        return expanded
    return os.path.abspath(expanded)


class JsonRpcProvider:
    """A provider backed by an external executable speaking JSON-RPC provider protocol v1."""

    def __init__(self, name: str, config: ProviderConfig) -> None:
        if not name.strip():
            raise ConfigError("jsonrpc provider name is required")
        where = f"providers.{name}"
        problems = validate(config)
        if problems:
            raise ConfigError(problems[0], path=f"{where}.transport")
        command = config.command.strip()
        if not command:
            raise ConfigError("a jsonrpc provider needs a command (the plugin executable)", path=f"{where}.command")
        timeout = DEFAULT_TIMEOUT if config.timeout is None else float(config.timeout)
        if not timeout > 0:
            raise ConfigError('timeout must be a positive duration like "10s"', path=f"{where}.timeout")
        max_bytes = config.extra.get("max_response_bytes", DEFAULT_MAX_RESPONSE_BYTES)
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes <= 0:
            raise ConfigError("max_response_bytes must be a positive integer", path=f"{where}.max_response_bytes")
        if not all(isinstance(arg, str) for arg in config.args):
            raise ConfigError("args must be a list of strings", path=f"{where}.args")
        env = {str(k).strip(): str(v) for k, v in config.env.items() if str(k).strip()}
        self._name = name
        self._transport = StdioTransport(
            name,
            _resolve_command(command),
            config.args,
            env,
            timeout,
            max_bytes,
            secrets=_configured_secrets(config, env),
        )
        self._capabilities: PluginCapabilities | None = None
        self._capabilities_lock = threading.Lock()
        self._capabilities_retry_at = 0.0

    @property
    def name(self) -> str:
        return self._name

    @property
    def timeout(self) -> float:
        """Seconds each plugin process may take (configured, default 30)."""
        return self._transport.timeout

    def _bad_result(self, method: str, message: str) -> ProviderError:
        return ProviderError(self._name, method, f"malformed result: {message}")

    # -- required -------------------------------------------------------------------------

    def health(self, deadline: Deadline) -> None:
        """Any successful ``paxm.health`` result means healthy."""
        self._transport.call(HEALTH, {}, deadline)

    def search(self, query: SearchQuery, deadline: Deadline) -> list[MemoryHit]:
        """Search the plugin; hits are stamped with this instance's name and attribution restored."""
        return [restore_attribution(hit.copy(provider=self._name)) for hit in self.search_wire(query, deadline)]

    def search_wire(self, query: SearchQuery, deadline: Deadline) -> list[MemoryHit]:
        """The plugin's hits as sent, before attribution is restored (used by conformance)."""
        raw_hits = self._listed(SEARCH, self._transport.call(SEARCH, query.to_json(), deadline), "hits", "hits")
        hits: list[MemoryHit] = []
        for index, raw in enumerate(raw_hits):
            try:
                hit = MemoryHit.from_json(raw)
            except ValueError as exc:
                raise self._bad_result(SEARCH, f"hit {index}: {exc}") from None
            if not hit.id:
                raise self._bad_result(SEARCH, f"hit {index} has no id")
            # Rejected, not clamped: a plugin that sends 50 has a bug the author must see; the
            # contract suite (check_scores) fails the same plugin for the same reason.
            for field_name in ("relevance", "score"):
                value = getattr(hit, field_name)
                if not (math.isfinite(value) and 0.0 <= value <= 1.0):
                    raise self._bad_result(
                        SEARCH,
                        f"hit {index}: {field_name} {value!r} is outside [0, 1]; normalize it and keep the "
                        "backend's own value in raw_score (with raw_score_kind)",
                    )
            hits.append(hit)
        return hits

    def put(self, item: MemoryItem, deadline: Deadline) -> MemoryRef:
        """Store one item through ``paxm.put``; the plugin's ref gets this instance's name."""
        refs = self._refs(PUT, self._transport.call(PUT, sync_attribution(item).to_json(), deadline))
        if not refs:
            raise self._bad_result(PUT, "the plugin did not return a memory ref")
        return refs[0]

    # -- capabilities ---------------------------------------------------------------------

    def put_batch(self, items: Sequence[MemoryItem], deadline: Deadline) -> list[MemoryRef]:
        """``paxm.putBatch``; on ``-32601`` falls back to one ``paxm.put`` per item (stops at the first error)."""
        if not items:
            return []
        prepared = [sync_attribution(item).to_json() for item in items]
        try:
            result = self._transport.call(PUT_BATCH, {"items": prepared}, deadline)
        except RpcError as exc:
            if exc.code != METHOD_NOT_FOUND:
                raise
            return [self.put(item, deadline) for item in items]
        refs = self._refs(PUT_BATCH, result)
        if len(refs) != len(items):
            # Refs are matched to items by position; a short list cannot be trusted.
            raise self._bad_result(PUT_BATCH, f"{len(refs)} refs for {len(items)} items")
        return refs

    def delete(self, ref: MemoryRef, deadline: Deadline) -> None:
        """``paxm.delete`` with the ref; a successful answer means the memory is gone."""
        if not ref.id.strip():
            raise ProviderError(self._name, DELETE, "delete needs a memory ref id")
        self._transport.call(DELETE, {"provider": self._name, "id": ref.id}, deadline)

    def plugin_capabilities(self, deadline: Deadline) -> PluginCapabilities:
        """Ask the plugin (``-32601`` = a legacy plugin with no optional capabilities)."""
        try:
            result = self._transport.call(CAPABILITIES, {}, deadline)
        except RpcError as exc:
            if exc.code == METHOD_NOT_FOUND:
                return PluginCapabilities()
            raise
        if result is None:
            return PluginCapabilities()
        if not isinstance(result, dict):
            raise self._bad_result(CAPABILITIES, "expected an object of booleans")
        flags: dict[str, bool] = {}
        for key in ("put_batch", "delete", "attribution"):
            value = result.get(key, False)
            if value is None:
                value = False
            if not isinstance(value, bool):
                raise self._bad_result(CAPABILITIES, f"{key} must be true or false")
            flags[key] = value
        return PluginCapabilities(**flags)

    def capabilities(self) -> frozenset[str]:
        """Capability names advertised by the plugin, asked once and cached.

        This is called without a deadline (e.g. by the router while closing), so the probe
        gets at most :data:`CAPABILITY_PROBE_TIMEOUT` seconds.  A plugin that cannot answer
        is treated as advertising nothing for :data:`CAPABILITY_RETRY_AFTER` seconds; writes
        still work through the single-put fallback meanwhile.
        """
        with self._capabilities_lock:
            now = time.monotonic()
            if self._capabilities is None and now >= self._capabilities_retry_at:
                try:
                    probe = Deadline.after(min(self.timeout, CAPABILITY_PROBE_TIMEOUT))
                    self._capabilities = self.plugin_capabilities(probe)
                except PaxmError:
                    self._capabilities_retry_at = now + CAPABILITY_RETRY_AFTER
            return self._capabilities.names() if self._capabilities is not None else frozenset()

    # -- helpers --------------------------------------------------------------------------

    def _listed(self, method: str, result: Any, key: str, wanted: str) -> list[Any]:
        """The list ``result[key]`` (``[]`` for a null result or key); a malformed result raises."""
        if result is None:
            return []
        if not isinstance(result, dict):
            raise self._bad_result(method, f"expected an object with {wanted}")
        value = result.get(key)
        if value is not None and not isinstance(value, list):
            raise self._bad_result(method, f"{key} must be a list")
        return value or []

    def _refs(self, method: str, result: Any) -> list[MemoryRef]:
        raw = self._listed(method, result, "refs", "ref or refs")
        if result is not None and result.get("ref") is not None:
            raw = [result["ref"], *raw]
        refs: list[MemoryRef] = []
        for index, value in enumerate(raw):
            if not isinstance(value, dict):
                raise self._bad_result(method, f"ref {index} must be an object")
            ref_id = value.get("id")
            if not isinstance(ref_id, str) or not ref_id.strip():
                raise self._bad_result(method, f"ref {index} needs a non-empty string id")
            refs.append(MemoryRef(self._name, ref_id))
        return refs

    def close(self) -> None:
        """Kill the plugin processes of calls still running (none outlives paxm); later calls fail."""
        self._transport.close()

    def __repr__(self) -> str:
        return f"JsonRpcProvider({self._name!r}, command={self._transport.command!r})"
