"""The Node.js example plugin passes the pytest contract suite through the jsonrpc provider."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from example_kit import ExampleContract, example_config

from paxm_contracttest.harness import require

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "jsonrpc-provider-node" / "provider.js"
NODE = shutil.which("node")


@pytest.fixture(autouse=True)
def _node() -> None:
    if NODE is None:
        require("node is not installed: the Node example provider runs in it")


class TestNodeExampleContract(ExampleContract):
    command = str(NODE)
    script = EXAMPLE


def test_concurrent_writes_lose_nothing(tmp_path: Path) -> None:
    """paxm runs requests in parallel; the example's lock file keeps every write."""
    from concurrent.futures import ThreadPoolExecutor

    from paxm_core import Deadline, MemoryItem, SearchQuery
    from paxm_provider_jsonrpc.provider import JsonRpcProvider

    provider = JsonRpcProvider("node", example_config(str(NODE), EXAMPLE, tmp_path / "store.json", timeout=30.0))
    texts = [f"parallel note {n}" for n in range(8)]
    with ThreadPoolExecutor(4) as pool:
        refs = list(pool.map(lambda text: provider.put(MemoryItem(text=text), Deadline.after(30)), texts))
    hits = provider.search(SearchQuery(text="parallel note", limit=50), Deadline.after(30))
    assert sorted(h.id for h in hits) == sorted(r.id for r in refs)
    assert (tmp_path / "store.json").stat().st_mode & 0o777 == 0o600
