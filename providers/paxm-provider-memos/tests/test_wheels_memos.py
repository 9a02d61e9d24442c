"""The user install path for MemOS: built wheels, plain pip, setup against the real server, then use."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from paxm_contracttest.servers import wheel_provider_round_trip

sys.path.insert(0, str(Path(__file__).parent))
from memos_server import MemOSServer  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.slow


@pytest.mark.prefetch_wheel_venv("paxm", "paxm-provider-memos")
def test_pip_install_setup_remember_recall_doctor(memos: MemOSServer, tmp_path: Path) -> None:
    wheel_provider_round_trip(
        ROOT,
        tmp_path,
        provider="memos",
        distribution="paxm-provider-memos",
        provider_types=("memos", "memos-cloud"),
        base_url=memos.url,
    )
