"""The one rule for "which workspace is this": every caller (CLI, hooks, MCP) uses it.

Memories are scoped by a ``workspace`` metadata key that only trusted context may set.  Today
the workspace is the working directory itself, made absolute (so ``/repo/`` and ``/repo``
agree).  Changing the rule (say, to the enclosing git project root) is a change here only.

Imports only :mod:`os`: the hook path uses it.
"""

from __future__ import annotations

import os

__all__ = ["resolve_workspace"]


def resolve_workspace(path: str | os.PathLike[str] | None = None) -> str:
    """The workspace for ``path`` (default: the current directory); ``""`` when unknown.

    :param path: a directory: a hook payload's ``cwd``, the CLI's or the MCP server's cwd.
    """
    if path is None:
        try:
            path = os.getcwd()
        except OSError:  # the directory was removed under us
            return ""
    text = os.fspath(path).strip()
    if not text:
        return ""
    return os.path.abspath(os.path.expanduser(text))
