"""The cost of building the daemon's dataclasses: ``value_dataclass`` against ``@dataclass``.

Each round imports the modules whose dataclasses the hook daemon builds on its way to its first
answer, in a fresh interpreter, and reports the CPU time (``time.process_time``) and wall time
of those imports.  The baseline is the same code with ``value_dataclass`` swapped for
``dataclasses.dataclass(frozen=..., slots=...)`` before anything imports it, i.e. the methods
``@dataclass`` compiles from source (a written ``__init__`` is kept by both).  Rounds alternate
baseline / ours, so the machine's load hits both alike; medians and the ratio are printed.
Row ``first_prompt.dataclasses_cpu_ms`` (issue #23, first prompt).

Run: ``uv run python benchmarks/dataclass_bench.py [--rounds N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from results import record  # noqa: E402

#: the modules that define the dataclasses on the daemon's start path (``dataclasses._process_class``
#: wrapped during ``STARTUP_PROBE`` in ``hook_bench.py`` lists them)
MODULES = (
    "paxm_core.types",
    "paxm_core.passive.events",
    "paxm_core.protocols",
    "paxm_core.integration",
    "paxm_core.plugins",
    "paxm_core.plugin_index",
    "paxm_core.provider_config",
    "paxm_core.config.model",
    "paxm_core.capture.model",
    "paxm_core.router.policy",
    "paxm_core.router.fanout",
    "paxm_core.router.forget",
    "paxm_core.passive.policy",
    "paxm_core.passive.compose",
    "paxm_core.passive.insertion",
    "paxm_core.passive.client_command",
    "paxm_core.passive.templates",
    "paxm_core.telemetry.metrics",
    "paxm_core.telemetry.history",
    "paxm_core.telemetry.settings",
    "paxm_core.generated_file",
)

CHILD = """
import dataclasses, importlib, json, sys, time
import paxm_core.dataclass_support as support
if sys.argv[1] == "baseline":
    def value_dataclass(cls=None, /, *, frozen=False, slots=False):
        wrap = dataclasses.dataclass(frozen=frozen, slots=slots)
        return wrap if cls is None else wrap(cls)
    support.value_dataclass = value_dataclass
built = []
original = dataclasses._process_class
def counting(cls, *args, **kwargs):
    built.append(cls)
    return original(cls, *args, **kwargs)
dataclasses._process_class = counting
# what these modules import besides their dataclasses, loaded first so only the classes differ
for name in ("json", "datetime", "pathlib", "collections.abc", "typing", "inspect", "threading", "re",
             "os", "socket", "selectors", "concurrent.futures", "sqlite3", "hashlib", "base64", "secrets"):
    importlib.import_module(name)
cpu, wall = time.process_time(), time.perf_counter()
for name in sys.argv[2:]:
    importlib.import_module(name)
cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
print(json.dumps({"cpu_ms": cpu * 1000, "wall_ms": wall * 1000, "classes": len(built)}))
"""


def once(form: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-P", "-c", CHILD, form, *MODULES],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": ""},
    )
    if out.returncode != 0:
        raise SystemExit(f"{form} run failed: {out.stderr[-800:]}")
    data: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    once("baseline"), once("ours")  # byte-code caches written before timing
    runs: dict[str, list[dict[str, float]]] = {"baseline": [], "ours": []}
    for _ in range(args.rounds):
        for form in runs:
            runs[form].append(once(form))
    load = os.getloadavg()[0]
    medians = {
        form: {k: statistics.median(r[k] for r in rows) for k in ("cpu_ms", "wall_ms", "classes")}
        for form, rows in runs.items()
    }
    for form, m in medians.items():
        print(
            f"{form:<9} {m['classes']:.0f} dataclasses: cpu {m['cpu_ms']:6.1f} ms  wall {m['wall_ms']:6.1f} ms"
            f"  (median of {args.rounds}, load {load:.1f})"
        )
    ratio = medians["ours"]["cpu_ms"] / medians["baseline"]["cpu_ms"]
    print(f"value_dataclass / @dataclass: cpu {ratio:.2f}x")
    record(
        "first_prompt.dataclasses_cpu_ms",
        medians["ours"]["cpu_ms"],
        "ms",
        f"@dataclass {medians['baseline']['cpu_ms']:.1f} ms",
        "below @dataclass (first prompt <= 200 ms, #23)",
        ratio < 1,
    )


if __name__ == "__main__":
    main()
