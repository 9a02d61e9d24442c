"""Capture the extension-handler arguments the real Pi passes (fixtures for the Node unit tests).

    uv run --all-packages python integrations/paxm-integration-pi/tests/capture_fixtures.py [build key]

Runs one tool-call turn of the pinned Pi (default ``earendil-0.74``) against the fake Chat
Completions server with ``fixtures/recorder-extension.ts`` loaded, and writes the first event of
each kind to ``fixtures/pi-<version>/<event>.json`` (sandbox paths replaced by placeholders).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from paxm_contracttest.fake_models.chat_completions import FakeOpenAI  # noqa: E402
from paxm_contracttest.harness.harnesses import PI_BUILDS  # noqa: E402
from paxm_contracttest.harness.kit import HarnessBox, install  # noqa: E402

HERE = Path(__file__).resolve().parent


def main() -> None:
    key = sys.argv[1] if len(sys.argv) > 1 else "earendil-0.74"
    build = PI_BUILDS[key]
    installed = install(build)
    out = HERE / "fixtures" / f"pi-{build.packages[0].rsplit('@', 1)[1]}"
    with tempfile.TemporaryDirectory(prefix="paxm-pi-capture-") as tmp:
        root = Path(tmp)
        box = HarnessBox(root / "box", build, installed)
        record = root / "record"
        record.mkdir()
        ext = (box.home / ".pi" / "agent") / "extensions" / "recorder" / "index.ts"
        ext.parent.mkdir(parents=True)
        shutil.copy(HERE / "fixtures" / "recorder-extension.ts", ext)
        with FakeOpenAI(root / "requests.jsonl") as fake:
            box.point_at(fake.url)
            run = box.turn(fake, "RUN_TOOL: run the probe command, then confirm.", PAXM_PI_RECORD=str(record))
        if run.returncode != 0:
            raise SystemExit(f"pi failed: {run.stderr}")
        out.mkdir(parents=True, exist_ok=True)
        for path in sorted(record.glob("*.jsonl")):
            if path.stem in ("message_start", "turn_end"):
                continue  # recorded for a look, not used by the unit tests
            lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
            text = json.dumps(lines, indent=2)
            text = text.replace(str(box.workspace), "/WORKSPACE").replace(str(box.home), "/HOME")
            (out / f"{path.stem}.json").write_text(text + "\n")
            print(f"{path.stem}: {len(lines)} event(s)")


if __name__ == "__main__":
    main()
