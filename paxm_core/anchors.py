"""Code anchors: the files, symbols and commit a memory speaks about, recorded when it is captured.

When a memory is written inside a git working tree, its text is scanned for

* **files**: path-like words (``src/billing/tax.py``, an absolute path under the tree) that name
  a regular file of the working tree now (symlinks are never followed), kept relative to the
  tree's top level;
* **symbols**: function and class names the text mentions (``calculate_tax``, ``TaxTable``,
  ``render()``, a back-quoted identifier) that occur as a whole word in one of those files: the
  search is bounded to the files the memory names, so capture costs no ``git grep``;
* **commit**: the ``HEAD`` commit, read from the ``.git`` files (no ``git`` process).

The anchors travel in the memory's metadata under :data:`ANCHORS_KEY` as one compact JSON
string, so every provider that keeps metadata keeps them.  A memory that names no existing file
gets no anchors at all (not even the commit): it cannot go stale against the code.
:mod:`paxm_core.freshness` checks them when the memory is about to be shown.
"""

from __future__ import annotations

import functools
import json
import os
import re
import stat
from collections.abc import Iterable, Mapping

from paxm_core.api.values import value_dataclass
from paxm_core.workspace import _common_dir, _read_gitdir, _read_small, _upward

__all__ = [
    "ANCHORS_KEY",
    "MAX_FILES",
    "MAX_SYMBOLS",
    "Anchors",
    "anchor_metadata",
    "capture_anchors",
    "head_commit",
    "merge_anchor_values",
    "read_anchors",
    "tree_files",
    "worktree_root",
]

#: The metadata key holding a memory's anchors (compact JSON).
ANCHORS_KEY = "paxm_anchors"
#: Most files and symbols one memory is anchored to (the first ones its text names).
MAX_FILES = 16
MAX_SYMBOLS = 16
#: Largest file searched for a symbol; a bigger one anchors no symbol.
MAX_SCAN_BYTES = 512 * 1024

# a path-like word: word characters, dots, dashes and slashes; :func:`_path_words` keeps those
# holding a slash or ending in an extension
_WORD = re.compile(r"[\w./-]+")
_EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,10}$")
#: Most path-like words of one text looked up in the tree (each costs a ``stat``).
MAX_PATH_WORDS = 400
# a symbol: back-quoted, called, snake_case or CamelCase with an inner capital
_SYMBOL = re.compile(
    r"`(?P<quoted>[A-Za-z_][A-Za-z0-9_]{2,})(?:\(\))?`"
    r"|\b(?P<called>[A-Za-z_][A-Za-z0-9_]{2,})\("
    r"|\b(?P<snake>[a-z][a-z0-9]*(?:_[a-z0-9]+)+)\b"
    r"|\b(?P<camel>[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+)\b"
)
_HEX = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")


@value_dataclass(frozen=True)
class Anchors:
    """What one memory is anchored to: ``files`` and ``symbols`` (``(name, file)``) under ``root``."""

    root: str
    commit: str = ""
    files: tuple[str, ...] = ()
    symbols: tuple[tuple[str, str], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.files or self.symbols)

    def to_value(self) -> str:
        """The metadata value (compact JSON, keys sorted)."""
        data: dict[str, object] = {"root": self.root, "files": list(self.files)}
        if self.commit:
            data["commit"] = self.commit
        if self.symbols:
            data["symbols"] = [list(pair) for pair in self.symbols]
        return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def read_anchors(metadata: Mapping[str, str] | None) -> Anchors | None:
    """The anchors stored in ``metadata``; ``None`` when there are none or they do not parse."""
    value = metadata.get(ANCHORS_KEY) if metadata else None
    if not value or not isinstance(value, str):
        return None
    return _parse(value)


@functools.lru_cache(maxsize=4096)  # the same memories come back prompt after prompt
def _parse(value: str) -> Anchors | None:
    try:
        data = json.loads(value)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("root"), str):
        return None
    files = tuple(f for f in data.get("files") or () if isinstance(f, str) and _relative_ok(f))
    symbols = tuple(
        (s[0], s[1])
        for s in data.get("symbols") or ()
        if isinstance(s, list) and len(s) == 2 and all(isinstance(x, str) for x in s) and _relative_ok(s[1])
    )
    commit = data.get("commit")
    commit = commit if isinstance(commit, str) and _HEX.fullmatch(commit) else ""
    anchors = Anchors(data["root"], commit, files[:MAX_FILES], symbols[:MAX_SYMBOLS])
    return anchors if anchors and os.path.isabs(anchors.root) else None


def _relative_ok(path: str) -> bool:
    """A stored file name stays inside its root: relative, no ``..`` segment, no NUL."""
    return bool(path) and not os.path.isabs(path) and "\x00" not in path and ".." not in path.split("/")


def merge_anchor_values(values: Iterable[str]) -> str:
    """One metadata value holding the union of several (an episode's events), in first-seen order.

    The root and commit of the last value that has them win (later events are newer).
    """
    parsed = [a for a in (read_anchors({ANCHORS_KEY: v}) for v in values) if a is not None]
    if not parsed:
        return ""
    last = parsed[-1]
    files = list(dict.fromkeys(f for a in parsed if a.root == last.root for f in a.files))
    symbols = list(dict.fromkeys(s for a in parsed if a.root == last.root for s in a.symbols))
    commit = next((a.commit for a in reversed(parsed) if a.root == last.root and a.commit), "")
    return Anchors(last.root, commit, tuple(files[:MAX_FILES]), tuple(symbols[:MAX_SYMBOLS])).to_value()


def worktree_root(directory: str) -> str:
    """The top level of the git working tree holding ``directory`` (nearest ``.git``); ``""`` outside one."""
    if not directory or not os.path.isabs(directory):
        return ""
    return next((d for d in _upward(os.path.normpath(directory)) if os.path.lexists(os.path.join(d, ".git"))), "")


def head_commit(root: str) -> str:
    """The commit ``HEAD`` names in the working tree at ``root`` (loose or packed ref); ``""`` unknown."""
    dot_git = os.path.join(root, ".git")
    gitdir = dot_git if os.path.isdir(dot_git) else _read_gitdir(dot_git)
    if not gitdir:
        return ""
    common = _common_dir(gitdir)
    head = _read_small(os.path.join(gitdir, "HEAD"))
    if not head.startswith("ref:"):
        return head if _HEX.fullmatch(head) else ""
    ref = head[4:].strip()
    if ".." in ref.split("/"):
        return ""
    for base in (gitdir, common):
        value = _read_small(os.path.join(base, ref))
        if _HEX.fullmatch(value):
            return value
    try:
        with open(os.path.join(common, "packed-refs"), encoding="utf-8", errors="replace") as handle:
            for line in handle:
                sha, _, name = line.strip().partition(" ")
                if name == ref and _HEX.fullmatch(sha):
                    return sha
    except OSError:
        pass
    return ""


def _tree_file(root: str, bases: tuple[str, ...], word: str) -> str:
    """``word`` as a file of the tree at ``root``, relative to it; ``""`` when it is none."""
    word = word.rstrip(".")
    candidates = [word] if os.path.isabs(word) else [os.path.join(base, word) for base in bases]
    for candidate in candidates:
        full = os.path.normpath(candidate)
        relative = os.path.relpath(full, root) if full.startswith(root + os.sep) else ""
        if not relative or not _relative_ok(relative) or relative.split(os.sep)[0] == ".git":
            continue
        # every directory on the way must be a real directory: no symlink is followed
        parts = relative.split(os.sep)
        if any(os.path.islink(os.path.join(root, *parts[:i])) for i in range(1, len(parts))):
            continue
        try:
            if stat.S_ISREG(os.lstat(full).st_mode):  # a symlink is not followed and does not count
                return relative.replace(os.sep, "/")
        except (OSError, ValueError):
            continue
    return ""


def _path_words(text: str) -> list[str]:
    words: list[str] = []
    for match in _WORD.finditer(text):
        word = match.group(0).rstrip(".")
        if ("/" in word or _EXTENSION.search(word)) and word not in words:
            words.append(word)
            if len(words) >= MAX_PATH_WORDS:
                break
    return words


def _symbols(text: str) -> list[str]:
    names: list[str] = []
    for match in _SYMBOL.finditer(text):
        name = match.group("quoted") or match.group("called") or match.group("snake") or match.group("camel")
        if name and name not in names:
            names.append(name)
    return names


def _file_text(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_SCAN_BYTES + 1)
    except OSError:
        return ""
    return "" if len(data) > MAX_SCAN_BYTES else data.decode("utf-8", errors="replace")


def tree_files(text: str, directory: str) -> tuple[str, list[str]]:
    """The working tree holding ``directory`` and the files of it ``text`` names (relative, first
    :data:`MAX_FILES`); ``("", [])`` outside a tree.

    :param directory: an absolute directory inside the working tree (a hook's ``cwd``, the
        workspace); paths in the text are resolved against it and against the tree's top level.
    """
    root = worktree_root(os.path.abspath(directory)) if directory else ""
    if not root or not text:
        return "", []
    bases = tuple(dict.fromkeys((os.path.abspath(directory), root)))
    files: list[str] = []
    for word in _path_words(text):
        found = _tree_file(root, bases, word)
        if found and found not in files:
            files.append(found)
            if len(files) >= MAX_FILES:
                break
    return root, files


def capture_anchors(text: str, directory: str) -> Anchors | None:
    """The anchors of a memory ``text`` written from ``directory``; ``None`` when it names no file.

    :param directory: as for :func:`tree_files`.
    """
    root, files = tree_files(text, directory)
    if not files:
        return None
    symbols: list[tuple[str, str]] = []
    contents = {name: _file_text(os.path.join(root, name)) for name in files}
    for name in _symbols(text):
        if any(name in os.path.basename(f) for f in files):
            continue  # a file's own name (``tax_rules`` of ``tax_rules.py``) is a file anchor already
        pattern = re.compile(r"\b" + re.escape(name) + r"\b")
        home = next((f for f in files if pattern.search(contents[f])), "")
        if home:
            symbols.append((name, home))
            if len(symbols) >= MAX_SYMBOLS:
                break
    return Anchors(root, head_commit(root), tuple(files), tuple(symbols))


def anchor_metadata(metadata: Mapping[str, str], text: str, directory: str, enabled: bool = True) -> dict[str, str]:
    """``metadata`` with the anchors of ``text`` written from ``directory`` under :data:`ANCHORS_KEY`.

    Anchors a caller put in ``metadata`` are dropped: only capture records them.  With
    ``enabled`` false (``freshness.enabled: false``) none are recorded.
    """
    out = {key: value for key, value in metadata.items() if key != ANCHORS_KEY}
    anchors = capture_anchors(text, directory) if enabled and directory and os.path.isabs(directory) else None
    if anchors:
        out[ANCHORS_KEY] = anchors.to_value()
    return out
