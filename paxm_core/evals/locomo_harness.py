"""The LoCoMo eval's agent: one chat session per trial against an OpenAI-compatible endpoint.

It plays the coding agent of upstream's eval, wired to paxm as every integration is: the
**passive** arm's prompt goes through paxm's ``user_input`` hook and the printed context is added
to the user message; the **active** arm is offered the MCP server's ``paxm_recall`` tool, answered
by its implementation; **control** has neither.  The write canary's turn end goes through the
``turn_end`` hook, flushed by stopping the run's hook daemon.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from paxm_core.api.errors import PaxmError
from paxm_core.api.json import JSONObject, JSONValue

if TYPE_CHECKING:
    from paxm_core.evals.locomo_scope import RunScope
    from paxm_core.mcp_server import PaxmTools

__all__ = ["AgentRequest", "AgentResponse", "ChatEndpoint", "ChatHarness"]

#: model turns one trial may take (tool calls and the answer) before it is an error
MAX_ROUNDS = 5


@dataclass(frozen=True)
class AgentRequest:
    """One trial: the arm, the prompt, and whether the hooks recall and write."""

    arm: str
    question_id: str
    prompt: str
    recall_enabled: bool = False
    write_enabled: bool = False


@dataclass
class AgentResponse:
    """What the harness saw: the final text, tokens, cost, time and whether recall was used."""

    text: str = ""
    session_id: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    duration_ms: int = 0
    recall_used: bool = False
    model: str = ""

    def to_json(self) -> JSONObject:
        """Upstream's shape: ``text`` and ``duration_ms`` always, the rest when set."""
        return {k: v for k, v in asdict(self).items() if v or k in ("text", "duration_ms")}


@dataclass
class ChatEndpoint:
    """An OpenAI-compatible Chat Completions endpoint (``base_url`` ends before ``/chat/completions``)."""

    base_url: str
    model: str
    api_key: str = ""
    timeout: float = 180.0

    def complete(self, messages: list[JSONObject], tools: list[JSONObject] | None) -> JSONObject:
        """One non-streaming completion; HTTP and decoding failures are :class:`PaxmError` (no key in them)."""
        body: JSONObject = {"model": self.model, "messages": messages, "stream": False}
        if tools:
            body["tools"] = tools
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = "Bearer " + self.api_key
        url = self.base_url.rstrip("/") + "/chat/completions"
        request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                payload = json.loads(response.read().decode("utf-8", "replace"))
        except urllib.error.HTTPError as exc:
            detail = exc.read(300).decode("utf-8", "replace").replace(self.api_key or "\0", "***")
            raise PaxmError(f"model endpoint {url}: HTTP {exc.code}: {detail.strip()}") from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise PaxmError(f"model endpoint {url}: {getattr(exc, 'reason', exc)}") from None
        if not isinstance(payload, dict) or not payload.get("choices"):
            raise PaxmError(f"model endpoint {url}: the response has no choices")
        return payload


def _member(value: JSONValue, key: str) -> Mapping[str, JSONValue]:
    """``value[key]`` when both are JSON objects, else an empty object."""
    found = value.get(key) if isinstance(value, Mapping) else None
    return found if isinstance(found, Mapping) else {}


def _recall_tool() -> JSONObject:
    """``paxm_recall`` as the MCP server describes it, in Chat Completions' function-tool shape."""
    from paxm_core.mcp_server import TOOLS

    _title, description, schema, _read_only = TOOLS["paxm_recall"]
    return {"type": "function", "function": {"name": "paxm_recall", "description": description, "parameters": schema}}


class ChatHarness:
    """Runs trials for one run directory at a time (:meth:`open` / :meth:`close`)."""

    name = "chat"

    def __init__(self, endpoint: ChatEndpoint, *, input_price: float = 0.0, output_price: float = 0.0) -> None:
        self.endpoint = endpoint
        self.input_price = input_price
        self.output_price = output_price
        self._scope: RunScope | None = None
        self._tools: PaxmTools | None = None

    def open(self, scope: RunScope) -> None:
        """Serve ``scope``'s config: hooks and the MCP tools read it."""
        from paxm_core.evals.locomo_scope import EVAL_AGENT
        from paxm_core.mcp_server import PaxmTools

        self.close()
        self._scope = scope
        self._tools = PaxmTools(str(scope.config_path), agent_name=EVAL_AGENT, workspace=str(scope.workspace))

    def close(self) -> None:
        if self._tools is not None:
            self._tools.close()
        self._tools, self._scope = None, None

    def _hook(self, event: str, payload: JSONObject) -> str:
        """Run paxm's hook for ``event`` with a generic payload; hook errors are raised."""
        from paxm_core.evals.locomo_scope import EVAL_AGENT
        from paxm_core.passive.inprocess import run_hook

        assert self._scope is not None
        output, errors = run_hook(str(self._scope.config_path), EVAL_AGENT, event, json.dumps(payload), mode="text")
        if errors:
            raise PaxmError(f"paxm {event} hook: {'; '.join(errors)}")
        return output.strip()

    def execute(self, request: AgentRequest) -> AgentResponse:
        """Run one trial; a failure is raised (the runner records it on the trial)."""
        assert self._scope is not None, "open() a run first"
        started = time.monotonic()
        response = AgentResponse(session_id=f"locomo-{request.question_id}-{request.arm}", model=self.endpoint.model)
        base = {"session_id": response.session_id, "cwd": str(self._scope.workspace)}
        content = request.prompt
        if request.recall_enabled:
            context = self._hook("user_input", {**base, "prompt": request.prompt})
            if context:
                content = f"{request.prompt}\n\n{context}"
        messages: list[JSONObject] = [{"role": "user", "content": content}]
        tools = [_recall_tool()] if request.arm == "active" else None
        try:
            response.text = self._converse(messages, tools, response)
        finally:
            response.duration_ms = int((time.monotonic() - started) * 1000)
        if request.write_enabled:
            turn = [{"role": "user", "text": request.prompt}, {"role": "assistant", "text": response.text}]
            self._hook("turn_end", {**base, "last_assistant_message": response.text, "messages": turn})
        return response

    def _converse(self, messages: list[JSONObject], tools: list[JSONObject] | None, out: AgentResponse) -> str:
        for _ in range(MAX_ROUNDS):
            reply = self.endpoint.complete(messages, tools)
            self._count(reply, out)
            choices = reply.get("choices")
            message = _member(choices[0] if isinstance(choices, list) and choices else None, "message")
            calls = message.get("tool_calls")
            if not isinstance(calls, list) or not calls:
                return str(message.get("content") or "").strip()
            messages.append({"role": "assistant", "content": message.get("content"), "tool_calls": calls})
            for call in calls:
                call = call if isinstance(call, Mapping) else {}
                messages.append({"role": "tool", "tool_call_id": call.get("id", ""), "content": self._tool(call, out)})
        raise PaxmError(f"the model made tool calls in {MAX_ROUNDS} rounds without answering")

    def _tool(self, call: Mapping[str, JSONValue], out: AgentResponse) -> str:
        function = _member(call, "function")
        name = function.get("name", "")
        if name != "paxm_recall":
            return f"unknown tool {name!r}"
        raw = function.get("arguments")
        try:
            arguments = json.loads(raw if isinstance(raw, str) and raw else "{}")
        except ValueError:
            return "invalid JSON arguments"
        out.recall_used = True
        assert self._tools is not None, "open() a run first"
        outcome = self._tools.call("paxm_recall", arguments)
        return str(outcome.text)

    def _count(self, reply: Mapping[str, JSONValue], out: AgentResponse) -> None:
        usage = _member(reply, "usage")
        prompt = int(number_of(usage, "prompt_tokens"))
        completion = int(number_of(usage, "completion_tokens"))
        out.input_tokens += prompt
        out.output_tokens += completion
        reported = usage.get("cost")
        if isinstance(reported, int | float) and not isinstance(reported, bool):
            out.cost += float(reported)
        else:
            out.cost += (prompt * self.input_price + completion * self.output_price) / 1_000_000
        out.model = str(reply.get("model") or out.model)

    def flush_writes(self) -> None:
        """Deliver every queued write and stop the run's hook daemon (``__hook-control --shutdown``)."""
        from paxm_core.passive.control import send_control

        assert self._scope is not None
        send_control(str(self._scope.config_path), "shutdown")


def number_of(row: Mapping[str, JSONValue], key: str) -> float:
    """``row[key]`` as a number (missing or not a number: 0)."""
    value = row.get(key)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0
