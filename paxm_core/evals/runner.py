"""Run a suite: every case in its own temp directory, through the production runtime (docs/evals.md).

Each case gets a default config (all agents enabled, SQLite beside it) loaded as the CLI loads
it; seeds go through the router's write path, conversation writes through the hook write path,
and the recall runs as ``active`` (:meth:`Tools.recall`) or through the hook runtime.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from paxm_core.api.errors import PaxmError
from paxm_core.api.timefmt import utcnow
from paxm_core.api.types import MemoryHit, normalize_tier
from paxm_core.config.defaults import UPSTREAM_DEFAULT_AGENT
from paxm_core.evals.results import CaseResult, Result
from paxm_core.evals.scoring import aggregate, evaluate_write_contract, score_conversation_write, score_retrieval
from paxm_core.evals.suite import Case, Suite

if TYPE_CHECKING:
    from paxm_core.runtime import Runtime

__all__ = ["ProgressCallback", "Runner", "WrittenItem", "hook_write"]

#: upstream's eval suites default the hook target to upstream's default agent (suite data)
DEFAULT_TARGET = UPSTREAM_DEFAULT_AGENT
DEFAULT_EVENT = "user_input"

#: ``(cases done, total cases, result of the case just finished)``
ProgressCallback = Callable[[int, int, CaseResult], None]


@dataclass(frozen=True)
class WrittenItem:
    """What a conversation write rendered and stored (``written``: the provider returned refs)."""

    text: str
    metadata: dict[str, str] = field(default_factory=dict)
    written: bool = False


#: renders a case's hook ``write`` and stores it; ``None`` when the hook path skips the event
Writer = Callable[["Runtime", Case], WrittenItem | None]


class Runner:
    """Runs suites.  ``root`` keeps the per-case directories (default: a temp dir removed after).

    :param writer: stores conversation writes (default: :func:`hook_write`, the hook write path).
    :param progress: called after every case.
    :param provider_type: run the cases on this provider type instead of the default ``sqlite``.
    """

    def __init__(
        self,
        root: Path | None = None,
        *,
        writer: Writer | None = None,
        progress: ProgressCallback | None = None,
        provider_type: str = "",
    ) -> None:
        self.root = root
        self.provider_type = provider_type
        self.writer = writer or hook_write
        self.progress = progress
        self._plugin_manager: Any = None

    def run(self, suite: Suite) -> Result:
        started = time.monotonic()
        result = Result(suite=suite.name, version=suite.version, case_count=len(suite.cases))
        if self.root is not None:
            self.root.mkdir(parents=True, exist_ok=True)
            root, cleanup = self.root, False
        else:
            root, cleanup = Path(tempfile.mkdtemp(prefix="paxm-eval-", dir=_scratch_dir())), True
        try:
            for index, case in enumerate(suite.cases):
                case_result = self.run_case(root / _case_dir_name(index, case.id), case)
                result.cases.append(case_result)
                if self.progress is not None:
                    self.progress(index + 1, len(suite.cases), case_result)
        finally:
            if cleanup:
                shutil.rmtree(root, ignore_errors=True)
        result.duration_ms = int((time.monotonic() - started) * 1000)
        aggregate(result)
        return result

    def run_case(self, case_dir: Path, case: Case) -> CaseResult:
        """Run one case in ``case_dir`` (created) and return its scored result; never raises for case failures."""
        started = time.monotonic()
        result = CaseResult(
            id=case.id,
            category=case.category,
            write_case=case.is_write_case,
            adapter_contract_case=case.is_write_case,
            write_forbidden_candidates=len(case.forbidden_write),
        )
        try:
            self._execute(case_dir, case, result)
        except PaxmError as exc:
            result.set_execution_error(str(exc))
        except Exception as exc:
            # A provider or plugin bug must cost one case, not the whole run's report; it is
            # still an execution failure, which fails every gate.
            result.set_execution_error(f"{type(exc).__name__}: {exc}")
        finally:
            if (
                result.adapter_contract_case
                and not result.adapter_contract_passed
                and not result.adapter_contract_errors
            ):
                result.adapter_contract_errors = [result.error or "adapter write contract did not complete"]
            result.duration_ms = int((time.monotonic() - started) * 1000)
        return result

    def _load_runtime(self, config_path: Path) -> Runtime:
        from paxm_core.plugins import get_plugin_manager
        from paxm_core.runtime import Runtime

        # Entry points are scanned once per run; each case still gets its own config,
        # providers, router and tools, exactly as a fresh CLI process would.
        if self._plugin_manager is None:
            self._plugin_manager = get_plugin_manager()
        return Runtime.load(str(config_path), plugin_manager=self._plugin_manager)

    def _execute(self, case_dir: Path, case: Case, result: CaseResult) -> None:
        config_path = _write_case_config(case_dir, self.provider_type)
        runtime: Runtime | None = self._load_runtime(config_path)
        try:
            assert runtime is not None
            written_text, written_metadata = "", {}
            if case.write is not None:
                write_started = time.monotonic()
                item = self.writer(runtime, case)
                result.write_duration_us = int((time.monotonic() - write_started) * 1_000_000)
                if item is None:
                    result.set_execution_error("conversation write was skipped")
                    return
                written_text, written_metadata = item.text, dict(item.metadata)
                result.written = item.written
                result.adapter_contract_errors = evaluate_write_contract(case, item.written, item.text, item.metadata)
                result.adapter_contract_passed = not result.adapter_contract_errors
            _seed_memories(runtime, case)
            if case.restart_before_recall:
                # a fresh process would see only what reached disk
                closing, runtime = runtime, None
                closing.close()
                runtime = self._load_runtime(config_path)
            recall_started = time.monotonic()
            hits, note = _recall(runtime, case)
            result.recall_duration_us = int((time.monotonic() - recall_started) * 1_000_000)
        finally:
            if runtime is not None:
                runtime.close()
        result.hit_ids = [hit.id for hit in hits]
        result.result_count = len(hits)
        result.returned_context_bytes = sum(len(hit.text.encode("utf-8")) for hit in hits)
        if case.write is not None:
            score_conversation_write(case, result, written_text, written_metadata, hits)
        else:
            score_retrieval(case, result)
        if note and not result.passed:
            result.error = f"{result.error}; {note}" if result.error else note


def _scratch_dir() -> str | None:
    """``$TMPDIR`` if set, else ``/dev/shm`` when writable: the stores are thrown away, so their fsyncs buy nothing."""
    if os.environ.get("TMPDIR"):
        return None
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK) else None


def _case_dir_name(index: int, case_id: str) -> str:
    # Case ids come from a file: keep them out of path syntax ("../x", "a/b").
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", case_id).strip(".") or "case"
    return f"{index + 1:04d}-{safe[:80]}"


def _write_case_config(case_dir: Path, provider_type: str = "") -> Path:
    from paxm_core.config import default_config, save_config
    from paxm_core.plugins import installed_provider_catalog

    case_dir.mkdir(parents=True, exist_ok=True)
    # JSON rather than YAML: same loader and validation, a fraction of the parse time per case.
    config_path = case_dir / "config.json"
    config = default_config(config_path, installed_provider_catalog())
    # Upstream enables every agent so hook recall/write settings of any target apply.
    for agent in config.agents.values():
        agent.enabled = True
    if provider_type:
        for provider in config.enabled_providers().values():
            provider.type = provider_type
    save_config(config, config_path)
    return config_path


def _seed_memories(runtime: Runtime, case: Case) -> None:
    """Write seeded memories through :meth:`Tools.remember`, as upstream's runner does.

    A seed's ``workspace`` metadata is the suite author's trusted context: it becomes the
    ``workspace`` argument, since ``remember`` drops that key from caller metadata.
    """
    for memory in case.memories:
        metadata = dict(memory.metadata)
        workspace = _pop_workspace(metadata)
        runtime.tools.remember(
            memory.text,
            profile="stm" if normalize_tier(memory.tier) == "stm" else "ltm",  # upstream's write profiles
            source=f"eval:{case.id}",
            metadata=metadata,
            workspace=workspace or None,
            id=memory.id,
            tier=memory.tier,
            expires_at=memory.expires_at,
            created_at=memory.created_at,
            command="eval",
        )


def _pop_workspace(metadata: dict[str, str]) -> str:
    """Remove and return the ``workspace`` key (any case or spacing, as ``caller_metadata`` reads it)."""
    workspace = ""
    for key in list(metadata):
        if str(key).strip().lower() == "workspace":
            value = metadata.pop(key)
            workspace = workspace or str(value).strip()
    return workspace


def _recall(runtime: Runtime, case: Case) -> tuple[list[MemoryHit], str]:
    recall = case.recall
    # the workspace is ``recall.workspace`` or else ``recall.metadata.workspace``
    metadata = dict(recall.metadata)
    workspace = _pop_workspace(metadata)
    workspace = recall.workspace.strip() or workspace
    if recall.mode == "active":
        result = runtime.tools.recall(
            recall.query,
            profile=recall.profile or "default",
            limit=recall.limit or None,
            metadata=metadata,
            workspace=workspace or None,
            source="eval",
            command="eval",
        )
        return list(result.hits), ""
    return _passive_recall(runtime, case, workspace, metadata)


def _passive_recall(
    runtime: Runtime, case: Case, workspace: str, metadata: dict[str, str]
) -> tuple[list[MemoryHit], str]:
    """Passive recall through the hook runtime, as a ``user_input`` hook runs it; a note when the budget ran out."""
    from paxm_core.api.events import RECALL_PHASE_INITIAL, RECALL_PHASE_KEY, HookEvent
    from paxm_core.passive.passive import BudgetedRecall, PassiveRuntime

    recall = case.recall
    if recall.mode == "passive_initial":
        metadata[RECALL_PHASE_KEY] = RECALL_PHASE_INITIAL
    event = HookEvent(
        target=recall.target or DEFAULT_TARGET,
        event=recall.event or DEFAULT_EVENT,
        query=recall.query,
        prompt=recall.query,
        workspace=workspace,
        metadata=metadata,
        limit=recall.limit,
    )
    passive = PassiveRuntime(
        runtime.config, recall=BudgetedRecall(lambda: runtime), plugin_manager=runtime.plugin_manager
    )
    outcome = passive.handle(event)
    if outcome.errors:
        raise PaxmError("; ".join(outcome.errors))  # hooks fail open; an eval case must not
    note = "passive recall ran out of its time budget" if outcome.timed_out else ""
    return [hit for hit in outcome.hits if isinstance(hit, MemoryHit)], note


def hook_write(runtime: Runtime, case: Case) -> WrittenItem | None:
    """Render ``case.write`` as the hook path does and store it ``repeat`` times (``None``: not written).

    Each store is an ID-less :meth:`Tools.remember`, as upstream's eval does, so LTM admission and
    consolidation apply to repeated writes.
    """
    from paxm_core.api.events import HookEvent, HookMessage
    from paxm_core.passive.compose import compose_write
    from paxm_core.passive.integration import resolve_integration
    from paxm_core.passive.policy import write_settings
    from paxm_core.plugins import get_plugin_manager

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
