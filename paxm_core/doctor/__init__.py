"""``paxm config doctor``'s installation checks: a small registry anyone can add a check to.

A check is a function ``(config) -> iterable of DoctorFinding``, registered by name or by a
``"module:function"`` path (imported only when doctor runs); a check that raises becomes one
``error`` finding.  Provider health is not a check here: doctor runs it through the router.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING, Literal

from paxm_core.api.json import JSONObject

if TYPE_CHECKING:
    from paxm_core.config.model import Config

__all__ = ["DoctorCheck", "DoctorFinding", "check_plugins", "register_check", "registered_checks", "run_checks"]

Level = Literal["ok", "warn", "error"]


@dataclass(frozen=True)
class DoctorFinding:
    """One thing check ``check`` found about ``subject``; an ``error`` makes doctor exit non-zero.

    ``message`` never holds a secret; ``fix`` is the command (or step) that fixes a ``warn``/``error``.
    """

    check: str
    subject: str
    level: Level
    message: str
    fix: str = ""

    def to_json(self) -> JSONObject:
        """Doctor's ``--json`` row: upstream's ``{provider, required, ok, error?}`` plus the details."""
        row: JSONObject = {
            "provider": f"{self.check}:{self.subject}",
            "required": self.level == "error",
            "ok": self.level == "ok",
        }
        if self.level != "ok":
            row["error"] = self.message
        row.update({"check": self.check, "subject": self.subject, "level": self.level, "message": self.message})
        if self.fix:
            row["fix"] = self.fix
        return row


DoctorCheck = Callable[["Config"], Iterable[DoctorFinding]]

_CHECKS: dict[str, str | DoctorCheck] = {
    # first: opening a database (the other checks, provider health) makes it 0600 again
    "file_modes": "paxm_core.doctor.modes:check_file_modes",
    "config": "paxm_core.doctor.config_check:check_config",
    "agents": "paxm_core.doctor.agents:check_agents",
    "plugins": "paxm_core.doctor:check_plugins",
    "capture": "paxm_core.doctor.capture:check_capture",
}


def register_check(name: str, check: str | DoctorCheck) -> None:
    """Add (or replace) the check ``name``: a function or its ``"module:function"`` path."""
    _CHECKS[name] = check


def registered_checks() -> list[str]:
    """Names of the registered checks, in the order doctor runs them."""
    return list(_CHECKS)


def _resolve(target: str | DoctorCheck) -> DoctorCheck:
    if not isinstance(target, str):
        return target
    module, _, attr = target.partition(":")
    func = getattr(import_module(module), attr)
    assert callable(func)
    return func  # type: ignore[no-any-return]


def run_checks(config: Config, names: Iterable[str] | None = None) -> list[DoctorFinding]:
    """Run the registered checks (or only ``names``) on ``config``; never raises."""
    findings: list[DoctorFinding] = []
    for name in list(_CHECKS) if names is None else list(names):
        try:
            findings.extend(_resolve(_CHECKS[name])(config))
        except Exception as exc:  # a broken check is a finding, not a crash
            findings.append(DoctorFinding(name, "doctor", "error", f"the {name} check failed: {exc}"))
    return findings


def check_plugins(config: Config) -> Iterator[DoctorFinding]:
    """One ``error`` per plugin that could not be imported or registered."""
    from paxm_core.plugins import get_plugin_manager

    pm = get_plugin_manager()
    pm.provider_types()
    pm.integrations()
    for failure in pm.load_errors:
        fix = f"pip install --force-reinstall {failure.distribution}" if failure.distribution else "paxm plugins"
        yield DoctorFinding("plugins", failure.plugin, "error", f"plugin failed to load: {failure.error}", fix)
