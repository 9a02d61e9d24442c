"""The config model: dataclasses mirroring upstream's ``config.yaml`` schema.

Field names are upstream's YAML keys, so an upstream file loads unchanged.  Durations are
floats in seconds here (``None`` = unset) and Go duration strings (``"250ms"``) on disk.

Field metadata drives (de)serialization in :mod:`paxm_core.config.codec`:

* ``duration``: spelled as a Go duration on disk;
* ``always``: written even when zero/empty (upstream has no ``omitempty`` on it).
"""

from __future__ import annotations

from dataclasses import field
from pathlib import Path

from paxm_core.api.provider_config import ProviderConfig
from paxm_core.api.values import value_dataclass
from paxm_core.config.catalog import NO_PROVIDER_TYPES, ProviderCatalog

__all__ = [
    "OWNER_PAXM",
    "ActiveRecallConfig",
    "AgentConfig",
    "AgentHookConfig",
    "AgentIntegrationConfig",
    "CaptureQueueConfig",
    "LimitsConfig",
    "Config",
    "HookBufferConfig",
    "HookInitialRecallConfig",
    "HookInsertionConfig",
    "HookRecallConfig",
    "HookWriteConfig",
    "IdentityConfig",
    "LegacyHookConfig",
    "LegacyHookEventConfig",
    "ProviderConfig",
    "RankingConfig",
    "RecallProfileConfig",
    "RouteConfig",
    "ScopeConfig",
    "TelemetryConfig",
    "ThresholdsConfig",
    "WorkspaceConfig",
    "PrivacyConfig",
    "FreshnessConfig",
    "WriteProfileConfig",
]

#: ``agents.<name>.integration.owner`` meaning paxm's own hooks (empty means the same); any
#: other owner is one of an integration's ``owners`` (``claude-plugin``...), checked by setup.
OWNER_PAXM = "paxm"

_ALWAYS = {"always": True}
_DURATION = {"duration": True}


@value_dataclass
class IdentityConfig:
    """Who the memories belong to; ``user_id`` defaults to a slug of the OS user."""

    user_id: str = ""


@value_dataclass
class ScopeConfig:
    """A write profile's memory scope, e.g. ``personal:<user>`` or ``team:<id>``."""

    type: str = ""
    id: str = ""


@value_dataclass
class ThresholdsConfig:
    """Minimum relevance/score a hit needs to be returned."""

    min_relevance: float = 0.0
    min_score: float = 0.0


@value_dataclass
class RouteConfig:
    """One provider in a profile: ``required`` failures fail the call; ``timeout`` in seconds."""

    name: str = field(default="", metadata=_ALWAYS)
    required: bool = field(default=False, metadata=_ALWAYS)
    weight: float = 1.0
    timeout: float | None = field(default=None, metadata=_DURATION)
    thresholds: ThresholdsConfig | None = None


@value_dataclass
class RankingConfig:
    """How hits from several providers are merged (``weighted_relevance``)."""

    type: str = ""
    recency_boost: float = 0.0


@value_dataclass
class RecallProfileConfig:
    """A named recall policy (``default``, ``passive``, ``passive_initial`` ...)."""

    providers: list[RouteConfig] = field(default_factory=list)
    max_results: int = 0
    thresholds: ThresholdsConfig = field(default_factory=ThresholdsConfig)
    ranking: RankingConfig = field(default_factory=RankingConfig)
    tiers: list[str] = field(default_factory=list)


@value_dataclass
class WriteProfileConfig:
    """A named write policy (``default``, ``stm``, ``ltm`` ...); ``expires_after`` in seconds."""

    providers: list[RouteConfig] = field(default_factory=list)
    tier: str = ""
    expires_after: float | None = field(default=None, metadata=_DURATION)
    scope: ScopeConfig = field(default_factory=ScopeConfig)


@value_dataclass
class AgentIntegrationConfig:
    """Which installation surface owns the agent's hooks (``paxm`` or an integration's owner name)."""

    owner: str = ""


@value_dataclass
class ActiveRecallConfig:
    """Recall the agent performs on request (MCP tool / CLI)."""

    enabled: bool = field(default=False, metadata=_ALWAYS)
    profile: str = ""
    output: str = ""


@value_dataclass
class HookInsertionConfig:
    """Which passive-recall hits are inserted into the prompt."""

    min_score: float = 0.0
    max_items: int = 0
    require_query_terms: bool = False


@value_dataclass
class HookInitialRecallConfig:
    """The larger recall made on the first prompt of a session."""

    enabled: bool = field(default=False, metadata=_ALWAYS)
    profile: str = ""
    query_template: str = ""
    max_results: int = 0
    timeout: float | None = field(default=None, metadata=_DURATION)
    timeout_extra: float | None = field(default=None, metadata=_DURATION)
    insertion: HookInsertionConfig = field(default_factory=HookInsertionConfig)


@value_dataclass
class HookRecallConfig:
    """Passive recall run by a harness hook event."""

    enabled: bool = field(default=False, metadata=_ALWAYS)
    profile: str = ""
    query_template: str = ""
    max_results: int = 0
    timeout: float | None = field(default=None, metadata=_DURATION)
    timeout_extra: float | None = field(default=None, metadata=_DURATION)
    output: str = ""
    insertion: HookInsertionConfig = field(default_factory=HookInsertionConfig)
    initial: HookInitialRecallConfig | None = None
    #: most characters the injected recall block may have (0: 6000, well under harness limits)
    max_context_chars: int = 0


@value_dataclass
class HookBufferConfig:
    """Buffering of captured events into episodes."""

    enabled: bool = field(default=False, metadata=_ALWAYS)
    flush: bool = False
    flush_count: int = 0


@value_dataclass
class HookWriteConfig:
    """Passive capture run by a harness hook event."""

    enabled: bool = field(default=False, metadata=_ALWAYS)
    profile: str = ""
    template: str = ""
    mode: str = ""
    buffer: HookBufferConfig = field(default_factory=HookBufferConfig)


@value_dataclass
class AgentHookConfig:
    """What one hook event (``user_input``, ``turn_end`` ...) does."""

    recall: HookRecallConfig = field(default_factory=HookRecallConfig)
    write: HookWriteConfig = field(default_factory=HookWriteConfig)


@value_dataclass
class AgentConfig:
    """One coding agent (claude, codex, opencode ...)."""

    enabled: bool = field(default=False, metadata=_ALWAYS)
    agent_id: str = ""
    #: RFC 3339 time passive capture was first switched on; recorded once, never moved.
    passive_write_started_at: str = ""
    integration: AgentIntegrationConfig = field(default_factory=AgentIntegrationConfig)
    active_recall: ActiveRecallConfig = field(default_factory=ActiveRecallConfig)
    hooks: dict[str, AgentHookConfig] = field(default_factory=dict)


@value_dataclass
class LegacyHookEventConfig:
    """Pre-``agents`` schema: ``hooks.<agent>.events.<event>.recall``."""

    recall: HookRecallConfig = field(default_factory=HookRecallConfig)


@value_dataclass
class LegacyHookConfig:
    """Pre-``agents`` schema: top-level ``hooks.<agent>``; normalized into :attr:`Config.agents`."""

    enabled: bool = field(default=False, metadata=_ALWAYS)
    events: dict[str, LegacyHookEventConfig] = field(default_factory=dict)


@value_dataclass
class TelemetryConfig:
    """Local event log and metrics (never leaves the machine)."""

    enabled: bool | None = None
    dir: str = ""
    events_file: str = ""
    metrics_file: str = ""
    max_event_file_bytes: int = 0
    max_event_files: int = 0
    retention_days: int = 0
    capture_query_preview: bool | None = None
    query_preview_chars: int = 0


@value_dataclass
class CaptureQueueConfig:
    """The durable capture queue; ages and backoff in seconds."""

    path: str = ""
    max_episode_age: float | None = field(default=None, metadata=_DURATION)
    retry_min: float | None = field(default=None, metadata=_DURATION)
    max_attempts: int = 0
    provider_concurrency: dict[str, int] = field(default_factory=dict)
    #: ``true`` keeps every write in the daemon; by default large batch writes of providers that
    #: declare ``shared_store`` run in a child process (two cores for a backlog's delivery)
    write_in_process: bool = False


@value_dataclass
class LimitsConfig:
    """Bounds on the active path (``paxm recall`` / ``remember`` and the MCP tools).

    ``0`` / unset means the built-in default (the ``DEFAULT_*`` constants).
    """

    #: largest memory text accepted, in UTF-8 bytes
    max_text_bytes: int = 0
    #: largest recall query accepted, in UTF-8 bytes
    max_query_bytes: int = 0
    #: most characters one hit puts into recall output (longer text is excerpted)
    max_hit_chars: int = 0
    #: seconds each provider route of the active path may take when its route sets no timeout
    route_timeout: float | None = field(default=None, metadata=_DURATION)
    #: seconds one active ``recall`` / ``remember`` may take overall
    deadline: float | None = field(default=None, metadata=_DURATION)
    #: seconds optional (``required: false``) recall routes may still take once the required
    #: ones have answered; later ones are reported skipped
    optional_grace: float | None = field(default=None, metadata=_DURATION)

    DEFAULT_MAX_TEXT_BYTES = 256 * 1024
    DEFAULT_MAX_QUERY_BYTES = 8 * 1024
    DEFAULT_MAX_HIT_CHARS = 4000
    DEFAULT_ROUTE_TIMEOUT = 10.0
    DEFAULT_DEADLINE = 20.0
    DEFAULT_OPTIONAL_GRACE = 1.0

    # The effective values: each setting, or its ``DEFAULT_*`` when unset or not positive.

    @property
    def route_seconds(self) -> float:
        value = self.route_timeout
        return value if value is not None and value > 0 else self.DEFAULT_ROUTE_TIMEOUT

    @property
    def deadline_seconds(self) -> float:
        value = self.deadline
        return value if value is not None and value > 0 else self.DEFAULT_DEADLINE

    @property
    def optional_grace_seconds(self) -> float:
        value = self.optional_grace
        return value if value is not None and value > 0 else self.DEFAULT_OPTIONAL_GRACE

    @property
    def text_bytes(self) -> int:
        return self.max_text_bytes if self.max_text_bytes > 0 else self.DEFAULT_MAX_TEXT_BYTES

    @property
    def query_bytes(self) -> int:
        return self.max_query_bytes if self.max_query_bytes > 0 else self.DEFAULT_MAX_QUERY_BYTES

    @property
    def hit_chars(self) -> int:
        return self.max_hit_chars if self.max_hit_chars > 0 else self.DEFAULT_MAX_HIT_CHARS


@value_dataclass
class WorkspaceConfig:
    """How a directory maps to a workspace, and which projects paxm keeps out of."""

    #: ``project`` (default: the git project root, worktrees shared) or ``directory`` (exact)
    mode: str = ""
    #: glob patterns (``~`` expanded) of directories where paxm captures and recalls nothing
    ignore: list[str] = field(default_factory=list)

    @property
    def effective_mode(self) -> str:
        """``mode`` with the default applied."""
        return self.mode.strip().lower() or "project"


@value_dataclass
class PrivacyConfig:
    """Redaction of secrets before anything is queued or stored."""

    #: extra regular expressions whose matches are redacted (on top of the built-in formats)
    redact_patterns: list[str] = field(default_factory=list)


@value_dataclass
class FreshnessConfig:
    """Freshness against the code, supersession and point-of-action memory (docs/freshness.md).

    Each switch is on unless set to ``false``.
    """

    #: record code anchors at capture and check them before a memory is shown
    enabled: bool | None = None
    #: say when a recalled memory is superseded by a newer one (``superseded_by``)
    supersession: bool | None = None
    #: inject a fresh memory anchored to the file or command a pre-tool hook is about to touch
    point_of_action: bool | None = None

    @property
    def anchors_on(self) -> bool:
        """Anchors are recorded and checked."""
        return self.enabled is not False

    @property
    def supersession_on(self) -> bool:
        """Supersession is shown."""
        return self.supersession is not False

    @property
    def point_of_action_on(self) -> bool:
        """Pre-tool hooks inject anchored memories (needs anchors)."""
        return self.point_of_action is not False and self.anchors_on


@value_dataclass
class PassiveConfig:
    """Per-session economy of passive memory and its holdback (``docs/session-economy.md``, ``docs/impact.md``)."""

    #: ``false`` injects a memory again on every prompt that finds it (default: once per session)
    dedupe: bool | None = None
    #: ``false`` offers nothing again after a compaction (default: the still-relevant memories)
    reoffer_after_compaction: bool | None = None
    #: share of sessions, chosen at session start, that get no passive memory (0 = off, the default)
    holdback: float = 0.0

    @property
    def dedupe_enabled(self) -> bool:
        """``dedupe`` with its default (on)."""
        return self.dedupe is not False

    @property
    def reoffer_enabled(self) -> bool:
        """``reoffer_after_compaction`` with its default (on)."""
        return self.reoffer_after_compaction is not False


@value_dataclass
class Config:
    """The whole paxm configuration.

    ``path`` is where it was (or will be) stored, ``exists`` whether it was read from a file
    and ``provider_types`` what the caller told the loader about installed provider types;
    none of them is serialized.
    """

    version: int = field(default=1, metadata=_ALWAYS)
    identity: IdentityConfig = field(default_factory=IdentityConfig)
    providers: dict[str, ProviderConfig] = field(default_factory=dict, metadata=_ALWAYS)
    recall_profiles: dict[str, RecallProfileConfig] = field(default_factory=dict)
    write_profiles: dict[str, WriteProfileConfig] = field(default_factory=dict)
    agents: dict[str, AgentConfig] = field(default_factory=dict)
    telemetry: TelemetryConfig = field(default_factory=TelemetryConfig)
    capture_queue: CaptureQueueConfig = field(default_factory=CaptureQueueConfig)
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    workspace: WorkspaceConfig = field(default_factory=WorkspaceConfig)
    privacy: PrivacyConfig = field(default_factory=PrivacyConfig)
    freshness: FreshnessConfig = field(default_factory=FreshnessConfig)
    passive: PassiveConfig = field(default_factory=PassiveConfig)
    #: Legacy top-level ``hooks``; folded into ``agents`` by normalization.
    hooks: dict[str, LegacyHookConfig] = field(default_factory=dict)

    path: Path = field(default_factory=Path, metadata={"internal": True}, compare=False)
    exists: bool = field(default=False, metadata={"internal": True}, compare=False)
    #: the installed provider types it was loaded with (defaults, checks and secret keys of each type)
    provider_types: ProviderCatalog = field(
        default=NO_PROVIDER_TYPES, metadata={"internal": True}, compare=False, repr=False
    )

    @property
    def config_dir(self) -> Path:
        """Directory holding the config file."""
        return self.path.parent

    @property
    def hooks_dir(self) -> Path:
        """Directory for hook runtime state (daemon socket, session state, capture queue)."""
        return self.config_dir / "hooks"

    @property
    def capture_queue_path(self) -> Path:
        """The capture queue database: ``capture_queue.path`` or ``<config dir>/hooks/capture.sqlite``."""
        if self.capture_queue.path:
            return Path(self.capture_queue.path).expanduser()
        return self.hooks_dir / "capture.sqlite"

    @property
    def user_id(self) -> str:
        """Shortcut for ``identity.user_id``."""
        return self.identity.user_id

    def enabled_providers(self) -> dict[str, ProviderConfig]:
        """Enabled provider instances by name, in config order."""
        return {name: p for name, p in self.providers.items() if p.enabled}
