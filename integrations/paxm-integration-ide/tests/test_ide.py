"""The IDE integrations: registered through the entry point, native output per mode, through the real runtime."""

from __future__ import annotations

import json

import pytest

from paxm_core.integration import HookResult, Integration
from paxm_core.plugins import get_plugin_manager
from paxm_integration_ide import ClineIntegration, CursorIntegration, KimiIntegration, ZCodeIntegration


def _result(event: str = "user_input", **fields: object) -> HookResult:
    return HookResult(target="x", event=event, **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(("name", "cls"), [("cursor", CursorIntegration), ("zcode", ZCodeIntegration),
                                           ("kimi-code", KimiIntegration), ("cline", ClineIntegration)])  # fmt: skip
def test_registered_through_the_entry_point(name: str, cls: type) -> None:
    found = get_plugin_manager().integration(name)
    assert isinstance(found, cls) and isinstance(found, Integration)


def test_cursor_output_and_assistant_text() -> None:
    cursor = CursorIntegration()
    # Cursor shows no context on prompt submission; other events carry it
    assert json.loads(cursor.hook_output(_result(recall_context="<r>"), "cursor")) == {"continue": True}
    out = json.loads(cursor.hook_output(_result("session_start", session_context="<s>"), "cursor"))
    assert out == {"continue": True, "additional_context": "<s>"}
    assert cursor.hook_output(_result(ignored=True, recall_context="<r>"), "cursor") == ""
    event = cursor.decode("turn_end", b'{"conversation_id": "c1", "text": "done"}')
    assert event.assistant == "done" and event.metadata["session_id"] == "c1"
    assert cursor.hook_output(_result(recall_context="<r>"), "text") == "<r>"  # other modes: generic


def test_zcode_and_cline_output() -> None:
    assert json.loads(ZCodeIntegration().hook_output(_result(recall_context="<r>"), "zcode")) == {
        "additionalContext": "<r>"
    }
    assert ZCodeIntegration().hook_output(_result(), "zcode") == "{}"
    assert json.loads(ClineIntegration().hook_output(_result(recall_context="<r>"), "cline")) == {
        "cancel": False,
        "contextModification": "<r>",
    }
    assert json.loads(ClineIntegration().hook_output(_result(), "cline")) == {"cancel": False}
    generic = json.loads(ClineIntegration().hook_output(_result(query="q"), "json"))
    assert generic["event"] == "user_input" and generic["query"] == "q"


def test_kimi_first_prompt_carries_the_session_blocks() -> None:
    kimi = KimiIntegration()
    first = kimi.hook_output(_result(bootstrap_context="<ident>", recall_context="<r>"), "kimi")
    assert first == "<ident>\n\n<r>"
    assert kimi.hook_output(_result(recall_context="<r>"), "kimi") == "<r>"
    assert kimi.hook_output(_result(bootstrap_context="<ident>"), "text") == ""  # plain mode: no bootstrap
