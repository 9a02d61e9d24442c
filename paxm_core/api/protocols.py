"""The provider contract: one required protocol and small optional capabilities.

Providers are synchronous and thread-safe; the router runs them on threads and hands each
call a :class:`~paxm_core.api.deadline.Deadline`.  Relevance and score are higher-is-better in
``[0, 1]``.  Capabilities are ``@runtime_checkable`` protocols; ``isinstance`` only proves a
method name exists, so the contract suite calls every capability it sees.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from paxm_core.api.values import value_dataclass

if TYPE_CHECKING:
    from paxm_core.api.deadline import Deadline
    from paxm_core.api.provider_config import ProviderConfig
    from paxm_core.api.types import MemoryHit, MemoryItem, MemoryRef, SearchQuery

__all__ = [
    "CAP_ATTRIBUTION",
    "CAP_CLEANUP_EXPIRED",
    "CAP_CLOSE",
    "CAP_DEADLINE_BOUND",
    "CAP_DELETE",
    "CAP_EVAL_SCOPE",
    "CAP_LARGE_BATCHES",
    "CAP_PUT_BATCH",
    "CAP_TURN_BOUNDARIES",
    "DECLARED_CAPABILITIES",
    "DYNAMIC_CAPABILITIES",
    "LOCALITIES",
    "ConfigKey",
    "Provider",
    "ProviderFactory",
    "ProviderType",
    "SupportsCapabilities",
    "SupportsCleanupExpired",
    "SupportsClose",
    "SupportsDelete",
    "SupportsEnsureTarget",
    "SupportsEvalScopeCleanup",
    "SupportsPutBatch",
    "SupportsTurnBoundaries",
    "capabilities_of",
]

CAP_PUT_BATCH = "put_batch"
CAP_DELETE = "delete"
CAP_CLEANUP_EXPIRED = "cleanup_expired"
CAP_CLOSE = "close"
CAP_TURN_BOUNDARIES = "turn_boundaries"
CAP_EVAL_SCOPE = "eval_scope_cleanup"
CAP_ATTRIBUTION = "attribution"
#: Declared (through :class:`SupportsCapabilities`) by a provider that runs in-process and
#: returns from every call by its :class:`~paxm_core.api.deadline.Deadline` on its own: no blocking
#: I/O without a timeout taken from the deadline, long work interrupted at it (the SQLite
#: provider's progress handler).  A promise about the provider, kept for compatibility: the
#: router runs every call on the provider's bulkhead lane whether or not it is declared.
CAP_DEADLINE_BOUND = "deadline_bound"
#: Declared by a provider whose ``put_batch`` costs per item, not per call, and takes
#: :data:`~paxm_core.capture.batch.LARGE_DELIVERY_BATCH` items in one call well inside a
#: delivery's timeout, with no request-size limit (a local database).  The delivery worker then
#: drains a backlog into it in batches of that size instead of
#: :data:`~paxm_core.capture.batch.DEFAULT_DELIVERY_BATCH`: a batch's fixed costs (a claim's
#: per-session reads, its transactions, the index pages they rewrite, a hand-off) are spread
#: over four times as many episodes.  A network service must not declare it.
CAP_LARGE_BATCHES = "large_batches"

#: Capabilities a :class:`SupportsCapabilities` provider may withhold at run time.
DYNAMIC_CAPABILITIES = frozenset({CAP_PUT_BATCH, CAP_DELETE, CAP_ATTRIBUTION, CAP_EVAL_SCOPE})
#: Capabilities that exist only by declaration (no method proves them).
DECLARED_CAPABILITIES = frozenset({CAP_ATTRIBUTION, CAP_DEADLINE_BOUND, CAP_LARGE_BATCHES})


@runtime_checkable
class Provider(Protocol):
    """A memory store.

    ``name`` is the configured instance name and is stamped on every ref and hit.
    """

    @property
    def name(self) -> str:
        """The instance name from config (``providers.<name>``)."""
        ...

    def search(self, query: SearchQuery, deadline: Deadline) -> list[MemoryHit]:
        """Return hits for ``query``, best first, with relevance/score in ``[0, 1]``.

        :param query: the text, candidate limit, runtime metadata (never a filter), explicit
            filters and tiers.
        :param deadline: raise :class:`~paxm_core.api.errors.DeadlineExceeded` or a
            :class:`~paxm_core.api.errors.ProviderError` rather than run past it.
        """
        ...

    def put(self, item: MemoryItem, deadline: Deadline) -> MemoryRef:
        """Store one item and return its ref (``ref.provider == self.name``)."""
        ...

    def health(self, deadline: Deadline) -> None:
        """Return if the provider is usable; raise :class:`~paxm_core.api.errors.ProviderError` if not."""
        ...


@runtime_checkable
class SupportsPutBatch(Protocol):
    """Stores several items in one call; refs come back in item order."""

    def put_batch(self, items: Sequence[MemoryItem], deadline: Deadline) -> list[MemoryRef]: ...


@runtime_checkable
class SupportsDelete(Protocol):
    """Deletes one memory by ref (``paxm forget``, eval cleanup).

    A missing id is not an error.  A provider that can tell returns ``True`` (the memory was
    there and is gone) or ``False`` (no such memory); ``None`` means "done, existence unknown"
    (a remote API that answers every delete the same way), which ``paxm forget`` reports as
    ``accepted``.
    """

    def delete(self, ref: MemoryRef, deadline: Deadline) -> bool | None: ...


@runtime_checkable
class SupportsCleanupExpired(Protocol):
    """Deletes up to ``limit`` expired memories and returns how many went."""

    def cleanup_expired(self, limit: int, deadline: Deadline) -> int: ...


@runtime_checkable
class SupportsClose(Protocol):
    """Releases connections/handles; later calls fail with a clear error."""

    def close(self) -> None: ...


@runtime_checkable
class SupportsTurnBoundaries(Protocol):
    """Stores a whole captured turn as one memory (no splitting needed)."""

    def preserve_turn_boundaries(self) -> bool: ...


@runtime_checkable
class SupportsEvalScopeCleanup(Protocol):
    """Removes an isolated eval scope wholesale (e.g. a ``paxm-eval-*`` graph)."""

    def cleanup_eval_scope(self, deadline: Deadline) -> None: ...


@runtime_checkable
class SupportsCapabilities(Protocol):
    """Reports capabilities known only at run time (e.g. a JSON-RPC plugin's advertisement).

    The returned set narrows what the static protocols suggest for the capabilities in
    :data:`DYNAMIC_CAPABILITIES`: a provider with a ``delete`` method that does not list
    ``"delete"`` here does not support delete (a Zep user graph, likewise, has a
    ``cleanup_eval_scope`` method but no eval scope to clean).
    """

    def capabilities(self) -> frozenset[str]: ...


def capabilities_of(provider: object) -> frozenset[str]:
    """The capability names ``provider`` claims, combining protocols and :class:`SupportsCapabilities`."""
    protocols = (
        (CAP_PUT_BATCH, SupportsPutBatch),
        (CAP_DELETE, SupportsDelete),
        (CAP_CLEANUP_EXPIRED, SupportsCleanupExpired),
        (CAP_CLOSE, SupportsClose),
        (CAP_EVAL_SCOPE, SupportsEvalScopeCleanup),
    )
    found = {name for name, protocol in protocols if isinstance(provider, protocol)}
    if isinstance(provider, SupportsTurnBoundaries) and provider.preserve_turn_boundaries():
        found.add(CAP_TURN_BOUNDARIES)
    if isinstance(provider, SupportsCapabilities):
        declared = provider.capabilities()
        found = {c for c in found if c not in DYNAMIC_CAPABILITIES or c in declared} | (
            declared & DECLARED_CAPABILITIES
        )
    return frozenset(found)


ProviderFactory = Callable[[str, "ProviderConfig"], Provider]
"""Builds one provider instance from its name and config; imports any SDK lazily."""


@value_dataclass(frozen=True)
class ConfigKey:
    """One configuration key a provider type understands (``providers.<name>.<key>``).

    Setup asks for the keys with ``ask=True``, masks ``secret`` ones, and the core never
    prints or logs a secret's value.

    :param name: the YAML key.
    :param description: one line shown by setup and ``paxm plugins --json``.
    :param kind: ``str``, ``int``, ``float``, ``bool``, ``duration`` or ``list``.
    :param secret: a credential (accepts ``env:NAME`` references).
    :param required: a value must be set for the provider to work.
    :param ask: interactive setup asks for it.
    :param default: the value used when the key is absent (shown as setup's default).
    :param choices: allowed values, when the key is an enumeration.
    """

    name: str
    description: str = ""
    kind: str = "str"
    secret: bool = False
    required: bool = False
    ask: bool = False
    default: object = None
    choices: tuple[str, ...] = ()


#: ``ProviderType.locality`` values: runs on this machine, a keyed self-hosted/remote API, a vendor cloud.
LOCALITIES = ("local", "keyed", "cloud")


@value_dataclass(frozen=True)
class ProviderType:
    """What a plugin registers through ``paxm_register_providers``: a provider type that describes itself.

    :param type: the ``type:`` string in config (``sqlite``, ``zep``, ``jsonrpc``...).
    :param factory: ``(instance_name, provider_config) -> Provider``.
    :param description: one line shown by ``paxm plugins``.
    :param capabilities: capability names the type declares (documentation and contract tests).
    :param config_keys: the keys it reads; setup asks the ``ask`` ones and masks ``secret`` ones.
    :param locality: ``local``, ``keyed`` or ``cloud`` (decides setup's questions and default budgets).
    :param passive_timeout: default passive (hook) recall route timeout in seconds; ``None`` = the core's.
    :param validate: ``(provider_config) -> problems``; each problem is one clear sentence.
    :param package: the distribution that provides the type (named in "not installed" errors).
    :param setup_priority: order in setup's provider list (lower first).
    :param normalize: ``(provider_config) -> None``: fills the type's defaults in place (a default
        URL, an enumeration's canonical spelling); runs whenever a config is loaded or saved.
    :param default_entry: the disabled entry the built-in default config lists for this type,
        under the instance name ``type`` with ``-`` as ``_`` (``None``: not listed).
    """

    type: str
    factory: ProviderFactory
    description: str = ""
    capabilities: frozenset[str] = field(default_factory=frozenset)
    config_keys: tuple[ConfigKey, ...] = ()
    locality: str = "local"
    passive_timeout: float | None = None
    validate: Callable[[ProviderConfig], list[str]] | None = None
    package: str = ""
    setup_priority: int = 100
    normalize: Callable[[ProviderConfig], None] | None = None
    default_entry: ProviderConfig | None = field(default=None, compare=False)  # a mutable value: not hashed

    @property
    def secret_keys(self) -> frozenset[str]:
        """Names of the keys whose values are credentials."""
        return frozenset(k.name for k in self.config_keys if k.secret)


@runtime_checkable
class SupportsEnsureTarget(Protocol):
    """A set-up step: create or find the remote user/graph/collection before setup saves a config.

    Returns ``(target_id, "created" | "exists")``; raises ``ProviderError`` (a wrong key, say),
    which stops setup with nothing written.
    """

    def ensure_target(self, deadline: Deadline) -> tuple[str, str]: ...
