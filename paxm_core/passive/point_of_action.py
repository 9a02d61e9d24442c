"""Point of action: before a tool runs (``pre_tool``), the fresh memories anchored to the files it is
about to touch are injected, each once per session (docs/freshness.md).

``freshness.point_of_action: false`` (or ``freshness.enabled: false``) turns it off.
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from paxm_core.anchors import read_anchors, tree_files
from paxm_core.api.events import HookEvent, HookResult
from paxm_core.hit_notes import notes_for
from paxm_core.passive.context import passive_recall_block

if TYPE_CHECKING:
    from paxm_core.config.model import Config
    from paxm_core.passive.policy import HookSettings
    from paxm_core.router.policy import RecallResult

__all__ = ["MAX_CHARS", "MAX_MEMORIES", "SeenMemories", "inject_at_point_of_action", "tool_text"]


#: Largest block injected before one tool call, envelope included.
MAX_CHARS = 1000
#: Most memories injected before one tool call.
MAX_MEMORIES = 2
#: Hits one point-of-action recall asks for when the hook sets no ``max_results`` (most are
#: not anchored to the file).
RECALL_LIMIT = 20
#: Sessions whose injected memories are remembered (the oldest is forgotten first).
MAX_SESSIONS = 512
#: Tool input keys that name a file, and the one that holds a shell command or a patch.
_PATH_KEYS = ("file_path", "notebook_path", "path", "filePath", "absolute_path")
_COMMAND_KEYS = ("command", "cmd", "patch", "input")
_PATCH_FILE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$", re.MULTILINE)


class SeenMemories:
    """The memory ids injected at a point of action, per session (bounded; thread-safe)."""

    def __init__(self) -> None:
        self._seen: OrderedDict[str, set[str]] = OrderedDict()
        self._lock = threading.Lock()

    def unseen(self, session: str, ids: Iterable[str]) -> list[str]:
        """``ids`` not yet injected in ``session``, in order."""
        with self._lock:
            seen = self._seen.get(session, set())
            return [i for i in ids if i not in seen]

    def mark(self, session: str, ids: Iterable[str]) -> None:
        """Record ``ids`` as injected in ``session``."""
        with self._lock:
            seen = self._seen.pop(session, set())
            seen.update(ids)
            self._seen[session] = seen
            while len(self._seen) > MAX_SESSIONS:
                self._seen.popitem(last=False)


def _strings(value: object, keys: tuple[str, ...]) -> list[str]:
    if not isinstance(value, dict):
        return []
    out: list[str] = []
    for key in keys:
        item = value.get(key)
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, list):
            out.extend(part for part in item if isinstance(part, str))
    return out


def tool_text(raw: str) -> str:
    """The words of a pre-tool payload that can name files: its paths, its command, a patch's file headers."""
    try:
        payload = json.loads(raw) if raw else {}
    except ValueError:
        return ""
    if not isinstance(payload, dict):
        return ""
    tool_input = payload.get("tool_input")
    if isinstance(tool_input, str):  # some harnesses pass the input as one string (a patch)
        tool_input = {"input": tool_input}
    paths = _strings(tool_input, _PATH_KEYS)
    commands = _strings(tool_input, _COMMAND_KEYS)
    headers = [m.group(1).strip() for c in commands for m in _PATCH_FILE.finditer(c)]
    return "\n".join(paths + headers + [c for c in commands if not _PATCH_FILE.search(c)])


def _anchored_to(hit: object, root: str, files: set[str]) -> bool:
    anchors = read_anchors(getattr(hit, "metadata", None))
    return anchors is not None and anchors.root == root and bool(files.intersection(anchors.files))


def inject_at_point_of_action(
    config: Config,
    recall_fn: Callable[..., tuple[RecallResult | None, bool]] | None,
    seen: SeenMemories,
    event: HookEvent,
    result: HookResult,
    hook: HookSettings,
) -> None:
    """Fill ``result`` with the fresh memories anchored to what the tool in ``event`` is about to touch.

    ``recall_fn`` is the runtime's budgeted recall; ``seen`` remembers what each session was shown.
    """
    if not config.freshness.point_of_action_on:
        return
    settings = hook.recall_for(initial=False)
    if settings is None or recall_fn is None:
        result.skipped = settings is None
        return
    root, files = tree_files(tool_text(event.raw), event.metadata.get("cwd", "") or event.workspace)
    if not files:
        return  # most tool calls: no recall at all
    query = " ".join(files)
    result.query = query
    try:
        recall, timed_out = recall_fn(
            query,
            settings.profile,
            settings.max_results or RECALL_LIMIT,
            dict(event.metadata),
            event.workspace,
            settings.budget,
        )
    except Exception as exc:  # fail open: the tool runs regardless
        result.errors.append(f"recall skipped: {exc}")
        return
    result.recall_ran, result.recall = True, recall
    result.timed_out = timed_out or bool(getattr(recall, "timed_out", False))
    hits = list(getattr(recall, "hits", []) or [])
    notes = notes_for(hits, config)
    wanted = set(files)
    chosen = [
        hit
        for hit, note in zip(hits, notes, strict=True)
        if not note.freshness.stale and not note.superseded_by and _anchored_to(hit, root, wanted)
    ]
    session = event.metadata.get("session_id", "") or event.workspace
    fresh_ids = set(seen.unseen(session, [str(h.id) for h in chosen]))
    chosen = [h for h in chosen if str(h.id) in fresh_ids][:MAX_MEMORIES]
    block = passive_recall_block(chosen, max_chars=MAX_CHARS)
    # a memory's own heading-like lines are backslash-guarded: only paxm's headings start a line
    result.hits = chosen[: sum(line.startswith("### Memory ") for line in block.splitlines())]
    result.recall_context = block
    seen.mark(session, [str(h.id) for h in result.hits])
