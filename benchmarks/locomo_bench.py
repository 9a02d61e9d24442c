"""Long-conversation retrieval: LoCoMo's evidence turns found by ``sqlite`` and ``sqlite-hybrid``.

    uv run python benchmarks/locomo_bench.py --dataset ~/data/locomo10.json
    PAXM_LOCOMO=~/data/locomo10.json uv run python benchmarks/run.py --only locomo

Runs ``paxm eval locomo --retrieval-only`` (no model calls) once per provider type in a private
``HOME`` and prints recall@10, MRR and the mean number of hits per question, overall and per
conversation.  The budget (issue 46): the hybrid reaches recall@10 >= 0.65 and is at least the
lexical store's in every conversation.

LoCoMo (snap-research/locomo) is licensed CC BY-NC 4.0, so paxm does not ship it: without
``--dataset`` or ``PAXM_LOCOMO`` this runner says so and records nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from results import record

TYPES = ("sqlite", "sqlite-hybrid")


def run_type(dataset: Path, provider_type: str, home: Path) -> dict[str, object]:
    """The retrieval diagnostic of one provider type, as ``paxm eval locomo --json`` reports it."""
    config = home / ".config" / "paxm"
    config.mkdir(parents=True, mode=0o700, exist_ok=True)
    (config / "config.yaml").write_text(f"providers:\n  store:\n    type: {provider_type}\n    enabled: true\n")
    out = home / f"{provider_type}.json"
    cmd = [str(Path(sys.executable).with_name("paxm")), "eval", "locomo", "--dataset", str(dataset)]
    cmd += ["--retrieval-only", "--provider", "store", "--json", "--output", str(out)]
    subprocess.run(cmd, env={**os.environ, "HOME": str(home)}, check=True, stdout=subprocess.DEVNULL)
    report: dict[str, object] = json.loads(out.read_text())
    return report


def per_conversation(report: dict[str, object]) -> dict[str, float]:
    """Mean recall@k of each conversation's questions."""
    by_conv: dict[str, list[float]] = {}
    for q in report["questions"]:  # type: ignore[attr-defined]
        by_conv.setdefault(q["conversation_id"], []).append(q["recall_at_k"])
    return {conv: statistics.mean(values) for conv, values in by_conv.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, default=os.environ.get("PAXM_LOCOMO") or None)
    args = parser.parse_args(argv)
    if args.dataset is None or not args.dataset.is_file():
        print("locomo: no dataset (pass --dataset or set PAXM_LOCOMO to your locomo10.json); nothing measured")
        return 0
    reports = {}
    with tempfile.TemporaryDirectory(prefix="paxm-locomo-") as tmp:
        for provider_type in TYPES:
            reports[provider_type] = run_type(args.dataset, provider_type, Path(tmp) / provider_type)
    convs = {t: per_conversation(r) for t, r in reports.items()}
    for t, r in reports.items():
        hits = statistics.mean(len(q["hit_ids"]) for q in r["questions"])  # type: ignore[attr-defined]
        print(f"{t:<14} recall@10 {r['recall_at_k']:.3f}  MRR {r['mrr']:.3f}  mean hits {hits:.2f}")
    print(f"{'conversation':<14} {'sqlite':>8} {'hybrid':>8}")
    for conv in sorted(convs["sqlite"]):
        print(f"{conv:<14} {convs['sqlite'][conv]:>8.3f} {convs['sqlite-hybrid'].get(conv, 0.0):>8.3f}")
    lexical, hybrid = (float(reports[t]["recall_at_k"]) for t in TYPES)  # type: ignore[arg-type]
    worse = [c for c in convs["sqlite"] if convs["sqlite-hybrid"].get(c, 0.0) < convs["sqlite"][c]]
    record(
        "LoCoMo recall@10, sqlite-hybrid",
        hybrid,
        "",
        f"sqlite {lexical:.3f}; hybrid below sqlite in {len(worse)}/{len(convs['sqlite'])} conversations",
        ">= 0.65, >= sqlite per conversation",
        hybrid >= 0.65 and not worse,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
