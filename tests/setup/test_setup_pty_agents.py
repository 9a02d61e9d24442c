"""Interactive ``paxm setup`` in a real pseudo-terminal with every workspace distribution installed.

The CLI runs in a subprocess whose stdin/stdout/stderr are the slave side of ``os.openpty()``;
the test reads the screen from the master side and types keys, as a person would.  It checks
the agent list questionary draws: every installed integration once (upstream's ``kimi`` is not
a second Kimi Code), the harnesses found on this machine ticked, and that accepting the
defaults connects exactly those and creates nothing for a harness that is not there.
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import yaml

from paxm_core.config.setup import SetupCatalog
from paxm_core.plugins import get_plugin_manager

ENTRY = "import sys; from paxm_core.cli import main; main(sys.argv[1:])"
ENTER = b"\r"
#: CSI / OSC escape sequences and the lone escapes prompt_toolkit writes between text runs
_ESCAPES = re.compile(rb"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[=>78]")


class Terminal:
    """One process on a pty: ``expect`` reads the screen until a pattern appears, ``send`` types."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 60, 200, 0, 0))
        self.proc = subprocess.Popen(
            argv, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True, close_fds=True
        )
        os.close(slave)
        self.master = master
        self.screen = b""

    def expect(self, pattern: str, timeout: float = 60.0) -> str:
        """Read until ``pattern`` (a regex over the escape-free text) is on screen; the text so far."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.text()
            if re.search(pattern, text):
                return text
            left = deadline - time.monotonic()
            assert left > 0, f"{pattern!r} never appeared; screen:\n{text[-3000:]}"
            ready, _, _ = select.select([self.master], [], [], min(left, 0.5))
            if ready:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:  # EIO: the child closed the terminal
                    chunk = b""
                if not chunk:
                    assert re.search(pattern, self.text()), (
                        f"{pattern!r}: process ended; screen:\n{self.text()[-3000:]}"
                    )
                    return self.text()
                self.screen += chunk

    def text(self) -> str:
        return _ESCAPES.sub(b"", self.screen).decode("utf-8", "replace").replace("\r", "")

    def send(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def wait(self, timeout: float = 60.0) -> int:
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < deadline:
            ready, _, _ = select.select([self.master], [], [], 0.2)
            if ready:
                try:
                    self.screen += os.read(self.master, 65536)
                except OSError:
                    break
        code = self.proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        os.close(self.master)
        return code


def test_the_agent_list_offers_every_installed_integration_with_detected_ones_ticked(
    tmp_path: Path, isolated_home: Path
) -> None:
    catalog = SetupCatalog.from_plugins(get_plugin_manager())
    assert len(catalog.integrations) >= 15  # every workspace distribution is installed
    (isolated_home / ".claude").mkdir()
    (isolated_home / ".gemini").mkdir()
    config = tmp_path / "cfg" / "config.yaml"
    env = {**os.environ, "TERM": "xterm-256color", "PROMPT_TOOLKIT_NO_CPR": "1", "COLUMNS": "200", "LINES": "60"}
    term = Terminal([sys.executable, "-c", ENTRY, "--config", str(config), "setup", "--user-id", "alice"], env)
    term.expect("Memory providers to enable")
    term.expect(r"sqlite \(sqlite\)")
    term.send(ENTER)  # sqlite is ticked
    names = sorted(catalog.integrations, key=lambda n: (catalog.agent_priority(n), n))  # setup's order
    last = re.escape(catalog.display_name(names[-1]))
    screen = term.expect(rf"Agents to connect[\s\S]*{last}")
    listing = screen[screen.rindex("Agents to connect") :]
    for name in catalog.integrations:
        assert catalog.display_name(name) in listing, (name, listing)
    assert "Claude Code (detected)" in listing and "Gemini CLI (detected)" in listing
    assert "Codex (not detected on this machine)" in listing
    assert not re.search(r"(?<![\w-])kimi(?![\w-])", listing), listing  # upstream's name is Kimi Code's alias
    assert "pip install" not in listing
    term.send(ENTER)  # accept the ticked agents
    term.expect("Apply this setup")
    summary = term.text()[term.text().rindex("Setup summary") :]
    assert "Agents: Claude Code, Gemini CLI" in summary, summary
    term.send(b"y")
    term.expect("Next steps")
    assert term.wait() == 0, term.text()[-3000:]
    agents = yaml.safe_load(config.read_text())["agents"]
    assert {n for n, a in agents.items() if a["enabled"]} == {"claude", "gemini-cli"}
    assert "kimi" not in agents and "kimi-code" in agents
    assert not (isolated_home / ".codex").exists()  # nothing is created for a harness that is not there
