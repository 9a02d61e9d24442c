"""docs/writing-integrations.md, followed literally: a fresh third-party integration passes IntegrationContract.

The files are copied out of the page (every fenced block with a ``title="..."``), so the doc
and this test cannot drift.  The paxm distributions come from wheels built from this checkout,
everything else from uv's cache pinned to the workspace's versions (no network needed).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from doc_package_kit import ROOT, UV, fails_once_broken, installed_project, run

DOC = ROOT / "docs" / "writing-integrations.md"


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
    good = "        for native in EVENTS:\n            kept"
    failed = fails_once_broken(project, module, good, '        for native in ("prompt",):\n            kept')
    assert "test_contract_install_is_idempotent_and_uninstall_restores" in failed
    assert "uninstall must restore the user's config" in failed
