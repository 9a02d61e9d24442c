"""Eval suite format v1: upstream's ``suite.json``, decoded strictly (unknown fields rejected) and validated."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from paxm_core.evals._strict import EvalFileError, Obj, decode, read_json_file

__all__ = [
    "RECALL_MODES",
    "SUITE_VERSION",
    "Case",
    "Memory",
    "Recall",
    "Suite",
    "Turn",
    "Write",
    "load_suite",
    "parse_suite",
    "validate_suite",
]

SUITE_VERSION = 1
RECALL_MODES = ("active", "passive", "passive_initial")
_HISTORY_ROLES = frozenset({"user", "assistant"})
_WRITE_MESSAGE_ROLES = _HISTORY_ROLES | {"tool_call", "tool_result", "reasoning", "analysis", "thinking"}
_WHAT = "eval suite"


@dataclass(frozen=True)
class Turn:
    """One normalized conversation message (``role`` + ``text``)."""

    role: str
    text: str


@dataclass(frozen=True)
class Memory:
    """A memory seeded before the recall: explicit id, tier, expiry, metadata and optional creation time."""

    id: str
    text: str
    tier: str = ""
    expires_at: datetime | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    #: an extension over upstream (whose seeded memories are always "now"): a suite may seed
    #: older memories to exercise recency and temporal evidence
    created_at: datetime | None = None


@dataclass(frozen=True)
class Write:
    """A hook event rendered by the capture write path and persisted ``repeat`` times."""

    event: str
    target: str = ""
    prompt: str = ""
    assistant: str = ""
    include_history: bool = False
    messages: tuple[Turn, ...] = ()
    workspace: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
    repeat: int = 0


@dataclass(frozen=True)
class Recall:
    """The recall a case measures."""

    mode: str
    query: str
    profile: str = ""
    limit: int = 0
    target: str = ""
    event: str = ""
    workspace: str = ""
    metadata: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Case:
    """One eval case; field names and meanings are upstream's."""

    id: str
    category: str
    recall: Recall
    turns: tuple[Turn, ...] = ()
    memories: tuple[Memory, ...] = ()
    write: Write | None = None
    expected: tuple[str, ...] = ()
    forbidden: tuple[str, ...] = ()
    expected_first: str = ""
    max_hits: int = 0
    expected_write: tuple[str, ...] = ()
    forbidden_write: tuple[str, ...] = ()
    forbidden_recall: tuple[str, ...] = ()
    expected_metadata: dict[str, str] = field(default_factory=dict)
    restart_before_recall: bool = False
    max_matching_hits: int = 0
    expected_empty: bool = False

    @property
    def is_write_case(self) -> bool:
        """Whether the case writes through the hook write path (and is scored on the write)."""
        return self.write is not None


@dataclass(frozen=True)
class Suite:
    """A decoded, validated suite."""

    version: int
    name: str
    cases: tuple[Case, ...]


def load_suite(path: str | Path) -> Suite:
    """Read, strictly decode and validate a suite file (or a directory holding ``suite.json``).

    Raises :class:`EvalFileError` with the file name and the JSON path of the problem.
    """
    resolved = Path(path).expanduser()
    if resolved.is_dir():
        resolved /= "suite.json"
    try:
        return parse_suite(read_json_file(resolved, _WHAT))
    except EvalFileError as exc:
        message = str(exc)
        if str(resolved) not in message:
            message = f"{resolved}: {message}"
        raise EvalFileError(message) from exc


def parse_suite(data: object) -> Suite:
    """Decode an already-parsed JSON value into a validated :class:`Suite`."""
    suite = decode(Suite, Obj(data, "", _WHAT))
    validate_suite(suite)
    return suite


def validate_suite(suite: Suite) -> None:
    """Apply upstream's semantic rules; raise :class:`EvalFileError` on the first violation."""
    if suite.version != SUITE_VERSION:
        raise EvalFileError(f"unsupported eval suite version {suite.version}; expected {SUITE_VERSION}")
    if not suite.name.strip():
        raise EvalFileError("eval suite name is required")
    if not suite.cases:
        raise EvalFileError("eval suite requires at least one case")
    seen: set[str] = set()
    for index, case in enumerate(suite.cases):
        if not case.id.strip():
            raise EvalFileError(f"case {index + 1} id is required")
        if case.id in seen:
            raise EvalFileError(f"duplicate case id {case.id!r}")
        seen.add(case.id)
        _validate_case(case)


def _validate_case(case: Case) -> None:
    def bad(message: str) -> EvalFileError:
        return EvalFileError(f"case {case.id!r} {message}")

    if not case.category.strip():
        raise bad("category is required")
    if not case.memories and case.write is None:
        raise bad("requires memories or a conversation write")
    memory_ids: set[str] = set()
    for memory in case.memories:
        if not memory.id or not memory.text.strip():
            raise bad("has memory without id or text")
        if memory.id in memory_ids:
            raise bad(f"has duplicate memory id {memory.id!r}")
        memory_ids.add(memory.id)
    if not case.recall.query.strip():
        raise bad("recall query is required")
    if case.recall.mode not in RECALL_MODES:
        raise bad(f"has unsupported recall mode {case.recall.mode!r} (expected one of {', '.join(RECALL_MODES)})")
    if case.recall.limit < 0:
        raise bad("recall limit must not be negative")
    if case.max_hits < 0 or case.max_matching_hits < 0:
        raise bad("max_hits and max_matching_hits must not be negative")
    if case.write is None and not case.expected and not case.expected_empty:
        raise bad("requires expected memory ids")
    if case.write is not None:
        _validate_write(case, bad)
    for ref in (*case.expected, *case.forbidden, *((case.expected_first,) if case.expected_first else ())):
        if ref not in memory_ids:
            raise bad(f"references unknown memory {ref!r}")
    history_roles: set[str] = set()
    for turn in case.turns:
        role = turn.role.strip().lower()
        if role not in _HISTORY_ROLES or not turn.text.strip():
            raise bad("has invalid normalized turn")
        history_roles.add(role)
    if case.write is not None:
        if not _HISTORY_ROLES <= history_roles:
            raise bad("conversation write requires normalized user and assistant history")
        for message in case.write.messages:
            if message.role.strip().lower() not in _WRITE_MESSAGE_ROLES or not message.text.strip():
                raise bad("has invalid hook write message")


def _validate_write(case: Case, fail: Callable[[str], EvalFileError]) -> None:
    write = case.write
    assert write is not None
    if not write.event.strip():
        raise fail("conversation write requires an event")
    if not case.expected_write:
        raise fail("conversation write requires expected_write")
    seen: dict[str, str] = {}
    for group, values in (
        ("expected_write", case.expected_write),
        ("forbidden_write", case.forbidden_write),
        ("forbidden_recall", case.forbidden_recall),
    ):
        for value in values:
            normalized = value.strip().lower()
            if not normalized:
                raise fail(f"{group} contains a blank fragment")
            if normalized in seen:
                raise fail(f"repeats write fragment {value!r} in {seen[normalized]} and {group}")
            seen[normalized] = group
    if write.include_history and write.event != "turn_end":
        raise fail("can include history only for turn_end")
    if write.repeat < 0:
        raise fail("conversation write repeat must be positive")
