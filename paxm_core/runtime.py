"""The runtime: config -> plugin manager -> providers -> router -> tools.

One :class:`Runtime` per CLI invocation (or MCP server / hook daemon lifetime).  Only
*enabled* providers are built; a provider is "required" for health and for policies without
routes when any profile marks it required.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from paxm_core.api.errors import ConfigError, PaxmError
from paxm_core.router import PutPolicy, Router, SearchPolicy, profiles
from paxm_core.session_sequence import SessionSequenceStore
from paxm_core.tools import Tools, cli_session_id

if TYPE_CHECKING:
    from paxm_core.api.protocols import Provider
    from paxm_core.config import Config
    from paxm_core.plugins import PaxmPluginManager
    from paxm_core.telemetry.recorder import Telemetry

__all__ = ["Runtime", "session_sequence_path"]


def session_sequence_path(config: Config) -> Path:
    """``<telemetry dir>/session-sequences.sqlite`` (state dir beside a non-default config)."""
    from paxm_core.telemetry.settings import TelemetrySettings

    return TelemetrySettings.from_config(config).dir / "session-sequences.sqlite"


def _load_telemetry(config: Config) -> Telemetry | None:
    try:
        from paxm_core.telemetry import Telemetry

        return Telemetry(config)
    except Exception:  # telemetry is optional; it must never stop memory from working
        return None


class Runtime:
    """Everything one paxm process needs to recall and remember."""

    def __init__(self, config: Config, plugin_manager: PaxmPluginManager, router: Router, tools: Tools) -> None:
        self.config = config
        self.plugin_manager = plugin_manager
        self.router = router
        self.tools = tools

    @classmethod
    def load(
        cls,
        config_path: str | None = None,
        *,
        plugin_manager: PaxmPluginManager | None = None,
        config: Config | None = None,
        telemetry: Any = True,
        sequence_path: str | Path | None = None,
    ) -> Runtime:
        """Load config (unless given), plugins (unless given), build providers, router and tools.

        :param telemetry: ``True`` builds ``paxm_core.telemetry.Telemetry`` when installed,
            ``None``/``False`` disables it, any other object is used as the sink.
        :param sequence_path: session-sequence store override (default
            :func:`session_sequence_path`).
        """
        if config is None:
            from paxm_core.config import load_config, resolve_config_path
            from paxm_core.plugins import installed_provider_catalog

            # the hook daemon's parsed-config cache (<config dir>/hooks): while the file is
            # unchanged, `paxm recall`/`remember` and `mcp serve` skip importing the YAML parser
            hooks_dir = resolve_config_path(config_path).parent / "hooks"
            # without a config file, the disabled backends the built-in config lists (which
            # import every provider plugin) are for `paxm config`/doctor, not for a runtime
            catalog = installed_provider_catalog(listed=False)
            config = load_config(config_path, provider_types=catalog, parse_cache=hooks_dir)
        if plugin_manager is None:
            # the lazy manager config validation already filled: a provider's plugin is
            # imported when the config names its type, an integration's when one is asked for
            from paxm_core.plugins import shared_plugin_manager

            plugin_manager = shared_plugin_manager()
        providers = cls._build_providers(config, plugin_manager)
        store = SessionSequenceStore(sequence_path or session_sequence_path(config))  # opened on first write
        router = Router(providers, profiles.required_providers(config), sequence_allocator=store)
        sink = _load_telemetry(config) if telemetry is True else (telemetry or None)
        tools = Tools(config, router, telemetry=sink)
        return cls(config, plugin_manager, router, tools)

    @staticmethod
    def _build_providers(config: Config, pm: PaxmPluginManager) -> dict[str, Provider]:
        built: dict[str, Provider] = {}
        try:
            for name, provider_config in config.enabled_providers().items():
                kind = (provider_config.type or name).strip()
                spec = pm.provider_type(kind)
                try:
                    built[name] = spec.factory(name, provider_config)
                except PaxmError:
                    raise
                except Exception as exc:
                    raise ConfigError(f"cannot start provider {name!r} (type {kind}): {exc}") from exc
        except BaseException:
            for provider in built.values():
                close = getattr(provider, "close", None)
                if callable(close):
                    try:
                        close()
                    except Exception:
                        pass
            raise
        return built

    def search_policy(self, profile: str | None = None, limit: int | None = None) -> SearchPolicy:
        """Recall profile -> :class:`SearchPolicy`."""
        return profiles.search_policy(self.config, profile, limit)

    def put_policy(self, profile: str | None = None) -> PutPolicy:
        """Write profile -> :class:`PutPolicy`."""
        return profiles.put_policy(self.config, profile)

    def cli_session_id(self, workspace: str | None = None) -> str:
        """The stable active session of the CLI in ``workspace`` (default: the current directory)."""
        if workspace is None:
            try:
                workspace = os.getcwd()
            except OSError:
                workspace = "unknown"
        return cli_session_id(self.config.identity.user_id, str(self.config.path), workspace)

    def close(self) -> None:
        """Close the router (providers, sequence store, worker threads)."""
        self.router.close()

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
