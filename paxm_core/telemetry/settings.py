"""Effective telemetry settings: the ``telemetry`` config section with upstream's defaults applied."""

from __future__ import annotations

from pathlib import Path
from typing import SupportsInt

from paxm_core.api.values import value_dataclass

__all__ = ["TelemetrySettings"]

DEFAULT_EVENTS_FILE = "events.jsonl"
DEFAULT_METRICS_FILE = "metrics.json"
DEFAULT_MAX_EVENT_FILE_BYTES = 1 << 20
DEFAULT_MAX_EVENT_FILES = 3
DEFAULT_RETENTION_DAYS = 30
DEFAULT_QUERY_PREVIEW_CHARS = 80


def _default_dir_for(config_path: Path | None) -> Path:
    # the state of a non-default config lives beside it, so two configs never share one event log
    from paxm_core.config.paths import default_state_dir, is_default_config_path

    if config_path is None or str(config_path) in ("", ".") or is_default_config_path(config_path):
        return default_state_dir()
    return config_path.expanduser().parent / "state"


@value_dataclass(frozen=True, slots=True)
class TelemetrySettings:
    """Where and how much telemetry is kept.  Build one with :meth:`from_config`."""

    dir: Path
    enabled: bool = True
    events_file: str = DEFAULT_EVENTS_FILE
    metrics_file: str = DEFAULT_METRICS_FILE
    max_event_file_bytes: int = DEFAULT_MAX_EVENT_FILE_BYTES
    max_event_files: int = DEFAULT_MAX_EVENT_FILES
    retention_days: int = DEFAULT_RETENTION_DAYS
    capture_query_preview: bool = False
    query_preview_chars: int = DEFAULT_QUERY_PREVIEW_CHARS

    @classmethod
    def from_config(cls, config: object) -> TelemetrySettings:
        """Read ``config.telemetry`` (a :class:`~paxm_core.config.model.TelemetryConfig`) and fill defaults.

        Zero or negative sizes mean "default"; file names are reduced to their base name so a
        config cannot point the log outside the telemetry directory.
        """
        section = getattr(config, "telemetry", None)
        config_path = getattr(config, "path", None)

        def opt(name: str, default: object) -> object:
            value = getattr(section, name, None) if section is not None else None
            return default if value is None else value

        raw_dir = str(opt("dir", "") or "").strip()
        directory = Path(raw_dir).expanduser() if raw_dir else _default_dir_for(config_path)
        return cls(
            dir=directory,
            enabled=opt("enabled", True) is not False,
            events_file=Path(str(opt("events_file", "") or DEFAULT_EVENTS_FILE)).name or DEFAULT_EVENTS_FILE,
            metrics_file=Path(str(opt("metrics_file", "") or DEFAULT_METRICS_FILE)).name or DEFAULT_METRICS_FILE,
            max_event_file_bytes=_positive(opt("max_event_file_bytes", 0), DEFAULT_MAX_EVENT_FILE_BYTES),
            max_event_files=_positive(opt("max_event_files", 0), DEFAULT_MAX_EVENT_FILES),
            retention_days=_positive(opt("retention_days", 0), DEFAULT_RETENTION_DAYS),
            # Previews are opt-in: by default only the query's length and a hash prefix are kept.
            capture_query_preview=opt("capture_query_preview", False) is True,
            query_preview_chars=_positive(opt("query_preview_chars", 0), DEFAULT_QUERY_PREVIEW_CHARS),
        )

    @property
    def events_path(self) -> Path:
        return self.dir / self.events_file

    @property
    def metrics_path(self) -> Path:
        return self.dir / self.metrics_file

    @property
    def lock_path(self) -> Path:
        """The lock file serializing writers (and the initial read of ``logs --follow``)."""
        return self.dir / "telemetry.lock"

    def event_paths_oldest_first(self) -> list[Path]:
        """Rotated backups (``.N`` … ``.1``) then the active file."""
        active = self.events_path
        backups = [active.with_name(f"{active.name}.{i}") for i in range(self.max_event_files - 1, 0, -1)]
        return [*backups, active]


def _positive(value: object, default: int) -> int:
    if not isinstance(value, str | bytes | SupportsInt):
        return default  # what int() raises TypeError for
    try:
        number = int(value)
    except (TypeError, ValueError):
        return default
    return number if number > 0 else default
