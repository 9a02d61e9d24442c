"""Installer detection and the update commands, on real directory layouts of each installer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from paxm_core.cli.update_detect import (
    IndexOptions,
    Installation,
    detect_installation,
    plan_update,
    redact_url,
    render_command,
)

DISTS = ["paxm", "paxm-provider-sqlite", "paxm-integration-codex"]
BASE = Path("/usr")


def _venv(prefix: Path, cfg_extra: str = "", with_pip: bool = True) -> Path:
    (prefix / "bin").mkdir(parents=True)
    (prefix / "bin" / "python").symlink_to("/usr/bin/python3")
    (prefix / "pyvenv.cfg").write_text(f"home = /usr/bin\ninclude-system-site-packages = false\n{cfg_extra}")
    site = prefix / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    if with_pip:
        (site / "pip").mkdir()
        (site / "pip" / "__init__.py").write_text("")
    return prefix


def _everything(name: str) -> str:
    return f"/opt/bin/{name}"


def test_pipx_venv_is_upgraded_with_pipx_runpip(tmp_path: Path) -> None:
    prefix = _venv(tmp_path / "pipx" / "venvs" / "paxm")
    meta = {"main_package": {"package": "paxm", "package_version": "0.1.0"}, "pipx_metadata_version": "0.5"}
    (prefix / "pipx_metadata.json").write_text(json.dumps(meta))
    inst = detect_installation(prefix, BASE)
    assert inst == Installation("pipx", prefix, name="paxm")
    plan = plan_update(inst, DISTS, "0.2.0", IndexOptions("http://127.0.0.1:9/simple"), which=_everything)
    assert not plan.refused
    assert plan.commands == (
        (
            "/opt/bin/pipx",
            "runpip",
            "paxm",
            "install",
            "--upgrade",
            "--index-url",
            "http://127.0.0.1:9/simple",
            "paxm==0.2.0",
            "paxm-provider-sqlite==0.2.0",
            "paxm-integration-codex==0.2.0",
        ),
    )
    refused = plan_update(inst, DISTS, "0.2.0", IndexOptions(), which=lambda _: None)
    assert refused.refused == "pipx install, but pipx is not on PATH"


def test_uv_project_venv_is_relocked_and_synced_in_the_project(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "proj"\nversion = "0"\ndependencies = ["paxm"]\n')
    (project / "uv.lock").write_text("version = 1\n")
    prefix = _venv(project / ".venv", "uv = 0.13.9\n", with_pip=False)
    inst = detect_installation(prefix, BASE)
    assert inst.kind == "uv-project" and inst.name == str(project)
    plan = plan_update(inst, DISTS[:2], "0.2.0", IndexOptions(), which=_everything)
    assert plan.cwd == project
    assert plan.commands == (
        ("/opt/bin/uv", "lock", "--upgrade-package", "paxm==0.2.0", "--upgrade-package", "paxm-provider-sqlite==0.2.0"),
        ("/opt/bin/uv", "sync", "--inexact"),
    )


def test_a_dot_venv_without_a_uv_lock_is_a_plain_venv(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "pyproject.toml").write_text("[project]\nname='p'\n")
    assert detect_installation(_venv(project / ".venv"), BASE).kind == "pip-venv"


def test_uv_tool_environment_is_reinstalled_with_every_companion(tmp_path: Path) -> None:
    prefix = _venv(tmp_path / "tools" / "paxm", "uv = 0.13.9\n", with_pip=False)
    (prefix / "uv-receipt.toml").write_text(
        '[tool]\nrequirements = [{ name = "paxm" }]\npython = "3.12"\nentrypoints = []\n'
    )
    inst = detect_installation(prefix, BASE)
    assert inst.kind == "uv-tool"
    plan = plan_update(inst, DISTS, "1.0.0", IndexOptions(find_links=("/wheels",)), which=_everything)
    assert plan.commands == (
        (
            "/opt/bin/uv",
            "tool",
            "install",
            "--python",
            "3.12",
            "--find-links",
            "/wheels",
            "paxm==1.0.0",
            "--with",
            "paxm-provider-sqlite==1.0.0",
            "--with",
            "paxm-integration-codex==1.0.0",
        ),
    )


def test_uv_venv_without_pip_uses_uv_pip(tmp_path: Path) -> None:
    prefix = _venv(tmp_path / "env", "uv = 0.13.9\n", with_pip=False)
    inst = detect_installation(prefix, BASE)
    assert inst.kind == "uv-venv"
    plan = plan_update(inst, ["paxm"], "1.0.0", IndexOptions(), which=_everything)
    assert plan.commands == (
        ("/opt/bin/uv", "pip", "install", "--python", str(prefix / "bin" / "python"), "--upgrade", "paxm==1.0.0"),
    )


def test_pip_venv_uses_its_own_pip(tmp_path: Path) -> None:
    prefix = _venv(tmp_path / "env")
    plan = plan_update(detect_installation(prefix, BASE), ["paxm"], "1.0.0", IndexOptions(), which=lambda _: None)
    assert not plan.refused
    assert plan.commands == ((str(prefix / "bin" / "python"), "-m", "pip", "install", "--upgrade", "paxm==1.0.0"),)
    forced = plan_update(detect_installation(prefix, BASE), ["paxm"], "1.0.0", IndexOptions(), reinstall=True)
    assert forced.commands[0][4:6] == ("--upgrade", "--force-reinstall")


def test_force_reinstalls_only_paxm_distributions_with_uv(tmp_path: Path) -> None:
    prefix = _venv(tmp_path / "env", "uv = 0.13.9\n", with_pip=False)
    inst = detect_installation(prefix, BASE)
    plan = plan_update(inst, ["paxm", "paxm-provider-zep"], "1.0.0", IndexOptions(), reinstall=True, which=_everything)
    assert plan.commands[0][6:10] == ("--reinstall-package", "paxm", "--reinstall-package", "paxm-provider-zep")


@pytest.mark.parametrize(
    ("layout", "reason"),
    [
        ("system", "paxm is installed into a Python that is not a virtualenv"),
        ("editable", "paxm is installed from a source checkout (editable); update the checkout"),
    ],
)
def test_unknown_installs_are_refused_with_the_pip_command(tmp_path: Path, layout: str, reason: str) -> None:
    prefix = _venv(tmp_path / "env")
    base = prefix if layout == "system" else BASE
    inst = detect_installation(prefix, base, editable=layout == "editable")
    assert inst.kind == "unknown"
    plan = plan_update(inst, ["paxm"], "1.0.0", IndexOptions(), which=_everything)
    assert plan.refused == reason
    assert render_command(plan.commands[0]).endswith("-m pip install --upgrade paxm==1.0.0")


_SAFE = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~", min_size=1, max_size=20)


@given(user=_SAFE, password=_SAFE.filter(lambda s: len(s) >= 4))
def test_index_credentials_never_appear_in_a_printed_command(user: str, password: str) -> None:
    url = f"https://{user}:{password}@pkgs.example.test/simple"
    command = ("uv", "pip", "install", "--index-url", url, "paxm==1.0.0")
    shown = render_command(command)
    assert password not in shown.replace("pkgs.example.test", "").replace("paxm==1.0.0", "")
    assert "https://***@pkgs.example.test/simple" in shown
    assert redact_url("https://pkgs.example.test/simple") == "https://pkgs.example.test/simple"
