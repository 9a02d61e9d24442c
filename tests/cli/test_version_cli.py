"""``paxm version`` and ``paxm --version``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from paxm_core import __version__

ENTRY = "import sys; from paxm_core.cli import main; main(sys.argv[1:])"


def paxm(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", ENTRY, *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=60,
    )


def test_dash_dash_version_is_the_bare_version() -> None:
    for flag in ("--version", "-v"):
        result = paxm(flag)
        assert result.returncode == 0
        assert result.stdout == f"{__version__}\n"


def test_version_lists_paxm_distributions_including_plugins_named_otherwise(tmp_path: Path) -> None:
    site = tmp_path / "site"
    info = site / "acme_memory-2.4.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-memory\nVersion: 2.4.1\n")
    (info / "entry_points.txt").write_text("[paxm]\nacme = acme_memory\n")
    unrelated = site / "left_pad-1.0.dist-info"
    unrelated.mkdir()
    (unrelated / "METADATA").write_text("Metadata-Version: 2.1\nName: left-pad\nVersion: 1.0\n")
    env = {"PYTHONPATH": str(site), "PAXM_LOAD_PLUGINS": ""}
    text = paxm("version", env=env)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0] == f"paxm {__version__}"
    assert any(line.split() == ["paxm-provider-sqlite", __version__] for line in lines)
    assert any(line.split() == ["acme-memory", "2.4.1"] for line in lines)
    assert "left-pad" not in text.stdout
    data = json.loads(paxm("version", "--json", env=env).stdout)
    assert data["version"] == __version__
    names = {d["name"]: d["version"] for d in data["distributions"]}
    assert names["paxm"] == __version__ and names["acme-memory"] == "2.4.1" and "left-pad" not in names
