"""Plugin loading: entry points of group ``paxm``, each loaded in isolation.

A plugin that fails to import or register is recorded and reported by ``paxm plugins``; it
never stops paxm.  ``PAXM_LOAD_PLUGINS`` (comma-separated entry-point names) allow-lists what
is loaded; set but empty loads none.  There is no module-global manager: callers build one
with :func:`get_plugin_manager` and tests build theirs without entry points.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import pluggy

from paxm_core import hookspecs
from paxm_core.errors import PluginError, ProviderNotInstalled
from paxm_core.protocols import Integration, ProviderFactory, ProviderType

__all__ = [
    "ENTRY_POINT_GROUP",
    "LoadError",
    "PaxmPluginManager",
    "PluginInfo",
    "get_plugin_manager",
    "install_hint",
    "declared_secret_keys",
    "registered_provider_type",
    "registered_provider_types",
    "shared_plugin_manager",
]

ENTRY_POINT_GROUP = "paxm"


@dataclass(frozen=True, slots=True)
class LoadError:
    """A plugin that could not be loaded or failed while registering."""

    plugin: str
    distribution: str
    error: str


@dataclass
class PluginInfo:
    """What ``paxm plugins`` shows for one loaded plugin."""

    name: str
    distribution: str = ""
    version: str = ""
    providers: list[str] = field(default_factory=list)
    integrations: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "distribution": self.distribution,
            "version": self.version,
            "providers": sorted(self.providers),
            "integrations": sorted(self.integrations),
        }


class PaxmPluginManager(pluggy.PluginManager):
    """A pluggy manager that remembers load errors and plugin distributions."""

    def __init__(self) -> None:
        super().__init__("paxm")
        self.add_hookspecs(hookspecs)
        self.load_errors: list[LoadError] = []
        self.distributions: dict[str, tuple[str, str]] = {}
        self._provider_types: dict[str, ProviderType] | None = None
        self._provider_owner: dict[str, str] = {}
        self._integrations: dict[str, Integration] | None = None
        self._integration_owner: dict[str, str] = {}

    # -- registration -------------------------------------------------------------------

    def register(self, plugin: object, name: str | None = None) -> str | None:
        self._provider_types = None
        self._integrations = None
        return super().register(plugin, name)

    def _each_impl(self, hook_name: str) -> Iterable[tuple[str, Callable[..., Any]]]:
        hook = getattr(self.hook, hook_name)
        for impl in hook.get_hookimpls():  # registration order
            yield self.get_name(impl.plugin) or repr(impl.plugin), impl.function

    def _record_failure(self, plugin_name: str, exc: BaseException) -> None:
        dist = self.distributions.get(plugin_name, ("", ""))[0]
        self.load_errors.append(LoadError(plugin_name, dist, f"{type(exc).__name__}: {exc}"))

    # -- providers ----------------------------------------------------------------------

    def provider_types(self) -> dict[str, ProviderType]:
        """All registered provider types by ``type`` string (cached until a plugin registers)."""
        if self._provider_types is not None:
            return self._provider_types
        found: dict[str, ProviderType] = {}
        owners: dict[str, str] = {}
        for plugin_name, func in self._each_impl("paxm_register_providers"):
            staged: list[ProviderType] = []

            def register(
                type_or_spec: ProviderType | str,
                factory: ProviderFactory | None = None,
                *,
                description: str = "",
                capabilities: Iterable[str] = (),
                _staged: list[ProviderType] = staged,
            ) -> None:
                if isinstance(type_or_spec, ProviderType):
                    _staged.append(type_or_spec)
                    return
                if factory is None or not callable(factory):
                    raise PluginError(f"provider type {type_or_spec!r} registered without a factory")
                _staged.append(ProviderType(type_or_spec, factory, description, frozenset(capabilities)))

            try:
                func(register=register)
            except Exception as exc:  # a broken plugin is reported, never fatal
                self._record_failure(plugin_name, exc)
                continue
            for spec in staged:
                if spec.type in found:
                    self.load_errors.append(
                        LoadError(
                            plugin_name,
                            self.distributions.get(plugin_name, ("", ""))[0],
                            f"provider type {spec.type!r} already registered by {owners[spec.type]}",
                        )
                    )
                    continue
                found[spec.type] = spec
                owners[spec.type] = plugin_name
        self._provider_types = found
        self._provider_owner = owners
        return found

    def provider_type(self, type_name: str) -> ProviderType:
        """Look up a provider type or raise an error naming the package to install."""
        types = self.provider_types()
        if type_name in types:
            return types[type_name]
        known = ", ".join(sorted(types)) or "none"
        raise ProviderNotInstalled(
            f"provider type {type_name!r} is not installed; install it with: {install_hint(type_name)}"
            f" (installed types: {known})"
        )

    # -- integrations -------------------------------------------------------------------

    def integrations(self) -> dict[str, Integration]:
        """Registered integrations by canonical name (cached).

        An object that does not implement :class:`~paxm_core.integration.Integration` is
        reported as a load error of its plugin and left out.
        """
        if self._integrations is not None:
            return self._integrations
        found, owners = self._collect_integrations()
        self._integrations = found
        self._integration_owner = owners
        return found

    def _collect_integrations(self) -> tuple[dict[str, Integration], dict[str, str]]:
        """The integrations of the plugins registered so far, with their owning plugins."""
        found: dict[str, Integration] = {}
        owners: dict[str, str] = {}
        for plugin_name, func in self._each_impl("paxm_register_integrations"):
            staged: list[Any] = []
            try:
                func(register=staged.append)
            except Exception as exc:
                self._record_failure(plugin_name, exc)
                continue
            for integration in staged:
                name = getattr(integration, "name", None)
                if not isinstance(name, str) or not name:
                    self._record_failure(plugin_name, PluginError("integration without a name"))
                    continue
                if not isinstance(integration, Integration):
                    missing = _missing_members(integration)
                    self._record_failure(
                        plugin_name,
                        PluginError(f"integration {name!r} does not implement Integration (missing: {missing})"),
                    )
                    continue
                found[name] = integration
                owners[name] = plugin_name
        return found, owners

    def integration(self, name: str) -> Integration | None:
        """Find an integration by name or alias (case-insensitive), or ``None``."""
        return _match_integration(self.integrations(), name.strip().lower())

    # -- reporting ----------------------------------------------------------------------

    def plugin_infos(self) -> list[PluginInfo]:
        """One :class:`PluginInfo` per registered plugin, sorted by name."""
        self.provider_types()
        self.integrations()
        infos: dict[str, PluginInfo] = {}
        for plugin in self.get_plugins():
            name = self.get_name(plugin) or repr(plugin)
            dist, version = self.distributions.get(name, ("", ""))
            infos[name] = PluginInfo(name, dist, version)
        for type_name, owner in self._provider_owner.items():
            infos.setdefault(owner, PluginInfo(owner)).providers.append(type_name)
        for integ, owner in self._integration_owner.items():
            infos.setdefault(owner, PluginInfo(owner)).integrations.append(integ)
        return sorted(infos.values(), key=lambda i: i.name)


def _match_integration(registered: dict[str, Integration], wanted: str) -> Integration | None:
    if wanted in registered:  # a canonical name wins over another integration's alias
        return registered[wanted]
    for canonical, integration in registered.items():
        aliases = tuple(getattr(integration, "aliases", ()) or ())
        if wanted == canonical or wanted in (a.lower() for a in aliases):
            return integration
    return None


def _missing_members(obj: object) -> str:
    wanted = [n for n in dir(Integration) if not n.startswith("_") and n not in ("register",)]
    return ", ".join(n for n in wanted if not hasattr(obj, n)) or "?"


def install_hint(type_name: str, package: str = "") -> str:
    """The command that installs provider type ``type_name``.

    ``package`` (a :attr:`ProviderType.package`) wins; otherwise the naming convention every
    provider distribution follows (type ``<family>`` or ``<family>-<variant>`` comes from
    ``paxm-provider-<family>``), but only for a distribution paxm declares as an extra, so the
    named package exists.
    """
    if package:
        return f"pip install {package}"
    from paxm_core.install_hints import known_distributions

    family = type_name.strip().lower().split("-", 1)[0]
    for candidate in (f"paxm-provider-{family}", f"paxm-provider-{type_name.strip().lower()}"):
        if candidate in known_distributions():
            return f"pip install {candidate}"
    # no distribution paxm knows provides it: naming a guessed package would send users astray
    return "the plugin package that registers it (no paxm distribution is known to provide it)"


#: the process's shared manager per ``PAXM_LOAD_PLUGINS`` value (``None``: it could not be built)
_SHARED: dict[str | None, PaxmPluginManager | None] = {}


def _shared() -> PaxmPluginManager | None:
    key = os.environ.get("PAXM_LOAD_PLUGINS")
    if key not in _SHARED:
        try:
            _SHARED[key] = get_plugin_manager()
        except Exception:
            _SHARED[key] = None
    return _SHARED[key]


def shared_plugin_manager() -> PaxmPluginManager:
    """The process's plugin manager: the one config validation and redaction look types up in.

    A process that validates its config and then builds a runtime (the hook daemon) hands the
    runtime this manager instead of loading every plugin a second time.  When it cannot be
    built, a fresh build raises the error.
    """
    pm = _shared()
    return pm if pm is not None else get_plugin_manager()


def registered_provider_types() -> dict[str, ProviderType]:
    """The installed provider types (of :func:`shared_plugin_manager`).

    For code that needs every type's self-description without holding a plugin manager.
    Never raises: broken plugins are simply absent here.
    """
    pm = _shared()
    try:
        return dict(pm.provider_types()) if pm is not None else {}
    except Exception:
        return {}


def registered_provider_type(type_name: str) -> ProviderType | None:
    """One installed provider type (config validation, passive route timeouts), or ``None``."""
    return registered_provider_types().get(type_name.strip().lower())


def declared_secret_keys() -> frozenset[str]:
    """Every config key an installed provider type declares secret (lower case)."""
    return frozenset(key.lower() for spec in registered_provider_types().values() for key in spec.secret_keys)


def _allowed_plugins() -> set[str] | None:
    raw = os.environ.get("PAXM_LOAD_PLUGINS")
    if raw is None:
        return None
    return {part.strip() for part in raw.split(",") if part.strip()}


def get_plugin_manager(load_entrypoints: bool = True) -> PaxmPluginManager:
    """Build a plugin manager, loading every ``paxm`` entry point in its own ``try``.

    :param load_entrypoints: ``False`` gives an empty manager for hermetic tests.
    """
    pm = PaxmPluginManager()
    if not load_entrypoints:
        return pm
    from importlib.metadata import entry_points

    allowed = _allowed_plugins()
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        if ep.name in pm.distributions or (allowed is not None and ep.name not in allowed):
            continue
        pm.distributions[ep.name] = _distribution(ep)
        try:
            pm.register(ep.load(), name=ep.name)
        except Exception as exc:  # broken plugin: record it and keep going
            pm._record_failure(ep.name, exc)
    return pm


def _distribution(ep: Any) -> tuple[str, str]:
    """``(name, version)`` of the distribution that declares ``ep`` (``("", "")`` when unknown)."""
    dist = getattr(ep, "dist", None)
    if dist is None:
        return ("", "")
    try:
        return (str(dist.metadata["Name"] or ""), str(dist.version or ""))
    except Exception:  # unreadable metadata: reported without a distribution
        return ("", "")
