"""docs/writing-integrations.md, followed literally: a fresh third-party integration passes IntegrationContract.

The files are copied out of the page (every fenced block with a ``title="..."``), so the doc
and this test cannot drift.  The paxm distributions come from wheels built from this checkout,
everything else from uv's cache pinned to the workspace's versions (no network needed).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from doc_package_kit import ROOT, UV, doc_files, installed_project, run

DOC = ROOT / "docs" / "writing-integrations.md"


def test_doc_lists_the_package_files() -> None:
    assert sorted(doc_files(DOC)) == [
        "myharness/pyproject.toml",
        "myharness/src/paxm_myharness/__init__.py",
        "myharness/tests/fixtures/prompt.json",
        "myharness/tests/test_contract.py",
    ]


def test_doc_table_names_every_check() -> None:
    from paxm_contracttest import IntegrationContract

    checks = {name for name in dir(IntegrationContract) if name.startswith("test_")}
    documented = set(re.findall(r"`(test_contract_[a-z_]+)`", DOC.read_text()))
    assert checks == documented, f"undocumented: {checks - documented}; stale: {documented - checks}"


@pytest.mark.slow
@pytest.mark.skipif(UV is None and not os.environ.get("CI"), reason="uv is not installed")
def test_third_party_integration_from_the_doc_passes_then_fails_when_uninstall_leaks(tmp_path: Path) -> None:
    assert UV is not None, "uv is required in CI"
    project = installed_project(DOC, "myharness", tmp_path)

    pytest_bin = str(project / ".venv" / "bin" / "pytest")
    passed = run(pytest_bin, "-q", "-p", "no:cacheprovider", cwd=project)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "7 passed" in passed.stdout, passed.stdout

    # The same package whose uninstall forgets an event fails the round-trip check, saying why.
    module = project / "src" / "paxm_myharness" / "__init__.py"
    source = module.read_text()
    good = "        for native in EVENTS:\n            kept"
    assert good in source
    module.write_text(source.replace(good, '        for native in ("prompt",):\n            kept'))
    failed = run(pytest_bin, "-q", "-p", "no:cacheprovider", cwd=project)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "test_contract_install_is_idempotent_and_uninstall_restores" in failed.stdout
    assert "uninstall must restore the user's config" in failed.stdout
