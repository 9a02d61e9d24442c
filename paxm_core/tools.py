"""The active path: ``recall`` and ``remember`` with trusted identity.

Callers (CLI, MCP, evals) supply only text, a profile and free-form metadata.  Who wrote a
memory (user, agent, session) and where it is visible (scope) come from config and the
runtime, never from the caller: caller ``paxm_*`` keys and the reserved keys
(:data:`RESERVED_METADATA_KEYS`: workspace, user, agent, scope, tier, session ...) are dropped
from caller metadata, whatever their case; the workspace is set only through the trusted
``workspace`` argument.  Text and query sizes are bounded by ``limits.max_text_bytes`` and
``limits.max_query_bytes``.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TypeVar

from paxm_core.api.deadline import Deadline
from paxm_core.api.errors import PaxmError, UsageError
from paxm_core.api.timefmt import utcnow
from paxm_core.api.types import MemoryItem, MemoryOrigin, Provenance, SearchQuery, TurnContext
from paxm_core.attribution import CLI_AGENT, without_paxm_keys
from paxm_core.digest import sha256_hex
from paxm_core.router import profiles
from paxm_core.router.policy import PutPolicy, RecallResult, RememberResult, SearchPolicy
from paxm_core.textsafe import scrub, scrub_text
from paxm_core.workspace import memory_project, visible

if TYPE_CHECKING:
    from typing import TypedDict, Unpack

    from paxm_core.config import Config
    from paxm_core.router import Router
    from paxm_core.telemetry.recorder import Telemetry

    class ItemFields(TypedDict, total=False):
        """What :meth:`Tools.remember` passes on to :meth:`Tools.build_item` as it is."""

        metadata: Mapping[str, str] | None
        id: str
        workspace: str | None
        session_id: str | None
        agent_name: str | None
        created_at: datetime | None
        tier: str
        expires_at: datetime | None
        admission_text: str
        turn: TurnContext | None


_R = TypeVar("_R", RecallResult, RememberResult)
_P = TypeVar("_P", SearchPolicy, PutPolicy)

__all__ = [
    "RESERVED_METADATA_KEYS",
    "Tools",
    "caller_metadata",
    "cli_session_id",
    "new_session_id",
    "resolve_agent_id",
]

#: Metadata keys only trusted context sets (compared lowercased, ``-`` read as ``_``);
#: every ``paxm_*`` key is reserved too.  ``session_id`` is handled apart: a trusted session
#: (MCP, CLI) replaces it; the hook path keys its capture session on the payload's.
RESERVED_METADATA_KEYS = frozenset(
    "workspace user user_id agent agent_id session scope scope_type scope_id tier expires_at created_at".split()
)


def _reserved_key(key: str) -> bool:
    norm = key.strip().lower().replace("-", "_")
    return norm in RESERVED_METADATA_KEYS or norm.startswith("paxm")


def caller_metadata(metadata: Mapping[str, str] | None) -> dict[str, str]:
    """``metadata`` without ``paxm_*`` and reserved keys (any case or spacing)."""
    return {key: value for key, value in without_paxm_keys(metadata).items() if not _reserved_key(key)}


def _check_size(what: str, text: str, limit: int, key: str) -> None:
    size = len(text.encode("utf-8", "replace"))
    if size > limit:
        raise UsageError(f"{what} is {size} bytes, over the {limit}-byte limit ({key}); shorten it or raise {key}")


UNKNOWN_AGENT = "unknown"
#: Most time :meth:`Tools.elsewhere` (the "matches in other projects" hint) may add to a recall.
_HINT_SECONDS = 1.0


def cli_session_id(user_id: str, config_path: str, workspace: str) -> str:
    """The stable CLI session: ``paxm-cli-`` + the first 24 hex chars of sha256(cli, user, config, cwd).

    Stable per user, config file and working directory, so successive ``paxm remember`` calls
    in one project share a session (and its sequence numbers).
    """
    digest = sha256_hex("\x00".join(("cli", user_id, config_path, workspace)).encode())
    return f"paxm-cli-{digest[:24]}"


def new_session_id(kind: str) -> str:
    """A fresh random session id ``paxm-<kind>-<base32>`` (one per MCP server lifetime)."""
    kind = kind.strip().lower() or "runtime"
    import base64  # not at module import: the hook daemon's first answer never needs it

    # os.urandom is what secrets.token_bytes reads, without importing hmac and random
    token = base64.b32encode(os.urandom(16)).decode().rstrip("=").lower()
    return f"paxm-{kind}-{token}"


def resolve_agent_id(config: Config, agent_name: str = "") -> str:
    """The agent id written on memories (upstream's rule).

    A named configured agent gives its ``agent_id``; no name gives the id of the single enabled
    agent that has one; anything else (unknown name, several or no candidates) is ``unknown``.
    """
    agent_name = agent_name.strip()
    if agent_name == CLI_AGENT and CLI_AGENT not in config.agents:
        user = config.identity.user_id.strip()  # the command line writes as itself: cli-<user>
        return f"{CLI_AGENT}-{user}" if user else CLI_AGENT
    if agent_name:
        agent = config.agents.get(agent_name)
        return agent.agent_id if agent is not None and agent.agent_id else UNKNOWN_AGENT
    candidates = [a.agent_id for a in config.agents.values() if a.enabled and a.agent_id]
    return candidates[0] if len(candidates) == 1 else UNKNOWN_AGENT


class Tools:
    """Recall and remember over a :class:`~paxm_core.router.Router`.

    :param config: the loaded config (profiles, identity, agents).
    :param router: the router over the enabled providers.
    :param telemetry: optional object with ``on_recall`` / ``on_remember`` (best effort).
    :param session_id: default trusted session for calls that do not pass one.
    :param agent_name: default configured agent for writes (MCP ``--agent``, hook target).
    :param clock: "now" for ``created_at`` (tests pin it).
    """

    def __init__(
        self,
        config: Config,
        router: Router,
        *,
        telemetry: Telemetry | None = None,
        session_id: str = "",
        agent_name: str = "",
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.config = config
        self.router = router
        self.telemetry = telemetry
        self.session_id = session_id
        self.agent_name = agent_name
        self._clock = clock or utcnow

    def bind(self, *, session_id: str | None = None, agent_name: str | None = None) -> Tools:
        """A copy with a different default session and/or agent (one per MCP server)."""
        return Tools(
            self.config,
            self.router,
            telemetry=self.telemetry,
            session_id=self.session_id if session_id is None else session_id,
            agent_name=self.agent_name if agent_name is None else agent_name,
            clock=self._clock,
        )

    def put_policy(self, profile: str | None) -> PutPolicy:
        return profiles.put_policy(self.config, profile)

    # -- recall --------------------------------------------------------------------------

    def recall(
        self,
        query: str,
        *,
        profile: str | None = None,
        limit: int | None = None,
        metadata: Mapping[str, str] | None = None,
        workspace: str | None = None,
        filters: Mapping[str, str] | None = None,
        session_id: str | None = None,
        deadline: Deadline | None = None,
        source: str = "cli",
        command: str = "recall",
    ) -> RecallResult:
        """Recall memories for ``query`` through recall profile ``profile``.

        ``metadata`` is diagnostic context (never a filter) and loses any ``paxm_*`` key;
        ``workspace`` becomes the trusted ``workspace`` key the SQLite provider scopes by;
        ``filters`` are explicit provider-side filters.  Raises ``UsageError`` for an empty
        query or unknown profile and ``RecallError`` (with the partial result) when a required
        provider fails.
        """
        started = time.monotonic()
        text = scrub_text(query).strip() if isinstance(query, str) else ""
        profile_name = (profile or "").strip() or profiles.default_recall_profile(self.config)

        def run() -> RecallResult:
            if not text:
                raise UsageError("recall query is required")
            _check_size("recall query", text, self.config.limits.query_bytes, "limits.max_query_bytes")
            policy = profiles.search_policy(self.config, profile_name, limit)
            meta = caller_metadata(metadata)
            session = (session_id if session_id is not None else self.session_id).strip()
            if session:
                meta["session_id"] = session
            if workspace is not None and workspace.strip():
                meta["workspace"] = workspace.strip()
            search = SearchQuery(text=text, metadata=meta, filters=dict(filters or {}))
            scope = meta.get("workspace", "")
            if deadline is not None:
                return _in_project(self.router.search(search, policy, deadline), scope)
            policy, budget = self._active_budget(policy)
            return self._excerpt(_in_project(self.router.search(search, policy, budget), scope))

        fields = {"query": text, "profile": profile_name, "source": source, "command": command}
        return self._observed("on_recall", RecallResult, run, started, fields)

    def elsewhere(
        self,
        query: str,
        *,
        workspace: str,
        profile: str | None = None,
        limit: int | None = None,
        shown: int = 0,
    ) -> list[tuple[str, int]]:
        """How many memories matching ``query`` belong to projects a recall scoped to
        ``workspace`` does not see: ``[(project, matches)]``, most matches first.

        Asked only when that recall returned fewer than ``limit`` hits (``shown``): a full page
        is answer enough.  An unscoped search within at most a second, recorded nowhere (it is
        a hint, not a recall); a failure gives ``[]``, a partial answer counts what came back.
        """
        text = scrub_text(query).strip() if isinstance(query, str) else ""
        scope = workspace.strip()
        if not text or not scope:
            return []
        try:
            name = (profile or "").strip() or profiles.default_recall_profile(self.config)
            policy = profiles.search_policy(self.config, name, limit)
            if shown >= policy.limit > 0:
                return []
            policy, _ = self._active_budget(policy)
            # a hint never costs a recall more than a second, whatever the providers' latency
            budget = Deadline.after(min(self.config.limits.deadline_seconds, _HINT_SECONDS))
            result = self.router.search(SearchQuery(text=text), policy, budget)
        except PaxmError as exc:
            partial = getattr(exc, "result", None)
            if not isinstance(partial, RecallResult):
                return []
            result = partial
        counts: dict[str, int] = {}
        for hit in result.hits:
            project = memory_project(hit.metadata)
            if not visible(project, scope):
                counts[project] = counts.get(project, 0) + 1
        return sorted(counts.items(), key=lambda item: (-item[1], item[0]))

    # -- remember ------------------------------------------------------------------------

    def remember(
        self,
        text: str,
        *,
        profile: str | None = None,
        source: str = "cli",
        deadline: Deadline | None = None,
        command: str = "remember",
        **fields: Unpack[ItemFields],
    ) -> RememberResult:
        """Store ``text`` through write profile ``profile`` (default ``default``).

        ``fields`` are :meth:`build_item`'s.  Raises ``UsageError`` for empty text or an unknown
        profile and ``WriteError`` (with the partial result) when a required provider fails.  An
        active write (``command="remember"``, no ``deadline``) hands an optional provider that is
        late the memory through the capture queue (:meth:`_write_required_queue_optional`).
        """
        started = time.monotonic()
        profile_name = (profile or "").strip() or "default"

        def run() -> RememberResult:
            item, policy = self.build_item(text, profile=profile_name, source=source, **fields)
            if command == "remember":
                item = self.anchored(item, str(fields.get("workspace") or ""))
            if deadline is not None:
                return self.router.put([item], policy, deadline)
            policy, budget = self._active_budget(policy)
            if command == "remember":
                return self._write_required_queue_optional(item, policy, budget, profile_name)
            return self.router.put([item], policy, budget)

        observed = {"profile": profile_name, "source": source, "command": command}
        return self._observed("on_remember", RememberResult, run, started, observed)

    def anchored(self, item: MemoryItem, workspace: str) -> MemoryItem:
        """``item`` with the code anchors of its text (:mod:`paxm_core.anchors`, docs/freshness.md).

        :param workspace: the memory's project (``""``: none).  Paths in the text are read from
            the current directory when it lies inside that project (``paxm remember`` in a
            subdirectory names files relative to it), else from the project's root.
        """
        from paxm_core.anchors import anchor_metadata

        try:
            here = os.getcwd()
        except OSError:  # the directory was removed under us
            return item
        root = workspace.strip()
        top = os.path.normpath(root)  # lexically, as pathlib's is_relative_to
        inside = not root or here == top or here.startswith(top.rstrip("/") + "/")
        directory = here if inside else root
        metadata = anchor_metadata(item.metadata, item.text, directory, self.config.freshness.anchors_on)
        return item if metadata == item.metadata else dataclasses.replace(item, metadata=metadata)

    def _observed(
        self, method: str, kind: type[_R], call: Callable[[], _R], started: float, fields: Mapping[str, object]
    ) -> _R:
        """``call()`` (a recall or a write), its outcome reported to telemetry's ``method`` with ``fields``.

        A ``PaxmError`` carrying a partial result (``exc.result``, from the router) reports that
        result with the error; an unexpected failure is a failed call, never a success.
        """
        result: _R | None = None
        error = ""
        try:
            result = call()
            return result
        except PaxmError as exc:
            partial = getattr(exc, "result", None)
            result = partial if isinstance(partial, kind) else None
            error = str(exc)
            raise
        except BaseException as exc:
            error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            self._telemetry(
                method, **fields, result=result, error=error, duration_ms=(time.monotonic() - started) * 1000
            )

    def build_item(
        self,
        text: str,
        *,
        profile: str | None = None,
        source: str = "",
        metadata: Mapping[str, str] | None = None,
        id: str = "",
        workspace: str | None = None,
        session_id: str | None = None,
        agent_name: str | None = None,
        created_at: datetime | None = None,
        tier: str = "",
        expires_at: datetime | None = None,
        admission_text: str = "",
        turn: TurnContext | None = None,
    ) -> tuple[MemoryItem, PutPolicy]:
        """The attributed item and write policy ``remember`` would use (for batch writers)."""
        # Never fail a write for its text: lone surrogates (a cut emoji, or invalid bytes a
        # shell passed through argv/stdin) become U+FFFD.
        body = scrub_text(text).strip() if isinstance(text, str) else ""
        if body:
            from paxm_core.passive._redact import compile_extra, redact

            body = redact(body, compile_extra(self.config.privacy.redact_patterns)).strip()
        metadata = dict(scrub(dict(metadata))) if metadata else metadata
        admission_text = scrub_text(admission_text)
        if not body:
            raise UsageError("memory text is required")
        _check_size("memory text", body, self.config.limits.text_bytes, "limits.max_text_bytes")
        policy = self.put_policy(profile)
        session = (session_id if session_id is not None else self.session_id).strip()
        meta = caller_metadata(metadata)
        if session:
            meta.pop("session_id", None)  # the trusted session is in origin, not caller metadata
        # a shared (team) memory belongs to every project: a project is one machine's path, which
        # a teammate's recall could never match (docs/projects.md)
        if workspace is not None and workspace.strip() and policy.scope.type == "personal":
            meta["workspace"] = workspace.strip()
        user = self.config.identity.user_id
        agent = resolve_agent_id(self.config, self.agent_name if agent_name is None else agent_name)
        created = created_at if created_at is not None else self._clock()
        created = created.replace(tzinfo=UTC) if created.tzinfo is None else created.astimezone(UTC)
        item = MemoryItem(
            text=body,
            id=id.strip(),
            source=source,
            metadata=meta,
            created_at=created,
            tier=tier,
            expires_at=expires_at,
            origin=MemoryOrigin(user_id=user, agent_id=agent, session_id=session),
            scope=policy.scope,
            provenance=Provenance(user, agent, policy.scope.type, policy.scope.id),
            admission_text=admission_text,
            turn=turn,
        )
        return item, policy

    def _active_budget(self, policy: _P) -> tuple[_P, Deadline]:
        """The active path's budget: every route without a timeout gets ``limits.route_timeout``
        and the whole call ``limits.deadline``, so a hung required provider fails with a timeout
        error within it.  A recall's optional routes may keep it only ``limits.optional_grace``
        once the required ones have answered."""
        limits = self.config.limits
        routes = [
            r if r.timeout is not None and r.timeout > 0 else dataclasses.replace(r, timeout=limits.route_seconds)
            for r in policy.routes
        ]
        if isinstance(policy, SearchPolicy):
            bounded = dataclasses.replace(policy, routes=routes, optional_grace=limits.optional_grace_seconds)
        else:
            bounded = dataclasses.replace(policy, routes=routes)
        return bounded, Deadline.after(limits.deadline_seconds)

    def _write_required_queue_optional(
        self, item: MemoryItem, policy: PutPolicy, budget: Deadline, profile: str
    ) -> RememberResult:
        """Write ``item`` to every route; an optional one that has not succeeded within the grace gets it queued.

        The required routes are waited for as usual (a failure raises ``WriteError``, and then
        nothing is queued).  An optional route may keep the caller only ``limits.optional_grace``
        after them; one that failed or had not answered by then is handed the memory through
        the capture queue instead (``result.queued``), and the delivery worker (the hook daemon,
        ``paxm queue flush``) writes it there with its retries.  A queue that cannot be opened
        leaves the provider's error in ``provider_errors``, never fails the write.
        """
        graced = dataclasses.replace(policy, optional_grace=self.config.limits.optional_grace_seconds)
        result = self.router.put([item], graced, budget)
        missed = sorted({e.provider for e in result.provider_errors if not e.required})
        if not missed:
            return result
        try:
            _enqueue(self.config, item, profile, missed)
        except PaxmError as exc:  # the provider's own error stays, with why it could not be queued
            result.provider_errors = [
                dataclasses.replace(e, error=f"{e.error}; capture queue: {exc}") if e.provider in missed else e
                for e in result.provider_errors
            ]
            return result
        result.provider_errors = [e for e in result.provider_errors if e.provider not in missed]
        result.queued = missed
        return result

    def _excerpt(self, result: RecallResult) -> RecallResult:
        """Hits longer than ``limits.max_hit_chars`` are excerpted, marked, in what callers print."""
        cap = self.config.limits.hit_chars
        if not any(len(h.text) > cap for h in result.hits):
            return result
        hits = [
            h
            if len(h.text) <= cap
            else h.copy(text=h.text[:cap].rstrip() + f"\n[… excerpt: {len(h.text) - cap} more characters]")
            for h in result.hits
        ]
        return dataclasses.replace(result, hits=hits)

    def _telemetry(self, method: str, **fields: object) -> None:
        sink = self.telemetry
        if sink is None:
            return
        try:
            getattr(sink, method)(**fields)
        except Exception as exc:  # telemetry never fails an operation
            print(f"paxm telemetry skipped: {exc}", file=sys.stderr)


def _in_project(result: RecallResult, scope: str) -> RecallResult:
    """``result`` without the hits a recall scoped to ``scope`` must not see
    (:func:`paxm_core.workspace.visible`): the project rule holds for a provider that stores the
    workspace but does not filter on it."""
    if not scope:
        return result
    kept = [hit for hit in result.hits if visible(memory_project(hit.metadata), scope)]
    if len(kept) == len(result.hits):
        return result
    return dataclasses.replace(result, hits=kept)


def _enqueue(config: Config, item: MemoryItem, profile: str, providers: list[str]) -> None:
    """Append ``item`` to the capture queue as its own sealed episode, owed to ``providers`` only.

    Raises :class:`~paxm_core.api.errors.PaxmError` (``QueueError``) when the queue cannot take it.
    """
    from paxm_core.capture import CaptureEvent, CaptureQueue, default_queue_path, session_key_for

    event_id = "evt_" + os.urandom(16).hex()
    workspace = item.metadata.get("workspace", "")
    # its own session key: one episode per write, so a dead delivery never holds up a later one
    key = session_key_for("active", workspace=workspace, event_id=event_id)
    event = CaptureEvent(event_id, key, item, profile, terminal=True, captured_at=item.created_at)
    try:
        queue = CaptureQueue(default_queue_path(config), routes={profile: providers}, recover=False)
    except OSError as exc:
        raise PaxmError(str(exc)) from exc
    try:
        queue.append(event)
    finally:
        queue.close()
