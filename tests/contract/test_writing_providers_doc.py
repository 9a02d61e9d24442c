"""docs/writing-providers.md, followed literally: a fresh third-party package passes the suite.

The files are copied out of the page (every fenced block with a ``title="..."``), so the doc
and this test cannot drift.  The page tells a third party to ``pip install -e '.[test]'``
from PyPI; here the paxm distributions come from wheels built from this checkout, and
everything else from uv's cache pinned to the workspace's versions (so no network is needed).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from doc_package_kit import ROOT, UV, fails_once_broken, installed_project, run

DOC = ROOT / "docs" / "writing-providers.md"


@pytest.mark.slow
@pytest.mark.skipif(UV is None and not os.environ.get("CI"), reason="uv is not installed")
def test_third_party_package_from_the_doc_passes_then_fails_on_bad_scores(tmp_path: Path) -> None:
    assert UV is not None
    project = installed_project(DOC, "mystore", tmp_path)

    pytest_bin = str(project / ".venv" / "bin" / "pytest")
    passed = run(pytest_bin, "-q", "-p", "no:cacheprovider", "-rs", cwd=project)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert " failed" not in passed.stdout and " passed" in passed.stdout
    # only capabilities the doc's provider does not declare are skipped
    skips = [line for line in passed.stdout.splitlines() if line.startswith("SKIPPED")]
    assert skips and all("is not declared by this provider" in line for line in skips), passed.stdout

    # The same package returning raw, unnormalized scores fails with a message that says why.
    provider = project / "src" / "paxm_mystore" / "provider.py"
    failed = fails_once_broken(project, provider, "relevance = matched / len(wanted)", "relevance = matched * 2.5")
    assert "FAILED tests/test_contract.py::TestMyStoreContract::test_scores_are_higher_is_better_in_unit_interval" in (
        failed
    )
    assert re.search(r"relevance \d+(\.\d+)? is outside \[0, 1\]\. paxm needs higher-is-better", failed)
