"""The generated extension's behaviour, tested in Node (``node --test tests/node/extension.test.mjs``).

paxm generates the extension files under test (with the hook client replaced by the kit's
``fake_hook.mjs``, a real subprocess that records what it was sent); the event and ctx shapes are
the ones the real Pi passed (``fixtures/pi-<version>/``, one run per tested build).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from paxm_contracttest.node_plugin import run_node_file_tests
from paxm_integration_pi import PiIntegration

HERE = Path(__file__).resolve().parent
#: captured from each tested Pi build (``capture_fixtures.py <build key>``)
FIXTURE_DIRS = sorted(
    d for d in (HERE / "fixtures").glob("pi-*") if not d.name.startswith("pi-sessions-")
)  # not transcripts


@pytest.mark.parametrize("fixtures", FIXTURE_DIRS, ids=[d.name for d in FIXTURE_DIRS])
def test_generated_extension_in_node(fixtures: Path, tmp_path: Path) -> None:
    run_node_file_tests(
        PiIntegration(),
        tmp_path,
        script=HERE / "node" / "extension.test.mjs",
        events=("session_start", "user_input", "turn_end"),
        # the generated TypeScript is plain JavaScript: Node 20 runs it as a module unchanged
        suffix=".mjs",
        fixtures=fixtures,
        min_passed=15,
    )
