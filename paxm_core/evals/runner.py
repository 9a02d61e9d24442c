"""Run a suite: every case in its own temp directory, through the production runtime.

For each case the runner writes a default config (all agents enabled, SQLite beside the
config) into a fresh directory, loads :class:`paxm_core.runtime.Runtime` from it exactly as
the CLI does, seeds the case's memories through the router's write path, runs the recall
(``active`` through :meth:`Tools.recall`; ``passive``/``passive_initial`` through the hook recall
settings of the target agent plus the passive insertion filter) and scores the hits.

Conversation-write cases need the capture write path.  The runner takes it as a plug-in
(:class:`ConversationWriter`); without one those cases are reported as *not yet supported*
(they fail, but are not execution errors) instead of crashing the run.
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
from typing import TYPE_CHECKING, Any, Protocol

from paxm_core.api.errors import PaxmError
from paxm_core.api.types import MemoryHit, normalize_tier
from paxm_core.config.defaults import UPSTREAM_DEFAULT_AGENT
from paxm_core.evals.errors import EvalRecallError
from paxm_core.evals.results import CaseResult, Result
from paxm_core.evals.scoring import aggregate, evaluate_write_contract, score_conversation_write, score_retrieval
from paxm_core.evals.suite import Case, Suite

if TYPE_CHECKING:
    from paxm_core.runtime import Runtime

__all__ = [
    "UNSUPPORTED_WRITE",
    "ConversationWriter",
    "ProgressCallback",
    "Runner",
    "WrittenItem",
    "profile_for_tier",
]

#: Why write cases cannot run yet; shown in the text report and in each case's ``unsupported``.
UNSUPPORTED_WRITE = (
    "not yet supported: conversation-write cases need a conversation writer, and none is plugged into this runner"
)
#: upstream's eval suites default the hook target to upstream's default agent (suite data)
DEFAULT_TARGET = UPSTREAM_DEFAULT_AGENT
DEFAULT_EVENT = "user_input"

#: ``(cases done, total cases, result of the case just finished)``
ProgressCallback = Callable[[int, int, CaseResult], None]


@dataclass(frozen=True)
class WrittenItem:
    """What a :class:`ConversationWriter` rendered and stored for one case.

    :param text: the rendered memory text, as stored.
    :param metadata: the rendered metadata, as stored.
    :param written: whether the provider acknowledged the write (returned refs).
    """

    text: str
    metadata: dict[str, str] = field(default_factory=dict)
    written: bool = False


class ConversationWriter(Protocol):
    """Renders a case's hook ``write`` event and persists it (``repeat`` times, at least once).

    Return ``None`` when the hook path skips the event (the case then fails as upstream's
    "conversation write was skipped"); raise :class:`~paxm_core.api.errors.PaxmError` on failure.
    """

    def write(self, runtime: Runtime, case: Case) -> WrittenItem | None: ...


def profile_for_tier(tier: str) -> str:
    """The write profile a seeded memory of ``tier`` goes through (upstream: ``stm`` or ``ltm``)."""
    return "stm" if normalize_tier(tier) == "stm" else "ltm"


class Runner:
    """Runs suites.  ``root`` keeps the per-case directories (default: a temp dir removed after).

    :param writer: plug-in for conversation-write cases; ``None`` reports them as not yet supported.
    :param progress: called after every case (the CLI prints progress on stderr with it).
    :param provider_type: run the cases on this provider type instead of the default ``sqlite``
        (a type a plugin registers, for instance a variant of the local store).
    """

    def __init__(
        self,
        root: Path | None = None,
        *,
        writer: ConversationWriter | None = None,
        progress: ProgressCallback | None = None,
        provider_type: str = "",
    ) -> None:
        self.root = root
        self.provider_type = provider_type
        self.writer = writer
        self.progress = progress
        self._plugin_manager: Any = None

    def run(self, suite: Suite) -> Result:
        """Run every case of ``suite`` in order and return the aggregated result."""
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
            if case.is_write_case and self.writer is None:
                result.unsupported = UNSUPPORTED_WRITE
                result.error = UNSUPPORTED_WRITE
            else:
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
                assert self.writer is not None
                write_started = time.monotonic()
                item = self.writer.write(runtime, case)
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
    """Where per-case stores go by default: ``$TMPDIR`` if set, else ``/dev/shm`` when writable.

    The stores are thrown away after the run, so durability buys nothing; on a RAM-backed
    directory the fsyncs of config saves and SQLite commits cost nothing and a 100-case suite
    runs about three times faster.
    """
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
    """Write seeded memories with their explicit ids, tiers, expiry and metadata.

    They go through :meth:`Tools.remember` (trusted attribution, write profile ``stm``/``ltm``,
    then the router's write path), as upstream's runner does.  A seed's ``workspace``
    metadata is the suite author's trusted context: it is passed as the ``workspace``
    argument, since ``remember`` drops that key from caller metadata.
    """
    for memory in case.memories:
        metadata = dict(memory.metadata)
        workspace = _pop_workspace(metadata)
        runtime.tools.remember(
            memory.text,
            profile=profile_for_tier(memory.tier),
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


def _recall_workspace(case: Case) -> tuple[str, dict[str, str]]:
    """The recall's workspace and its other metadata.

    Upstream's suites set it as ``recall.workspace`` or as ``recall.metadata.workspace`` (its
    runner hands the metadata to the provider, which filters on that key).  Like a seed's, it
    is the suite author's trusted context, so it becomes the ``workspace`` argument: caller
    metadata never sets a workspace.
    """
    metadata = dict(case.recall.metadata)
    from_metadata = _pop_workspace(metadata)
    return case.recall.workspace.strip() or from_metadata, metadata


def _recall(runtime: Runtime, case: Case) -> tuple[list[MemoryHit], str]:
    recall = case.recall
    workspace, metadata = _recall_workspace(case)
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
    return _passive_recall(runtime, case)


def _passive_recall(runtime: Runtime, case: Case) -> tuple[list[MemoryHit], str]:
    """Passive recall through the hook runtime, as a ``user_input`` hook would run it.

    :class:`~paxm_core.passive.passive.PassiveRuntime` applies the target agent's hook recall
    settings (profile, limit, ``initial`` overrides), the enforced passive budget and the
    insertion filter, exactly as for a real prompt.  Returns the inserted hits and a note when
    the budget ran out (so a FAIL line says why it returned nothing).
    """
    from paxm_core.api.events import RECALL_PHASE_INITIAL, RECALL_PHASE_KEY, HookEvent
    from paxm_core.passive.passive import BudgetedRecall, PassiveRuntime

    recall = case.recall
    workspace, metadata = _recall_workspace(case)
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
        raise EvalRecallError("; ".join(outcome.errors))
    note = "passive recall ran out of its time budget" if outcome.timed_out else ""
    return [hit for hit in outcome.hits if isinstance(hit, MemoryHit)], note
