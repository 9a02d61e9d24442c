"""``paxm update`` against real installs: a pip venv and a uv tool, upgraded from a local index."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.update.conftest import DISTS, NEW, OLD, LocalIndex

INSTALL = ["paxm", "paxm-integration-claude-code"]  # paxm-provider-sqlite comes as paxm's dependency


def _env(index: LocalIndex, **extra: str) -> dict[str, str]:
    env = {**os.environ, **index.caches, "UV_PYTHON_DOWNLOADS": "never", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    for var in ("PIP_INDEX_URL", "UV_INDEX_URL", "UV_DEFAULT_INDEX", "VIRTUAL_ENV"):
        env.pop(var, None)
    env.update(extra)
    return env


def _versions(python: Path) -> dict[str, str]:
    script = (
        "import json, importlib.metadata as m\n"
        "print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()"
        " if d.metadata['Name'].startswith('paxm')}))"
    )
    done = subprocess.run([str(python), "-c", script], capture_output=True, text=True, check=True)
    return dict(json.loads(done.stdout))


def _pip_venv(tmp_path: Path, index: LocalIndex) -> Path:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    pins = [f"{name}=={OLD}" for name in INSTALL]
    pip = [str(venv / "bin" / "pip"), "install", "-q", "--index-url", index.url, *pins]
    subprocess.run(pip, check=True, env=_env(index), timeout=600)
    return venv


def _run(paxm: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(paxm), *args], capture_output=True, text=True, env=env, timeout=600)


def test_pip_venv_update_moves_every_distribution_to_the_new_version(tmp_path: Path, local_index: LocalIndex) -> None:
    venv = _pip_venv(tmp_path, local_index)
    assert _versions(venv / "bin" / "python") == dict.fromkeys(DISTS, OLD)
    env = _env(local_index)
    paxm = venv / "bin" / "paxm"

    check = _run(paxm, "update", "--check", "--index-url", local_index.url, env=env)
    assert check.returncode == 100, check.stderr
    assert check.stdout.strip() == f"update available: {OLD} -> {NEW}"
    assert _versions(venv / "bin" / "python") == dict.fromkeys(DISTS, OLD)  # --check changes nothing

    done = _run(paxm, "update", "--index-url", local_index.url, "--json", env=env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["method"] == "pip-venv" and report["updated"] is True
    assert {row["name"]: row["version"] for row in report["installed_after"]} == dict.fromkeys(DISTS, NEW)
    assert _versions(venv / "bin" / "python") == dict.fromkeys(DISTS, NEW)

    again = _run(paxm, "update", "--check", "--json", "--index-url", local_index.url, env=env)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["update_available"] is False
    version = _run(paxm, "--version", env=env)
    assert version.stdout.strip() == NEW


def test_uv_tool_update_reinstalls_the_tool_with_its_companions(tmp_path: Path, local_index: LocalIndex) -> None:
    tools, bins = tmp_path / "tools", tmp_path / "bin"
    env = _env(local_index, UV_TOOL_DIR=str(tools), UV_TOOL_BIN_DIR=str(bins), UV_PYTHON=sys.executable)
    install = ["uv", "tool", "install", "-q", "--index-url", local_index.url, f"paxm=={OLD}"]
    subprocess.run([*install, "--with", f"paxm-integration-claude-code=={OLD}"], check=True, env=env, timeout=600)
    python = tools / "paxm" / "bin" / "python"
    assert _versions(python) == dict.fromkeys(DISTS, OLD)

    dry = _run(bins / "paxm", "update", "--dry-run", "--index-url", local_index.url, env=env)
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.splitlines()[0] == f"would update to {NEW} (uv-tool):"
    assert f"paxm=={NEW} --with paxm-integration-claude-code=={NEW} --with paxm-provider-sqlite=={NEW}" in dry.stdout
    assert _versions(python) == dict.fromkeys(DISTS, OLD)

    done = _run(bins / "paxm", "update", "--index-url", local_index.url, env=env)
    assert done.returncode == 0, done.stderr
    assert "uv tool install" in done.stderr  # the installer that made the environment
    for name in DISTS:
        assert f"{name} {OLD} -> {NEW}" in done.stdout
    assert _versions(python) == dict.fromkeys(DISTS, NEW)
    receipt = (tools / "paxm" / "uv-receipt.toml").read_text()
    assert f'{{name="paxm-integration-claude-code",specifier="=={NEW}"}}' in receipt.replace(" ", "")


def test_a_venv_without_pip_or_uv_is_refused_with_the_command_to_run(tmp_path: Path, local_index: LocalIndex) -> None:
    venv = _pip_venv(tmp_path, local_index)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "uninstall", "-q", "-y", "pip"], check=True)
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if not (Path(p) / "uv").exists())
    assert shutil.which("uv", path=path) is None
    done = _run(venv / "bin" / "paxm", "update", "--index-url", local_index.url, env=_env(local_index, PATH=path))
    assert done.returncode == 3, done.stderr
    assert "refusing: this venv has no pip and uv is not on PATH" in done.stderr
    expected = f"{venv}/bin/python -m pip install --upgrade --index-url {local_index.url} paxm=={NEW}"
    assert expected in done.stderr
    assert _versions(venv / "bin" / "python") == dict.fromkeys(DISTS, OLD)


def test_uv_project_update_relocks_and_syncs_the_project(tmp_path: Path, local_index: LocalIndex) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[project]\nname = "proj"\nversion = "0.1.0"\nrequires-python = ">=3.11"\n'
        'dependencies = ["paxm>=7", "paxm-integration-claude-code>=7"]\n'
    )
    env = _env(local_index, UV_PYTHON=sys.executable)
    olds = [arg for name in DISTS for arg in ("--upgrade-package", f"{name}=={OLD}")]
    subprocess.run(["uv", "lock", "-q", "--index-url", local_index.url, *olds], cwd=project, env=env, check=True)
    subprocess.run(["uv", "sync", "-q", "--index-url", local_index.url], cwd=project, env=env, check=True)
    python = project / ".venv" / "bin" / "python"
    assert _versions(python) == dict.fromkeys(DISTS, OLD)

    done = _run(project / ".venv" / "bin" / "paxm", "update", "--index-url", local_index.url, "--json", env=env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["method"] == "uv-project" and report["updated"] is True
    assert _versions(python) == dict.fromkeys(DISTS, NEW)
    lock = (project / "uv.lock").read_text()
    assert f'name = "paxm"\nversion = "{NEW}"' in lock
