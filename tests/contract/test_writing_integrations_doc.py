"""docs/writing-integrations.md, followed literally: a fresh third-party integration passes IntegrationContract.

The files are copied out of the page (every fenced block with a ``title="..."``), so the doc
and this test cannot drift.  The paxm distributions come from wheels built from this checkout,
everything else from uv's cache pinned to the workspace's versions (no network needed).
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
DOC = ROOT / "docs" / "writing-integrations.md"
UV = shutil.which("uv")
# Read at import, before the autouse fixture points HOME at a temp dir: uv's cache lives there.
UV_CACHE = os.environ.get("UV_CACHE_DIR") or str(
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "uv"
)


def doc_files() -> dict[str, str]:
    return dict(re.findall(r'```\w+ title="([^"]+)"\n(.*?)```', DOC.read_text(), flags=re.S))


def run(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "VIRTUAL_ENV", "UV_PROJECT"))}
    env["UV_CACHE_DIR"] = UV_CACHE
    return subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


def test_doc_lists_the_package_files() -> None:
    assert sorted(doc_files()) == [
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
    project = work / "myharness"
    venv = project / ".venv"
    created = run(UV, "venv", "-q", str(venv), "--python", sys.executable, cwd=project)
    assert created.returncode == 0, created.stderr
    base = [UV, "pip", "install", "-q", "--python", str(venv / "bin" / "python"), "--find-links", str(wheels)]
    offline = run(*base, "--offline", "-c", str(constraints), "-e", ".[test]", cwd=project)
    if offline.returncode != 0:  # cache incomplete: let uv use the package index
        online = run(*base, "-e", ".[test]", cwd=project)
        assert online.returncode == 0, offline.stderr + online.stderr

    pytest_bin = str(venv / "bin" / "pytest")
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
