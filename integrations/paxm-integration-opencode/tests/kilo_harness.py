"""Helpers for driving the real Kilo Code CLI (``kilo``) against paxm and a fake Chat Completions server.

Kilo is a fork of OpenCode: the same plugin API and ``run --format json`` output, its own config
dir (``$XDG_CONFIG_HOME/kilo``, ``kilo.json``).  It installs ``@kilocode/plugin`` into that dir at
start when a plugin is there (offline that stalls for over a minute), and Kilo 7.7.9 has no
matching ``@kilocode/plugin`` release; Kilo only compares package *names* with
``package-lock.json``, so a pre-installed 7.3.1 satisfies it.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from opencode_harness import OpenCodeRun, OpenCodeSandbox

from paxm_contracttest.fake_models.chat_completions import FakeOpenAI
from paxm_contracttest.harness.npm import npm_install_cached

__all__ = ["KILO_VERSION", "KiloSandbox", "install_kilo"]

#: the ``@kilocode/cli`` wrapper's platform package is missing from npm for this version; the
#: platform package itself carries the binary
KILO_VERSION = "7.7.9"
KILO_PACKAGE = f"@kilocode/cli-linux-x64@{KILO_VERSION}"
KILO_PLUGIN_PACKAGE = "@kilocode/plugin@7.3.1"


def install_kilo(npm: str) -> tuple[Path, Path]:
    """``(kilo executable, dir holding the pre-installed config-dir dependency)``."""
    binary_dir = npm_install_cached(
        npm, f"kilocode-cli-{KILO_VERSION}", [KILO_PACKAGE], "node_modules/@kilocode/cli-linux-x64/bin/kilo"
    )
    deps = npm_install_cached(
        npm, "kilocode-plugin-deps-7.3.1", [KILO_PLUGIN_PACKAGE], "node_modules/@kilocode/plugin/package.json"
    )
    return binary_dir / "node_modules" / "@kilocode" / "cli-linux-x64" / "bin" / "kilo", deps


class KiloSandbox(OpenCodeSandbox):
    """:class:`OpenCodeSandbox` with Kilo's config dir, config file name and environment."""

    agent = "kilo"

    @property
    def opencode_dir(self) -> Path:
        return self.home / ".config" / "kilo"

    def configure_opencode(self, fake_url: str, *, preinstall_deps: bool = True) -> None:
        super().configure_opencode(fake_url, preinstall_deps=preinstall_deps)
        source = self.opencode_dir / "opencode.json"
        data = json.loads(source.read_text())
        data["$schema"] = "https://app.kilo.ai/config.json"
        (self.opencode_dir / "kilo.json").write_text(json.dumps(data, indent=2))
        source.unlink()

    def opencode(self, fake: FakeOpenAI, prompt: str, *, timeout: float = 240, **env: str) -> OpenCodeRun:
        """One ``kilo run`` turn in the workspace against ``fake``."""
        argv = [str(self.opencode_bin), "run", "--print-logs", "--format", "json", prompt]
        started = time.monotonic()
        done = subprocess.run(
            argv,
            cwd=self.workspace,
            env=self.env(**kilo_env(), **env),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        return OpenCodeRun(done.returncode, done.stdout, done.stderr, time.monotonic() - started)

    def generous_opencode_budget(self, seconds: str = "2s") -> None:
        data = self.config_data()
        recall = data["agents"]["kilo"]["hooks"]["user_input"]["recall"]
        recall["timeout"] = seconds
        if isinstance(recall.get("initial"), dict):
            recall["initial"]["timeout"] = seconds
        self.write_config_data(data)


def kilo_env() -> dict[str, str]:
    """Kilo's switches for an offline, non-interactive run."""
    return {
        "KILO_DISABLE_AUTOUPDATE": "1",
        "KILO_DISABLE_MODELS_FETCH": "1",
        "KILO_DISABLE_DEFAULT_PLUGINS": "1",
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    }
