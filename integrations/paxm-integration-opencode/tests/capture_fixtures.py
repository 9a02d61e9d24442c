"""Capture the hook arguments the real OpenCode passes to a plugin (the Node tests' fixtures).

    uv run --all-packages python integrations/paxm-integration-opencode/tests/capture_fixtures.py

Runs one tool-calling ``opencode run`` turn (outside a git repository) against the fake Chat
Completions server with ``fixtures/recorder-plugin.js`` installed, and writes
``fixtures/opencode-<version>/<hook>.json`` (the first call of each hook; the transform hook
keeps every call, one per agent-loop step, and ``bus.json`` every ``message.updated`` /
``message.part.updated`` event).  Sandbox paths are replaced by placeholders.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from paxm_contracttest.fake_models.chat_completions import FakeOpenAI  # noqa: E402
from paxm_contracttest.harness.harnesses import OPENCODE  # noqa: E402
from paxm_contracttest.harness.kit import HarnessBox, install  # noqa: E402

OPENCODE_VERSION = OPENCODE.packages[0].rsplit("@", 1)[1]


def main() -> int:
    installed = install(OPENCODE)
    out = HERE / "fixtures" / f"opencode-{OPENCODE_VERSION}"
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="paxm-oc-capture-") as tmp:
        root = Path(tmp)
        box = HarnessBox(root / "box", OPENCODE, installed)
        record = root / "record"
        record.mkdir()
        with FakeOpenAI(root / "requests.jsonl") as fake:
            box.point_at(fake.url)
            ((box.home / ".config" / "opencode") / "plugins").mkdir(exist_ok=True)
            shutil.copy2(
                HERE / "fixtures" / "recorder-plugin.js",
                (box.home / ".config" / "opencode") / "plugins" / "recorder.js",
            )
            run = box.turn(fake, "RUN_TOOL: run the probe command, then say done.", PAXM_RECORD_DIR=str(record))
            if run.returncode != 0:
                print(run.stderr[-4000:], file=sys.stderr)
                return 1
        for path in sorted(record.glob("*.jsonl")):
            text = path.read_text().replace(str(box.workspace), "/WORKSPACE").replace(str(root), "/SANDBOX")
            values = [json.loads(line) for line in text.splitlines() if line.strip()]
            every = ("experimental.chat.messages.transform", "bus")
            value = values if path.stem in every else values[0]
            (out / f"{path.stem}.json").write_text(json.dumps(value, indent=2, sort_keys=True) + "\n")
            print(f"wrote {out / (path.stem + '.json')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
