"""Huge turns (issue 42, item 5): an oversized prompt is stored cut, never dropped, and still recalls.

Through the real hook client and daemon over the SQLite provider.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from paxm_core.capture.truncate import truncate_text
from paxm_core.passive.query import bounded_query
from tests.passive.conftest import memories, run_client, stop_daemon, write_config

BASE = {"cwd": "/w"}


def _flush(config: Path) -> None:
    from paxm_core.passive.control import send_control

    report = send_control(config, "flush", timeout=60, params={"timeout": 30})
    assert report is not None and report["ok"], report


def _paxm(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-c", "from paxm_core.cli import main; main()", "--config", str(config), *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


def _filler(size: int) -> str:
    """Paragraphs of pasted-log words that match no stored memory."""
    words = [f"line{i:05d} status nominal throughput steady" for i in range(size // 40 + 1)]
    paragraphs = [" ".join(words[i : i + 8]) for i in range(0, len(words), 8)]
    return "\n\n".join(paragraphs)


def test_a_300_kib_prompt_is_stored_cut_with_a_marker_and_counted(tmp_path: Path) -> None:
    config = write_config(tmp_path / "cfg")
    prompt = "HEAD-MARK-5521 " + _filler(300 * 1024) + " TAIL-MARK-5521"
    assert len(prompt.encode()) > 300 * 1024
    try:
        turn = {**BASE, "session_id": "huge", "prompt": prompt}
        assert run_client(config, "claude", "user_input", json.dumps(turn).encode()).returncode == 0
        answer = {**BASE, "session_id": "huge", "last_assistant_message": "answer marker HA5521"}
        assert run_client(config, "claude", "turn_end", json.dumps(answer).encode()).returncode == 0
        _flush(config)
    finally:
        stop_daemon(config)
    (text,) = [m["text"] for m in memories(config) if "HA5521" in m["text"] or "HEAD-MARK-5521" in m["text"]]
    assert "HEAD-MARK-5521" in text and "TAIL-MARK-5521" in text and "HA5521" in text  # one turn, whole ends
    assert "…[paxm: truncated " in text and " bytes]…" in text
    status = json.loads(_paxm(config, "queue", "status", "--json").stdout)
    assert status["truncated"]["events"] == 1 and status["truncated"]["last_at"]
    assert "Truncated: 1 oversized event(s)" in _paxm(config, "queue", "status").stdout
    doctor = _paxm(config, "config", "doctor", "--json")
    assert "limits.max_text_bytes" in doctor.stdout and "truncated" in doctor.stdout


def test_a_20_kib_prompt_recalls_by_its_last_paragraph(tmp_path: Path) -> None:
    config = write_config(tmp_path / "cfg")
    try:
        seed = {**BASE, "session_id": "seed", "prompt": "Decision: the cache TTL is seven minutes, id kiwi-7781"}
        assert run_client(config, "claude", "user_input", json.dumps(seed).encode()).returncode == 0
        done = {**BASE, "session_id": "seed", "last_assistant_message": "Noted kiwi-7781."}
        assert run_client(config, "claude", "turn_end", json.dumps(done).encode()).returncode == 0
        _flush(config)
        long_prompt = _filler(20 * 1024) + "\n\nGiven the log above, what is the cache TTL for kiwi-7781?"
        assert len(long_prompt.encode()) > 20 * 1024
        ask = {**BASE, "session_id": "ask", "prompt": long_prompt}
        answer = run_client(config, "claude", "user_input", json.dumps(ask).encode())
    finally:
        stop_daemon(config)
    assert answer.returncode == 0
    assert b'<paxm-recall version="1" mode="passive">' in answer.stdout and b"seven minutes" in answer.stdout


@settings(max_examples=150, deadline=None)
@given(text=st.text(max_size=400), limit=st.integers(min_value=1, max_value=300))
def test_truncation_fits_the_limit_and_keeps_both_ends(text: str, limit: int) -> None:
    cut, removed = truncate_text(text, limit)
    size = len(text.encode("utf-8", "surrogatepass"))
    if size <= limit:
        assert (cut, removed) == (text, 0)
        return
    assert len(cut.encode("utf-8", "surrogatepass")) <= limit and removed > 0
    if "[paxm: truncated" in cut:
        head, _, rest = cut.partition("\n…[paxm: truncated ")
        number, _, tail = rest.partition(" bytes]…\n")
        assert text.startswith(head) and text.endswith(tail) and int(number) == removed
        assert size == len(head.encode("utf-8", "surrogatepass")) + removed + len(tail.encode("utf-8", "surrogatepass"))


@settings(max_examples=150, deadline=None)
@given(text=st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=400), limit=st.integers(1, 300))
def test_the_bounded_query_is_a_fitting_tail(text: str, limit: int) -> None:
    query = bounded_query(text, limit)
    assert len(query.encode()) <= limit or query == text
    # the query is the prompt's end: its words end the prompt's words (the first may be cut)
    q, t = query.split(), text.split()
    assert len(q) <= len(t)
    if q:
        assert t[len(t) - len(q) + 1 :] == q[1:] and t[len(t) - len(q)].endswith(q[0])
