"""The conversation writer: a case's hook ``write`` rendered and stored as the hook path would.

Rendering is the hook runtime's (:func:`paxm_core.passive.compose.compose_write`: recall-echo
stripping, the agent's write template, hook metadata); persistence is an ID-less write through
:meth:`Tools.remember`, ``repeat`` times, as upstream's eval does with ``RememberBatch``, so
LTM admission and consolidation apply to repeated writes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from paxm_core.api.timefmt import utcnow
from paxm_core.evals.runner import DEFAULT_TARGET, WrittenItem
from paxm_core.evals.suite import Case

if TYPE_CHECKING:
    from paxm_core.runtime import Runtime

__all__ = ["HookConversationWriter"]


class HookConversationWriter:
    """Renders ``case.write`` with the target agent's write settings and stores it."""

    def write(self, runtime: Runtime, case: Case) -> WrittenItem | None:
        """Return what was stored, or ``None`` when the agent does not write this event."""
        from paxm_core.api.events import HookEvent, HookMessage
        from paxm_core.passive.compose import compose_write
        from paxm_core.passive.policy import write_settings

        write = case.write
        assert write is not None
        messages: list[HookMessage] = []
        if write.include_history:
            messages += [HookMessage(t.role.strip().lower(), t.text, f"eval-history:{case.id}") for t in case.turns]
        messages += [HookMessage(m.role.strip().lower(), m.text, f"eval:{case.id}") for m in write.messages]
        event = HookEvent(
            target=write.target.strip() or DEFAULT_TARGET,
            event=write.event.strip(),
            prompt=write.prompt,
            assistant=write.assistant,
            messages=messages,
            workspace=write.workspace,
            metadata=dict(write.metadata),
        )
        settings = write_settings(runtime.config, event.target, event.event)
        if settings is None:
            return None
        from paxm_core.passive.integration import resolve_integration
        from paxm_core.plugins import get_plugin_manager

        label = resolve_integration(event.target, get_plugin_manager()).label
        rendered = compose_write(
            event, template=settings.template, profile=settings.profile, created_at=utcnow(), label=label
        )
        if rendered is None:
            return None
        refs = 0
        for _ in range(max(1, write.repeat)):
            result = runtime.tools.remember(
                rendered.text,
                profile=rendered.profile,
                source=rendered.source,
                metadata=rendered.metadata,
                workspace=rendered.workspace,  # trusted, as the hook path passes it
                session_id="",  # upstream keeps the hook's session_id in metadata for these writes
                agent_name=rendered.target,
                created_at=rendered.created_at,
                admission_text=rendered.admission_text,
                command="eval",
            )
            refs += len(result.refs)
        return WrittenItem(text=rendered.text, metadata=dict(rendered.metadata), written=refs > 0)
