"""docs/writing-providers.md, followed literally: a fresh third-party package passes the suite.

The files are copied out of the page (every fenced block with a ``title="..."``), so the doc
and this test cannot drift.  The page tells a third party to ``pip install -e '.[test]'``
from PyPI; here the paxm distributions come from wheels built from this checkout, and
everything else from uv's cache pinned to the workspace's versions (so no network is needed).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "writing-providers.md"
UV = shutil.which("uv")
# Read at import, before the autouse fixture points HOME at a temp dir: uv's cache lives there.
UV_CACHE = os.environ.get("UV_CACHE_DIR") or str(
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "uv"
)


def doc_files() -> dict[str, str]:
    blocks = re.findall(r'```\w+ title="([^"]+)"\n(.*?)```', DOC.read_text(), flags=re.S)
    return dict(blocks)


def run(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "VIRTUAL_ENV", "UV_PROJECT"))}
    env["UV_CACHE_DIR"] = UV_CACHE
    return subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


def install(venv: Path, project: Path, wheels: Path, constraints: Path) -> None:
    assert UV is not None
    base = [UV, "pip", "install", "-q", "--python", str(venv / "bin" / "python"), "--find-links", str(wheels)]
    offline = run(*base, "--offline", "-c", str(constraints), "-e", ".[test]", cwd=project)
    if offline.returncode != 0:  # cache incomplete: let uv use the package index
        online = run(*base, "-e", ".[test]", cwd=project)
        assert online.returncode == 0, offline.stderr + online.stderr


def test_doc_lists_the_package_files() -> None:
    assert sorted(doc_files()) == [
        "mystore/pyproject.toml",
        "mystore/src/paxm_mystore/__init__.py",
        "mystore/src/paxm_mystore/provider.py",
        "mystore/tests/test_contract.py",
    ]


def test_doc_table_names_every_check() -> None:
    from paxm_contracttest import ProviderContract

    checks = {name for name in dir(ProviderContract) if name.startswith("test_")}
    documented = set(re.findall(r"`(test_[a-z_]+)", DOC.read_text()))
    assert checks == documented, f"undocumented: {checks - documented}; stale: {documented - checks}"


@pytest.mark.slow
@pytest.mark.skipif(UV is None, reason="uv is not installed")
def test_third_party_package_from_the_doc_passes_then_fails_on_bad_scores(tmp_path: Path) -> None:
    assert UV is not None
    wheels = tmp_path / "wheels"
    for package in ("paxm", "paxm-provider-sqlite", "paxm-contracttest"):
        built = run(UV, "build", "--offline", "--wheel", "--package", package, "--out-dir", str(wheels), cwd=ROOT)
        assert built.returncode == 0, built.stderr
    frozen = run(UV, "pip", "freeze", "--python", sys.executable, cwd=ROOT)
    constraints = tmp_path / "constraints.txt"
    constraints.write_text(
        "\n".join(line for line in frozen.stdout.splitlines() if not line.startswith(("-e", "paxm")))
    )

    work = tmp_path / "third-party"
    for name, body in doc_files().items():
        path = work / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
    project = work / "mystore"
    venv = project / ".venv"
    created = run(UV, "venv", "-q", str(venv), "--python", sys.executable, cwd=project)
    assert created.returncode == 0, created.stderr
    install(venv, project, wheels, constraints)

    pytest_bin = str(venv / "bin" / "pytest")
    passed = run(pytest_bin, "-q", "-p", "no:cacheprovider", "-rs", cwd=project)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert " failed" not in passed.stdout and " passed" in passed.stdout
    # only capabilities the doc's provider does not declare are skipped
    skips = [line for line in passed.stdout.splitlines() if line.startswith("SKIPPED")]
    assert skips and all("is not declared by this provider" in line for line in skips), passed.stdout

    # The same package returning raw, unnormalized scores fails with a message that says why.
    provider = project / "src" / "paxm_mystore" / "provider.py"
    source = provider.read_text()
    good = "relevance = matched / len(wanted)"
    assert good in source
    provider.write_text(source.replace(good, "relevance = matched * 2.5"))
    failed = run(pytest_bin, "-q", "-p", "no:cacheprovider", cwd=project)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "FAILED tests/test_contract.py::TestMyStoreContract::test_scores_are_higher_is_better_in_unit_interval" in (
        failed.stdout
    )
    assert re.search(r"relevance \d+(\.\d+)? is outside \[0, 1\]\. paxm needs higher-is-better", failed.stdout)
