"""Retrieval on sde-bench's developer conversations, through paxm's real paths.

    uv run --all-packages python benchmarks/sdebench.py [--quick] [--json] [--provider sqlite,...]

sde-bench (MIT, ``vectorize-io/sde-bench``; vendored in ``benchmarks/sdebench_data``) has 33
bug-fix tasks whose fix hinges on a rule decided in a past developer chat (6 of them amended
by a later chat), among 140 decoy chats.  Per provider type, in a private ``HOME``:

* every chat (the tasks' and the decoys') is written as a Claude Code session transcript and
  stored by ``paxm backfill run --agent claude`` (the real CLI);
* each bug report is the prompt of a new session's ``UserPromptSubmit``, run as Claude Code
  runs the hook ``paxm setup --agent claude`` installed (``/bin/sh -c`` + the warm daemon), and
  what it injects is kept;
* each bug report is also an active ``paxm recall --query <report> --limit 10 --json``.

Reported: passive hits (the injection holds a turn of the deciding chat; the chat's settled
rule, its last assistant message), for amended tasks whether the amended or only the
superseded chat was injected, recall@1/5/10 and MRR of the deciding chat (the last one for
amended tasks), injected characters and hook latency.  No LLM is involved.
"""

from __future__ import annotations

import argparse
import hashlib
import html
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from claude_prompt_bench import PAXM, installed_command, payload, run_hook, sandbox_env  # noqa: E402
from hook_bench import daemon_pid, stop_any  # noqa: E402
from results import record  # noqa: E402

DATA = Path(__file__).resolve().parent / "sdebench_data" / "sdebench.json"
#: ``--quick`` (the CI slice): two amended tasks, the two tasks whose rules they amend, four
#: more tasks and the first 30 decoys
QUICK_AMENDED = ("boltons-dedupe-amended-001", "boltons-overage-amended-001")
QUICK_OTHERS = 4
QUICK_DECOYS = 30
#: the chats are dated in the past (backfill skips the last 2 minutes), a chat a day apart
EPOCH = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
_WORD = re.compile(r"[a-z0-9]+")


@dataclass
class Chat:
    """One conversation as a transcript: its session id, day and turns."""

    session: str
    turns: list[dict[str, str]]
    day: int = 0


@dataclass
class TaskResult:
    """What paxm surfaced for one task's bug report."""

    task_id: str
    source: str
    passive_chat: bool = False
    passive_settled: bool = False
    passive_amended: bool | None = None
    passive_superseded_only: bool | None = None
    injected_chars: int = 0
    hook_ms: float = 0.0
    recall_rank: int = 0
    recall_hits: int = 0
    recall_ms: float = 0.0


def load(quick: bool) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The tasks and decoys to run: all of them, or the ``--quick`` slice."""
    data = json.loads(DATA.read_text())
    tasks, decoys = data["tasks"], data["decoys"]
    for task in tasks:  # one chat is stored as its list of turns, several (amended) as a list of lists
        if task["conversations"] and isinstance(task["conversations"][0], dict):
            task["conversations"] = [task["conversations"]]
    if quick:
        picked = {*QUICK_AMENDED, *(name.replace("-amended-", "-") for name in QUICK_AMENDED)}
        others = [t["task_id"] for t in tasks if t["task_id"] not in picked and t["source"] == "conversation"]
        picked.update(others[:QUICK_OTHERS])
        tasks = [t for t in tasks if t["task_id"] in picked]
        decoys = decoys[:QUICK_DECOYS]
    return tasks, decoys


def session_id(name: str) -> str:
    """A stable UUID-shaped session id for a chat (Claude names transcripts by session UUID)."""
    return str(uuid.UUID(hashlib.sha256(name.encode()).hexdigest()[:32]))


def chats_for(tasks: Sequence[dict[str, Any]], decoys: Sequence[dict[str, Any]]) -> list[Chat]:
    """Every chat, dated: decoys and first chats interleaved, every amendment months after all of them."""
    chats: list[Chat] = []
    for i, decoy in enumerate(decoys):
        chats.append(Chat(session_id(decoy["id"]), decoy["turns"], day=i))
    for i, task in enumerate(tasks):
        for n, turns in enumerate(task["conversations"]):
            chats.append(Chat(session_id(f"{task['task_id']}#{n}"), turns, day=i * 3 + 1 + (150 + n if n else 0)))
    return chats


def transcript_lines(chat: Chat, cwd: str) -> Iterator[str]:
    """``chat`` as Claude Code records: a user record per prompt, an assistant record per answer."""
    parent = None
    start = EPOCH + timedelta(days=chat.day)
    for n, turn in enumerate(chat.turns):
        record_id = session_id(f"{chat.session}/{n}")
        stamp = (start + timedelta(minutes=n)).isoformat().replace("+00:00", "Z")
        common = {
            "parentUuid": parent,
            "isSidechain": False,
            "uuid": record_id,
            "timestamp": stamp,
            "cwd": cwd,
            "sessionId": chat.session,
            "userType": "external",
            "version": "2.1.197",
        }
        if turn["role"] == "user":
            message: dict[str, Any] = {"role": "user", "content": turn["text"]}
        else:
            message = {
                "id": f"msg_{record_id.replace('-', '')[:24]}",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": turn["text"]}],
            }
        yield json.dumps({**common, "type": turn["role"], "message": message})
        parent = record_id


def write_transcripts(chats: Sequence[Chat], home: Path, cwd: str) -> None:
    project = home / ".claude" / "projects" / "-work"
    project.mkdir(parents=True, exist_ok=True)
    for chat in chats:
        (project / f"{chat.session}.jsonl").write_text("\n".join(transcript_lines(chat, cwd)) + "\n")


def _words(text: str) -> list[str]:
    return _WORD.findall(html.unescape(text).lower())


def contains(haystack: str, text: str) -> bool:
    """Whether ``haystack`` holds ``text`` (HTML-escaped or not): half of its 6-word runs at least.

    Injections escape, excerpt and re-wrap what they quote, so exact substring tests would
    miss a memory that is there; a run of six words is specific enough across 170 chats.
    """
    words = _words(text)
    grams = {tuple(words[i : i + 6]) for i in range(max(1, len(words) - 5))}
    have = _words(haystack)
    present = {tuple(have[i : i + 6]) for i in range(max(1, len(have) - 5))}
    return bool(grams) and len(grams & present) * 2 >= len(grams)


def settled(turns: Sequence[dict[str, str]]) -> str:
    """The chat's settled rule: its last assistant message."""
    return next(t["text"] for t in reversed(turns) if t["role"] == "assistant")


def chat_in(haystack: str, turns: Sequence[dict[str, str]]) -> bool:
    """Whether any turn of a chat is in ``haystack``."""
    return any(contains(haystack, t["text"]) for t in turns)


def injection(out: bytes) -> str:
    """The context a Claude ``UserPromptSubmit`` hook output adds (``""`` when none)."""
    text = out.decode("utf-8", "replace").strip()
    if not text:
        return ""
    try:
        data = json.loads(text)
    except ValueError:
        return text
    extra = data.get("hookSpecificOutput", {}).get("additionalContext", "") if isinstance(data, dict) else ""
    return str(extra or "")


def _paxm(config: Path, env: dict[str, str], *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Run the paxm CLI in the project directory (recall is scoped to the workspace it runs in)."""
    return subprocess.run(
        [PAXM, "--config", str(config), *args],
        env=env,
        cwd=config.parent.parent / "work",
        check=True,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def hit_session(hit: dict[str, Any]) -> str:
    """The session a recalled memory was captured in (backfill keeps it in the metadata)."""
    for holder in (hit.get("metadata") or {}, (hit.get("origin") or {}), hit):
        if isinstance(holder, dict) and isinstance(holder.get("session_id"), str) and holder["session_id"]:
            return str(holder["session_id"])
    return ""


def recall_rank(config: Path, env: dict[str, str], query: str, deciding: str) -> tuple[int, int, float]:
    """(1-based rank of the deciding chat in ``paxm recall --limit 10``, 0 if absent; hits; ms)."""
    start = time.perf_counter()
    out = _paxm(config, env, "recall", "--query", query, "--limit", "10", "--json")
    elapsed = (time.perf_counter() - start) * 1000
    hits = json.loads(out.stdout).get("hits") or []
    for rank, hit in enumerate(hits, 1):
        if hit_session(hit) == deciding:
            return rank, len(hits), elapsed
    return 0, len(hits), elapsed


def superseded(task: dict[str, Any], by_id: dict[str, dict[str, Any]]) -> list[list[dict[str, str]]]:
    """The chats an amended task's last chat overrides: its earlier ones and its unamended sibling's.

    sde-bench's ``boltons-x-amended`` amends the rule ``boltons-x`` decided, so the sibling's
    chat states the superseded rule as much as the amended task's own first chat does.
    """
    sibling = by_id.get(task["task_id"].replace("-amended-", "-"))
    return [*task["conversations"][:-1], *(sibling["conversations"] if sibling else [])]


def judge(result: TaskResult, text: str, task: dict[str, Any], old: Sequence[Sequence[dict[str, str]]]) -> None:
    """Fill the passive verdicts of ``result`` from the injected ``text`` (``old``: superseded chats)."""
    convs = task["conversations"]
    result.injected_chars = len(text)
    result.passive_chat = chat_in(text, convs[-1]) if text else False
    result.passive_settled = contains(text, settled(convs[-1])) if text else False
    if len(convs) > 1:
        result.passive_amended = result.passive_chat
        result.passive_superseded_only = not result.passive_chat and any(chat_in(text, c) for c in old)


def ingest(config: Path, env: dict[str, str], chats: Sequence[Chat], home: Path, cwd: str) -> float:
    """Write the transcripts and backfill them; seconds the backfill took."""
    write_transcripts(chats, home, cwd)
    start = time.perf_counter()
    out = _paxm(config, env, "backfill", "run", "--agent", "claude", "--json", "--rate", "100000/s", timeout=3600)
    elapsed = time.perf_counter() - start
    summary = json.loads(out.stdout)
    stored = summary.get("delivered") == summary.get("queued") == summary.get("found")
    if summary.get("dead") or summary.get("owed") or summary.get("state") != "done" or not stored:
        raise SystemExit(f"backfill did not store every turn: {out.stdout[-2000:]}")
    for error in summary.get("errors") or []:  # attempts that failed and were retried
        print(f"backfill: {error}", file=sys.stderr)
    return elapsed


def run_provider(provider: str, tasks: Sequence[dict[str, Any]], decoys: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Every task through one provider type, in a fresh private HOME: summary and per-task rows."""
    chats = chats_for(tasks, decoys)
    with tempfile.TemporaryDirectory(prefix="paxm-sdebench-") as tmp:
        root = Path(tmp)
        env = sandbox_env(root)
        config = root / "paxm" / "config.yaml"
        _paxm(config, env, "setup", "--yes", "--agent", "claude", "--provider", provider, timeout=300)
        backfill_s = ingest(config, env, chats, root / "home", str(root / "work"))
        command = installed_command(root / "home" / ".claude" / "settings.json")
        hook_env = {**env, "CLAUDE_PROJECT_DIR": str(root / "work")}
        results = []
        by_id = {t["task_id"]: t for t in tasks}
        try:
            run_hook(command, payload(root, "warm-up", "hello", 0), hook_env, root / "work")
            deadline = time.monotonic() + 60
            while not daemon_pid(config) and time.monotonic() < deadline:
                time.sleep(0.05)
            for n, task in enumerate(tasks, 1):
                result = TaskResult(task["task_id"], task["source"])
                prompt = task["bug_report"]
                result.hook_ms, out = run_hook(
                    command, payload(root, session_id(f"bug-{n}"), prompt, n), hook_env, root / "work"
                )
                judge(result, injection(out), task, superseded(task, by_id))
                deciding = session_id(f"{task['task_id']}#{len(task['conversations']) - 1}")
                result.recall_rank, result.recall_hits, result.recall_ms = recall_rank(config, env, prompt, deciding)
                results.append(result)
        finally:
            stop_any(config)
    return summarise(provider, results, backfill_s, len(chats))


def summarise(provider: str, results: Sequence[TaskResult], backfill_s: float, chats: int) -> dict[str, Any]:
    """The provider's figures over ``results``."""
    amended = [r for r in results if r.passive_amended is not None]
    ranks = [r.recall_rank for r in results]
    return {
        "provider": provider,
        "tasks": len(results),
        "chats": chats,
        "backfill_s": round(backfill_s, 2),
        "passive_chat": sum(r.passive_chat for r in results),
        "passive_settled": sum(r.passive_settled for r in results),
        "amended_tasks": len(amended),
        "amended_injected": sum(bool(r.passive_amended) for r in amended),
        "superseded_only": sum(bool(r.passive_superseded_only) for r in amended),
        "recall_at": {k: sum(0 < r <= k for r in ranks) / len(ranks) for k in (1, 5, 10)},
        "mrr": sum(1 / r for r in ranks if r) / len(ranks),
        "recall_hits_mean": statistics.mean(r.recall_hits for r in results),
        "injected_chars_median": statistics.median(r.injected_chars for r in results),
        "injected_chars_max": max(r.injected_chars for r in results),
        "hook_ms_median": statistics.median(r.hook_ms for r in results),
        "hook_ms_p90": sorted(r.hook_ms for r in results)[int(len(results) * 0.9)],
        "per_task": [asdict(r) for r in results],
    }


def providers_available(requested: str) -> list[str]:
    """The provider types to run: the requested ones, or sqlite plus sqlite-hybrid when installed."""
    if requested:
        return [p.strip() for p in requested.split(",") if p.strip()]
    chosen = ["sqlite"]
    try:
        import paxm_provider_sqlite_hybrid  # noqa: F401
    except ImportError:
        pass
    else:
        chosen.append("sqlite-hybrid")
    return chosen


def report(summary: dict[str, Any], quick: bool) -> None:
    """Print one provider's figures and record its row for ``run.py``'s table."""
    s = summary
    n = s["tasks"]
    print(
        f"sde-bench {s['provider']} ({n} tasks, {s['chats']} chats{', quick slice' if quick else ''}): "
        f"passive injects the deciding chat {s['passive_chat']}/{n}, its settled rule {s['passive_settled']}/{n}; "
        f"amended rule {s['amended_injected']}/{s['amended_tasks']}, superseded only {s['superseded_only']}; "
        f"recall@1 {s['recall_at'][1]:.3f} @5 {s['recall_at'][5]:.3f} @10 {s['recall_at'][10]:.3f} "
        f"MRR {s['mrr']:.3f} ({s['recall_hits_mean']:.1f} hits of 10); injected median "
        f"{s['injected_chars_median']:.0f} chars (max {s['injected_chars_max']}); hook median "
        f"{s['hook_ms_median']:.1f} ms (p90 {s['hook_ms_p90']:.1f}); backfill {s['backfill_s']:.1f} s",
        flush=True,
    )
    record(
        f"sde-bench passive deciding chat, {s['provider']}{' (quick)' if quick else ''}",
        s["passive_chat"] / n,
        "of tasks",
        f"recall@10 {s['recall_at'][10]:.3f}, MRR {s['mrr']:.3f}; amended {s['amended_injected']}/{s['amended_tasks']}",
        "every deciding chat; amended rule >= 5/6",
        None,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="8 tasks and 30 decoys (the CI slice)")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    parser.add_argument(
        "--provider", default="", help="comma-separated provider types (default: sqlite[,sqlite-hybrid])"
    )
    parser.add_argument("--per-task", action="store_true", help="print each task's verdicts")
    parser.add_argument("--tasks", type=int, default=0, help="run only the first N tasks of the selection")
    parser.add_argument("--decoys", type=int, default=-1, help="store only the first N decoys of the selection")
    args = parser.parse_args(argv)
    tasks, decoys = load(args.quick)
    tasks = tasks[: args.tasks] if args.tasks > 0 else tasks
    decoys = decoys[: args.decoys] if args.decoys >= 0 else decoys
    summaries = []
    for provider in providers_available(args.provider):
        summary = run_provider(provider, tasks, decoys)
        summaries.append(summary)
        if not args.json:
            report(summary, args.quick)
            if args.per_task:
                for row in summary["per_task"]:
                    print("  ", row)
    if args.json:
        print(json.dumps({"quick": args.quick, "providers": summaries}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
