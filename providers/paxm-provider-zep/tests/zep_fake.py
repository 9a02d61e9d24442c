"""A local HTTP server speaking the Zep v4 endpoints paxm uses, recording every request.

The real ``zep-cloud`` SDK is pointed at it.  Routes follow the SDK's own wire (users and graphs
addressed by UUID, one search route per scope).  ``faults`` lets a test make a route fail with a
status or hang, to drive the error paths through the real client.
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from paxm_contracttest.fake_models.server import JsonHandler

PREFIX = "/api/v4"


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    auth: str
    idempotency_key: str
    body: Any


@dataclass
class Fault:
    method: str
    pattern: str
    status: int = 500
    body: Any = None
    hang: float = 0.0
    times: int = 1_000_000


@dataclass
class ZepState:
    api_key: str = "z_test_key"
    users: dict[str, dict[str, Any]] = field(default_factory=dict)
    graphs: dict[str, dict[str, Any]] = field(default_factory=dict)
    episodes: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    idempotency: dict[str, dict[str, Any]] = field(default_factory=dict)
    log: list[Recorded] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def requests(self, method: str | None = None, pattern: str = "") -> list[Recorded]:
        return [r for r in self.log if (method is None or r.method == method) and re.search(pattern, r.path)]


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9_-]+", text.lower()))


class _Handler(JsonHandler):
    protocol_version = "HTTP/1.0"  # one request per connection, as the fake always served
    state: ZepState

    def _handle(self, method: str) -> None:
        parts = urlsplit(self.path)
        raw = self.read_body()
        body = json.loads(raw) if raw else None
        st = self.state
        with st.lock:
            st.log.append(
                Recorded(
                    method,
                    parts.path,
                    parse_qs(parts.query),
                    self.headers.get("Authorization", ""),
                    self.headers.get("Idempotency-Key", ""),
                    body,
                )
            )
            fault = next(
                (f for f in st.faults if f.method == method and re.search(f.pattern, parts.path) and f.times > 0), None
            )
            if fault is not None:
                fault.times -= 1
        if fault is not None:
            if fault.hang:
                time.sleep(fault.hang)
            self.send_json(fault.status, fault.body if fault.body is not None else {"message": "injected fault"})
            return
        if self.headers.get("Authorization") != f"Api-Key {st.api_key}":
            self.send_json(401, {"message": "unauthorized"})
            return
        path = parts.path.removeprefix(PREFIX)
        status, payload = self._route(method, path, body or {})
        self.send_json(status, payload)

    def _route(self, method: str, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        st = self.state
        with st.lock:
            if method == "POST" and path == "/users/lookup":
                user = next((u for u in st.users.values() if u["user_id"] == body.get("user_id")), None)
                return (200, user) if user else (404, {"message": "user not found"})
            if method == "POST" and path == "/users":
                if any(u["user_id"] == body.get("user_id") for u in st.users.values()):
                    return 409, {"message": "user already exists"}
                graph = self._new_graph(name=f"user-{body.get('user_id')}", graph_id="")
                user = {
                    "uuid": str(uuid.uuid4()),
                    "user_id": body.get("user_id"),
                    "graph_uuid": graph["uuid"],
                    "created_at": "2026-01-01T00:00:00Z",
                }
                st.users[user["uuid"]] = user
                return 201, user
            if method == "POST" and path == "/graphs/lookup":
                graph = next(
                    (g for g in st.graphs.values() if body.get("graph_id") in (g["graph_id"], g["name"])), None
                )
                return (200, graph) if graph else (404, {"message": "graph not found"})
            if method == "POST" and path == "/graphs":
                if any(g["name"] == body.get("name") for g in st.graphs.values()):
                    return 409, {"message": "graph already exists"}
                return 201, self._new_graph(name=body.get("name", ""), graph_id=body.get("name", ""))
            match = re.fullmatch(r"/graphs/([^/]+)(/.*)?", path)
            if not match:
                return 404, {"message": f"no route {method} {path}"}
            gid, rest = match.group(1), match.group(2) or ""
            if gid not in st.graphs:
                return 404, {"message": "graph not found"}
            store = st.episodes[gid]
            if method == "GET" and rest == "":
                return 200, st.graphs[gid]
            if method == "DELETE" and rest == "":
                del st.graphs[gid]
                del st.episodes[gid]
                return 200, {"task": {"uuid": "task-del", "status": "succeeded"}}
            if method == "POST" and rest == "/episodes":
                key = self.headers.get("Idempotency-Key", "")
                if key and key in st.idempotency:
                    return 202, st.idempotency[key]
                episode = {
                    "uuid": str(uuid.uuid4()),
                    "content": body["data"],
                    "metadata": body.get("metadata"),
                    "source": body.get("type"),
                    "source_description": body.get("source_description"),
                    "created_at": body.get("reference_time") or "2026-01-01T00:00:00Z",
                    "graph_uuid": gid,
                    "processed": False,
                }
                store[episode["uuid"]] = episode
                result = {"episode": episode, "task": {"uuid": f"task-{episode['uuid']}", "status": "pending"}}
                if key:
                    st.idempotency[key] = result
                return 202, result
            ep = re.fullmatch(r"/episodes/([^/]+)", rest)
            if method == "DELETE" and ep:
                if store.pop(ep.group(1), None) is None:
                    return 404, {"message": "episode not found"}
                return 200, {"task": {"uuid": "task-x", "status": "succeeded"}}
            if method == "POST" and rest == "/search/episodes":
                words = _words(body.get("query", ""))
                limit = int(self._query().get("page_size", ["10"])[0])
                scored = []
                for e in store.values():
                    overlap = len(words & _words(e["content"])) / max(1, len(words))
                    if overlap > 0:
                        scored.append(dict(e, relevance=overlap, score=overlap))
                scored.sort(key=lambda e: -e["relevance"])
                return 200, {"items": scored[:limit], "next_cursor": None}
            if method == "POST" and rest in ("/search/edges", "/search/nodes"):
                words = _words(body.get("query", ""))
                items = []
                for e in store.values():
                    if words & _words(e["content"]):
                        item = {
                            "uuid": "x-" + e["uuid"],
                            "name": "RELATES_TO",
                            "fact": e["content"],
                            "summary": e["content"],
                            "score": 2.0,
                            "labels": ["Entity"],
                            "episode_uuids": [e["uuid"]],
                        }
                        items.append(item)
                return 200, {"items": items, "next_cursor": None}
            if method == "POST" and rest == "/context":
                words = _words(body.get("query", ""))
                facts = [e["content"] for e in store.values() if words & _words(e["content"])]
                context = "\n".join(f"- {f}" for f in facts)
                limit = body.get("max_characters")
                return 200, {"context": context[:limit] if limit else context, "truncated": False}
            return 404, {"message": f"no route {method} {path}"}

    def _query(self) -> dict[str, list[str]]:
        return parse_qs(urlsplit(self.path).query)

    def _new_graph(self, *, name: str, graph_id: str) -> dict[str, Any]:
        graph = {"uuid": str(uuid.uuid4()), "name": name, "graph_id": graph_id, "created_at": "2026-01-01T00:00:00Z"}
        self.state.graphs[graph["uuid"]] = graph
        self.state.episodes[graph["uuid"]] = {}
        return graph

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_DELETE(self) -> None:
        self._handle("DELETE")


class ZepFake:
    """Start with ``ZepFake()``; ``base_url`` ends in ``/api/v4`` as the SDK expects."""

    def __init__(self) -> None:
        self.state = ZepState()
        handler = type("Handler", (_Handler,), {"state": self.state})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}{PREFIX}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
