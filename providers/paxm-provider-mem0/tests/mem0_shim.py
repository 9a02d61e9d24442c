"""A small Mem0 REST server around the real ``mem0.Memory`` engine, for paxm's tests (offline).

Runs inside the cached mem0 venv (``mem0_venv.py``), never in the workspace venv.  It speaks the
routes paxm's ``mem0`` provider uses, with the status codes and bodies of Mem0's own REST server
(checked by hand against it, see ../shared/providers/README.md section 1):

- ``POST /memories`` -> ``{"results": [{"id", "memory", "event", ...}]}``; 400 without an entity id;
- ``POST /search`` (top-level ids merged into ``filters``) -> ``{"results": [...]}``; 400
  ``filters must contain at least one of: user_id, agent_id, run_id ...`` without one;
- ``GET /memories?user_id=..`` (list), ``GET|DELETE /memories/{id}`` (404 when unknown),
  ``DELETE /memories?run_id=..`` (all of an entity), ``GET /openapi.json``.

Auth is optional (``--api-key``): ``X-API-Key: <key>`` or ``Authorization: Bearer <key>``.
The embedder is a deterministic hashing bag of words (no model, no network) and the LLM points
at a dead address, so any accidental LLM call fails fast instead of reaching the internet.

Test-only controls under ``/_shim/``: ``POST /_shim/fail {"path", "status", "body", "times"}``
makes the next matching requests fail; ``POST /_shim/mode {"legacy_search": true}`` makes
``/search`` behave like Mem0 0.1.x (scope ids only top level, old error wording).  Every
request is appended to ``--log`` as one JSON line (method, path, query, auth headers, body).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

os.environ.setdefault("MEM0_TELEMETRY", "false")

DIMS = 256
IDS = ("user_id", "agent_id", "run_id")
_TOKEN = re.compile(r"[a-z0-9]+")
SEARCH_SCOPE_ERROR = (
    "filters must contain at least one of: user_id, agent_id, run_id. "
    'Example: {"user_id": "alice"} or {"AND": [{"user_id": "alice"}, {"agent_id": "bot"}]}'
)
LEGACY_SCOPE_ERROR = "At least one of 'user_id', 'agent_id', or 'run_id' must be provided."
ADD_SCOPE_ERROR = "At least one identifier (user_id, agent_id, run_id) is required."


def hash_vector(text: str) -> list[float]:
    """Bag of lower-cased alphanumeric tokens hashed into ``DIMS`` buckets, L2-normalized."""
    vector = [0.0] * DIMS
    for token in _TOKEN.findall(str(text).lower()):
        vector[int(hashlib.sha256(token.encode()).hexdigest(), 16) % DIMS] += 1.0
    norm = sum(x * x for x in vector) ** 0.5 or 1.0
    return [x / norm for x in vector]


def build_memory(workdir: str) -> Any:
    from mem0 import Memory
    from mem0.embeddings.base import EmbeddingBase
    from mem0.utils.factory import EmbedderFactory

    class HashEmbedder(EmbeddingBase):  # type: ignore[misc]
        def embed(self, text: Any, memory_action: Any = None) -> list[float]:
            return hash_vector(text)

    module = sys.modules[__name__]
    module.HashEmbedder = HashEmbedder  # type: ignore[attr-defined]
    # MemoryConfig validates provider names, so the "huggingface" slot is routed to our class
    EmbedderFactory.provider_to_class["huggingface"] = f"{__name__}.HashEmbedder"
    return Memory.from_config(
        {
            "vector_store": {
                "provider": "qdrant",
                "config": {
                    "path": f"{workdir}/qdrant",
                    "embedding_model_dims": DIMS,
                    "collection_name": "paxm",
                    "on_disk": True,
                },
            },
            "embedder": {"provider": "huggingface", "config": {"embedding_dims": DIMS}},
            "llm": {
                "provider": "openai",
                "config": {"api_key": "sk-offline", "openai_base_url": "http://127.0.0.1:9/v1"},
            },
            "history_db_path": f"{workdir}/history.db",
        }
    )


class State:
    def __init__(self, memory: Any, api_key: str, log_path: str) -> None:
        self.memory = memory
        self.api_key = api_key
        self.log_path = log_path
        self.lock = threading.Lock()  # one engine call at a time: local Qdrant is not thread-safe
        self.failures: list[dict[str, Any]] = []
        self.legacy_search = False


def make_handler(state: State) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, code: int, obj: Any) -> None:
            data = json.dumps(obj, default=str).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _read(self) -> Any:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if not raw:
                return None
            try:
                return json.loads(raw)
            except ValueError:
                return raw.decode(errors="replace")

        def _handle(self) -> None:
            parts = urlsplit(self.path)
            path = parts.path
            query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
            body = self._read()
            if not path.startswith("/_shim/"):
                with state.lock, open(state.log_path, "a", encoding="utf-8") as log:
                    record = {
                        "method": self.command,
                        "path": path,
                        "query": query,
                        "x_api_key": self.headers.get("X-API-Key"),
                        "authorization": self.headers.get("Authorization"),
                        "content_type": self.headers.get("Content-Type"),
                        "body": body,
                    }
                    log.write(json.dumps(record) + "\n")
            try:
                self._route(self.command, path, query, body)
            except Exception as exc:  # Mem0's server answers unexpected failures with 500
                self._send(500, {"detail": f"{type(exc).__name__}: {exc}"})

        do_GET = do_POST = do_DELETE = do_PUT = _handle

        def _authorized(self) -> bool:
            if not state.api_key:
                return True
            return self.headers.get("X-API-Key") == state.api_key or (
                self.headers.get("Authorization") == f"Bearer {state.api_key}"
            )

        def _injected(self, method: str, path: str) -> bool:
            for failure in state.failures:
                if failure["path"] == path and failure.get("method", method) == method and failure["times"] > 0:
                    failure["times"] -= 1
                    self._send(int(failure["status"]), failure.get("body") or {"detail": "injected failure"})
                    return True
            return False

        def _route(self, method: str, path: str, query: dict[str, str], body: Any) -> None:
            if path == "/_shim/fail" and method == "POST":
                state.failures.append({"times": 1, **body})
                return self._send(200, {"ok": True})
            if path == "/_shim/mode" and method == "POST":
                state.legacy_search = bool(body.get("legacy_search"))
                return self._send(200, {"ok": True})
            if path == "/openapi.json" and method == "GET":
                return self._send(200, {"openapi": "3.1.0", "info": {"title": "paxm mem0 test server"}, "paths": {}})
            if self._injected(method, path):
                return None
            if not self._authorized():
                return self._send(401, {"detail": "Invalid or missing API key"})
            body = body if isinstance(body, dict) else {}
            if path == "/memories" and method == "POST":
                return self._add(body)
            if path == "/memories" and method == "GET":
                return self._list(query)
            if path == "/memories" and method == "DELETE":
                return self._delete_all(query)
            if path == "/search" and method == "POST":
                return self._search(body)
            match = re.fullmatch(r"/memories/([^/]+)", path)
            if match and method in ("GET", "DELETE"):
                return self._one(method, unquote(match.group(1)))
            return self._send(404, {"detail": "Not Found"})

        def _add(self, body: dict[str, Any]) -> None:
            if not any(body.get(k) for k in IDS):
                return self._send(400, {"detail": ADD_SCOPE_ERROR})
            if not isinstance(body.get("messages"), list):
                return self._send(422, {"detail": [{"loc": ["body", "messages"], "msg": "Field required"}]})
            kwargs = {k: body[k] for k in (*IDS, "metadata", "infer") if body.get(k) is not None}
            try:
                with state.lock:
                    result = state.memory.add(body["messages"], **kwargs)
            except Exception as exc:  # e.g. infer=true with no LLM reachable
                return self._send(500, {"detail": f"{type(exc).__name__}: {exc}"})
            return self._send(200, result)

        def _search(self, body: dict[str, Any]) -> None:
            filters = dict(body.get("filters") or {})
            top_level = {k: body[k] for k in IDS if body.get(k)}
            if state.legacy_search:
                # Mem0 0.1.x: ids only as top-level fields, other filters nested
                if not top_level:
                    return self._send(400, {"detail": LEGACY_SCOPE_ERROR})
                filters = {k: v for k, v in filters.items() if k not in IDS}
            filters.update(top_level)
            if not any(filters.get(k) for k in IDS):
                return self._send(400, {"detail": SEARCH_SCOPE_ERROR})
            kwargs = {k: body[k] for k in ("top_k", "threshold") if body.get(k) is not None}
            with state.lock:
                result = state.memory.search(body.get("query") or "", filters=filters, **kwargs)
            return self._send(200, result)

        def _list(self, query: dict[str, str]) -> None:
            filters = {k: query[k] for k in IDS if query.get(k)}
            if not filters:
                return self._send(400, {"detail": ADD_SCOPE_ERROR})
            with state.lock:
                result = state.memory.get_all(filters=filters, top_k=int(query.get("limit") or 100))
            return self._send(200, result)

        def _delete_all(self, query: dict[str, str]) -> None:
            ids = {k: query[k] for k in IDS if query.get(k)}
            if not ids:
                return self._send(400, {"detail": ADD_SCOPE_ERROR})
            with state.lock:
                state.memory.delete_all(**ids)
            return self._send(200, {"message": "All relevant memories deleted"})

        def _one(self, method: str, memory_id: str) -> None:
            with state.lock:
                found = state.memory.get(memory_id)
                if found is None:
                    return self._send(404, {"detail": f"Memory with id {memory_id} not found"})
                if method == "GET":
                    return self._send(200, found)
                state.memory.delete(memory_id)
            return self._send(200, {"message": "Memory deleted successfully"})

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--api-key", default=os.environ.get("PAXM_SHIM_API_KEY", ""))
    parser.add_argument("--log", required=True)
    args = parser.parse_args()
    state = State(build_memory(args.workdir), args.api_key, args.log)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(state))
    print(f"ready {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
