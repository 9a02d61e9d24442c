"""Per-agent, per-event hook settings read from :class:`paxm_core.config.Config`.

Kept in one place so the passive runtime never pokes at config sections directly, and so the
passive budget is computed by exactly one documented rule (:func:`passive_budget`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from paxm_core.passive.events import EVENT_USER_INPUT
from paxm_core.passive.insertion import InsertionPolicy

if TYPE_CHECKING:
    from paxm_core.config.model import Config

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_TIMEOUT_EXTRA",
    "RecallSettings",
    "WriteSettings",
    "initial_enabled",
    "passive_budget",
    "recall_settings",
    "source_allowed",
    "write_settings",
]

#: added to the longest route timeout of the recall profile (upstream's ``timeout_extra``)
DEFAULT_TIMEOUT_EXTRA = 0.1
#: budget when neither the hook nor the profile gives one: 250 ms route + 100 ms extra
DEFAULT_BUDGET = 0.35
#: the owner meaning "paxm's own hook commands" (an empty owner means the same)
_OWNER_PAXM = "paxm"


def _agent(config: Config, target: str) -> Any:
    agents = getattr(config, "agents", None) or {}
    agent = agents.get(target)
    return agent if agent is not None and getattr(agent, "enabled", False) else None


def _hook(config: Config, target: str, event: str) -> Any:
    agent = _agent(config, target)
    if agent is None:
        return None
    return (getattr(agent, "hooks", None) or {}).get(event)


def source_allowed(config: Config, target: str, owner: str) -> bool:
    """Ownership gate: a plugin-owned agent only accepts calls from that plugin, and vice versa.

    Any owner other than ``paxm`` is a plugin's name (an integration's ``owners``); the gate
    only compares names, so the core needs no list of them.
    """
    agents = getattr(config, "agents", None) or {}
    agent = agents.get(target)
    configured = str(getattr(getattr(agent, "integration", None), "owner", "") or "").strip().lower()
    caller = owner.strip().lower()
    if configured and configured != _OWNER_PAXM:
        return caller == configured
    return caller in ("", _OWNER_PAXM)


@dataclass(frozen=True)
class WriteSettings:
    """Whether and how an event is written."""

    template: str
    profile: str


def write_settings(config: Config, target: str, event: str) -> WriteSettings | None:
    """The write settings for ``target``/``event``, or ``None`` when writing is off."""
    hook = _hook(config, target, event)
    write = getattr(hook, "write", None)
    if write is None or not getattr(write, "enabled", False):
        return None
    return WriteSettings(
        template=str(getattr(write, "template", "") or "{{ .safe_text }}"),
        profile=str(getattr(write, "profile", "") or "default"),
    )


@dataclass(frozen=True)
class RecallSettings:
    """Effective passive recall settings (after applying ``initial`` overrides)."""

    profile: str
    query_template: str
    max_results: int
    budget: float
    insertion: InsertionPolicy
    initial: bool
    #: cap on the injected recall block, in characters (0: the default)
    max_chars: int = 0


def initial_enabled(config: Config, target: str, event: str) -> bool:
    """True when ``user_input`` recall has an enabled ``initial`` override."""
    if event != EVENT_USER_INPUT:
        return False
    recall = getattr(_hook(config, target, event), "recall", None)
    initial = getattr(recall, "initial", None)
    return bool(recall is not None and getattr(recall, "enabled", False) and getattr(initial, "enabled", False))


def passive_budget(config: Config, profile: str, timeout: float | None, timeout_extra: float | None) -> float:
    """The enforced overall passive recall budget, in seconds.

    1. an explicit hook ``timeout`` is the budget;
    2. otherwise the longest route timeout of the recall profile plus ``timeout_extra``
       (default 100 ms) -- what upstream actually does (350 ms for the default SQLite route);
    3. otherwise :data:`DEFAULT_BUDGET`.
    """
    if timeout is not None and timeout > 0:
        return float(timeout)
    extra = DEFAULT_TIMEOUT_EXTRA if timeout_extra is None or timeout_extra <= 0 else float(timeout_extra)
    profiles = getattr(config, "recall_profiles", None) or {}
    routes = getattr(profiles.get(profile), "providers", None) or []
    longest = max((float(getattr(r, "timeout", 0) or 0) for r in routes), default=0.0)
    if longest > 0:
        return longest + extra
    return DEFAULT_BUDGET


def recall_settings(config: Config, target: str, event: str, *, initial: bool) -> RecallSettings | None:
    """Recall settings for ``target``/``event``; ``None`` when recall is off for it."""
    hook = _hook(config, target, event)
    recall = getattr(hook, "recall", None)
    if recall is None or not getattr(recall, "enabled", False):
        return None
    profile = str(getattr(recall, "profile", "") or "passive")
    template = str(getattr(recall, "query_template", "") or "")
    max_results = int(getattr(recall, "max_results", 0) or 0)
    timeout = getattr(recall, "timeout", None)
    extra = getattr(recall, "timeout_extra", None)
    insertion = InsertionPolicy.from_config(getattr(recall, "insertion", None))
    sub = getattr(recall, "initial", None)
    use_initial = bool(initial and sub is not None and getattr(sub, "enabled", False))
    if use_initial and sub is not None:
        profile = str(getattr(sub, "profile", "") or profile)
        template = str(getattr(sub, "query_template", "") or template)
        max_results = int(getattr(sub, "max_results", 0) or max_results)
        if getattr(sub, "timeout", None):
            timeout = sub.timeout
            if not getattr(sub, "timeout_extra", None):
                extra = None
        if getattr(sub, "timeout_extra", None):
            extra = sub.timeout_extra
        sub_insertion = InsertionPolicy.from_config(getattr(sub, "insertion", None))
        if not sub_insertion.is_empty:
            insertion = sub_insertion
    return RecallSettings(
        profile=profile,
        query_template=template,
        max_results=max_results,
        budget=passive_budget(config, profile, timeout, extra),
        insertion=insertion,
        initial=use_initial,
        max_chars=int(getattr(recall, "max_context_chars", 0) or 0),
    )
