"""A hit brings the latest turn of its conversation (the settled decision), and nothing the search could not return."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from paxm_core import Deadline, MemoryItem, SearchQuery
from paxm_provider_sqlite.provider import SQLiteProvider
from paxm_provider_sqlite.retrieval.conversation import SESSION_KEY, SETTLED_WINDOW

START = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
WORKSPACE = "/work/project"


def turn(prompt: str, answer: str) -> str:
    return f"Claude Code user input:\n{prompt}\n\nClaude Code assistant response:\n{answer}"


def item(ident: str, text: str, at: datetime, session: str, workspace: str = WORKSPACE) -> MemoryItem:
    meta = {SESSION_KEY: f"claude/workspace/{workspace}/session/{session}", "workspace": workspace}
    return MemoryItem.from_json({"id": ident, "text": text, "created_at": at.isoformat(), "metadata": meta})


CHAT = [
    ("t1", turn("The contact sync keeps duplicate contacts for one person.", "Let us look at merge_records.")),
    ("t2", turn("Cased emails differ too.", "Then the key is the lowercased email.")),
    ("t3", turn("And which contact survives?", "Settled: merge_records keeps the contact with more filled fields.")),
]


def search(provider: SQLiteProvider, query: str, limit: int = 5) -> list[tuple[str, float]]:
    query_obj = SearchQuery(query, limit=limit, metadata={"workspace": WORKSPACE})
    return [(h.id, h.score) for h in provider.search(query_obj, Deadline.after(5))]


def test_a_hit_brings_its_conversations_latest_turn_right_before_it_with_its_score(provider: SQLiteProvider) -> None:
    items = [item(i, text, START + timedelta(minutes=n), "chat-a") for n, (i, text) in enumerate(CHAT)]
    provider.put_batch(items, Deadline.none())
    got = search(provider, "duplicate contacts sync")
    assert [i for i, _ in got][:2] == ["t3", "t1"]
    assert got[0][1] == got[1][1]
    assert provider.last_trace is not None and provider.last_trace.branches["settled_turns"] == 1


def test_the_latest_turn_itself_brings_nothing_and_results_keep_the_limit(provider: SQLiteProvider) -> None:
    items = [item(i, text, START + timedelta(minutes=n), "chat-a") for n, (i, text) in enumerate(CHAT)]
    provider.put_batch(items, Deadline.none())
    assert [i for i, _ in search(provider, "filled fields wins")] == ["t3"]
    assert len(search(provider, "duplicate contacts sync", limit=1)) == 1


def test_other_conversations_other_workspaces_and_turns_past_the_window_are_not_brought(
    provider: SQLiteProvider,
) -> None:
    first = item("t1", CHAT[0][1], START, "chat-a")
    other_chat = item("other", turn("Unrelated", "Use port 9464."), START + timedelta(minutes=5), "chat-b")
    # same conversation key, but stored for another workspace: the search may not see it
    hidden = MemoryItem.from_json(
        {
            "id": "hidden",
            "text": turn("x", "Secret rule."),
            "created_at": (START + timedelta(minutes=6)).isoformat(),
            "metadata": {SESSION_KEY: first.metadata[SESSION_KEY], "workspace": "/elsewhere"},
        }
    )
    late = item("late", turn("y", "Much later."), START + SETTLED_WINDOW + timedelta(minutes=1), "chat-a")
    provider.put_batch([first, other_chat, hidden, late], Deadline.none())
    assert [i for i, _ in search(provider, "duplicate contacts sync")] == ["t1"]


def test_notes_that_are_not_captured_turns_bring_nothing(provider: SQLiteProvider) -> None:
    note = MemoryItem.from_json({"id": "note", "text": "Duplicate contacts: sync keys on email."})
    later = MemoryItem.from_json({"id": "later", "text": "Another note.", "created_at": "2099-01-01T00:00:00Z"})
    provider.put_batch([note, later], Deadline.none())
    assert [i for i, _ in search(provider, "duplicate contacts sync")] == ["note"]


def test_the_conversation_lookup_walks_an_index(
    provider: SQLiteProvider, assert_no_full_scan: Callable[..., None]
) -> None:
    items = [item(i, text, START + timedelta(minutes=n), "chat-a") for n, (i, text) in enumerate(CHAT)]
    provider.put_batch(items, Deadline.none())
    assert_no_full_scan(
        provider, lambda: search(provider, "duplicate contacts sync"), lambda s: "ORDER BY m.created_at DESC" in s
    )


RULE_CHAT = [
    ("r1", turn("Invoices drift by a cent from the ledger reconciliation.", "Look at invoice_total rounding.")),
    ("r2", turn("Decide it.", "Settled: invoice_total rounds half_up per line, ledger reconciliation matches.")),
]
AMENDING_CHAT = [
    ("a1", turn("Amendment: finance audit of invoice_total and ledger reconciliation.", "What changes?")),
    ("a2", turn("Totals only.", "Amended: invoice_total rounds half_even on the total, superseding half_up.")),
]


def _chats(provider: SQLiteProvider, amending: list[tuple[str, str]], workspace: str = WORKSPACE) -> None:
    items = [item(i, text, START + timedelta(minutes=n), "rule") for n, (i, text) in enumerate(RULE_CHAT)]
    later = START + timedelta(days=30)
    items += [item(i, text, later + timedelta(minutes=n), "amend", workspace) for n, (i, text) in enumerate(amending)]
    provider.put_batch(items, Deadline.none())


def test_a_later_conversation_amending_the_hits_brings_its_settled_decision_first(provider: SQLiteProvider) -> None:
    _chats(provider, AMENDING_CHAT)
    got = search(provider, "invoices drift by a cent")
    assert [i for i, _ in got][:3] == ["a2", "r2", "r1"]
    assert got[0][1] == got[1][1]
    assert provider.last_trace is not None and provider.last_trace.branches["amending_turns"] == 1


def test_a_later_conversation_on_another_subject_or_workspace_is_not_brought(provider: SQLiteProvider) -> None:
    other = [("o1", turn("Which port does the exporter use?", "Port 9464 on every node."))]
    _chats(provider, other)
    assert "o1" not in [i for i, _ in search(provider, "invoices drift by a cent")]


def test_an_amending_conversation_in_another_workspace_is_not_brought(provider: SQLiteProvider) -> None:
    _chats(provider, AMENDING_CHAT, workspace="/elsewhere")
    assert [i for i, _ in search(provider, "invoices drift by a cent")] == ["r2", "r1"]


def test_a_latest_turn_on_another_subject_is_not_brought(provider: SQLiteProvider) -> None:
    chat = [CHAT[0], ("bye", turn("Thanks, that is all for today.", "Glad to help, bye!"))]
    items = [item(i, text, START + timedelta(minutes=n), "chat-a") for n, (i, text) in enumerate(chat)]
    provider.put_batch(items, Deadline.none())
    assert [i for i, _ in search(provider, "duplicate contacts sync")] == ["t1"]


def test_one_identifier_in_all_its_indexed_forms_is_one_shared_word(provider: SQLiteProvider) -> None:
    # invoice_total is indexed whole, joined and in parts: a later chat naming it and half_up
    # shares two words with the rule, not six forms of them, and amends nothing.
    other = [("o1", turn("Rename invoice_total and half_up in the exporter.", "Renamed both in the CSV exporter."))]
    _chats(provider, other)
    assert "o1" not in [i for i, _ in search(provider, "invoices drift by a cent")]


def test_concepts_group_the_forms_of_one_word() -> None:
    from paxm_provider_sqlite.retrieval.conversation import concepts

    words = [
        "parse_quantity",
        "case_insensitive",
        "parsequantity",
        "insensitiv",
        "quantity",
        "binary",
        "caseinsensitive",
    ]
    assert concepts(words) == [
        frozenset({"parse_quantity", "parsequantity", "quantity"}),
        frozenset({"case_insensitive", "insensitiv", "caseinsensitive"}),
        frozenset({"binary"}),
    ]


SDEBENCH = Path(__file__).resolve().parents[3] / "benchmarks" / "sdebench_data" / "sdebench.json"


def _sde_chats() -> tuple[list[MemoryItem], dict[str, Any]]:
    """sde-bench's chats as captured turns (prompt + answer), a chat a day, amendments months later."""
    data = json.loads(SDEBENCH.read_text())
    chats: list[tuple[str, list[dict[str, str]], int]] = [
        (d["id"], d["turns"], i) for i, d in enumerate(data["decoys"])
    ]
    for i, task in enumerate(data["tasks"]):
        convs = task["conversations"]
        convs = [convs] if convs and isinstance(convs[0], dict) else convs
        task["conversations"] = convs
        chats += [(f"{task['task_id']}#{n}", c, i * 3 + 1 + (150 + n if n else 0)) for n, c in enumerate(convs)]
    items = []
    for name, turns, day in chats:
        pairs = [
            (turns[n]["text"], turns[n + 1]["text"] if n + 1 < len(turns) else "") for n in range(0, len(turns), 2)
        ]
        for n, (prompt, answer) in enumerate(pairs):
            at = START + timedelta(days=day, minutes=2 * n)
            items.append(item(f"{name}/{n}", turn(prompt, answer), at, name))
    return items, {t["task_id"]: t for t in data["tasks"]}


def test_every_sdebench_amendment_leads_its_bug_reports_recall(provider: SQLiteProvider) -> None:
    # The amending chats repeat few words of the first ones, and those first chats name
    # identifiers indexed in several forms (parse_quantity, case-insensitive): counted as forms,
    # they filled the rare-word slots and two amendments (unitparse, slalog) went unseen.
    items, tasks = _sde_chats()
    provider.put_batch(items, Deadline.none())
    for task_id, task in tasks.items():
        if len(task["conversations"]) < 2:
            continue
        first = search(provider, task["bug_report"], limit=5)[0][0]
        assert first.startswith(f"{task_id}#{len(task['conversations']) - 1}/"), (task_id, first)


def test_no_sdebench_amendment_comes_from_another_subject(provider: SQLiteProvider) -> None:
    # boltons-cachekey's rule chat shares four common words (dashboard, analytic, identical,
    # customer) with the later feature-flag chat, whose own rarest words are flags, buckets and
    # user ids: not an amendment, so the cache-key chat leads its bug report.  An amended rule's
    # sibling task (``x-001`` for ``x-amended-001``) is led by the amendment, as it should be.
    items, tasks = _sde_chats()
    provider.put_batch(items, Deadline.none())
    amended = 0
    for task_id, task in tasks.items():
        first = search(provider, task["bug_report"], limit=5)[0][0]
        assert provider.last_trace is not None
        if provider.last_trace.branches.get("amending_turns"):
            amended += 1
            owner = first.split("#", 1)[0]
            assert owner in (task_id, task_id.replace("-001", "-amended-001")), (task_id, first)
    assert amended >= 10  # the six amended tasks and the siblings whose rule they amend
    assert search(provider, tasks["boltons-cachekey-001"]["bug_report"], limit=5)[0][0].startswith("boltons-cachekey")
