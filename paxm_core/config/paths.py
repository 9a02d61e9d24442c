"""Where the config, data and state live (XDG base directories)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "default_config_path",
    "default_data_path",
    "default_state_dir",
    "expand_path",
    "is_default_config_path",
    "legacy_json_path",
    "resolve_config_path",
]


def expand_path(path: str | Path) -> Path:
    """Expand a leading ``~`` and make the path absolute (symlinks are kept).

    Absolute paths matter: the data, state and hook socket paths derived from the config's
    directory must not change meaning when a hook runs from another working directory.
    """
    return Path(path).expanduser().absolute()


def _xdg(var: str, *fallback: str) -> Path:
    value = os.environ.get(var, "")
    if value:
        return expand_path(value)
    return Path.home().joinpath(*fallback)


def default_config_path() -> Path:
    """``$XDG_CONFIG_HOME/paxm/config.yaml``, else ``~/.config/paxm/config.yaml``."""
    return _xdg("XDG_CONFIG_HOME", ".config") / "paxm" / "config.yaml"


def default_data_path() -> Path:
    """The default SQLite database: ``$XDG_DATA_HOME/paxm/memory.sqlite`` or ``~/.local/share/paxm/memory.sqlite``."""
    return _xdg("XDG_DATA_HOME", ".local", "share") / "paxm" / "memory.sqlite"


def default_state_dir() -> Path:
    """Telemetry state: ``$XDG_STATE_HOME/paxm`` or ``~/.local/state/paxm``."""
    return _xdg("XDG_STATE_HOME", ".local", "state") / "paxm"


def resolve_config_path(explicit: str | Path | None = None) -> Path:
    """The config file to use: ``explicit`` (``--config``) > ``$PAXM_CONFIG`` > the XDG default."""
    if explicit:
        return expand_path(explicit)
    env = os.environ.get("PAXM_CONFIG", "")
    if env:
        return expand_path(env)
    return default_config_path()


def is_default_config_path(path: Path) -> bool:
    """Whether ``path`` is the standard location (data and state then go to the XDG dirs).

    A config elsewhere (``--config /tmp/x/config.yaml``) keeps its data beside it, so test
    and eval configs never touch the user's real memory.  As upstream, ``$PAXM_CONFIG`` counts
    as the standard location.
    """
    default = resolve_config_path()
    try:
        return expand_path(path).resolve() == default.resolve()
    except OSError:
        return expand_path(path) == default


def legacy_json_path(path: Path) -> Path:
    """The legacy ``config.json`` sibling read when ``config.yaml`` is missing (same path otherwise)."""
    if path.name.lower() == "config.yaml":
        return path.with_name("config.json")
    return path
