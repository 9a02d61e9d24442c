"""Per-agent, per-event hook settings, read from :class:`paxm_core.config.Config` once per event."""

from __future__ import annotations

from typing import TYPE_CHECKING

from paxm_core.api.events import EVENT_USER_INPUT
from paxm_core.api.values import value_dataclass
from paxm_core.passive.insertion import InsertionPolicy

if TYPE_CHECKING:
    from paxm_core.config.model import AgentHookConfig, Config

__all__ = [
    "HookSettings",
    "RecallSettings",
    "WriteSettings",
    "passive_budget",
    "resolve_hook_settings",
    "write_settings",
]

#: added to the longest route timeout of the recall profile (upstream's ``timeout_extra``)
DEFAULT_TIMEOUT_EXTRA = 0.1
#: budget when neither the hook nor the profile gives one: 250 ms route + 100 ms extra
DEFAULT_BUDGET = 0.35
#: the owner meaning "paxm's own hook commands" (an empty owner means the same)
_OWNER_PAXM = "paxm"


def _hook(config: Config, target: str, event: str) -> AgentHookConfig | None:
    agent = config.agents.get(target)
    return agent.hooks.get(event) if agent is not None and agent.enabled else None


@value_dataclass(frozen=True)
class WriteSettings:
    """Whether and how an event is written."""

    template: str
    profile: str


def write_settings(config: Config, target: str, event: str) -> WriteSettings | None:
    """The write settings for ``target``/``event``, or ``None`` when writing is off."""
    hook = _hook(config, target, event)
    if hook is None or not hook.write.enabled:
        return None
    return WriteSettings(template=hook.write.template or "{{ .safe_text }}", profile=hook.write.profile or "default")


@value_dataclass(frozen=True)
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


def passive_budget(config: Config, profile: str, timeout: float | None, timeout_extra: float | None) -> float:
    """The enforced passive recall budget in seconds: the hook's ``timeout``, else the recall
    profile's longest route timeout plus ``timeout_extra`` (upstream's rule), else :data:`DEFAULT_BUDGET`."""
    if timeout is not None and timeout > 0:
        return float(timeout)
    extra = DEFAULT_TIMEOUT_EXTRA if timeout_extra is None or timeout_extra <= 0 else float(timeout_extra)
    profile_config = config.recall_profiles.get(profile)
    routes = profile_config.providers if profile_config is not None else []
    longest = max((float(route.timeout or 0) for route in routes), default=0.0)
    return longest + extra if longest > 0 else DEFAULT_BUDGET


def _recall_settings(config: Config, hook: AgentHookConfig | None, *, initial: bool) -> RecallSettings | None:
    """Recall settings of ``hook``, the ``initial`` override applied when asked; ``None`` when recall is off."""
    if hook is None or not hook.recall.enabled:
        return None
    recall = hook.recall
    profile, template, max_results = recall.profile or "passive", recall.query_template, recall.max_results
    timeout, extra = recall.timeout, recall.timeout_extra
    insertion = InsertionPolicy.from_config(recall.insertion)
    sub = recall.initial if initial and recall.initial is not None and recall.initial.enabled else None
    if sub is not None:
        profile = sub.profile or profile
        template = sub.query_template or template
        max_results = sub.max_results or max_results
        if sub.timeout:
            timeout = sub.timeout
            if not sub.timeout_extra:
                extra = None
        if sub.timeout_extra:
            extra = sub.timeout_extra
        sub_insertion = InsertionPolicy.from_config(sub.insertion)
        if not sub_insertion.is_empty:
            insertion = sub_insertion
    return RecallSettings(
        profile=profile,
        query_template=template,
        max_results=max_results,
        budget=passive_budget(config, profile, timeout, extra),
        insertion=insertion,
        initial=sub is not None,
        max_chars=recall.max_context_chars,
    )


@value_dataclass(frozen=True)
class HookSettings:
    """Everything the passive runtime needs from config for one event, resolved once and passed down."""

    target: str
    event: str
    #: the agent's configured owner (lower case; ``""`` or ``paxm``: paxm's own hooks)
    owner: str
    #: ``agents.<target>.agent_id`` (the identity block's agent)
    agent_id: str
    #: whether ``user_input`` recall has an enabled ``initial`` override
    initial_enabled: bool
    write: WriteSettings | None
    #: recall for ordinary prompts; ``None`` when recall is off
    recall: RecallSettings | None
    #: recall for a session's first prompt (the ``initial`` override applied)
    initial_recall: RecallSettings | None

    def accepts(self, owner: str) -> bool:
        """The ownership gate: a plugin-owned agent only accepts calls from that plugin, and vice versa."""
        caller = owner.strip().lower()
        if self.owner and self.owner != _OWNER_PAXM:
            return caller == self.owner
        return caller in ("", _OWNER_PAXM)

    def recall_for(self, *, initial: bool) -> RecallSettings | None:
        """The recall settings for a first (``initial``) or an ordinary prompt."""
        return self.initial_recall if initial else self.recall


def resolve_hook_settings(config: Config, target: str, event: str) -> HookSettings:
    """Read ``agents.<target>`` and its ``hooks.<event>`` once into a :class:`HookSettings`."""
    agent = config.agents.get(target)
    hook = _hook(config, target, event)
    recall = _recall_settings(config, hook, initial=False)
    first = _recall_settings(config, hook, initial=True) if event == EVENT_USER_INPUT else None
    initial = first is not None and first.initial  # an enabled ``initial`` override applied
    return HookSettings(
        target=target,
        event=event,
        owner=(agent.integration.owner if agent is not None else "").strip().lower(),
        agent_id=agent.agent_id if agent is not None else "",
        initial_enabled=initial,
        write=write_settings(config, target, event),
        recall=recall,
        initial_recall=first if initial else recall,
    )
