"""``paxm eval locomo`` / ``eval cleanup`` end to end: the real CLI, hooks, daemon and a fake model.

The model is the shared harness kit's ``fake_model_server.py`` (a separate process, the
``../shared/harness`` beside the checkout): its reply ends in ``[marker-seen]`` only when the
request carried the marker, here a code word that exists only in the stored conversation.  So
an answer matches the reference ``marker seen`` exactly when memory reached the model.  The
active arm's tool loop needs a model that calls ``paxm_recall``: the in-repo fake
(:class:`~paxm_contracttest.fake_models.chat_tools.FakeChat`) is taught to.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from paxm_contracttest.fake_models.chat_completions import Recorded
from paxm_contracttest.fake_models.chat_tools import FakeChat

REPO = Path(__file__).resolve().parents[2]
SHARED_HARNESS = Path(os.environ.get("PAXM_SHARED_DIR", REPO.parent / "shared")) / "harness"
PAXM = str(Path(sys.executable).parent / "paxm")
MARKER = "ZEBRA42"


def dataset(tmp_path: Path) -> Path:
    """One synthetic conversation in LoCoMo's format: two answerable questions and two ignored."""
    conversation = {
        "sample_id": "conv-t1",
        "conversation": {
            "speaker_a": "Caroline",
            "speaker_b": "Melanie",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Caroline", "dia_id": "D1:1", "text": f"I picked a code word for the vault: {MARKER}."},
                {"speaker": "Melanie", "dia_id": "D1:2", "text": "Nice! We adopted a puppy named Biscuit."},
            ],
            "session_2_date_time": "10:00 am on 20 May, 2023",
            "session_2": [
                {"speaker": "Caroline", "dia_id": "D2:1", "text": "Pottery class on Tuesdays is relaxing."},
                {"speaker": "Melanie", "dia_id": "D2:2", "text": "Look at my garden", "blip_caption": "tomatoes"},
            ],
            "session_1_summary": "Caroline and Melanie catch up.",
        },
        "qa": [
            {
                "question": "What code word did Caroline pick for the vault?",
                "answer": "marker seen",
                "evidence": ["D1:1"],
                "category": 1,
            },
            {
                "question": "What is the name of Melanie's puppy?",
                "answer": "Biscuit",
                "evidence": ["D1:2"],
                "category": 4,
            },
            {"question": "What did Melanie say about Mars?", "adversarial_answer": "no", "evidence": [], "category": 5},
        ],
    }
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps([conversation]))
    return path


@pytest.fixture
def shared_fake(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The shared kit's fake model server on 127.0.0.1: ``(base url, request log)``."""
    script = SHARED_HARNESS / "fake_model_server.py"
    if not script.exists():
        pytest.skip(f"the shared harness kit is not beside the checkout ({script})")
    port_file, log = tmp_path / "port", tmp_path / "requests.jsonl"
    env = {**os.environ, "FAKE_REPLY": "", "FAKE_MARKER": MARKER}
    proc = subprocess.Popen(
        [sys.executable, str(script), "--port", "0", "--port-file", str(port_file), "--log", str(log)],
        env=env,
        stdout=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while not port_file.exists():
            assert time.monotonic() < deadline and proc.poll() is None, "fake model server did not start"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port_file.read_text()}/v1", log
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def paxm(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PAXM, *args], capture_output=True, text=True, timeout=timeout)


def requests(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines() if "/chat/completions" in line]


def test_three_arms_canary_scoring_and_cleanup_against_the_fake_model(
    tmp_path: Path, shared_fake: tuple[str, Path]
) -> None:
    url, log = shared_fake
    runs = tmp_path / "runs"
    args = ["eval", "locomo", "--dataset", str(dataset(tmp_path)), "--base-url", url, "--model", "fake-model"]
    args += ["--max-questions", "5", "--match-threshold", "0.6", "--input-price", "1", "--output-price", "2"]
    done = paxm(*args, "--run-id", "t1", "--manifest-dir", str(runs), "--json", "--output", str(tmp_path / "r.json"))
    assert done.returncode == 0, done.stderr
    assert "locomo: conv-t1: stored 4 turns" in done.stderr
    assert done.stderr.splitlines()[-1] == "locomo: 6/6 trials"  # not a terminal: a line at the end
    result = json.loads(done.stdout)
    assert json.loads((tmp_path / "r.json").read_text()) == result
    assert (tmp_path / "r.json").stat().st_mode & 0o777 == 0o600
    assert result["benchmark"] == "locomo-agent" and result["write_canary"] is True
    assert (result["question_count"], result["trial_count"]) == (2, 6)
    arms = {s["arm"]: s for s in result["summaries"]}
    assert [s["arm"] for s in result["summaries"]] == ["control", "passive", "active"]
    assert (arms["control"]["matched"], arms["passive"]["matched"], arms["active"]["matched"]) == (0, 1, 0)
    assert arms["passive"]["exact_match"] == 0.5 and arms["control"]["exact_match"] == 0.0
    assert result["passive_lift"] == 0.5 and result["active_lift"] == 0.0
    for summary in arms.values():
        assert summary["errors"] == 0 and summary["input_tokens"] > 0 and summary["output_tokens"] == 16
        expected_cost = (summary["input_tokens"] * 1 + summary["output_tokens"] * 2) / 1e6
        assert summary["cost"] == pytest.approx(expected_cost)
    code_word = [t for t in result["trials"] if t["question_id"] == "conv-t1-q0001"]
    assert [(t["arm"], t["response"]["text"], t["matched"]) for t in code_word] == [
        ("control", "[marker-absent]", False),
        ("passive", "[marker-seen]", True),
        ("active", "[marker-absent]", False),
    ]
    diag = result["retrieval"]
    assert diag["benchmark"] == "locomo-text-qa-retrieval" and diag["question_count"] == 2
    assert diag["passed"] == 2 and diag["recall_at_k"] == 1.0
    assert [(c["category"], c["questions"], c["passed"]) for c in diag["categories"]] == [(1, 1, 1), (4, 1, 1)]

    sent = requests(log)
    canary = [r for r in sent if "PAXM_EVAL_WRITE_t1-conv-t1" in json.dumps(r["body"])]
    assert len(canary) == 1  # the canary turn; its turn_end write was found in the store
    questions = [r["body"] for r in sent if "Question:" in json.dumps(r["body"])]
    assert len(questions) == 6
    with_marker = [b for b in questions if MARKER in json.dumps(b)]
    assert len(with_marker) == 1 and "tools" not in with_marker[0]  # only the passive arm's prompt
    offered = [b for b in questions if b.get("tools")]
    assert [t["function"]["name"] for b in offered for t in b["tools"]] == ["paxm_recall", "paxm_recall"]
    assert list(runs.iterdir()) == []  # the run directory (memories, config, manifest) is gone


def test_text_report_and_keep_memory_then_cleanup_by_run(tmp_path: Path, shared_fake: tuple[str, Path]) -> None:
    url, _log = shared_fake
    runs = tmp_path / "runs"
    args = ["eval", "locomo", "--dataset", str(dataset(tmp_path)), "--base-url", url, "--model", "fake-model"]
    done = paxm(
        *args, "--all", "--arms", "passive,control", "--match-threshold", "0.6", "--keep-memory", "--run-id", "k1",
        "--manifest-dir", str(runs),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "agent write canary: true" in done.stdout
    assert "memory lift: passive +50.0pp" in done.stdout and "active" not in done.stdout.split("memory lift")[1]
    assert "category 1: 1/1" in done.stdout
    run_dir = runs / "k1-conv-t1"
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["keep_memory"] is True
    assert manifest["provider"] == "sqlite" and manifest["provider_type"] == "sqlite" and manifest["version"] == 1
    assert any(ref["id"] == "D1:1" for ref in manifest["refs"]) and len(manifest["refs"]) == 5  # 4 turns + canary
    assert (run_dir / "memory.sqlite").exists()
    assert (run_dir.stat().st_mode & 0o777, (run_dir / "manifest.json").stat().st_mode & 0o777) == (0o700, 0o600)

    stale = paxm("eval", "cleanup", "--stale", "--manifest-dir", str(runs))
    assert stale.returncode == 1 and "no matching eval runs required cleanup" in stale.stderr  # kept runs stay
    cleaned = paxm("eval", "cleanup", "--run", "k1", "--manifest-dir", str(runs), "--json")
    assert cleaned.returncode == 0, cleaned.stderr
    assert json.loads(cleaned.stdout) == {"cleaned": ["k1-conv-t1"], "errors": []}
    assert not run_dir.exists()


class RecallingFake(FakeChat):
    """A model that calls ``paxm_recall`` with the question, then answers from the tool result."""

    def tool_call(self, request: Recorded) -> dict[str, Any] | None:
        names = {str((t.get("function") or {}).get("name")) for t in request.body.get("tools") or []}
        if "paxm_recall" not in names or request.has_tool_result:
            return None
        question = request.user_text().split("Question:", 1)[1].strip()
        return {"name": "paxm_recall", "arguments": json.dumps({"query": question})}


def test_active_arm_answers_from_a_paxm_recall_tool_call(tmp_path: Path) -> None:
    with RecallingFake(tmp_path / "log.jsonl", marker=MARKER, reply="") as fake:
        args = ["eval", "locomo", "--dataset", str(dataset(tmp_path)), "--base-url", fake.url, "--model", "m"]
        done = paxm(*args, "--all", "--arms", "active", "--manifest-dir", str(tmp_path / "runs"), "--json")
        assert done.returncode == 0, done.stderr
        [active] = json.loads(done.stdout)["summaries"]
        assert (active["recall_used"], active["matched"], active["useful_recall"]) == (2, 1, 1)
        assert active["useful_recall_rate"] == 0.5
        follow_ups = [r for r in fake.completions() if r.has_tool_result]
        assert len(follow_ups) == 2
        tool_text = [m["content"] for m in follow_ups[0].body["messages"] if m.get("role") == "tool"][0]
        assert tool_text.startswith("<paxm-recall") and MARKER in tool_text  # the MCP tool's envelope


def test_a_killed_run_is_left_running_and_cleanup_stale_removes_it(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    with FakeChat(tmp_path / "log.jsonl", reply="late", hang=60) as fake:
        args = ["eval", "locomo", "--dataset", str(dataset(tmp_path)), "--base-url", fake.url, "--model", "m"]
        proc = subprocess.Popen(
            [PAXM, *args, "--all", "--run-id", "crash", "--manifest-dir", str(runs)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 60
            while not fake.completions():  # the canary turn is waiting on the model
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.05)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
    run_dir = runs / "crash-conv-t1"
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "running"
    (runs / "not-a-run").mkdir()  # no manifest: never touched
    (runs / "elsewhere").mkdir()
    (runs / "crash-link").symlink_to(runs / "elsewhere")
    done = paxm("eval", "cleanup", "--stale", "--manifest-dir", str(runs))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["cleaned eval run: crash-conv-t1"]
    assert sorted(p.name for p in runs.iterdir()) == ["crash-link", "elsewhere", "not-a-run"]
    by_prefix = paxm("eval", "cleanup", "--run", "crash", "--manifest-dir", str(runs))
    assert by_prefix.returncode == 1 and "crash-link: not an eval run directory paxm wrote" in by_prefix.stderr
    assert (runs / "elsewhere").exists()


def test_retrieval_only_needs_no_model_and_refusals(tmp_path: Path) -> None:
    data = str(dataset(tmp_path))
    runs = str(tmp_path / "runs")
    done = paxm("eval", "locomo", "--dataset", data, "--retrieval-only", "--limit", "2", "--manifest-dir", runs)
    assert done.returncode == 0, done.stderr
    assert "paxm eval: locomo-text-qa-retrieval (sqlite)" in done.stdout
    assert "category 4: 1/1  recall@k 1.000  precision@k 0.500" in done.stdout
    no_limit = paxm("eval", "locomo", "--dataset", data, "--base-url", "http://127.0.0.1:9/v1", "--model", "m")
    assert no_limit.returncode == 1 and "choose --max-questions N or pass --all" in no_limit.stderr
    bad_arm = paxm(
        "eval", "locomo", "--dataset", data, "--base-url", "http://x/v1", "--model", "m", "--all", "--arms", "x"
    )
    assert bad_arm.returncode == 1 and "unsupported eval arm 'x'" in bad_arm.stderr
    other = paxm("eval", "locomo", "--dataset", data, "--retrieval-only", "--provider", "zep", "--manifest-dir", runs)
    assert other.returncode == 1 and other.stderr == "Error: eval provider 'zep' is not enabled in the config\n"
    needs = paxm("eval", "cleanup")
    assert needs.returncode == 1 and "requires --run ID or --stale" in needs.stderr
