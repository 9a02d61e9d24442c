"""Phase-1 behaviour: built-in defaults with no config file, round trip through a saved file."""

from __future__ import annotations

import stat
from pathlib import Path

from paxm_core.config import Config, load_config, save_config


def test_missing_file_gives_sqlite_defaults_under_xdg_data(isolated_home: Path) -> None:
    config = load_config()
    assert isinstance(config, Config)
    assert config.exists is False
    assert config.path == isolated_home / ".config" / "paxm" / "config.yaml"
    assert list(config.enabled_providers()) == ["sqlite"]
    assert config.providers["sqlite"].path == str(isolated_home / ".local/share/paxm/memory.sqlite")
    assert config.telemetry.dir == str(isolated_home / ".local/state/paxm")
    assert config.hooks_dir == isolated_home / ".config/paxm/hooks"
    assert config.capture_queue_path == isolated_home / ".config/paxm/hooks/capture.sqlite"


def test_non_default_config_keeps_data_beside_it(tmp_path: Path) -> None:
    config = load_config(tmp_path / "x" / "config.yaml")
    assert config.providers["sqlite"].path == str(tmp_path / "x" / "memory.sqlite")
    assert config.telemetry.dir == str(tmp_path / "x" / "state")


def test_save_then_load_round_trips_with_mode_0600(tmp_path: Path) -> None:
    target = tmp_path / "c" / "config.yaml"
    config = load_config(target)
    save_config(config, target)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    again = load_config(target)
    assert again.exists is True
    assert again == config


def test_config_package_is_import_light() -> None:
    """Hook processes load the config on every prompt: no YAML/click import until a file is parsed."""
    import subprocess
    import sys

    code = (
        "import sys, paxm_core.config as c; c.load_config(sys.argv[1]); "
        "bad = {'yaml', 'click', 'httpx', 'mcp'} & set(sys.modules); assert not bad, bad"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, "/nonexistent-dir/config.yaml"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
