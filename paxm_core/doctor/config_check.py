"""Doctor check ``config``: doctor fails whenever recall or capture would, and names unknown keys.

Errors come from :mod:`paxm_core.config.usable` (no enabled provider, an uninstalled type, a
profile routing to a missing provider); every key paxm does not read is a warning with the
known key it most likely misspells (the rest of the config still works).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from paxm_core.doctor import DoctorFinding

if TYPE_CHECKING:
    from paxm_core.config.model import Config

__all__ = ["check_config"]

CHECK = "config"


def _raw(config: Config) -> tuple[Path, object] | None:
    """``(file, parsed data)`` of the config file doctor was given, or ``None`` without one."""
    from paxm_core.config.loader import read_raw
    from paxm_core.config.paths import legacy_json_path

    if not config.exists:
        return None
    source = config.path if config.path.is_file() else legacy_json_path(config.path)
    try:
        return source, read_raw(source)
    except Exception:  # it loaded a moment ago; a race with an editor is not doctor's finding
        return None


def _declared_keys(type_name: str) -> list[str]:
    """The config keys the installed provider type ``type_name`` declares (none when unknown)."""
    from paxm_core.plugins import registered_provider_type

    try:
        spec = registered_provider_type(type_name)
    except Exception:  # a broken plugin is reported by its own check
        return []
    return [key.name for key in spec.config_keys] if spec is not None else []


def check_config(config: Config) -> Iterator[DoctorFinding]:
    """Unknown keys (warnings), then everything that makes recall or capture fail (errors)."""
    from paxm_core.config.unknown_keys import unknown_keys
    from paxm_core.config.usable import usability_problems

    raw = _raw(config)
    if raw is not None:
        source, data = raw
        for key in unknown_keys(data, _declared_keys):
            fix = f"rename it to `{key.suggestion}` in {source}" if key.suggestion else f"remove it from {source}"
            message = f"config key {key.describe()} is not a paxm setting, so it changes nothing"
            yield DoctorFinding(CHECK, key.path, "warn", message, fix)
    from paxm_core.router.profiles import default_recall_profile

    installed = sorted(spec.type for spec in config.provider_types.listed())
    for problem in usability_problems(config, installed, default_recall_profile(config)):
        yield DoctorFinding(CHECK, problem.path, "error", problem.message, problem.fix)
