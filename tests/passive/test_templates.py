from __future__ import annotations

import pytest

from paxm_core.passive.compose import compose_write, template_data
from paxm_core.passive.decode import decode_generic
from paxm_core.passive.templates import TemplateError, render_template

DATA = {
    "prompt": "hello",
    "metadata": {"session_id": "s1"},
    "messages": [{"role": "user", "text": "a"}, {"role": "assistant", "text": "b"}],
    "empty": "",
}


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("{{ .prompt }}", "hello"),
        ("{{.prompt}}", "hello"),
        ("[{{ .missing }}]", "[]"),
        ("{{ .metadata.session_id }}/{{ .metadata.nope }}", "s1/"),
        ("{{ if .prompt }}yes{{ else }}no{{ end }}", "yes"),
        ("{{ if .empty }}yes{{ else }}no{{ end }}", "no"),
        ("{{ range .messages }}{{ .role }}={{ .text }};{{ end }}", "user=a;assistant=b;"),
        ("{{ range .missing }}x{{ else }}none{{ end }}", "none"),
        ("a  {{- .prompt -}}  b", "ahellob"),
        ("{{/* note */}}{{ .prompt }}", "hello"),
        ("", ""),
    ],
)
def test_supported_subset(source: str, expected: str) -> None:
    assert render_template(source, DATA) == expected


@pytest.mark.parametrize(
    "source",
    [
        '{{ printf "%s" .prompt }}',
        "{{ .prompt | html }}",
        "{{ if .x }}no end",
        "{{ end }}",
        "{{ .prompt",
        "{{ call .f }}",
    ],
)
def test_unsupported_syntax_is_a_clear_error(source: str) -> None:
    with pytest.raises(TemplateError):
        render_template(source, DATA)


def test_write_template_sees_upstream_keys() -> None:
    event = decode_generic('{"prompt": "p1", "cwd": "/w", "session_id": "s"}', "codex", "user_input")
    data = template_data(event)
    assert set(data) == {
        "target",
        "event",
        "query",
        "prompt",
        "assistant",
        "messages",
        "workspace",
        "metadata",
        "safe_text",
        "raw_json",
    }
    write = compose_write(event, template="{{ .target }}:{{ .prompt }}@{{ .workspace }}", profile="ltm")
    assert write is not None and write.text == "codex:p1@/w"
    assert write.metadata == {
        "session_id": "s",
        "cwd": "/w",
        "hook_target": "codex",
        "hook_event": "user_input",
        "workspace": "/w",
    }
    assert write.admission_text == "p1" and write.source == "hook:codex:user_input" and not write.terminal


def test_custom_event_renders_with_label_and_empty_is_skipped() -> None:
    event = decode_generic('{"prompt": "deploy done"}', "claude", "deploy_finished")
    write = compose_write(event, template="{{ .safe_text }}", profile="ltm", label="Claude Code")
    assert write is not None and write.text == "Claude Code deploy_finished:\ndeploy done"
    assert compose_write(decode_generic("{}", "claude", "deploy_finished"), template="", profile="ltm") is None
