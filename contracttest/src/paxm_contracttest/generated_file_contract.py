"""``GeneratedFileContract``: checks for an integration whose installation is one generated file.

For a :class:`paxm_core.generated_file.GeneratedFileIntegration` (OpenCode's plugin, Pi's
extension): a subclass provides the ``paxm_integration`` fixture; the suite checks that the
directories install creates are private, that ``detect`` finds the harness's directory and
then its executable, that ``check`` reports a missing file, a missing hook
client and a stale file with the setup command as the fix, and that hook output is the recall
context for prompts only.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from paxm_contracttest.integration_contract import assert_detects, enabled_config
from paxm_core.generated_file import GeneratedFileIntegration
from paxm_core.integration import (
    EVENT_TURN_END,
    EVENT_USER_INPUT,
    Finding,
    HookResult,
    InstallContext,
    setup_fix_command,
)

if TYPE_CHECKING:
    from paxm_core.config import Config

__all__ = ["GeneratedFileContract", "assert_guarded_client_argv", "install_with_umask_0"]


def install_with_umask_0(integration: GeneratedFileIntegration, config: Config) -> list[str]:
    """``install`` under umask 0, so the file's mode is paxm's own choice; returns the lines it echoed."""
    lines: list[str] = []
    old = os.umask(0)
    try:
        integration.install(InstallContext(config=config, echo=lines.append))
    finally:
        os.umask(old)
    return lines


def assert_guarded_client_argv(argv: list[str], target: str, event: str) -> None:
    """``argv`` is the fail-open guard (``/bin/sh -c <guard> paxm-hook``), then ``<python> -I -S
    <client.py>`` (both existing) for ``target``'s native ``event``."""
    assert argv[:2] == ["/bin/sh", "-c"] and argv[3] == "paxm-hook"
    assert argv[5:7] == ["-I", "-S"] and Path(argv[4]).exists() and Path(argv[7]).exists()
    assert argv[argv.index("--target") + 1] == target and argv[argv.index("--event") + 1] == event


class GeneratedFileContract:
    """Subclass in a test module and override :meth:`paxm_integration`."""

    @pytest.fixture
    def paxm_integration(self) -> GeneratedFileIntegration:
        raise NotImplementedError("override paxm_integration: the GeneratedFileIntegration under test")

    def test_generated_file_fresh_dirs_are_private(
        self, paxm_integration: GeneratedFileIntegration, tmp_path: Path
    ) -> None:
        """Every directory from the harness's home down to the file's is created 0700 under a 022 umask."""
        ctx = InstallContext(config=enabled_config(tmp_path, paxm_integration.name))
        old = os.umask(0o022)
        try:
            paxm_integration.install(ctx)
        finally:
            os.umask(old)
        home = paxm_integration.home_dir()
        assert home is not None
        directory = paxm_integration.generated_path().parent
        created = [directory, *(p for p in directory.parents if p.is_relative_to(home))]
        assert home in created
        for path in created:
            assert stat.S_IMODE(path.stat().st_mode) == 0o700, path

    def test_generated_file_detect_finds_the_home_then_the_executable(
        self, paxm_integration: GeneratedFileIntegration, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        home = paxm_integration.home_dir()
        assert home is not None and paxm_integration.executable
        monkeypatch.setenv("PATH", str(tmp_path / "bin"))
        assert_detects(paxm_integration, home, paxm_integration.executable, tmp_path)

    def test_generated_file_check_reports_missing_file_missing_client_and_stale(
        self, paxm_integration: GeneratedFileIntegration, tmp_path: Path
    ) -> None:
        integration = paxm_integration
        config = enabled_config(tmp_path, integration.name)
        ctx = InstallContext(config=config)
        what = f"{integration.display_name} {integration.artifact}"
        path = integration.generated_path()
        fix = setup_fix_command(ctx, integration.name)
        assert integration.check(ctx) == [Finding("error", f"{what} missing: {path}", fix)]
        integration.install(ctx)
        settings = integration.generated_file().embedded_settings(path.read_text())
        assert settings is not None
        commands = settings["commands"]
        assert isinstance(commands, dict) and isinstance(commands["user_input"], list)
        client = commands["user_input"][7]  # after the fail-open guard and `python -I -S`
        path.write_text(path.read_text().replace(json.dumps(client), json.dumps("/gone/client.py")))
        assert Finding("error", f"{what} points at a missing file: /gone/client.py", fix) in integration.check(ctx)
        integration.install(ctx)
        config.agents[integration.name].hooks["user_input"].recall.enabled = False
        stale = Finding("warn", f"{what} at {path} is out of date", fix)
        assert integration.check(ctx) == [stale, *integration.extra_findings()]

    def test_generated_file_hook_output_is_the_context_for_prompts_only(
        self, paxm_integration: GeneratedFileIntegration
    ) -> None:
        name = paxm_integration.name
        result = HookResult(target=name, event=EVENT_USER_INPUT, recall_context="<paxm-recall>x</paxm-recall>")
        assert paxm_integration.hook_output(result, "text") == "<paxm-recall>x</paxm-recall>"
        turn_end = HookResult(target=name, event=EVENT_TURN_END, recall_context="x")
        assert paxm_integration.hook_output(turn_end, "text") == ""
        ignored = HookResult(target=name, event=EVENT_USER_INPUT, ignored=True, recall_context="x")
        assert paxm_integration.hook_output(ignored, "text") == ""
