"""The hook catalogue, its docs and its tests cannot drift apart (after datasette's test_docs)."""

from __future__ import annotations

import re
from pathlib import Path

from paxm_core.api import hookspecs

ROOT = Path(__file__).resolve().parents[2]


def _hook_names() -> list[str]:
    return sorted(name for name in vars(hookspecs) if name.startswith("paxm_"))


def test_every_hook_has_a_docs_heading() -> None:
    doc = (ROOT / "docs" / "plugin-hooks.md").read_text()
    headings = set(re.findall(r"^## (paxm_\w+)\(", doc, flags=re.M))
    assert set(_hook_names()) == headings


def test_every_hook_is_exercised_by_a_test() -> None:
    tests = "\n".join(p.read_text() for p in (ROOT / "tests").rglob("*.py") if p.name != Path(__file__).name)
    for name in _hook_names():
        assert f"def {name}(" in tests, f"no test implements {name}"


def test_hookspecs_are_typed_and_documented() -> None:
    for name in _hook_names():
        func = getattr(hookspecs, name)
        assert func.__doc__ and ":param" in func.__doc__, name
        assert func.__annotations__.get("return") in (None, "None"), name
