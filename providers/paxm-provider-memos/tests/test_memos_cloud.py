"""MemOS Cloud against a recording server that speaks the documented OpenMem endpoints.

The same server is driven by MemTensor's official client (``memos.api.client.MemOSClient``,
run from the MemoryOS venv), so the test proves paxm sends what the vendor's client sends:
paths, ``Authorization: Token <key>``, and body fields.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from paxm_contracttest.fakes import closed_after_test
from paxm_contracttest.sandbox import run_paxm
from paxm_core import Deadline, ProviderConfig
from paxm_core.api.errors import ConfigError, ProviderError
from paxm_core.api.types import MemoryItem, MemoryOrigin, MemoryScope, SearchQuery
from paxm_core.plugins import get_plugin_manager

sys.path.insert(0, str(Path(__file__).parent))
from memos_server import memos_venv  # noqa: E402

from paxm_contracttest.fake_models.server import JsonHandler

API_KEY = "mpg-cloud-test-key-5551"


@dataclass
class CloudState:
    """What the fake stores and saw."""

    requests: list[dict[str, Any]] = field(default_factory=list)
    memories: list[dict[str, Any]] = field(default_factory=list)
    fail_next: dict[str, Any] | None = None


class _Handler(JsonHandler):
    protocol_version = "HTTP/1.0"  # one request per connection, as the fake always served
    state: CloudState

    def _send(self, payload: Any, status: int = 200) -> None:
        self.send_json(status, payload)

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.read_body() or b"{}")
        state = self.state
        state.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        if self.headers.get("Authorization") != f"Token {API_KEY}":
            self._send({"code": 40100, "message": "invalid api key", "data": None}, 401)
            return
        if state.fail_next is not None:
            payload, state.fail_next = state.fail_next, None
            self._send(payload)
            return
        path = self.path.split("/api/openmem/v1", 1)[-1]
        if path == "/add/message":
            for message in body.get("messages") or []:
                state.memories.append(
                    {
                        "id": f"mem-{len(state.memories) + 1}",
                        "memory_value": message["content"],
                        "user_id": body.get("user_id"),
                        "metadata": {"info": body.get("info") or {}},
                        "create_time": "2026-11-30 10:00:00",
                    }
                )
            self._send({"code": 0, "message": "ok", "data": {"success": True, "task_id": "t-1", "status": "running"}})
        elif path == "/search/memory":
            words = set(str(body.get("query", "")).lower().split())
            scored = []
            for mem in state.memories:
                if mem["user_id"] != body.get("user_id"):
                    continue
                overlap = len(words & set(mem["memory_value"].lower().split())) / max(1, len(words))
                if overlap:
                    scored.append({**mem, "relativity": round(overlap, 3)})
            scored.sort(key=lambda m: m["relativity"], reverse=True)
            limit = int(body.get("memory_limit_number") or 6)
            self._send({"code": 0, "message": "ok", "data": {"memory_detail_list": scored[:limit]}})
        else:
            self._send({"code": 404, "message": f"no route {path}", "data": None}, 404)


@pytest.fixture
def cloud() -> Iterator[tuple[str, CloudState]]:
    state = CloudState()
    handler = type("Handler", (_Handler,), {"state": state})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/api/openmem/v1", state
    server.shutdown()
    server.server_close()


def _provider(url: str, **kw: Any) -> Any:
    spec = get_plugin_manager().provider_type("memos-cloud")
    provider = spec.factory("cloud", ProviderConfig(type="memos-cloud", base_url=url, **kw))
    return closed_after_test(provider)


def _d() -> Deadline:
    return Deadline.after(10)


def test_write_then_recall_with_attribution(cloud: tuple[str, CloudState]) -> None:
    url, state = cloud
    provider = _provider(url, api_key=API_KEY, user_id="todd", agent_id="claude")
    item = MemoryItem(
        text="The staging database password rotates on Fridays",
        tier="stm",
        origin=MemoryOrigin("todd", "claude", "s1", "t1"),
        scope=MemoryScope("user", "todd"),
    )
    ref = provider.put(item, _d())
    add = state.requests[-1]
    assert add["path"] == "/api/openmem/v1/add/message" and add["auth"] == f"Token {API_KEY}"
    body = add["body"]
    assert body["user_id"] == "todd" and body["agent_id"] == "claude" and body["source"] == "paxm"
    assert body["messages"] == [{"role": "user", "content": item.text}]
    assert body["conversation_id"] == ref.id and body["info"]["paxm_write_id"] == ref.id
    assert body["info"]["paxm_tier"] == "stm" and body["info"]["paxm_session_id"] == "s1"
    assert body["async_mode"] is False
    hits = provider.search(SearchQuery(text="staging database password", limit=3), _d())
    search = state.requests[-1]
    assert search["path"] == "/api/openmem/v1/search/memory"
    assert search["body"] == {
        "user_id": "todd",
        "query": "staging database password",
        "memory_limit_number": 3,
        "include_preference": False,
        "include_tool_memory": False,
        "filter": {"agent_id": "claude"},
    }
    assert [h.text for h in hits] == [item.text]
    hit = hits[0]
    assert (hit.origin, hit.scope, hit.tier) == (item.origin, item.scope, "stm")
    assert hit.raw_score_kind == "memos_cloud_relativity" and hit.relevance == 1.0


def test_health_and_setup_check_use_a_one_result_search(cloud: tuple[str, CloudState]) -> None:
    url, state = cloud
    provider = _provider(url, api_key=API_KEY, user_id="todd")
    assert provider.ensure_target(_d()) == ("todd", "exists")
    assert state.requests[-1]["body"]["memory_limit_number"] == 1
    assert "filter" not in state.requests[-1]["body"]


def test_wrong_key_is_a_clear_error_without_the_key(cloud: tuple[str, CloudState]) -> None:
    url, _ = cloud
    wrong = "mpg-wrong-key-000111"
    provider = _provider(url, api_key=wrong, user_id="todd")
    with pytest.raises(ProviderError, match="authentication failed") as info:
        provider.health(_d())
    assert wrong not in str(info.value)


def test_envelope_error_on_http_200(cloud: tuple[str, CloudState]) -> None:
    url, state = cloud
    provider = _provider(url, api_key=API_KEY, user_id="todd")
    state.fail_next = {"code": 50001, "message": "quota exceeded", "data": None}
    with pytest.raises(ProviderError, match="quota exceeded"):
        provider.put(MemoryItem(text="x"), _d())
    state.fail_next = {"code": 0, "message": "", "data": {"status": "failure"}}
    with pytest.raises(ProviderError, match="failure"):
        provider.search(SearchQuery(text="x"), _d())


def test_key_is_required() -> None:
    with pytest.raises(ConfigError, match="API key"):
        _provider("http://127.0.0.1:9")
    spec = get_plugin_manager().provider_type("memos-cloud")
    assert spec.locality == "cloud" and spec.secret_keys == {"api_key"}
    assert spec.validate is not None and spec.validate(ProviderConfig(type="memos-cloud")) != []


_OFFICIAL = """
import json, sys
from memos.api.client import MemOSClient
client = MemOSClient(api_key=sys.argv[2], base_url=sys.argv[1])
client.add_message(messages=[{"role": "user", "content": "official client wire check"}], user_id="todd",
                   conversation_id="conv-1", info={"paxm_tier": "ltm"}, source="paxm", agent_id="claude",
                   async_mode=False)
client.search_memory(query="official client wire check", user_id="todd", memory_limit_number=3,
                     include_preference=False, include_tool_memory=False, filter={"agent_id": "claude"})
"""


def test_official_client_sends_the_same_wire(cloud: tuple[str, CloudState], tmp_path: Path) -> None:
    url, state = cloud
    python = memos_venv() / "bin" / "python"
    run = subprocess.run(
        [str(python), "-c", _OFFICIAL, url, API_KEY],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HOME": str(tmp_path)},
        cwd=tmp_path,  # the client writes a .memos/ log dir into its working directory
    )
    assert run.returncode == 0, run.stderr[-2000:]
    official = {r["path"]: r for r in state.requests}
    state.requests.clear()
    provider = _provider(url, api_key=API_KEY, user_id="todd", agent_id="claude")
    provider.put(MemoryItem(text="official client wire check"), _d())
    provider.search(SearchQuery(text="official client wire check", limit=3), _d())
    ours = {r["path"]: r for r in state.requests}
    assert set(ours) == set(official) == {"/api/openmem/v1/add/message", "/api/openmem/v1/search/memory"}
    for path, theirs in official.items():
        assert ours[path]["auth"] == theirs["auth"] == f"Token {API_KEY}"
        sent = {k for k, v in ours[path]["body"].items() if v is not None}
        # every field paxm sends is one the official client sends, with the same JSON type
        assert sent <= set(theirs["body"]), (path, sent - set(theirs["body"]))
        for key in sent:
            assert type(ours[path]["body"][key]) is type(theirs["body"][key]), (path, key)


def test_cli_setup_remember_recall_doctor_never_print_the_key(cloud: tuple[str, CloudState], tmp_path: Path) -> None:
    url, state = cloud
    config = tmp_path / "config.yaml"
    wrong = run_paxm(
        config, "setup", "--yes", "--provider", "memos_cloud", "--base-url", url, env={"PAXM_API_KEY": "mpg-wrong-9"}
    )
    assert wrong.returncode != 0 and not config.exists()
    assert "authentication failed" in wrong.stdout + wrong.stderr and "mpg-wrong-9" not in wrong.stdout + wrong.stderr
    setup = run_paxm(
        config, "setup", "--yes", "--provider", "memos_cloud", "--base-url", url, env={"PAXM_API_KEY": API_KEY}
    )
    assert setup.returncode == 0, setup.stdout + setup.stderr
    outputs = [setup]
    outputs.append(run_paxm(config, "remember", "--text", "cli cloud marker heron"))
    recalled = run_paxm(config, "recall", "--query", "cli cloud marker heron", "--json")
    outputs.append(recalled)
    assert any(h["provider"] == "memos_cloud" for h in json.loads(recalled.stdout)["hits"]), recalled.stdout
    outputs.append(run_paxm(config, "config", "doctor", "--json"))
    outputs.append(run_paxm(config, "config", "show"))
    for out in outputs:
        assert out.returncode == 0, out.stdout + out.stderr
        assert API_KEY not in out.stdout + out.stderr
    assert all(r["auth"] == f"Token {API_KEY}" for r in state.requests[1:])
