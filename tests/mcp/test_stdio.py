"""The stdio JSON-RPC loop of ``paxm mcp serve``: every line answered, in-flight calls finished at EOF,
``initialize`` answered without importing the MCP SDK (issue 42.9c/d, issues 41/43)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from paxm_core.mcp_stdio import StdioServer

from .test_server import PAXM, config

__all__ = ["config"]  # the fixture, shared

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}


def _line(message: Any) -> bytes:
    return (json.dumps(message) + "\n").encode()


def _exchange(config: Path, payload: bytes, env: dict[str, str] | None = None) -> tuple[list[dict[str, Any]], str]:
    """Send ``payload`` to a fresh server, close its stdin, and read every answer until it exits."""
    done = subprocess.run(
        [*PAXM, "--config", str(config), "mcp", "serve"],
        input=payload,
        capture_output=True,
        timeout=120,
        env=env or dict(os.environ),
        cwd=config.parent,
    )
    assert done.returncode == 0, done.stderr.decode()
    return [json.loads(line) for line in done.stdout.decode().splitlines()], done.stderr.decode()


def test_garbage_and_batches_get_json_rpc_errors_and_the_server_keeps_serving(config: Path) -> None:
    payload = b"".join(
        [
            _line(INIT),
            b"this is not json\n",
            b'{"jsonrpc": "2.0", "id": 7, "method": \n',
            _line([{"jsonrpc": "2.0", "id": 2, "method": "ping"}]),
            b"[]\n",
            b"42\n",
            _line({"jsonrpc": "1.0", "id": 3, "method": "ping"}),
            _line({"jsonrpc": "2.0", "id": True, "method": "ping"}),
            _line({"jsonrpc": "2.0", "id": 4, "method": "no/such"}),
            _line({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": []}),
            _line({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            _line({"jsonrpc": "2.0", "id": 99, "result": {}}),  # a client response: ignored
            b"\xff\xfe not utf-8\n",
            b"[" * 100_000 + b"\n",
            _line({"jsonrpc": "2.0", "id": 6, "method": "ping"}),
        ]
    )
    answers, _ = _exchange(config, payload)
    init, *rest = answers
    assert init["id"] == 1 and init["result"]["protocolVersion"] == "2025-06-18"
    assert [(a["id"], a["error"]["code"]) for a in rest[:-1]] == [
        (None, -32700),
        (None, -32700),
        (None, -32600),
        (None, -32600),
        (None, -32600),
        (3, -32600),
        (None, -32600),
        (4, -32601),
        (5, -32602),
        (None, -32700),
        (None, -32700),
    ]
    assert rest[-1] == {"jsonrpc": "2.0", "id": 6, "result": {}}


def test_initialize_negotiates_the_protocol_version(config: Path) -> None:
    unknown = {**INIT, "params": {**INIT["params"], "protocolVersion": "1999-01-01"}}
    old = {**INIT, "id": 2, "params": {**INIT["params"], "protocolVersion": "2024-11-05"}}
    missing = {**INIT, "id": 3, "params": {}}
    answers, _ = _exchange(config, _line(unknown) + _line(old) + _line(missing))
    assert answers[0]["result"]["protocolVersion"] == "2025-11-25"
    assert answers[1]["result"]["protocolVersion"] == "2024-11-05"
    assert answers[1]["result"]["capabilities"] == {"tools": {"listChanged": False}}
    assert answers[1]["result"]["serverInfo"]["name"] == "paxm"
    assert answers[2]["error"]["code"] == -32602


def test_calls_in_flight_at_eof_are_answered(config: Path) -> None:
    # stdin closes right after the calls: the first one still builds the runtime then
    calls = [
        {
            "jsonrpc": "2.0",
            "id": n,
            "method": "tools/call",
            "params": {"name": "paxm_remember", "arguments": {"text": f"eof fact {n}"}},
        }
        for n in (10, 11, 12)
    ]
    answers, stderr = _exchange(config, _line(INIT) + b"".join(_line(c) for c in calls))
    by_id = {a["id"]: a for a in answers}
    assert sorted(by_id) == [1, 10, 11, 12], stderr
    for n in (10, 11, 12):
        assert by_id[n]["result"]["isError"] is False
        assert by_id[n]["result"]["structuredContent"]["refs"][0]["provider"] == "sqlite"


def test_initialize_imports_neither_the_sdk_nor_the_runtime(config: Path) -> None:
    env = dict(os.environ, PYTHONPROFILEIMPORTTIME="1")
    answers, stderr = _exchange(config, _line(INIT) + _line({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}), env)
    assert [a["id"] for a in answers] == [1, 2]
    assert len(answers[1]["result"]["tools"]) == 4
    imported = {line.rsplit("|", 1)[-1].strip() for line in stderr.splitlines() if line.startswith("import time:")}
    roots = {name.split(".")[0] for name in imported}
    assert not roots & {"mcp", "mcp_types", "pydantic", "anyio", "starlette", "yaml", "sqlite3"}, roots
    assert "paxm_core.router" not in imported and "paxm_core.runtime" not in imported


# -- the loop in-process ----------------------------------------------------------------------


def test_a_cancelled_call_is_not_answered_and_ping_is_answered_while_a_call_runs() -> None:
    release = threading.Event()
    out = io.BytesIO()

    def slow(params: dict[str, Any]) -> dict[str, Any]:
        release.wait(10)
        return {"done": params.get("n")}

    server = StdioServer({"slow": slow, "ping": lambda p: {}}, threaded=("slow",), output=out)
    server.handle_line(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "slow", "params": {"n": 1}}))
    server.handle_line(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "slow", "params": {"n": 2}}))
    server.handle_line(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "ping"}))
    server.handle_line(json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}))
    assert [json.loads(x)["id"] for x in out.getvalue().splitlines()] == [3]
    release.set()
    server.drain()
    answers = [json.loads(x) for x in out.getvalue().splitlines()]
    assert [a["id"] for a in answers] == [3, 2] and answers[1]["result"] == {"done": 2}


def test_a_failing_handler_is_an_internal_error() -> None:
    out = io.BytesIO()

    def boom(params: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("exploded")

    server = StdioServer({"boom": boom, "nan": lambda p: {"x": float("nan")}}, threaded=(), output=out)
    server.serve([b'{"jsonrpc":"2.0","id":1,"method":"boom"}\n', b'{"jsonrpc":"2.0","id":2,"method":"nan"}\n'])
    answers = [json.loads(x) for x in out.getvalue().splitlines()]
    assert [(a["id"], a["error"]["code"]) for a in answers] == [(1, -32603), (2, -32603)]
    assert "exploded" in answers[0]["error"]["message"]


def test_stray_stdout_writes_go_to_stderr_and_stdin_is_private() -> None:
    code = (
        "import os, sys\n"
        "from paxm_core.mcp_server import _private_stdio\n"
        "reader, writer = _private_stdio()\n"
        "print('stray print', flush=True)\n"
        "os.write(1, b'stray fd write\\n')\n"
        "assert sys.stdin.read() == ''\n"  # fd 0 now reads /dev/null
        "writer.write(reader.readline()); writer.flush()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], input=b"the request\n", capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"the request\n"
    assert b"stray print" in done.stderr and b"stray fd write" in done.stderr
