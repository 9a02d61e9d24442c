"""A throw-away Python environment that runs this checkout's paxm: delete it to "uninstall paxm".

The end-to-end tests need hooks whose interpreter can vanish under a running turn (``pip
uninstall``, a rebuilt venv), without touching the test run's own environment.  This builds a
venv without pip (about a second) whose ``site-packages`` adds the test environment's
``site-packages`` (so ``paxm`` and its plugins import from there), and runs ``paxm`` with it, so
setup bakes *its* interpreter into the harness's hook commands.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

__all__ = ["DisposablePython"]


class DisposablePython:
    """``root`` holds a venv; :meth:`paxm` runs the CLI with it; :meth:`remove` deletes it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        base = getattr(sys, "_base_executable", sys.executable)
        subprocess.run([base, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120)
        purelib = sysconfig.get_path("purelib", vars={"base": str(root), "platbase": str(root)})
        # ``import`` lines in a .pth run at start-up: addsitedir also runs the editable-install .pth files there
        dirs = [p for p in site.getsitepackages() if os.path.isdir(p)]
        Path(purelib, "paxm-under-test.pth").write_text(
            "".join(f"import site; site.addsitedir({d!r})\n" for d in dirs), encoding="utf-8"
        )

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    def paxm(
        self, config: Path, *args: str, env: dict[str, str], timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """``paxm --config <config> ...`` run by this environment's interpreter."""
        code = "import sys; from paxm_core.cli import main; sys.argv[0] = 'paxm'; sys.exit(main())"
        return subprocess.run(
            [str(self.python), "-c", code, "--config", str(config), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def remove(self) -> None:
        """Delete the environment (its interpreter is gone afterwards)."""
        shutil.rmtree(self.root)
