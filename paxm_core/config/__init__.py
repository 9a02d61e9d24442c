"""paxm configuration: the model, defaults, locating, loading, validating and saving.

Importing this package loads no YAML library; :func:`load_config` imports it only when a
YAML file is actually read.
"""

from __future__ import annotations

from paxm_core.api.errors import ConfigError
from paxm_core.config.catalog import NO_PROVIDER_TYPES, ProviderCatalog
from paxm_core.config.codec import REDACTED, is_secret_key
from paxm_core.config.defaults import default_config
from paxm_core.config.loader import config_exists, load_config, save_config
from paxm_core.config.model import (
    ActiveRecallConfig,
    AgentConfig,
    AgentHookConfig,
    AgentIntegrationConfig,
    CaptureQueueConfig,
    Config,
    HookBufferConfig,
    HookInitialRecallConfig,
    HookInsertionConfig,
    HookRecallConfig,
    HookWriteConfig,
    IdentityConfig,
    LegacyHookConfig,
    LegacyHookEventConfig,
    LimitsConfig,
    ProviderConfig,
    RankingConfig,
    RecallProfileConfig,
    RouteConfig,
    ScopeConfig,
    TelemetryConfig,
    ThresholdsConfig,
    WriteProfileConfig,
)
from paxm_core.config.paths import default_data_path, default_state_dir, resolve_config_path

__all__ = [
    "NO_PROVIDER_TYPES",
    "REDACTED",
    "ActiveRecallConfig",
    "AgentConfig",
    "AgentHookConfig",
    "AgentIntegrationConfig",
    "CaptureQueueConfig",
    "LimitsConfig",
    "Config",
    "ConfigError",
    "HookBufferConfig",
    "HookInitialRecallConfig",
    "HookInsertionConfig",
    "HookRecallConfig",
    "HookWriteConfig",
    "IdentityConfig",
    "LegacyHookConfig",
    "LegacyHookEventConfig",
    "ProviderCatalog",
    "ProviderConfig",
    "RankingConfig",
    "RecallProfileConfig",
    "RouteConfig",
    "ScopeConfig",
    "TelemetryConfig",
    "ThresholdsConfig",
    "WriteProfileConfig",
    "config_exists",
    "default_config",
    "default_data_path",
    "default_state_dir",
    "is_secret_key",
    "load_config",
    "resolve_config_path",
    "save_config",
]
