"""A fake Chat Completions server on 127.0.0.1 for driving Kimi Code and Cline offline.

:class:`~paxm_contracttest.fake_models.chat_completions.FakeOpenAI` (its server, recording and
replies), but the tool call fits the harness's own shell tool: Kimi Code's ``Bash`` takes ``{"command": ...}``,
Cline's ``run_commands`` takes ``{"commands": [...]}``; the arguments follow the offered schema.

* A request whose text contains ``RUN_TOOL``, offering a shell tool and holding no tool result
  yet, is answered with one call running ``echo TOOL_RAN_OK``; every other request gets
  ``reply`` plus `` [marker-seen]`` / `` [marker-absent]`` (whether ``marker`` is in the body).
* ``hang`` delays every completion (a slow provider); SSE when ``stream`` is true.
"""

from __future__ import annotations

import json
from typing import Any

from paxm_contracttest.fake_models.chat_completions import FakeOpenAI, Recorded
from paxm_contracttest.fake_models.server import TOOL_COMMAND, TOOL_TRIGGER

__all__ = ["SHELL_TOOLS", "TOOL_COMMAND", "FakeChat", "Recorded"]

#: the shell tool of each harness, first offered wins
SHELL_TOOLS = ("Bash", "run_commands", "bash", "Shell")


def _functions(request: Recorded) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for tool in request.body.get("tools") or []:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            out[function["name"]] = function
    return out


class FakeChat(FakeOpenAI):
    """:class:`FakeOpenAI` whose tool call fits the harness's own shell tool and its schema."""

    thread_name = "fake-chat"

    def tool_call(self, request: Recorded) -> dict[str, Any] | None:
        """One call of the first offered shell tool, its arguments following the offered schema."""
        if TOOL_TRIGGER not in request.text or request.has_tool_result:
            return None
        functions = _functions(request)
        name = next((n for n in SHELL_TOOLS if n in functions), None)
        if name is None:
            return None
        props = (functions[name].get("parameters") or {}).get("properties") or {}
        args: dict[str, Any] = {"commands": [TOOL_COMMAND]} if "commands" in props else {"command": TOOL_COMMAND}
        if "description" in props:
            args["description"] = "Print a probe line"
        return {"name": name, "arguments": json.dumps(args)}
