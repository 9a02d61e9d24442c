"""A jsonrpc plugin configured in config.yaml, used by the real ``paxm`` CLI (remember/recall)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from paxm_contracttest.harness import require

ROOT = Path(__file__).resolve().parents[2]
NODE_EXAMPLE = ROOT / "examples" / "jsonrpc-provider-node" / "provider.js"
SCRIPTED = ROOT / "providers" / "paxm-provider-jsonrpc" / "tests" / "plugins" / "scripted.py"
PAXM = Path(sys.executable).with_name("paxm")


def paxm(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(PAXM), "--config", str(config), *args], capture_output=True, text=True, timeout=120, env=dict(os.environ)
    )


def test_remember_and_recall_through_the_node_plugin(tmp_path: Path) -> None:
    if shutil.which("node") is None:
        require("node is not installed: the Node example provider runs in it")
    store = tmp_path / "store.json"
    config = tmp_path / "config.yaml"
    config.write_text(
        f"""
providers:
  node:
    type: jsonrpc
    enabled: true
    command: node
    args: [{json.dumps(str(NODE_EXAMPLE))}]
    env: {{PAXM_SAMPLE_PROVIDER_STORE: {json.dumps(str(store))}}}
    timeout: 20s
recall_profiles:
  default:
    providers: [{{name: node, required: true}}]
write_profiles:
  default:
    providers: [{{name: node, required: true}}]
"""
    )
    wrote = paxm(config, "remember", "--text", "the staging database listens on port 5433", "--json")
    assert wrote.returncode == 0, wrote.stderr
    ref = json.loads(wrote.stdout)["refs"][0]
    assert ref["provider"] == "node" and ref["id"]
    recalled = paxm(config, "recall", "--query", "staging database port", "--json")
    assert recalled.returncode == 0, recalled.stderr
    hits = json.loads(recalled.stdout)["hits"]
    assert [(h["provider"], h["id"], h["text"]) for h in hits] == [
        ("node", ref["id"], "the staging database listens on port 5433")
    ]
    assert hits[0]["raw_score_kind"] == "node_term_matches" and 0 < hits[0]["relevance"] <= 1
    assert hits[0]["scope"]["type"] == "personal"  # attribution written by paxm came back


def test_hanging_optional_plugin_does_not_block_recall(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        f"""
providers:
  local:
    type: sqlite
    enabled: true
    path: {json.dumps(str(tmp_path / "memory.db"))}
  stuck:
    type: jsonrpc
    enabled: true
    command: {json.dumps(sys.executable)}
    args: [{json.dumps(str(SCRIPTED))}]
    env: {{SCRIPTED_MODE: hang}}
    timeout: 30s
recall_profiles:
  default:
    providers: [{{name: local, required: true}}, {{name: stuck, timeout: 700ms}}]
write_profiles:
  default:
    providers: [{{name: local, required: true}}]
"""
    )
    assert paxm(config, "remember", "--text", "release freeze starts Friday").returncode == 0
    started = time.monotonic()
    recalled = paxm(config, "recall", "--query", "release freeze", "--json")
    elapsed = time.monotonic() - started
    assert recalled.returncode == 0, recalled.stderr
    result = json.loads(recalled.stdout)
    assert [h["text"] for h in result["hits"]] == ["release freeze starts Friday"]
    assert [e["provider"] for e in result["provider_errors"]] == ["stuck"]
    assert elapsed < 15  # the plugin sleeps 60 s; the route timeout cut it off
