"""Rows of the performance table, recorded by the runners and printed together by ``run.py``.

A runner calls :func:`record` for every row it measures; when ``run.py`` started it, the row is
appended (one JSON object a line) to the file named by ``PAXM_BENCH_RESULTS``, so the summary
table can show every row with its baseline and target whichever runners produced them.
"""

from __future__ import annotations

import json
import os

ENV = "PAXM_BENCH_RESULTS"


def record(key: str, value: float, unit: str, baseline: str, target: str, ok: bool | None) -> None:
    """Record one row: ``value`` in ``unit``, the baseline it is compared with, the target and verdict."""
    path = os.environ.get(ENV)
    if not path:
        return
    row = {"key": key, "value": value, "unit": unit, "baseline": baseline, "target": target, "ok": ok}
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(row) + "\n")
