"""The user install path for OpenViking: built wheels, plain pip, setup against the real server, then use."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from paxm_contracttest.servers import wheel_provider_round_trip

sys.path.insert(0, str(Path(__file__).parent))
from ov_server import OpenVikingServer  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.slow


@pytest.mark.prefetch_wheel_venv("paxm", "paxm-provider-openviking")
def test_pip_install_setup_remember_recall_doctor(openviking: OpenVikingServer, tmp_path: Path) -> None:
    wheel_provider_round_trip(
        ROOT,
        tmp_path,
        provider="openviking",
        distribution="paxm-provider-openviking",
        provider_types=("openviking",),
        base_url=openviking.url,
    )
