"""A fake Gemini API (``generativelanguage`` v1beta) on 127.0.0.1 for driving the real Gemini CLI offline.

Serves ``POST /v1beta/models/<model>:streamGenerateContent`` (SSE with ``alt=sse``),
``:generateContent``, ``:countTokens`` and ``GET /v1beta/models``.  Every request is recorded
in memory and appended to a JSONL log.  The reply text is ``reply`` followed by
`` [marker-seen]`` / `` [marker-absent]`` depending on whether the request contains ``marker``.

Tool mode: when the request contains ``RUN_TOOL``, offers Gemini CLI's shell tool
(``run_shell_command``) and has no ``functionResponse`` yet, the reply is one function call
running ``echo TOOL_RAN_OK``; the follow-up request gets the text reply.  ``hang`` makes every
content request wait that many seconds before answering.

Gemini CLI also asks the model side questions with ``generateContent`` and a JSON response
schema (is the user speaking next, which model to route to); those get ``{}``-shaped JSON
answers so the CLI carries on with its defaults.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any, ClassVar

from paxm_contracttest.fake_models.server import TOOL_COMMAND, TOOL_TRIGGER, FakeModelServer, JsonHandler, Recorded

__all__ = ["FakeGemini", "GeminiRequest"]

SHELL_TOOL = "run_shell_command"


class GeminiRequest(Recorded):
    """One logged Gemini request (a :class:`Recorded` that knows Gemini's method names and tools)."""

    @property
    def method_name(self) -> str:
        """``streamGenerateContent``, ``generateContent``, ``countTokens`` or ``""``."""
        last = self.route.rsplit("/", 1)[-1]
        return last.rsplit(":", 1)[-1] if ":" in last else ""

    @property
    def tool_names(self) -> set[str]:
        names: set[str] = set()
        for tool in self.body.get("tools") or []:
            for decl in (tool or {}).get("functionDeclarations") or [] if isinstance(tool, dict) else []:
                if isinstance(decl, dict):
                    names.add(str(decl.get("name", "")))
        return names

    @property
    def is_agent_step(self) -> bool:
        """A main agent-loop request: content generation offering the CLI's tools."""
        return self.method_name in ("streamGenerateContent", "generateContent") and bool(self.tool_names)

    @property
    def has_tool_result(self) -> bool:
        return any(
            isinstance(part, dict) and "functionResponse" in part
            for content in self.body.get("contents") or []
            if isinstance(content, dict)
            for part in content.get("parts") or []
        )

    def user_text(self) -> str:
        """All text parts of the request's ``user`` contents (where hook context is injected)."""
        out: list[str] = []
        for content in self.body.get("contents") or []:
            if not isinstance(content, dict) or content.get("role") != "user":
                continue
            for part in content.get("parts") or []:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    out.append(part["text"])
        return "\n".join(out)


class _GeminiHandler(JsonHandler):
    """Content generation (SSE or one JSON), token counting and models."""

    fake: ClassVar[FakeGemini]

    def do_POST(self) -> None:
        raw, request = self.record_post()
        method = request.method_name if isinstance(request, GeminiRequest) else ""
        if method == "countTokens":
            self.send_json(200, {"totalTokens": max(1, len(raw) // 4)})
            return
        if not isinstance(request, GeminiRequest) or method not in ("streamGenerateContent", "generateContent"):
            self.send_json(404, self.fake.not_found(self.path))
            return
        if self.fake.hang:
            time.sleep(self.fake.hang)
        answer = self.fake.response(request)
        if method == "generateContent":
            self.send_json(200, answer)
            return
        self.start_events()
        self.wfile.write(f"data: {json.dumps(answer)}\r\n\r\n".encode())
        self.wfile.flush()


class FakeGemini(FakeModelServer):
    """Context manager running the fake server in a thread; ``url`` is its base URL."""

    handler_type = _GeminiHandler
    recorded_type = GeminiRequest
    thread_name = "fake-gemini"
    #: ``http://127.0.0.1:<port>`` is what ``GOOGLE_GEMINI_BASE_URL`` takes
    url_suffix = ""

    def __init__(self, log_path: Path, *, model: str = "fake-model", **options: Any) -> None:
        super().__init__(log_path, **options)
        self.model = model

    def agent_steps(self) -> list[GeminiRequest]:
        """Recorded agent-loop requests (they offer the CLI's tools), in arrival order."""
        return [r for r in self.recorded_as(GeminiRequest) if r.is_agent_step]

    def generations(self) -> list[GeminiRequest]:
        """Recorded content generation requests, in arrival order."""
        generate = ("streamGenerateContent", "generateContent")
        return [r for r in self.recorded_as(GeminiRequest) if r.method_name in generate]

    def response(self, request: GeminiRequest) -> dict[str, Any]:
        """The ``GenerateContentResponse`` for ``request``."""
        config = request.body.get("generationConfig") or {}
        if not request.tool_names and config.get("responseMimeType") == "application/json":
            parts: list[dict[str, Any]] = [{"text": "{}"}]  # a side question: let the CLI use its defaults
        elif TOOL_TRIGGER in request.text and SHELL_TOOL in request.tool_names and not request.has_tool_result:
            args = {"command": TOOL_COMMAND, "description": "Print a probe line"}
            parts = [{"functionCall": {"name": SHELL_TOOL, "args": args}}]
        else:
            # the marker is looked for in the parsed body's text, as Gemini's JSON escapes it
            parts = [{"text": self.reply_for(request.text.encode())}]
        size = max(1, len(request.text) // 4)
        return {
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": size, "candidatesTokenCount": 8, "totalTokenCount": size + 8},
            "modelVersion": self.model,
            "responseId": uuid.uuid4().hex[:16],
        }

    def models_body(self) -> Any:
        """Gemini's model list: the one model, able to generate content."""
        return {"models": [{"name": f"models/{self.model}", "supportedGenerationMethods": ["generateContent"]}]}

    def not_found(self, path: str) -> Any:
        """Gemini's (Google API) error shape."""
        return {"error": {"code": 404, "message": path, "status": "NOT_FOUND"}}
