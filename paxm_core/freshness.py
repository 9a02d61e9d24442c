"""Freshness: whether the code a memory speaks about is still there.

A memory's :mod:`~paxm_core.anchors` are checked against the working tree and git when the
memory is about to be shown (passive injection, ``paxm recall``).  The rules, in this order (the
first that fails gives the reason):

1. every anchored file still exists as a regular file (``src/billing/tax.py no longer exists``);
2. every anchored symbol still occurs as a whole word in its file
   (``calculate_tax no longer found in src/billing/tax.py``);
3. the commit the memory was made at has not been reverted: no commit in ``HEAD``'s recent
   history says ``This reverts commit <it>`` (``commit 4fbbbfbd85 was reverted``).

Anything paxm cannot decide (the tree is gone, ``git`` is missing or slow, a file too big to
scan) counts as fresh: a memory is only called stale on evidence.  A memory without anchors is
always fresh.  The answer is a function of the tree's state alone, so the same state gives the
same answer.

Cost per check: one ``lstat`` per file, a read of a file whose symbol is checked (cached by
size and modification time), and at most one ``git log`` per (tree, ``HEAD``) per process
(the reverted commits, cached), bounded by :data:`GIT_TIMEOUT`.
"""

from __future__ import annotations

import functools
import os
import re
import threading
from collections.abc import Sequence
from typing import Any

from paxm_core.anchors import ANCHORS_KEY, MAX_SCAN_BYTES, Anchors, head_commit, read_anchors
from paxm_core.api.json import JSONObject
from paxm_core.api.values import value_dataclass

__all__ = [
    "FRESH",
    "GIT_TIMEOUT",
    "REVERT_HISTORY",
    "STALE",
    "Freshness",
    "FreshnessChecker",
    "default_checker",
]

FRESH = "fresh"
STALE = "stale"
#: Seconds the one ``git log`` of a (tree, HEAD) may take; past it, no commit counts as reverted.
GIT_TIMEOUT = 0.5
#: How many of ``HEAD``'s most recent commits are read for ``This reverts commit`` lines.
REVERT_HISTORY = 2000
_REVERTS = re.compile(r"This reverts commit ([0-9a-f]{7,64})")
#: Files whose text is kept for symbol checks (by path, with their size and modification time).
_CACHED_FILES = 256


@value_dataclass(frozen=True)
class Freshness:
    """One memory's freshness: ``state`` (``fresh``/``stale``), why, and whether it has anchors."""

    state: str = FRESH
    reason: str = ""
    anchored: bool = False

    @property
    def stale(self) -> bool:
        """Whether the memory is stale."""
        return self.state == STALE

    def to_json(self) -> JSONObject:
        """``{"state", "reason"?, "anchored"}`` for ``--json`` output."""
        out: JSONObject = {"state": self.state, "anchored": self.anchored}
        if self.reason:
            out["reason"] = self.reason
        return out


_UNANCHORED = Freshness()


class FreshnessChecker:
    """Checks anchors; keeps file texts and reverted-commit sets between calls (thread-safe)."""

    def __init__(self, *, git_timeout: float = GIT_TIMEOUT) -> None:
        self._git_timeout = git_timeout
        self._lock = threading.Lock()
        self._files: dict[str, tuple[int, int, str]] = {}
        self._reverted: dict[tuple[str, str], frozenset[str]] = {}

    def check_hits(self, hits: Sequence[Any]) -> list[Freshness]:
        """The freshness of each hit (anything with a ``metadata`` map), in order.

        Within one call, equal anchors are checked once and each tree's ``HEAD`` is read once.
        """
        answers: dict[str, Freshness] = {}
        heads: dict[str, str] = {}
        out: list[Freshness] = []
        for hit in hits:
            metadata = getattr(hit, "metadata", None)
            value = metadata.get(ANCHORS_KEY) if isinstance(metadata, dict) else None
            if not value or not isinstance(value, str):
                out.append(_UNANCHORED)
                continue
            answer = answers.get(value)
            if answer is None:
                anchors = read_anchors(metadata)
                answer = answers[value] = self.check(anchors, heads) if anchors is not None else _UNANCHORED
            out.append(answer)
        return out

    def check(self, anchors: Anchors, heads: dict[str, str] | None = None) -> Freshness:
        """The freshness of ``anchors`` against the tree at ``anchors.root``.

        :param heads: ``HEAD`` per tree already read by the caller (filled in here).
        """
        root = anchors.root
        if not os.path.isdir(os.path.join(root, ".git")) and not os.path.isfile(os.path.join(root, ".git")):
            return Freshness(anchored=True)  # the tree itself is gone or moved: nothing to judge by
        for name in anchors.files:
            if not os.path.lexists(os.path.join(root, name)):
                return Freshness(STALE, f"{name} no longer exists", True)
        for symbol, name in anchors.symbols:
            text = self._text(os.path.join(root, name))
            if text is not None and not re.search(r"\b" + re.escape(symbol) + r"\b", text):
                return Freshness(STALE, f"{symbol} no longer found in {name}", True)
        if anchors.commit and any(anchors.commit.startswith(c) for c in self._reverted_commits(root, heads)):
            return Freshness(STALE, f"commit {anchors.commit[:10]} was reverted", True)
        return Freshness(anchored=True)

    def _text(self, path: str) -> str | None:
        """The file's text (``None`` when missing or too big to judge)."""
        try:
            info = os.lstat(path)
        except OSError:
            return None
        if info.st_size > MAX_SCAN_BYTES:
            return None
        key = (info.st_size, info.st_mtime_ns)
        with self._lock:
            cached = self._files.get(path)
        if cached is not None and cached[:2] == key:
            return cached[2]
        try:
            with open(path, "rb") as handle:
                text = handle.read(MAX_SCAN_BYTES).decode("utf-8", errors="replace")
        except OSError:
            return None
        with self._lock:
            if len(self._files) >= _CACHED_FILES:
                self._files.pop(next(iter(self._files)))
            self._files[path] = (*key, text)
        return text

    def _reverted_commits(self, root: str, heads: dict[str, str] | None = None) -> frozenset[str]:
        """Every commit (full and abbreviated as written) ``HEAD``'s recent history reverts."""
        heads = {} if heads is None else heads
        head = heads.get(root)
        if head is None:
            head = heads[root] = head_commit(root)
        if not head:
            return frozenset()
        with self._lock:
            known = self._reverted.get((root, head))
        if known is not None:
            return known
        found = _git_reverts(root, self._git_timeout)
        if found is None:
            return frozenset()  # not cached: a slow git may answer next time
        with self._lock:
            self._reverted[(root, head)] = found
        return found


def _git_reverts(root: str, timeout: float) -> frozenset[str] | None:
    """The commits (as their revert messages write them) that ``HEAD``'s last :data:`REVERT_HISTORY`
    commits revert; ``None`` when git did not answer in time."""
    import subprocess

    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    log = ["log", f"--max-count={REVERT_HISTORY}", "--grep=This reverts commit", "--format=%B", "HEAD"]
    try:
        done = subprocess.run(
            ["git", "-C", root, "-c", "core.fsmonitor=false", *log],
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=timeout,
            env=env,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return frozenset()
    return frozenset(_REVERTS.findall(done.stdout.decode("utf-8", errors="replace")))


@functools.cache
def default_checker() -> FreshnessChecker:
    """The process's checker (its caches live as long as the process: the daemon, one CLI call)."""
    return FreshnessChecker()
