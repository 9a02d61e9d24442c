"""Golden tests: a user's real-looking IDE files before setup, exactly what setup makes of them, and back.

Each case under ``golden/<agent>--<name>/`` holds ``before/`` (files under HOME; ``.keep`` only
marks an empty HOME), ``after/`` (the files paxm must leave after install: only the changed or
new ones) and optionally ``uninstalled/`` (after uninstall, when that is not ``before/``, e.g.
stale paxm entries that uninstall rightly drops).  Placeholders: ``{HOOK <event>}`` (paxm's
hook command), ``{PAXM}``, ``{CONFIG}``, ``{CONFIGDIR}``.
Regenerate ``after/`` with ``PAXM_REGEN_GOLDEN=1`` and review the diff by eye.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from ide_golden import config_for, fill, placeholders, unfill

from paxm_core.integration import InstallContext
from paxm_core.plugins import get_plugin_manager
from paxm_integration_ide.base import IdeIntegration
from paxm_integration_ide.native import dumps_file

GOLDEN = Path(__file__).with_name("golden")
CASES = sorted(p.name for p in GOLDEN.iterdir() if p.is_dir())


def _files(root: Path) -> dict[str, str]:
    if not root.is_dir():
        return {}
    return {
        str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file() and p.name != ".keep"
    }


def _home_json(home: Path) -> dict[str, Any]:
    """Every JSON file under HOME (not paxm's own config dir), parsed; backups as text."""
    out: dict[str, Any] = {}
    for path in sorted(home.rglob("*")):
        if path.is_file():
            rel = str(path.relative_to(home))
            out[rel] = path.read_text() if rel.endswith(".paxm.bak") else json.loads(path.read_text())
    return out


def _ordered(value: Any) -> str:
    return json.dumps(value, indent=1, ensure_ascii=False)  # key order counts


@pytest.mark.parametrize("case", CASES)
def test_golden_install_reinstall_uninstall(case: str, tmp_path: Path, isolated_home: Path) -> None:
    agent = case.split("--")[0]
    integration = get_plugin_manager().integration(agent)
    assert isinstance(integration, IdeIntegration)
    config = config_for(tmp_path, agent)
    values = placeholders(config, integration)
    ctx = InstallContext(config=config)
    before = {rel: fill(text, values) for rel, text in _files(GOLDEN / case / "before").items()}
    for rel, value in before.items():
        path = isolated_home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dumps_file(value))
    originals = {rel: (isolated_home / rel).read_text() for rel in before}

    integration.preflight(ctx)
    integration.install(ctx)
    installed = _home_json(isolated_home)

    if os.environ.get("PAXM_REGEN_GOLDEN"):
        out = GOLDEN / case / "after"
        for rel, value in installed.items():
            if rel.endswith(".paxm.bak") or (rel in before and value == before[rel]):
                continue
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            (out / rel).write_text(dumps_file(unfill(value, values)))

    expected = dict(before)
    expected.update({rel: fill(text, values) for rel, text in _files(GOLDEN / case / "after").items()})
    for rel, text in originals.items():
        if expected[rel] != before[rel]:
            expected[rel + ".paxm.bak"] = text  # the user's file as it was, kept once
    assert {k: _ordered(v) for k, v in installed.items()} == {k: _ordered(v) for k, v in expected.items()}
    for rel in installed:  # what paxm wrote is private; the user's untouched files keep their mode
        if rel not in before or installed[rel] != before[rel]:
            assert stat.S_IMODE((isolated_home / rel).stat().st_mode) == 0o600, rel

    snapshot = {rel: (isolated_home / rel).read_bytes() for rel in installed}
    integration.install(ctx)  # idempotent: not a byte changes
    assert {rel: (isolated_home / rel).read_bytes() for rel in installed} == snapshot
    assert set(_home_json(isolated_home)) == set(installed)

    integration.uninstall(ctx)
    integration.uninstall(ctx)  # twice is harmless
    final = {rel: value for rel, value in _home_json(isolated_home).items() if not rel.endswith(".paxm.bak")}
    uninstalled = GOLDEN / case / "uninstalled"
    want = {rel: fill(text, values) for rel, text in _files(uninstalled).items()} if uninstalled.is_dir() else before
    assert {k: _ordered(v) for k, v in final.items()} == {k: _ordered(v) for k, v in want.items()}
    assert not (Path(config.path).parent / "integrations" / "ide" / f"{integration.name}.json").exists()
