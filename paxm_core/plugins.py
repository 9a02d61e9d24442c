"""Plugin loading: entry points of group ``paxm``, each loaded in isolation.

A plugin that fails to import or register is recorded and reported by ``paxm plugins``; it
never stops paxm.  ``PAXM_LOAD_PLUGINS`` (comma-separated entry-point names) allow-lists what
is loaded; set but empty loads none.  There is no module-global manager: callers build one
with :func:`get_plugin_manager` and tests build theirs without entry points.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import field
from typing import TYPE_CHECKING, Any

import pluggy

from paxm_core.api import hookspecs
from paxm_core.api.errors import PluginError, ProviderNotInstalled
from paxm_core.api.protocols import ProviderFactory, ProviderType
from paxm_core.api.values import value_dataclass

if TYPE_CHECKING:
    from paxm_core.api.integration import Integration
    from paxm_core.config.catalog import ProviderCatalog
    from paxm_core.plugin_index import EntryPointRecord

__all__ = [
    "ENTRY_POINT_GROUP",
    "LoadError",
    "PaxmPluginManager",
    "PluginInfo",
    "get_plugin_manager",
    "installed_provider_catalog",
    "declared_secret_keys",
    "registered_provider_type",
    "registered_provider_types",
    "shared_plugin_manager",
]

ENTRY_POINT_GROUP = "paxm"
_NO_DISTRIBUTION = "the plugin package that registers it (no paxm distribution is known to provide it)"


@value_dataclass(frozen=True)
class LoadError:
    """A plugin that could not be loaded or failed while registering."""

    plugin: str
    distribution: str
    error: str


@value_dataclass
class PluginInfo:
    """What ``paxm plugins`` shows for one loaded plugin (providers and integrations sorted)."""

    name: str
    distribution: str = ""
    version: str = ""
    providers: list[str] = field(default_factory=list)
    integrations: list[str] = field(default_factory=list)


class PaxmPluginManager(pluggy.PluginManager):
    """A pluggy manager that remembers load errors and plugin distributions."""

    def __init__(self) -> None:
        super().__init__("paxm")
        self.add_hookspecs(hookspecs)
        self.load_errors: list[LoadError] = []
        #: plugin name -> (distribution, version), from the plugin index
        self.distributions: dict[str, tuple[str, str]] = {}
        self._provider_types: dict[str, ProviderType] | None = None
        self._provider_owner: dict[str, str] = {}
        self._integrations: dict[str, Integration] | None = None
        self._integration_owner: dict[str, str] = {}
        #: integration-only or provider-only plugins not imported yet (``get_plugin_manager(lazy=True)``)
        self._pending: dict[str, EntryPointRecord] = {}
        #: integration name or alias (lower case) -> the pending plugin that registers it
        self._integration_hints: dict[str, str] = {}
        self._canonical_hints: set[str] = set()
        #: provider type -> the pending plugin that registers it
        self._provider_hints: dict[str, str] = {}

    # -- registration -------------------------------------------------------------------

    def register(self, plugin: object, name: str | None = None) -> str | None:
        self._provider_types = None
        self._integrations = None
        return super().register(plugin, name)

    def get_plugins(self) -> set[Any]:
        self._load_pending()
        return super().get_plugins()

    # -- deferred plugins ---------------------------------------------------------------

    def _defer(self, entry: EntryPointRecord) -> None:
        """Keep ``entry`` (a :class:`~paxm_core.plugin_index.EntryPointRecord`) unimported for now."""
        self._pending[entry.name] = entry
        for type_name in entry.providers or ():
            self._provider_hints[type_name] = entry.name
        # as in integration(): a canonical name beats another integration's alias, and among
        # aliases the first plugin in name (= registration) order wins
        for name in entry.integrations:
            if name not in self._canonical_hints:
                self._integration_hints.setdefault(name, entry.name)
        for name in entry.canonical:
            if name not in self._canonical_hints:
                self._canonical_hints.add(name)
                self._integration_hints[name] = entry.name

    def _load_entry(self, entry: EntryPointRecord) -> None:
        """Import and register one entry point; a failure is recorded, never raised."""
        try:
            self.register(entry.load(), name=entry.name)
        except Exception as exc:  # broken plugin: record it and keep going
            self._record_failure(entry.name, exc)

    def _load_pending(self, name: str | None = None) -> None:
        """Import the deferred plugins (or just ``name``), in name order."""
        for plugin in sorted(self._pending) if name is None else [name]:
            entry = self._pending.pop(plugin, None)
            if entry is not None:
                self._load_entry(entry)

    def _each_impl(self, hook_name: str) -> Iterable[tuple[str, Callable[..., object]]]:
        hook = getattr(self.hook, hook_name)
        for impl in hook.get_hookimpls():  # registration order
            yield self.get_name(impl.plugin) or repr(impl.plugin), impl.function

    def _record_failure(self, plugin_name: str, exc: BaseException) -> None:
        self._record_error(plugin_name, f"{type(exc).__name__}: {exc}")

    def _record_error(self, plugin_name: str, error: str) -> None:
        self.load_errors.append(LoadError(plugin_name, self.distributions.get(plugin_name, ("", ""))[0], error))

    # -- providers ----------------------------------------------------------------------

    def provider_types(self) -> dict[str, ProviderType]:
        """All registered provider types by ``type`` string (cached)."""
        for plugin in sorted(self._pending):
            if self._pending[plugin].providers:
                self._load_pending(plugin)
        return self._loaded_provider_types()

    def _loaded_provider_types(self) -> dict[str, ProviderType]:
        """The provider types of the plugins imported so far (cached until one registers)."""
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
                    self._record_error(
                        plugin_name, f"provider type {spec.type!r} already registered by {owners[spec.type]}"
                    )
                    continue
                found[spec.type] = spec
                owners[spec.type] = plugin_name
        self._provider_types = found
        self._provider_owner = owners
        return found

    def provider_type(self, type_name: str) -> ProviderType:
        """Look up a provider type or raise an error naming the package to install."""
        hinted = self._provider_hints.get(type_name)
        if hinted is not None and hinted in self._pending:
            self._load_pending(hinted)  # only the plugin the index names for this type
        types = self._loaded_provider_types()
        if type_name not in types and self._pending:
            self._load_pending()  # a stale index: a deferred plugin may register it after all
            types = self.provider_types()
        if type_name in types:
            return types[type_name]
        import difflib

        from paxm_core.install_hints import provider_distribution

        known = ", ".join(sorted(types)) or "none"
        close = difflib.get_close_matches(type_name, list(types), n=1)
        guess = f"; did you mean {close[0]!r}? (set `type: {close[0]}`)" if close else ""
        # only a distribution paxm declares as an extra is named: a guessed one would send users astray
        distribution = provider_distribution(type_name)
        how = f"pip install {distribution}" if distribution else _NO_DISTRIBUTION
        raise ProviderNotInstalled(
            f"provider type {type_name!r} is not installed; install it with: {how} (installed types: {known}){guess}"
        )

    # -- integrations -------------------------------------------------------------------

    def integrations(self) -> dict[str, Integration]:
        """Registered integrations by canonical name (cached).

        An object that does not implement :class:`~paxm_core.integration.Integration` is
        reported as a load error of its plugin and left out.
        """
        self._load_pending()
        if self._integrations is not None:
            return self._integrations
        self._integrations, self._integration_owner = self._collect_integrations()
        return self._integrations

    def _collect_integrations(self) -> tuple[dict[str, Integration], dict[str, str]]:
        """The integrations of the plugins registered so far, with their owning plugins."""
        # here: the integration contract (and the hook decoders it imports) is for processes
        # that use an integration; a recall never does
        from paxm_core.api.integration import Integration

        found: dict[str, Integration] = {}
        owners: dict[str, str] = {}
        for plugin_name, func in self._each_impl("paxm_register_integrations"):
            staged: list[object] = []
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
        """Find an integration by name or alias (case-insensitive), or ``None``.

        With deferred plugins (``lazy=True``), the one the index names for ``name`` is
        imported first; only when it does not provide ``name`` after all are the rest imported.
        """
        wanted = name.strip().lower()
        hinted = self._integration_hints.get(wanted)
        if hinted is not None and hinted in self._pending:
            self._load_pending(hinted)
            found = _match_integration(self._collect_integrations()[0], wanted)
            if found is not None:
                return found
        return _match_integration(self.integrations(), wanted)

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
        for type_name, owner in sorted(self._provider_owner.items()):
            infos.setdefault(owner, PluginInfo(owner)).providers.append(type_name)
        for integ, owner in sorted(self._integration_owner.items()):
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
    from paxm_core.api.integration import Integration

    wanted = [n for n in dir(Integration) if not n.startswith("_") and n not in ("register",)]
    return ", ".join(n for n in wanted if not hasattr(obj, n)) or "?"


#: the process's lazy manager per ``PAXM_LOAD_PLUGINS`` value (``None``: it could not be built)
_REGISTRY_MANAGERS: dict[str, PaxmPluginManager | None] = {}


def _registry_manager() -> PaxmPluginManager | None:
    """One lazy manager per process (per ``PAXM_LOAD_PLUGINS`` value); ``None`` if it cannot be built."""
    key = os.environ.get("PAXM_LOAD_PLUGINS", "\0all")
    if key not in _REGISTRY_MANAGERS:
        try:
            _REGISTRY_MANAGERS[key] = get_plugin_manager(lazy=True)
        except Exception:
            _REGISTRY_MANAGERS[key] = None
    return _REGISTRY_MANAGERS[key]


def shared_plugin_manager() -> PaxmPluginManager:
    """The process's lazy plugin manager: the one config validation and redaction look types up in.

    A process that validates its config and then builds a runtime hands the runtime this
    manager rather than building a second one from the same index.  When it cannot be built,
    a fresh build raises the error.
    """
    pm = _registry_manager()
    return pm if pm is not None else get_plugin_manager(lazy=True)


def registered_provider_types() -> dict[str, ProviderType]:
    """The installed provider types, from the process's lazy plugin manager (:func:`shared_plugin_manager`).

    For code that needs every type's self-description without holding a plugin manager; one
    type is :func:`registered_provider_type` (imports only its plugin).  Never raises: broken
    plugins are simply absent here.
    """
    pm = _registry_manager()
    try:
        return dict(pm.provider_types()) if pm is not None else {}
    except Exception:
        return {}


def registered_provider_type(type_name: str) -> ProviderType | None:
    """One installed provider type (config validation, passive route timeouts), or ``None``.

    Imports only the plugin the plugin index names for ``type_name`` (every plugin when the
    index does not know it).  Never raises.
    """
    pm = _registry_manager()
    if pm is None:
        return None
    try:
        return pm.provider_type(type_name.strip().lower())
    except Exception:  # not installed, or a broken plugin: absent here
        return None


def declared_secret_keys() -> frozenset[str]:
    """Every config key an installed provider type declares secret (lower case).

    Read from the plugin index for provider plugins not imported yet, so redaction does not
    import them.
    """
    pm = _registry_manager()
    if pm is None:
        return frozenset()
    try:
        loaded = {name.lower() for spec in pm._loaded_provider_types().values() for name in spec.secret_keys}
        # the keys the index records for provider plugins not imported yet
        return frozenset(loaded | {key for entry in pm._pending.values() for key in entry.secret_keys})
    except Exception:
        return frozenset(key.lower() for spec in registered_provider_types().values() for key in spec.secret_keys)


def installed_provider_catalog(*, listed: bool = True) -> ProviderCatalog:
    """The installed provider types as config loading reads them (``load_config(provider_types=...)``).

    Lazy like the functions above: a type's plugin is imported when the config names the type,
    secret keys come from the plugin index, and every type only for the built-in default config.
    ``listed=False``: the built-in default config lists no disabled backend, so no provider
    plugin but the ones the config enables is imported (a command that only uses providers).
    """
    from paxm_core.config.catalog import ProviderCatalog

    # module functions only: a config holding the catalog pickles (backfill's worker processes)
    if not listed:
        return ProviderCatalog(lookup=registered_provider_type, secret_keys=declared_secret_keys)
    return ProviderCatalog(lookup=registered_provider_type, secret_keys=declared_secret_keys, listed=_installed_types)


def _installed_types() -> Iterable[ProviderType]:
    return registered_provider_types().values()


def get_plugin_manager(load_entrypoints: bool = True, *, lazy: bool = False) -> PaxmPluginManager:
    """Build a plugin manager from the entry-point index, loading each plugin in its own ``try``.

    :param load_entrypoints: ``False`` gives an empty manager for hermetic tests.
    :param lazy: import a plugin whose roles the index knows only when one of them (or all
        of them, or :meth:`~PaxmPluginManager.get_plugins`) is asked for.  For processes that
        look things up by name (the hook daemon, config validation); a caller of ``pm.hook.*``
        directly wants the default.
    """
    pm = PaxmPluginManager()
    if load_entrypoints:
        raw = os.environ.get("PAXM_LOAD_PLUGINS")
        allowed = None if raw is None else {part.strip() for part in raw.split(",") if part.strip()}
        _load_indexed(pm, allowed, defer=lazy)
    return pm


def _load_indexed(pm: PaxmPluginManager, allowed: set[str] | None, *, defer: bool) -> None:
    """Fill ``pm`` from the entry-point index, in name order; with ``defer``, plugins whose
    roles the index knows wait (integration-only ones, and provider-only ones of a type no
    other plugin claims).

    A plugin whose roles the index does not know (new, changed, or never loaded cleanly) is
    imported now, and the index learns what it registered.
    """
    import paxm_core.plugin_index as plugin_index

    index = plugin_index.load_index()
    stale = index is None
    if index is None:
        index = plugin_index.scan(ENTRY_POINT_GROUP)
    seen: set[str] = set()
    learned = []
    known = {entry.name: entry.roles_known() for entry in index.entries}
    # A plugin whose roles are unknown may register any type, so then no provider plugin waits.
    claims: dict[str, int] | None = {} if all(known.values()) else None  # type -> plugins registering it
    for entry in index.entries:
        for type_name in entry.providers or ():
            if claims is not None:
                claims[type_name] = claims.get(type_name, 0) + 1
    for entry in index.entries:
        if entry.name in seen or (allowed is not None and entry.name not in allowed):
            continue
        seen.add(entry.name)
        pm.distributions[entry.name] = (entry.distribution, entry.version)
        if not known[entry.name]:
            learned.append(entry)
        elif defer and _waits(entry, claims):
            pm._defer(entry)
            continue
        pm._load_entry(entry)
    if learned and defer:  # a manager that loads everything leaves the cache as it found it
        types = pm._loaded_provider_types()  # deferred plugins stay deferred
        integrations, owners = pm._collect_integrations()
        for entry in learned:
            if pm.has_plugin(entry.name) and not any(e.plugin == entry.name for e in pm.load_errors):
                providers = [t for t, owner in pm._provider_owner.items() if owner == entry.name]
                canonical = [name for name, owner in owners.items() if owner == entry.name]
                names = canonical + [str(a) for n in canonical for a in getattr(integrations[n], "aliases", ()) or ()]
                secrets = [key for t in providers for key in types[t].secret_keys]
                plugin_index.record_roles(entry, providers, names, canonical, secrets)
    if defer and (stale or learned):
        plugin_index.write_index(index)


def _waits(entry: EntryPointRecord, claims: dict[str, int] | None) -> bool:
    """Whether a plugin of known roles can stay unimported until one of them is asked for.

    An integration-only plugin can; a provider-only one too, unless another plugin claims the
    same type (then name order decides the duplicate, as when all load).
    """
    if not entry.providers:
        return bool(entry.integrations)
    return not entry.integrations and claims is not None and all(claims[t] == 1 for t in entry.providers)


def is_secret_option(key: str) -> bool:
    """Whether a provider option named ``key`` holds a credential (never shown, redacted from errors).

    The rule ``paxm config show`` applies: ``SECRET_KEYS``, names that look like credentials, and
    every key an installed provider type declares ``secret`` (read from the plugin index, so no
    provider plugin is imported for it).
    """
    from paxm_core.config.codec import is_secret_key as rule

    return rule(key, declared_secret_keys())
