"""A safe subset of Go ``text/template`` for hook write templates and recall query templates.

Upstream configs carry templates such as ``{{ .safe_text }}`` or ``{{ .prompt }}``.  This
module evaluates exactly the subset that makes sense for data, with no function calls and no
way to reach Python objects:

* ``{{ .key }}`` and dotted paths ``{{ .metadata.session_id }}``; ``{{ . }}`` is the current value;
* ``{{ if .x }} ... {{ else }} ... {{ end }}`` (empty string/list/map, ``0``, ``false`` are false);
* ``{{ range .messages }} {{ .role }}: {{ .text }} {{ end }}`` (with ``{{ else }}`` for empty);
* ``{{/* comments */}}`` and the ``{{-`` / ``-}}`` whitespace trim markers.

Missing keys render as the empty string (Go's ``missingkey=zero``).  Anything else is a
:class:`TemplateError` naming the offending action.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache

from paxm_core.api.errors import ConfigError

__all__ = ["TemplateError", "compile_template", "render_template"]

_ACTION = re.compile(r"\{\{(-\s)?(.*?)(\s-)?\}\}", re.DOTALL)
_PATH = re.compile(r"^\.(?:[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)?$")
_MAX_OUTPUT = 4 * 1024 * 1024


class TemplateError(ConfigError):
    """A hook template uses syntax outside the supported subset; the hook skips that write."""


@dataclass
class _Node:
    kind: str  # text | field | if | range
    value: str = ""
    body: list[_Node] = field(default_factory=list)
    alt: list[_Node] = field(default_factory=list)


def _tokens(source: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    trim = False  # the previous action ended with ``-}}``
    for match in _ACTION.finditer(source):
        text = source[pos : match.start()]
        if match.group(1):
            text = text.rstrip()
        if trim:
            text = text.lstrip()
        out.append(("text", text))
        out.append(("action", match.group(2).strip()))
        trim = bool(match.group(3))
        pos = match.end()
    tail = source[pos:].lstrip() if trim else source[pos:]
    if "{{" in tail:
        raise TemplateError("unclosed {{ in hook template")
    out.append(("text", tail))
    return out


def _check_path(expr: str) -> str:
    if not _PATH.match(expr):
        raise TemplateError(f"unsupported template action {{{{ {expr} }}}}: only .field paths, if, range, else, end")
    return expr


def _parse(tokens: list[tuple[str, str]], i: int, closers: tuple[str, ...]) -> tuple[list[_Node], int, str]:
    nodes: list[_Node] = []
    while i < len(tokens):
        kind, value = tokens[i]
        i += 1
        if kind == "text":
            if value:
                nodes.append(_Node("text", value))
            continue
        if value.startswith("/*") and value.endswith("*/"):
            continue
        word, _, rest = value.partition(" ")
        if word in ("end", "else"):
            if word not in closers:
                raise TemplateError(f"unexpected {{{{ {word} }}}} in hook template")
            return nodes, i, word
        if word in ("if", "range"):
            node = _Node(word, _check_path(rest.strip()))
            node.body, i, closer = _parse(tokens, i, ("end", "else"))
            if closer == "else":
                node.alt, i, closer = _parse(tokens, i, ("end",))
            if closer != "end":
                raise TemplateError(f"{{{{ {word} }}}} without {{{{ end }}}} in hook template")
            nodes.append(node)
            continue
        nodes.append(_Node("field", _check_path(value)))
    if closers:
        raise TemplateError("missing {{ end }} in hook template")
    return nodes, i, ""


@lru_cache(maxsize=128)
def compile_template(source: str) -> tuple[_Node, ...]:
    """Parse ``source`` once (cached); raises :class:`TemplateError` for unsupported syntax."""
    nodes, _, _ = _parse(_tokens(source), 0, ())
    return tuple(nodes)


def _lookup(dot: object, path: str) -> object:
    if path == ".":
        return dot
    for part in path[1:].split("."):
        if not isinstance(dot, dict):
            return None
        dot = dot.get(part)
    return dot


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return ""


def _render(nodes: tuple[_Node, ...] | list[_Node], dot: object, out: list[str], size: list[int]) -> None:
    for node in nodes:
        if size[0] > _MAX_OUTPUT:
            raise TemplateError("hook template output is too large")
        if node.kind == "text":
            out.append(node.value)
            size[0] += len(node.value)
        elif node.kind == "field":
            text = _text(_lookup(dot, node.value))
            out.append(text)
            size[0] += len(text)
        elif node.kind == "if":
            _render(node.body if _lookup(dot, node.value) else node.alt, dot, out, size)
        elif node.kind == "range":
            items = _lookup(dot, node.value)
            if isinstance(items, dict):
                items = [items[k] for k in sorted(items)]
            if isinstance(items, list) and items:
                for item in items:
                    _render(node.body, item, out, size)
            else:
                _render(node.alt, dot, out, size)


def render_template(source: str, data: Mapping[str, object]) -> str:
    """Render ``source`` against ``data`` and strip surrounding whitespace (upstream trims too)."""
    if not source.strip():
        return ""
    out: list[str] = []
    _render(compile_template(source), data, out, [0])
    return "".join(out).strip()
