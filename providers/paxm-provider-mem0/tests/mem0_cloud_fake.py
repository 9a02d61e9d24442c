"""A local, recording stand-in for the Mem0 Cloud API (the endpoints paxm and ``mem0.MemoryClient`` use).

Mem0 Cloud cannot run here, so this server speaks its documented wire on 127.0.0.1 and
records every request (method, path, query, ``Authorization``, JSON body):

- ``GET /v1/ping/`` -> ``{"org_id", "project_id", "user_email"}`` (the official client's key check);
- ``POST /v3/memories/add/`` -> ``{"status": "PENDING", "event_id", "message"}``; the memory
  becomes visible only after its event has been polled ``pending_polls`` times
  (``GET /v1/event/{id}/`` -> ``PENDING`` ... ``SUCCEEDED``) and then after ``list_lag`` more
  list calls, like the real service's read-after-write delay;
- ``POST /v3/memories/?page=&page_size=`` -> ``{"count", "next", "previous", "results"}``, filtered
  by entity ids and ``filters.metadata``;
- ``POST /v3/memories/search/`` -> ``{"results": [...]}`` scored by word overlap;
- ``DELETE /v1/memories/{id}/`` (404 when unknown) and ``DELETE /v1/memories/?run_id=..``.

A wrong or missing ``Authorization: Token <key>`` gets 401; ``fail_next(path, status)`` makes
the next matching request fail (429, 5xx ...).
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from paxm_contracttest.fake_models.server import JsonHandler

IDS = ("user_id", "agent_id", "run_id")
_WORD = re.compile(r"[a-z0-9]+")


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    authorization: str | None
    body: Any


@dataclass
class Event:
    memory: dict[str, Any]
    polls: int = 0
    status: str = "PENDING"
    listed_after_success: int = 0


@dataclass
class CloudState:
    api_key: str = "m0-test-" + uuid.uuid4().hex
    pending_polls: int = 2
    list_lag: int = 1
    fail_event: bool = False
    memories: dict[str, dict[str, Any]] = field(default_factory=dict)
    events: dict[str, Event] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def _matches(memory: dict[str, Any], filters: dict[str, Any]) -> bool:
    for key in IDS:
        if filters.get(key) and memory.get(key) != filters[key]:
            return False
    wanted = filters.get("metadata") or {}
    stored = memory.get("metadata") or {}
    return all(str(stored.get(k)) == str(v) for k, v in wanted.items())


def _visible(state: CloudState, memory_id: str) -> bool:
    for event in state.events.values():
        if event.memory["id"] == memory_id:
            return event.status == "SUCCEEDED" and event.listed_after_success >= state.list_lag
    return True


class _Handler(JsonHandler):
    state: CloudState

    def _handle(self) -> None:
        parts = urlsplit(self.path)
        raw = self.read_body()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode(errors="replace")
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        state = self.state
        with state.lock:
            state.requests.append(Request(self.command, parts.path, query, self.headers.get("Authorization"), body))
            for failure in state.failures:
                if failure["path"] == parts.path and failure["times"] > 0:
                    failure["times"] -= 1
                    return self.send_json(failure["status"], failure["body"])
            if self.headers.get("Authorization") != f"Token {state.api_key}":
                return self.send_json(401, {"detail": "Invalid API key. Please check your API key and try again."})
            status, out = self._route(self.command, parts.path, query, body if isinstance(body, dict) else {})
        self.send_json(status, out)

    do_GET = do_POST = do_DELETE = do_PUT = _handle

    def _route(self, method: str, path: str, query: dict[str, str], body: dict[str, Any]) -> tuple[int, Any]:
        state = self.state
        if method == "GET" and path == "/v1/ping/":
            return 200, {"org_id": "org-test", "project_id": "proj-test", "user_email": "todd@example.test"}
        if method == "POST" and path == "/v3/memories/add/":
            return self._add(body)
        match = re.fullmatch(r"/v1/event/([^/]+)/", path)
        if method == "GET" and match:
            event = state.events.get(unquote(match.group(1)))
            if event is None:
                return 404, {"detail": "Event not found"}
            event.polls += 1
            if event.status == "PENDING" and event.polls > state.pending_polls:
                event.status = "FAILED" if state.fail_event else "SUCCEEDED"
                if event.status == "SUCCEEDED":
                    state.memories[event.memory["id"]] = event.memory
            return 200, {
                "id": match.group(1),
                "status": event.status,
                "message": "memory extraction failed" if event.status == "FAILED" else "",
            }
        if method == "POST" and path == "/v3/memories/":
            filters = body.get("filters") or {}
            found = [m for m in state.memories.values() if _matches(m, filters) and _visible(state, m["id"])]
            for event in state.events.values():
                if event.status == "SUCCEEDED":
                    event.listed_after_success += 1
            size = int(query.get("page_size") or 100)
            return 200, {"count": len(found), "next": None, "previous": None, "results": found[:size]}
        if method == "POST" and path == "/v3/memories/search/":
            return self._search(body)
        match = re.fullmatch(r"/v1/memories/([^/]+)/", path)
        if method == "DELETE" and match:
            memory_id = unquote(match.group(1))
            if state.memories.pop(memory_id, None) is None:
                return 404, {"detail": "Memory not found"}
            return 200, {"message": "Memory deleted successfully!"}
        if method == "DELETE" and path == "/v1/memories/":
            ids = {k: query[k] for k in IDS if query.get(k)}
            if not ids:
                return 400, {"detail": "At least one filter is required to delete all memories."}
            doomed = [i for i, m in state.memories.items() if all(m.get(k) == v for k, v in ids.items())]
            for memory_id in doomed:
                del state.memories[memory_id]
            return 200, {"message": "Memories deleted successfully!"}
        return 404, {"detail": "Not found."}

    def _add(self, body: dict[str, Any]) -> tuple[int, Any]:
        if not any(body.get(k) for k in IDS):
            return 400, {"detail": "One of the filters: app_id, user_id, agent_id, run_id is required!"}
        messages = body.get("messages") or []
        text = " ".join(str(m.get("content", "")) for m in messages if isinstance(m, dict)).strip()
        if not text:
            return 400, {"detail": "messages must not be empty"}
        now = datetime.now(UTC).isoformat()
        memory = {
            "id": str(uuid.uuid4()),
            "memory": text,
            "metadata": dict(body.get("metadata") or {}),
            "created_at": now,
            "updated_at": now,
            **{k: body[k] for k in IDS if body.get(k)},
        }
        event_id = str(uuid.uuid4())
        self.state.events[event_id] = Event(memory)
        return 200, {"status": "PENDING", "event_id": event_id, "message": "Memory processing has been queued"}

    def _search(self, body: dict[str, Any]) -> tuple[int, Any]:
        filters = body.get("filters") or {}
        if not any(filters.get(k) for k in IDS):
            return 400, {"detail": "filters must contain at least one of: user_id, agent_id, run_id"}
        wanted = _words(str(body.get("query") or ""))
        scored = []
        for memory in self.state.memories.values():
            if not _matches(memory, filters):
                continue
            have = _words(memory["memory"])
            overlap = len(wanted & have)
            if overlap:
                scored.append((overlap / max(len(wanted | have), 1), memory))
        scored.sort(key=lambda pair: -pair[0])
        top = int(body.get("top_k") or 10)
        return 200, {"results": [{**m, "score": round(s, 6)} for s, m in scored[:top]]}


class Mem0CloudFake:
    """Start with ``Mem0CloudFake()``; ``base_url``, ``state`` and ``close()``."""

    def __init__(self) -> None:
        self.state = CloudState()
        handler = type("Handler", (_Handler,), {"state": self.state})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def fail_next(self, path: str, status: int, body: Any = None, times: int = 1) -> None:
        with self.state.lock:
            self.state.failures.append(
                {"path": path, "status": status, "body": body or {"detail": f"injected {status}"}, "times": times}
            )

    def requests(self, path_prefix: str = "") -> Iterator[Request]:
        with self.state.lock:
            snapshot = list(self.state.requests)
        return (r for r in snapshot if r.path.startswith(path_prefix))

    def clear(self) -> None:
        with self.state.lock:
            self.state.requests.clear()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
