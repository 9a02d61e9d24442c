"""What the dashboard shows, read fresh from paxm's own files: telemetry, the capture queue, memory.

Nothing here writes.  Text the user did not opt into keeping (query and hit previews) is removed
from every answer, even from events written while previews were on.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from paxm_core.api.errors import UsageError
from paxm_core.api.json import JSONObject, JSONScalar, JSONValue

if TYPE_CHECKING:
    from paxm_core.capture import CaptureQueue
    from paxm_core.config.model import Config
    from paxm_core.runtime import Runtime

__all__ = ["MAX_PAGE", "DashboardData", "EventFilter", "event_mode", "event_state"]

#: How many of the newest events the views search (the log itself is capped at ~3 MiB).
EVENT_WINDOW = 10_000
MAX_PAGE = 500
EVENT_STATES = ("success", "error", "timeout", "skipped")
RECALL_MODES = ("all", "active", "passive", "mcp")
DELIVERY_STATES = ("pending", "delivering", "retry", "delivered", "dead")
_RECALL_KINDS = ("recall", "hook_recall")


def event_state(event: Mapping[str, object]) -> str:
    """One of success / error / timeout / skipped (a timed-out recall counts as timeout)."""
    if event.get("recall_timed_out"):
        return "timeout"
    if not event.get("success"):
        return "error"
    if event.get("skipped"):
        return "skipped"
    return "success"


def event_mode(event: Mapping[str, object]) -> str:
    """How a recall was asked for: ``passive`` (hook), ``mcp``, or ``active`` (CLI/library)."""
    if event.get("kind") == "hook_recall" or event.get("source") == "hook":
        return "passive"
    if event.get("source") == "mcp":
        return "mcp"
    return "active"


@dataclass(frozen=True, slots=True)
class EventFilter:
    """Filters of ``/api/events`` (all optional; ``q``/``hit_q`` are case-insensitive substrings)."""

    kinds: tuple[str, ...] = ()
    source: str = ""
    session: str = ""
    profile: str = ""
    q: str = ""
    state: str = ""
    mode: str = ""
    hit_provider: str = ""
    hit_q: str = ""

    def __post_init__(self) -> None:
        if self.state and self.state not in EVENT_STATES:
            raise UsageError(f"state must be one of {', '.join(EVENT_STATES)}")
        if self.mode and self.mode not in RECALL_MODES:
            raise UsageError(f"mode must be one of {', '.join(RECALL_MODES)}")

    def matches(self, event: Mapping[str, object]) -> bool:
        """Whether ``event`` (already made private) passes every filter."""
        if self.kinds and event.get("kind") not in self.kinds:
            return False
        for key, wanted in (("source", self.source), ("session_key", self.session), ("profile", self.profile)):
            if wanted and event.get(key) != wanted:
                return False
        if self.state and event_state(event) != self.state:
            return False
        if self.mode and self.mode != "all":
            if event.get("kind") not in _RECALL_KINDS or event_mode(event) != self.mode:
                return False
        if self.q:
            needle = self.q.lower()
            preview = str(event.get("query_preview") or "").lower()
            digest = str(event.get("query_hash") or "").lower()
            if needle not in preview and not (digest and digest.startswith(needle)):
                return False
        hits = _hits(event)
        if self.hit_provider:
            providers = {str(h.get("provider") or "") for h in hits} | _provider_hits(event)
            if self.hit_provider not in providers:
                return False
        if self.hit_q:
            needle = self.hit_q.lower()
            if not any(
                needle in str(h.get("text_preview") or "").lower() or needle == str(h.get("id") or "").lower()
                for h in hits
            ):
                return False
        return True


def _hits(event: Mapping[str, object]) -> list[Mapping[str, object]]:
    hits = event.get("recall_hits")
    return [h for h in hits if isinstance(h, Mapping)] if isinstance(hits, list) else []


def _provider_hits(event: Mapping[str, object]) -> set[str]:
    value = event.get("provider_hits")
    return {str(p) for p in value} if isinstance(value, (dict, list)) else set()


@dataclass(slots=True)
class _Session:
    """One row of ``/api/sessions`` (its JSON keys are the field names, in this order)."""

    key: str
    target: str
    first_seen: str = ""
    last_seen: str = ""
    recalls: int = 0
    writes: int = 0
    deliveries: int = 0
    failed_deliveries: int = 0
    episodes: int = 0
    last_query: str = ""

    def seen(self, when: str) -> None:
        if when and (not self.first_seen or when < self.first_seen):
            self.first_seen = when
        if when and when > self.last_seen:
            self.last_seen = when


class DashboardData:
    """Reads for one loaded config.

    :param config: a loaded :class:`~paxm_core.config.Config`.
    :param runtime_factory: builds the :class:`~paxm_core.runtime.Runtime` used by the memory
        browser, on its first search (tests inject one; default ``Runtime.load``).
    """

    def __init__(self, config: Config, *, runtime_factory: Callable[[], Runtime] | None = None) -> None:
        from paxm_core.telemetry import Telemetry

        self.config = config
        self.telemetry = Telemetry(config)
        self.previews = self.telemetry.settings.capture_query_preview
        self._runtime_factory = runtime_factory
        self._runtime: Runtime | None = None
        self._runtime_lock = threading.Lock()
        self._queue_lock = threading.Lock()
        self._events_lock = threading.Lock()
        self._events_cache: list[JSONObject] = []
        self._events_signature: tuple[tuple[int, int, int], ...] | None = None

    # -- telemetry ---------------------------------------------------------------------------

    def info(self) -> JSONObject:
        """What the page needs to know about this installation (paths, privacy, profiles)."""
        from paxm_core import __version__

        settings = self.telemetry.settings
        return {
            "version": __version__,
            "config_path": str(self.config.path),
            "telemetry_enabled": settings.enabled,
            "telemetry_dir": str(settings.dir),
            "query_previews": self.previews,
            "queue_path": str(self.queue_path),
            "recall_profiles": sorted(self.config.recall_profiles),
            "default_recall_profile": self._default_recall_profile(),
            "event_window": EVENT_WINDOW,
        }

    def summary(self, days: int) -> JSONObject:
        """``/api/summary``: the HistorySummary of ``paxm history --json``, plus p95s per provider."""
        from paxm_core.telemetry.metrics import Counter, provider_recall_p95_ms

        summary = self.telemetry.history(days)
        out: JSONObject = summary.to_json()
        rows = out.get("providers")
        for row in rows if isinstance(rows, list) else []:
            if isinstance(row, dict):
                row["recall_p95_ms"] = provider_recall_p95_ms(Counter.from_json(row.get("counter")))
        return out

    def events(self) -> list[JSONObject]:
        """The newest :data:`EVENT_WINDOW` events, newest first, with non-opted-in text removed.

        Shared between requests: copy an event before changing it.  The parsed log is reused while
        no event file changed (inode, size, mtime): parsing a full 3 MiB log costs ~250 ms a request.
        """
        signature = tuple(_stat(path) for path in self.telemetry.settings.event_paths_oldest_first())
        with self._events_lock:
            if signature != self._events_signature:
                self._events_cache = [self._private(e) for e in reversed(self.telemetry.tail(EVENT_WINDOW))]
                self._events_signature = signature
            return self._events_cache

    def query_events(self, flt: EventFilter, *, limit: int, offset: int) -> JSONObject:
        """``/api/events``: filtered, newest first, one page."""
        matched = [e for e in self.events() if flt.matches(e)]
        page: list[JSONValue] = []
        for event in (dict(e) for e in matched[offset : offset + limit]):
            event["state"] = event_state(event)
            if event.get("kind") in _RECALL_KINDS:
                event["mode"] = event_mode(event)
            page.append(event)
        return {"events": page, "total": len(matched), "limit": limit, "offset": offset}

    def injections(self, *, limit: int) -> JSONObject:
        """``/api/injections``: the newest passive injection receipts (why each memory went in)."""
        found = [e for e in self.events() if e.get("kind") == "injection"]
        return {"injections": found[:limit], "total": len(found)}

    def facets(self) -> dict[str, list[str]]:
        """Distinct kinds, sources, profiles and hit providers seen (for the filter menus)."""
        seen: dict[str, set[str]] = {"kinds": set(), "sources": set(), "profiles": set(), "hit_providers": set()}
        for event in self.events():
            for name, key in (("kinds", "kind"), ("sources", "source"), ("profiles", "profile")):
                seen[name].add(str(event.get(key) or ""))
            seen["hit_providers"].update(str(h.get("provider") or "") for h in _hits(event))
            seen["hit_providers"].update(_provider_hits(event))
        return {name: sorted(v for v in values if v) for name, values in seen.items()}

    def sessions(self) -> JSONObject:
        """``/api/sessions``: capture sessions (newest activity first) from events and the queue."""
        rows: dict[str, _Session] = {}

        def row(key: str) -> _Session:
            return rows.setdefault(key, _Session(key=key, target=_target_of(key)))

        for event in reversed(self.events()):  # oldest first, so last_query ends up the newest
            key = str(event.get("session_key") or "")
            if not key:
                continue
            entry = row(key)
            entry.seen(str(event.get("time") or ""))
            kind = event.get("kind")
            if kind in _RECALL_KINDS:
                entry.recalls += 1
                entry.last_query = str(event.get("query_preview") or event.get("query_hash") or entry.last_query)
            elif kind in ("remember", "hook_write"):
                entry.writes += 1
            elif kind == "hook_delivery":
                entry.deliveries += 1
                if not event.get("success"):
                    entry.failed_deliveries += 1
            if event.get("target") and not entry.target:
                entry.target = str(event["target"])
        for episode in self._queue_rows(
            "SELECT session_key, COUNT(*), MIN(created_at), MAX(created_at) FROM capture_episodes GROUP BY session_key"
        ):
            entry = row(str(episode[0]))
            entry.episodes = int(episode[1] or 0)
            entry.seen(str(episode[2]).strip())
            entry.seen(str(episode[3]).strip())
        sessions = sorted(rows.values(), key=lambda r: r.last_seen, reverse=True)
        return {"sessions": [asdict(r) for r in sessions]}

    def session(self, key: str) -> JSONObject:
        """``/api/session``: one session's timeline (oldest first) and its queued episodes."""
        events = [dict(e) for e in reversed(self.events()) if e.get("session_key") == key]
        # deliveries to several providers finish on their own threads, so the log's order is only
        # roughly by time: a timeline is sorted (stable, so equal times keep the log's order)
        events.sort(key=lambda e: str(e.get("time") or ""))
        for event in events:
            event["state"] = event_state(event)
        episodes: dict[str, JSONObject] = {}
        deliveries: dict[str, list[JSONValue]] = {}
        for ep_id, first, last, complete, state, error, created, count in self._queue_rows(
            "SELECT episode_id, first_sequence, last_sequence, complete, state, error, created_at,"
            " json_array_length(json_extract(payload_json, '$.events'))"
            " FROM capture_episodes WHERE session_key = ? ORDER BY first_sequence",
            (key,),
        ):
            episode_id = str(ep_id)
            deliveries[episode_id] = []
            episodes[episode_id] = {
                "episode_id": episode_id,
                "first_sequence": first,
                "last_sequence": last,
                "complete": bool(complete),
                "state": state,
                "error": error,
                "created_at": str(created or "").strip(),
                "event_count": count or 0,
                "deliveries": deliveries[episode_id],
            }
        if episodes:
            for delivery in self._deliveries("WHERE e.session_key = ?", (key,), limit=10_000, offset=0):
                owner = deliveries.get(str(delivery["episode_id"]))
                if owner is not None:
                    owner.append(delivery)
        if not events and not episodes:
            raise LookupError(f"no session {key!r} in the recent events or the capture queue")
        timeline: list[JSONValue] = list(events)
        return {"key": key, "target": _target_of(key), "events": timeline, "episodes": list(episodes.values())}

    # -- capture queue -----------------------------------------------------------------------

    @property
    def queue_path(self) -> Path:
        return self.config.capture_queue_path

    def queue(self, *, state: str, provider: str, limit: int, offset: int) -> JSONObject:
        """``/api/queue``: the ``paxm queue status --json`` report plus one page of deliveries."""
        if state and state not in DELIVERY_STATES:
            raise UsageError(f"state must be one of {', '.join(DELIVERY_STATES)}")
        status: JSONObject = {"path": str(self.queue_path), "exists": False, "episodes": {}, "deliveries": {}}
        if self.queue_path.exists():  # with no queue file, no rows either: _queue_rows reads none
            with self._open_queue() as q:
                status = {**q.status().to_json(), "exists": True}
        filters = [(f"d.{column} = ?", value) for column, value in (("state", state), ("provider", provider)) if value]
        where = ("WHERE " + " AND ".join(clause for clause, _ in filters)) if filters else ""
        args = tuple(value for _, value in filters)
        total_rows = self._queue_rows(
            f"SELECT COUNT(*) FROM capture_deliveries d JOIN capture_episodes e ON e.episode_id = d.episode_id {where}",
            args,
        )
        return {
            "status": status,
            "deliveries": self._deliveries(where, args, limit=limit, offset=offset),
            "total": int(total_rows[0][0] or 0) if total_rows else 0,
            "limit": limit,
            "offset": offset,
        }

    def retry_dead(self) -> JSONObject:
        """Revive every dead delivery, as ``paxm queue retry --dead`` does; returns the new status."""
        if not self.queue_path.exists():
            return {"revived": 0, "status": {"path": str(self.queue_path), "exists": False}}
        with self._queue_lock, self._open_queue(routes=True) as q:
            revived = q.retry_dead()
            status: JSONObject = q.status().to_json()
        status["exists"] = True
        return {"revived": revived, "status": status}

    def _open_queue(self, *, routes: bool = False) -> CaptureQueue:
        from paxm_core.capture import open_queue

        # recover=False: the dashboard must never take over a running daemon's leases
        return open_queue(self.config, recover=False, routes=routes)

    def _queue_rows(self, sql: str, args: tuple[str | int, ...] = ()) -> list[tuple[JSONScalar, ...]]:
        # the columns read are TEXT, INTEGER or NULL
        path = self.queue_path
        if not path.exists():
            return []
        # Read-only: looking must never create, migrate or lock the daemon's queue for writing.
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5)
        try:
            return list(conn.execute(sql, args).fetchall())
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return []
            raise
        finally:
            conn.close()

    def _deliveries(self, where: str, args: tuple[str | int, ...], *, limit: int, offset: int) -> list[JSONObject]:
        rows = self._queue_rows(
            "SELECT d.episode_id, d.provider, d.state, d.attempts, d.last_error, d.created_at, d.last_attempt_at,"
            " d.delivered_at, d.next_attempt_at, e.session_key, d.profiles_json"
            f" FROM capture_deliveries d JOIN capture_episodes e ON e.episode_id = d.episode_id {where}"
            " ORDER BY d.created_at DESC, d.episode_id, d.provider LIMIT ? OFFSET ?",
            (*args, limit, offset),
        )
        keys = "episode_id provider state attempts last_error created_at last_attempt_at delivered_at"
        keys += " next_attempt_at session_key profiles"
        out: list[JSONObject] = []
        for r in rows:
            item: JSONObject = dict(zip(keys.split(), r, strict=True))
            for name in ("created_at", "last_attempt_at", "delivered_at", "next_attempt_at"):
                item[name] = str(item[name] or "").strip()
            item["profiles"] = _json_list(item["profiles"])
            out.append(item)
        return out

    # -- memory browser ----------------------------------------------------------------------

    def search_memories(self, query: str, *, profile: str, limit: int, project: str = "") -> JSONObject:
        """Search memories through the router with recall profile ``profile``.

        ``project`` (a directory, resolved like a working directory) scopes the search by the
        project rule (docs/projects.md); empty searches every project.  Each hit carries its
        ``project`` ("" for a memory of every project).  Goes straight to the router, not
        through ``Tools.recall``: looking at memory in the dashboard is not a recall and must
        not show up in telemetry as one.
        """
        from paxm_core.api.errors import RecallError
        from paxm_core.api.types import SearchQuery
        from paxm_core.workspace import memory_project, resolve_workspace, visible

        if not query.strip():
            raise UsageError("q (the search text) is required")
        scope = resolve_workspace(project, mode=self.config.workspace.effective_mode) if project.strip() else ""
        runtime = self._get_runtime()
        policy = runtime.search_policy(profile or None, limit)
        search = SearchQuery(text=query.strip(), limit=limit, metadata={"workspace": scope} if scope else {})
        try:
            result = runtime.router.search(search, policy)
        except RecallError as exc:
            if exc.result is None:
                raise
            result = exc.result
        out: JSONObject = result.to_json()
        hits = [hit for hit in result.hits if visible(memory_project(hit.metadata), scope)]
        out["hits"] = [{**hit.to_json(), "project": memory_project(hit.metadata)} for hit in hits]
        out["profile"] = profile or self._default_recall_profile()
        out["project"] = scope
        return out

    def _get_runtime(self) -> Runtime:
        with self._runtime_lock:
            if self._runtime is None:
                if self._runtime_factory is not None:
                    self._runtime = self._runtime_factory()
                else:
                    from paxm_core.runtime import Runtime

                    self._runtime = Runtime.load(config=self.config, telemetry=None)
            return self._runtime

    def _default_recall_profile(self) -> str:
        from paxm_core.router import profiles

        try:
            return profiles.default_recall_profile(self.config)
        except Exception:
            return "default"

    def close(self) -> None:
        """Close the memory browser's runtime, if one was started."""
        with self._runtime_lock:
            if self._runtime is not None:
                self._runtime.close()
                self._runtime = None

    # -- privacy -----------------------------------------------------------------------------

    def _private(self, event: JSONObject) -> JSONObject:
        if self.previews:
            return event
        event.pop("query_preview", None)
        hits = event.get("recall_hits")
        if isinstance(hits, list):
            event["recall_hits"] = [
                {k: v for k, v in h.items() if k != "text_preview"} if isinstance(h, dict) else h for h in hits
            ]
        return event


def _stat(path: Path) -> tuple[int, int, int]:
    try:
        st = path.stat()
    except OSError:
        return (0, 0, 0)
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _target_of(session_key: str) -> str:
    # Capture session keys are "<target>/workspace/<dir>/session/<id>".
    head, sep, _ = session_key.partition("/")
    return head if sep else ""


def _json_list(text: object) -> list[str]:
    import json

    if not isinstance(text, str) or not text:
        return []
    try:
        value = json.loads(text)
    except ValueError:
        return []
    return [str(v) for v in value] if isinstance(value, Iterable) and not isinstance(value, str | bytes) else []
