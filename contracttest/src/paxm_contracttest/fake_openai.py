"""A deterministic, offline OpenAI-compatible endpoint for backends that need an embedder and an LLM.

Run it as ``python -m paxm_contracttest.fake_openai PORT`` (or run the file with a Python that has
``paxm_contracttest`` installed: it shares the fake model servers' JSON handler).  Routes:

* ``POST /v1/embeddings``: hashing bag-of-words vectors (``FAKEAI_DIMS``, default 256), L2
  normalized, so texts sharing words are close and unrelated texts score near zero; float or
  base64 encoding.
* ``POST /v1/chat/completions``: echoes the last message.
* ``GET /v1/models``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
import re
import struct
import sys
import time
from http.server import ThreadingHTTPServer
from typing import Any

from paxm_contracttest.fake_models.server import JsonHandler

__all__ = ["embed", "main"]

_WORD = re.compile(r"[a-z0-9]+")


def embed(text: str, dims: int) -> list[float]:
    """A unit vector counting hashed lower-case words of ``text`` (all zeros but one for empty text)."""
    vec = [0.0] * dims
    for word in _WORD.findall(text.lower()):
        digest = hashlib.sha256(word.encode()).digest()
        index = int.from_bytes(digest[:4], "big") % dims
        # always positive: a hash collision can only add similarity, never cancel a shared word
        vec[index] += 1.0
    norm = math.sqrt(sum(v * v for v in vec))
    if norm == 0.0:
        vec[0] = 1.0
        return vec
    return [v / norm for v in vec]


class _Handler(JsonHandler):
    # one request a connection, as backend servers' HTTP clients have always been served here
    protocol_version = "HTTP/1.0"
    dims = 256

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        if self.path.rstrip("/").endswith("/models"):
            self.send_json(200, {"object": "list", "data": [{"id": "fake-embed", "object": "model"}]})
            return
        self.send_json(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        try:
            body = json.loads(self.read_body() or b"{}")
        except json.JSONDecodeError:
            self.send_json(400, {"error": {"message": "body is not JSON"}})
            return
        if self.path.rstrip("/").endswith("/embeddings"):
            inputs = body.get("input")
            texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
            data = []
            for i, text in enumerate(texts):
                vec = embed(str(text), int(body.get("dimensions") or self.dims))
                value: Any = vec
                if body.get("encoding_format") == "base64":
                    value = base64.b64encode(struct.pack(f"<{len(vec)}f", *vec)).decode()
                data.append({"object": "embedding", "index": i, "embedding": value})
            self.send_json(
                200,
                {
                    "object": "list",
                    "data": data,
                    "model": body.get("model", "fake-embed"),
                    "usage": {"prompt_tokens": 1, "total_tokens": 1},
                },
            )
            return
        if self.path.rstrip("/").endswith("/chat/completions"):
            messages = body.get("messages") or []
            last = messages[-1].get("content") if messages else ""
            content = last if isinstance(last, str) else json.dumps(last)
            self.send_json(
                200,
                {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body.get("model", "fake-llm"),
                    "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
                    ],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                },
            )
            return
        self.send_json(404, {"error": {"message": f"no route {self.path}"}})


def main(argv: list[str]) -> None:
    """Serve on 127.0.0.1:``argv[0]`` until killed."""
    _Handler.dims = int(os.environ.get("FAKEAI_DIMS") or 256)
    server = ThreadingHTTPServer(("127.0.0.1", int(argv[0])), _Handler)
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv[1:])
