"""The one project rule: which project a directory is, and which memories a project sees.

Every path (CLI, MCP, hooks, dashboard) uses it (docs/projects.md):

* a memory belongs to the project it was written in: its ``workspace`` metadata key, set only
  from trusted context (:func:`resolve_workspace` of the writer's working directory);
* a recall scoped to a project sees that project's memories, the memories of directories below
  it, and memories that belong to no project (:func:`visible`); an unscoped recall (``""``,
  ``paxm recall --all-projects``, the dashboard's default) sees every project.

Memories are scoped by a ``workspace`` metadata key that only trusted context may set.  In the
default ``project`` mode the workspace is the project root: inside a git repository its top
level, with every linked worktree of one repository mapped to the main worktree's top level (the
parent of ``git rev-parse --git-common-dir``), so ``repo/``, ``repo/src/`` and ``../repo-feature``
share memory.  Elsewhere, and in ``directory`` mode, it is the directory itself, made absolute.

The git layout is read from the filesystem (``.git`` directories, ``gitdir:`` files and
``commondir``) rather than by spawning ``git``: the hook path resolves a workspace per event and
must stay fast.  Imports only :mod:`os` and :mod:`contextvars`: the hook path uses it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from contextvars import ContextVar

__all__ = [
    "MODE_DIRECTORY",
    "MODE_PROJECT",
    "MODES",
    "IGNORE_MARKER",
    "WORKSPACE_KEY",
    "is_ignored",
    "memory_project",
    "project_root",
    "resolve_workspace",
    "visible",
    "workspace_mode",
]

#: The metadata key that holds a memory's project (upstream's name for it).
WORKSPACE_KEY = "workspace"

MODE_PROJECT = "project"
MODE_DIRECTORY = "directory"
MODES = (MODE_PROJECT, MODE_DIRECTORY)

#: The mode used when a caller passes none (the daemon sets it from config around decoding).
_MODE: ContextVar[str] = ContextVar("paxm_workspace_mode", default=MODE_PROJECT)
#: A file at a project's root (or any parent of the directory) that keeps paxm out of it.
IGNORE_MARKER = ".paxm-ignore"
#: Deepest directory walk when looking for ``.git`` (a guard against pathological paths).
_MAX_DEPTH = 256


@contextlib.contextmanager
def workspace_mode(mode: str) -> Iterator[None]:
    """Within this block, :func:`resolve_workspace` without ``mode`` uses ``mode``."""
    token = _MODE.set(mode if mode in MODES else MODE_PROJECT)
    try:
        yield
    finally:
        _MODE.reset(token)


def _read_small(path: str) -> str:
    """The start of a small text file (a ``.git`` file, ``commondir``, ``HEAD``), stripped; ``""`` if unreadable."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(4096).strip()
    except OSError:
        return ""


def _read_gitdir(dot_git: str) -> str:
    """The directory a ``.git`` file (``gitdir: <path>``) points to; ``""`` if unreadable."""
    line = _read_small(dot_git)
    target = line[len("gitdir:") :].strip() if line.startswith("gitdir:") else ""
    return os.path.normpath(os.path.join(os.path.dirname(dot_git), target)) if target else ""


def _common_dir(gitdir: str) -> str:
    """``git rev-parse --git-common-dir`` for ``gitdir``: its ``commondir`` file, else itself."""
    target = _read_small(os.path.join(gitdir, "commondir"))
    return os.path.normpath(os.path.join(gitdir, target)) if target else gitdir


def _upward(directory: str) -> Iterator[str]:
    """``directory`` and then each parent up to the root (at most :data:`_MAX_DEPTH` of them)."""
    for _ in range(_MAX_DEPTH):
        yield directory
        parent = os.path.dirname(directory)
        if parent == directory:
            return
        directory = parent


def project_root(directory: str) -> str:
    """The project identity of absolute ``directory``: the shared git top level, else ``""``.

    A linked worktree (``.git`` file whose gitdir has a ``commondir``) maps to the main
    worktree's top level when the common dir is a ``.git`` directory, or to the common dir itself
    for a bare repository.  A submodule (gitdir without ``commondir``) is its own project.
    """
    for current in _upward(directory):
        dot_git = os.path.join(current, ".git")
        if os.path.isdir(dot_git):
            return current
        if os.path.isfile(dot_git):
            gitdir = _read_gitdir(dot_git)
            if not gitdir:
                return current
            common = _common_dir(gitdir)
            if common == gitdir:  # a submodule or a plain gitdir file: this directory is the top
                return current
            if os.path.basename(common) == ".git":
                return os.path.dirname(common)
            return common  # worktrees of a bare repository share the bare repository
    return ""


def resolve_workspace(path: str | os.PathLike[str] | None = None, *, mode: str | None = None) -> str:
    """The workspace for ``path`` (default: the current directory); ``""`` when unknown.

    :param path: a directory: a hook payload's ``cwd``, the CLI's or the MCP server's cwd.
    :param mode: ``project`` (the git project root, else the directory) or ``directory`` (the
        directory itself); ``None``: the mode set by :func:`workspace_mode` (default ``project``).
    """
    if path is None:
        try:
            path = os.getcwd()
        except OSError:  # the directory was removed under us
            return ""
    text = os.fspath(path).strip()
    if not text:
        return ""
    directory = os.path.abspath(os.path.expanduser(text))
    if (mode or _MODE.get()) == MODE_DIRECTORY:
        return directory
    return project_root(directory) or directory


def memory_project(metadata: Mapping[str, str]) -> str:
    """The project a stored memory belongs to (its ``workspace`` metadata); ``""``: none."""
    value = metadata.get(WORKSPACE_KEY, "")
    return value.strip() if isinstance(value, str) else ""


def visible(project: str, scope: str) -> bool:
    """Whether a memory of ``project`` is visible to a recall scoped to ``scope``.

    The rule the SQLite provider applies in SQL, for every other provider's hits too: no scope
    sees everything; a memory without a project is seen from every scope; otherwise the memory's
    project is the scope itself or a directory below it (``/repo`` sees ``/repo/src``'s memories,
    stored when the workspace was the exact directory).
    """
    if not scope or not project:
        return True
    bare = scope.rstrip("/") or scope
    return project == bare or project.startswith(bare + "/")


def is_ignored(directory: str, patterns: list[str] | tuple[str, ...] = ()) -> bool:
    """True when paxm must capture and recall nothing for ``directory``.

    ``directory`` (or a parent) holds :data:`IGNORE_MARKER`, or it (or a parent) matches one of
    ``patterns`` (``fnmatch`` globs, ``~`` expanded; ``~/work/secret-*`` covers everything below
    each matching directory).
    """
    if not directory:
        return False
    globs = [os.path.abspath(os.path.expanduser(p.strip())).rstrip("/") or "/" for p in patterns if p.strip()]
    if globs:
        import fnmatch
    for current in _upward(os.path.abspath(os.path.expanduser(directory))):
        if os.path.exists(os.path.join(current, IGNORE_MARKER)):
            return True
        if any(fnmatch.fnmatchcase(current, glob) for glob in globs):
            return True
    return False
