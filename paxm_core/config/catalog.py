"""What the config needs to know about provider types, handed in by whoever loads the plugins.

Parsing, normalizing, validating and redacting a config use each provider type's
self-description (:class:`~paxm_core.api.protocols.ProviderType`: its defaults, its validation, its
secret keys, its default passive budget).  The config package never loads plugins itself: the
runtime and the CLI build a :class:`ProviderCatalog` from the installed plugins
(``paxm_core.plugins.installed_provider_catalog()``) and pass it in.  Without one, a config
knows no provider type: no type's defaults or checks apply, and only credential-looking key
names are secret.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from paxm_core.api.values import value_dataclass

if TYPE_CHECKING:
    from paxm_core.api.protocols import ProviderType

__all__ = ["NO_PROVIDER_TYPES", "ProviderCatalog"]


def _unknown(type_name: str) -> ProviderType | None:
    return None


@value_dataclass(frozen=True)
class ProviderCatalog:
    """The installed provider types, as the config reads them; every member is asked lazily.

    :param lookup: ``type_name -> ProviderType | None``: one type (only its plugin is imported).
    :param secret_keys: every config key an installed type declares secret (lower case).
    :param listed: every installed type (the built-in default config lists their ``default_entry``).
    """

    lookup: Callable[[str], ProviderType | None] = _unknown
    secret_keys: Callable[[], frozenset[str]] = frozenset
    listed: Callable[[], Iterable[ProviderType]] = tuple

    @classmethod
    def of(cls, types: Mapping[str, ProviderType]) -> ProviderCatalog:
        """A catalog of the types already at hand (``type`` string -> type)."""
        known = dict(types)
        secrets = frozenset(key.lower() for spec in known.values() for key in spec.secret_keys)

        def lookup(type_name: str) -> ProviderType | None:
            return known.get(type_name.strip().lower())

        return cls(lookup, lambda: secrets, known.values)

    def __deepcopy__(self, memo: dict[int, object]) -> ProviderCatalog:
        return self  # immutable, and may hold a plugin manager nobody should copy


#: the catalog of a config that knows no provider type
NO_PROVIDER_TYPES = ProviderCatalog()
