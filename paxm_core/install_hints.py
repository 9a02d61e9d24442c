"""What to install for a provider type or integration that is not installed.

The answer comes from paxm's own package metadata: every optional distribution the ``paxm``
distribution declares as an extra (``paxm[<extra>]`` requiring ``paxm-provider-<x>``) is a
package that exists, so the hint can name it.  A type no extra provides gets a generic
sentence instead of an invented package name.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["integration_install_hint", "known_distributions", "provider_distribution", "provider_install_hint"]

_REQ = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)[^;]*;\s*extra\s*==\s*['\"]([^'\"]+)['\"]")


@lru_cache(maxsize=1)
def known_distributions() -> dict[str, str]:
    """Distribution name -> the ``paxm`` extra that installs it (from paxm's installed metadata)."""
    from importlib.metadata import PackageNotFoundError, metadata

    try:
        requires = metadata("paxm").get_all("Requires-Dist") or []
    except PackageNotFoundError:
        return {}
    found: dict[str, str] = {}
    for requirement in requires:
        match = _REQ.match(requirement)
        if match:
            found.setdefault(match.group(1).lower(), match.group(2))
    return found


def _hint_for(distribution: str) -> str:
    extra = known_distributions().get(distribution)
    if extra is None:
        return ""
    return f"install it with: pip install {distribution}  (or: pip install 'paxm[{extra}]')"


def provider_distribution(type_name: str) -> str:
    """The distribution paxm knows provides type ``type_name`` (``""``: none).

    Type ``<family>`` or ``<family>-<variant>`` comes from ``paxm-provider-<family>`` (the
    convention every provider distribution follows), else ``paxm-provider-<type>``.
    """
    name = type_name.strip().lower()
    for candidate in (f"paxm-provider-{name.split('-', 1)[0]}", f"paxm-provider-{name}"):
        if candidate in known_distributions():
            return candidate
    return ""


def provider_install_hint(type_name: str) -> str:
    """One sentence saying how to get provider type ``type_name`` (:func:`provider_distribution`);
    a type no known distribution provides gets a sentence that names no package."""
    hint = _hint_for(provider_distribution(type_name))
    if hint:
        return hint[0].upper() + hint[1:]
    return (
        f"No paxm distribution is known to provide type {type_name!r}; install the plugin package that"
        " registers it (see `paxm plugins` for what is installed)."
    )


def integration_install_hint(agent: str) -> str:
    """How to get the integration for ``agent`` (``""`` when paxm knows no distribution for it)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import distribution as installed

    name = agent.strip().lower().replace("_", "-")
    for dist in known_distributions():
        if dist.startswith("paxm-integration-") and name in dist.removeprefix("paxm-integration-"):
            try:
                installed(dist)
            except PackageNotFoundError:
                return _hint_for(dist)
            # never advise installing what is installed: it did not load, or serves another name
            return f"{dist} is installed but does not serve {agent.strip()!r} here; see `paxm plugins`"
    return ""
