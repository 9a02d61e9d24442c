"""``paxm uninstall`` removes the daemon's state files from the hooks dir, the parsed-config cache included."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from paxm_core.config.loader import PARSE_CACHE_NAME, read_raw

ENTRY = "from paxm_core.cli import main; main()"


def test_full_uninstall_removes_the_parsed_config_cache(tmp_path: Path) -> None:
    config = tmp_path / "paxm" / "config.yaml"
    config.parent.mkdir(mode=0o700)
    config.write_text("version: 1\nidentity:\n  user_id: alice\n", encoding="utf-8")
    hooks = config.parent / "hooks"
    read_raw(config, parse_cache=hooks)  # what the hook daemon does on start
    assert (hooks / PARSE_CACHE_NAME).is_file()
    result = subprocess.run(
        [sys.executable, "-c", ENTRY, "--config", str(config), "uninstall", "--yes"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env=dict(os.environ),
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert not (hooks / PARSE_CACHE_NAME).exists()
    assert config.is_file()  # the config itself stays
