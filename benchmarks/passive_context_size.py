"""Injected passive-recall size per prompt, before (upstream's full Markdown, uncapped) and after.

Same real SQLite store, same queries: ``uv run --all-packages python benchmarks/passive_context_size.py``.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path


def measure(long_memories: bool) -> tuple[list[int], list[int]]:
    """Injected sizes (before, after) per prompt for a store of long or short memories."""
    from paxm_core.config import load_config, save_config
    from paxm_core.envelope import render_recall_markdown, wrap_recall_context
    from paxm_core.passive.context import passive_recall_block
    from paxm_core.runtime import Runtime

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "config.yaml"
        config = load_config(path)
        config.identity.user_id = "bench"
        config.providers["sqlite"].path = str(Path(tmp) / "memory.sqlite")
        save_config(config, path)
        runtime = Runtime.load(str(path))
        try:
            topics = ["cache", "deploy", "schema", "lint", "release"]
            for i in range(60):
                topic = topics[i % len(topics)]
                body = f"Decision {i} about the {topic}: " + " ".join(
                    f"detail{j} of {topic}" for j in range((40 + i * 3) if long_memories else 3)
                )
                runtime.tools.remember(body, profile="ltm", source="hook:episode")
            before: list[int] = []
            after: list[int] = []
            for topic in topics:
                result = runtime.tools.recall(f"{topic} decision detail1", profile="passive", limit=10)
                hits = list(result.hits)
                if not hits:
                    continue
                old = wrap_recall_context(
                    "passive", "Relevant memory recalled by paxm:\n\n" + render_recall_markdown(hits)
                )
                before.append(len(old))
                after.append(len(passive_recall_block(hits)))
        finally:
            runtime.close()
    return before, after


def main() -> None:
    for label, long_memories in (("long memories", True), ("short memories", False)):
        before, after = measure(long_memories)
        print(f"{label}: {len(before)} prompts")
        print(f"  before: median {statistics.median(before)} chars, max {max(before)}")
        print(f"  after:  median {statistics.median(after)} chars, max {max(after)} (cap 6000)")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
