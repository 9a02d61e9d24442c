"""Helpers of the marketplace tests: paxm installed the way ``uv tool install paxm`` lays it out.

The real-binary tests install the plugin from this repository into a real Claude Code or Codex
and need a *user's* paxm for its hooks to find: not the editable workspace environment on the
test's PATH, but wheels in a venv of their own (the ``tool_venv`` fixture, ``conftest.py``),
linked into a sandbox HOME where ``uv tool install`` puts a tool (:func:`install_as_uv_tool`).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from paxm_contracttest.harness.kit import Harness, HarnessBox, Installed

__all__ = ["ROOT", "TOOL_REQUIREMENTS", "ToolBox", "install_as_uv_tool", "new_box", "path_without_paxm"]

ROOT = Path(__file__).resolve().parents[2]
#: what a user installs for both harnesses
TOOL_REQUIREMENTS = ("paxm", "paxm-integration-claude-code", "paxm-integration-codex")


def install_as_uv_tool(home: Path, venv: Path) -> Path:
    """Lay ``venv`` out in ``home`` as ``uv tool install paxm`` would; returns ``~/.local/bin/paxm``."""
    tools = home / ".local" / "share" / "uv" / "tools"
    tools.mkdir(parents=True, exist_ok=True)
    (tools / "paxm").symlink_to(venv, target_is_directory=True)
    link = home / ".local" / "bin" / "paxm"
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(tools / "paxm" / "bin" / "paxm")
    return link


def path_without_paxm(path: str | None = None) -> str:
    """``PATH`` minus every directory holding a ``paxm`` (the test environment's own, editable one)."""
    dirs = (path if path is not None else os.environ.get("PATH", "/usr/bin:/bin")).split(os.pathsep)
    return os.pathsep.join(d for d in dirs if d and not (Path(d) / "paxm").exists())


class ToolBox(HarnessBox):
    """A harness sandbox whose PATH has no paxm: only the one :func:`install_as_uv_tool` put in HOME.

    :meth:`tool_paxm` runs that paxm (what the user types); :meth:`paxm` (the kit's) still runs
    the test environment's, by absolute path, for the test's own checks (flush, daemon status).
    """

    def env(self, **extra: str) -> dict[str, str]:
        """The kit's scrubbed environment, with every other paxm taken off ``PATH``."""
        environ = super().env(**extra)
        environ["PATH"] = path_without_paxm(environ["PATH"])
        return environ

    def install_paxm(self, venv: Path) -> Path:
        """``uv tool install paxm`` into this sandbox's HOME (see :func:`install_as_uv_tool`)."""
        self.tool = install_as_uv_tool(self.home, venv)
        return self.tool

    def tool_paxm(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``~/.local/bin/paxm ...`` as the user runs it (default config location); it must succeed."""
        done = subprocess.run(
            [str(self.tool), *args],
            cwd=self.workspace,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=180,
            stdin=subprocess.DEVNULL,
        )
        assert done.returncode == 0, f"paxm {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
        return done


def new_box(root: Path, harness: Harness, installed: Installed) -> ToolBox:
    """A :class:`ToolBox` whose paxm config is at the default place (``~/.config/paxm/config.yaml``),
    where the plugin's hooks, which pass no ``--config``, look for it."""
    return ToolBox(root, harness, installed, config=root / "home" / ".config" / "paxm" / "config.yaml")
