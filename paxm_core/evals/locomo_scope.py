"""Isolated LoCoMo run directories, their manifests, and ``paxm eval cleanup`` (docs/locomo.md).

Each conversation of a run gets ``<manifest dir>/<run id>-<conversation id>/`` with its own
config (the chosen provider alone, stored inside; the eval agent's hooks, queue and state) and
upstream's ``manifest.json``.  Cleanup removes only directories holding a manifest paxm wrote for
that name, never follows a symlink, and stops a hook daemon still serving the run first.
Only file-backed provider types can be isolated this way.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import stat
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from paxm_core.api.errors import PaxmError, UsageError
from paxm_core.api.json import JSONObject

if TYPE_CHECKING:
    from paxm_core.config import Config

__all__ = [
    "EVAL_AGENT",
    "RunScope",
    "check_provider",
    "clean_runs",
    "default_manifest_dir",
    "prepare_scope",
    "sanitize_scope_id",
]

MANIFEST = "manifest.json"
#: the agent name the eval's hook calls and MCP tool calls use in the run config
EVAL_AGENT = "paxm-eval"
#: provider types whose whole store is one file paxm can put inside the run directory
FILE_BACKED_TYPES = ("sqlite", "sqlite-hybrid")
RUNNING, COMPLETE, CLEANED, FAILED = "running", "complete", "cleaned", "failed"


def default_manifest_dir() -> Path:
    """``<paxm data dir>/eval-runs`` (``$XDG_DATA_HOME/paxm/eval-runs``)."""
    from paxm_core.config.paths import default_data_path

    return default_data_path().parent / "eval-runs"


def sanitize_scope_id(value: str) -> str:
    """Letters, digits, ``-`` and ``_`` kept, anything else ``-``, outer dashes trimmed (upstream's rule)."""
    cleaned = "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in value.strip())
    return cleaned.strip("-")


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


@dataclass
class RunScope:
    """One conversation's run directory and its manifest (saved on every change)."""

    run_dir: Path
    manifest: dict[str, Any]

    @property
    def config_path(self) -> Path:
        return self.run_dir / "config.json"

    @property
    def workspace(self) -> Path:
        return self.run_dir / "workspace"

    def save(self) -> None:
        """Write the manifest atomically, mode 0600."""
        from paxm_core.atomic import write_atomic

        self.manifest["updated_at"] = _now()
        write_atomic(self.run_dir / MANIFEST, json.dumps(self.manifest, indent=2) + "\n")

    def set_status(self, status: str, error: str = "") -> None:
        self.manifest["status"] = status
        if error:
            self.manifest["cleanup_error"] = error
        else:
            self.manifest.pop("cleanup_error", None)
        self.save()

    def record_refs(self, refs: list[dict[str, str]]) -> None:
        if refs:
            self.manifest.setdefault("refs", []).extend(refs)
            self.save()

    def cleanup(self) -> None:
        """Remove the run (``--keep-memory``: mark it complete and keep it)."""
        if self.manifest.get("keep_memory"):
            if self.manifest.get("status") == RUNNING:
                self.set_status(COMPLETE)
            return
        _remove_run_dir(self.run_dir, self.config_path)


def _run_config(config: Config, provider_name: str, run_dir: Path) -> Config:
    """The user's config narrowed to one provider stored in ``run_dir`` and the eval agent."""
    from paxm_core.config.defaults import active_recall, default_hook_recall, hook_write
    from paxm_core.config.model import AgentConfig, AgentHookConfig, RouteConfig

    cfg = copy.deepcopy(config)
    provider = copy.deepcopy(cfg.providers[provider_name])
    provider.path = str(run_dir / "memory.sqlite")
    cfg.providers = {provider_name: provider}
    for recall in cfg.recall_profiles.values():
        recall.providers = [RouteConfig(name=provider_name, required=True, weight=1.0)]
    for write in cfg.write_profiles.values():
        write.providers = [RouteConfig(name=provider_name, required=True)]
    cfg.agents = {
        EVAL_AGENT: AgentConfig(
            enabled=True,
            active_recall=active_recall(),
            hooks={
                # passive recall on the prompt; the turn is written (and flushed) at its end only
                "user_input": AgentHookConfig(recall=default_hook_recall()),
                "turn_end": AgentHookConfig(write=hook_write("turn_end", flush=True)),
            },
        )
    }
    cfg.telemetry.dir = str(run_dir / "state")
    cfg.capture_queue.path = str(run_dir / "capture.sqlite")
    cfg.path = run_dir / "config.json"
    return cfg


def check_provider(config: Config, provider_name: str) -> str:
    """The type of provider ``provider_name`` if a run can isolate it; else a :class:`UsageError`."""
    provider = config.providers.get(provider_name)
    if provider is None or not provider.enabled:
        raise UsageError(f"eval provider {provider_name!r} is not enabled in the config")
    if provider.type not in FILE_BACKED_TYPES:
        raise UsageError(
            f"provider type {provider.type!r} has no eval isolation in paxm: the LoCoMo eval runs on a "
            f"{' or '.join(FILE_BACKED_TYPES)} provider, whose store it creates inside the run directory"
        )
    return provider.type


def prepare_scope(config: Config, provider_name: str, run_id: str, manifest_dir: Path, keep_memory: bool) -> RunScope:
    """Create the run directory, its config and a ``running`` manifest; refuse what cannot be isolated."""
    from paxm_core.config import save_config
    from paxm_core.private_files import private_dir

    scope_id = sanitize_scope_id(run_id)
    if not scope_id:
        raise UsageError("eval run id is required")
    provider_type = check_provider(config, provider_name)
    manifest_dir = Path(os.path.abspath(manifest_dir))  # the run config's paths must not depend on the cwd
    private_dir(manifest_dir)
    run_dir = manifest_dir / scope_id
    try:
        os.mkdir(run_dir, 0o700)
    except FileExistsError:
        raise UsageError(f"eval run {scope_id!r} already exists; clean it or choose a new run id") from None
    now = _now()
    manifest: dict[str, Any] = {
        "version": 1,
        "run_id": scope_id,
        "provider": provider_name,
        "provider_type": provider_type,
        "remote_scope": "paxm-eval-" + scope_id,
        "status": RUNNING,
        "created_at": now,
        "updated_at": now,
    }
    if keep_memory:
        manifest["keep_memory"] = True
    scope = RunScope(run_dir, manifest)
    scope.save()
    save_config(_run_config(config, provider_name, run_dir), scope.config_path)
    private_dir(scope.workspace)
    return scope


def _remove_run_dir(run_dir: Path, config_path: Path) -> None:
    """Stop the run's hook daemon (if one still serves it), then delete the directory."""
    from paxm_core.passive.control import send_control

    try:
        send_control(str(config_path), "shutdown")
    except (OSError, PaxmError):
        pass  # no daemon, or one that is gone: nothing holds the directory
    shutil.rmtree(run_dir)  # removes symlinks inside, never what they point to


def _owned_manifest(run_dir: Path) -> JSONObject | None:
    """The manifest of ``run_dir`` if it is a real directory of ours with paxm's manifest for it."""
    try:
        info = os.lstat(run_dir)
        meta = os.lstat(run_dir / MANIFEST)
    except OSError:
        return None
    uid = os.geteuid() if hasattr(os, "geteuid") else None
    if not stat.S_ISDIR(info.st_mode) or not stat.S_ISREG(meta.st_mode):
        return None
    if uid is not None and (info.st_uid != uid or meta.st_uid != uid):
        return None
    try:
        manifest = json.loads((run_dir / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict) or manifest.get("version") != 1 or manifest.get("run_id") != run_dir.name:
        return None
    return manifest


def clean_runs(manifest_dir: Path, run_id: str, stale: bool) -> tuple[list[str], list[str]]:
    """Remove matching runs; return ``(cleaned run ids, errors)``.

    ``run_id`` matches a run named so or starting with ``<run_id>-`` (every conversation of a
    run) and overrides ``keep_memory``; ``stale`` alone matches every run neither cleaned nor kept.
    """
    wanted = sanitize_scope_id(run_id)
    if not stale and not wanted:
        raise UsageError("eval cleanup requires --run ID or --stale")
    try:
        names = sorted(entry.name for entry in os.scandir(manifest_dir))
    except FileNotFoundError:
        names = []
    except OSError as exc:
        raise PaxmError(f"read {manifest_dir}: {exc.strerror or exc}") from None
    cleaned: list[str] = []
    errors: list[str] = []
    for name in names:
        if wanted and name != wanted and not name.startswith(wanted + "-"):
            continue
        run_dir = manifest_dir / name
        manifest = _owned_manifest(run_dir)
        if manifest is None:
            if wanted:
                errors.append(f"{name}: not an eval run directory paxm wrote (left alone)")
            continue
        if not wanted and (manifest.get("status") == CLEANED or manifest.get("keep_memory")):
            continue
        try:
            _remove_run_dir(run_dir, run_dir / "config.json")
        except OSError as exc:
            scope = RunScope(run_dir, manifest)
            scope.set_status(FAILED, str(exc.strerror or exc))
            errors.append(f"cleanup {name}: {exc.strerror or exc}")
            continue
        cleaned.append(name)
    return cleaned, errors
