"""Setup and the plugin of paxm's repository marketplace (``paxm@paxm-plugins``).

When a user installed that plugin (``codex plugin add paxm@paxm-plugins``), ``paxm setup
--integration codex-plugin`` trusts its hooks instead of installing the generated
``paxm-memory@paxm`` beside it: two plugins would capture every turn twice.  Whether it is
installed is read from Codex's config (``[plugins."paxm@paxm-plugins"] enabled = true``, what
``codex plugin add`` writes); the real Codex run is ``tests/marketplace/test_e2e_codex_marketplace.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from paxm_integration_codex import plugin
from paxm_integration_codex.integration import _repository_plugin_enabled

#: what ``codex plugin marketplace add`` and ``codex plugin add paxm@paxm-plugins`` write (0.171.0)
ADDED = """model = "gpt-5"

[marketplaces.paxm-plugins]
source_type = "local"
source = "/src/paxm"

[plugins."paxm@paxm-plugins"]
enabled = true
"""


def test_the_repository_plugin_id() -> None:
    assert plugin.REPOSITORY_PLUGIN_ID == "paxm@paxm-plugins" != plugin.PLUGIN_ID


@pytest.mark.parametrize(
    ("text", "enabled"),
    [
        (ADDED, True),
        (ADDED.replace("enabled = true", "enabled = false"), False),
        (ADDED.replace("paxm@paxm-plugins", "paxm-memory@paxm"), False),
        ('model = "gpt-5"\n', False),
        ("[plugins\nnot toml", False),
    ],
    ids=["added", "disabled", "only-the-generated-one", "no-plugins", "not-toml"],
)
def test_repository_plugin_enabled(tmp_path: Path, text: str, enabled: bool) -> None:
    config = tmp_path / "config.toml"
    config.write_text(text)
    assert _repository_plugin_enabled(config) is enabled


def test_no_codex_config_means_not_installed(tmp_path: Path) -> None:
    assert _repository_plugin_enabled(tmp_path / "missing.toml") is False
