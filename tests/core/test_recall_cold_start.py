"""What ``paxm recall`` imports on a cold start (issue 41's budget: at most 1.5x ``paxm --version``).

A recall needs its config, the configured providers' plugins, the router and the telemetry
recorder.  It never asks for a harness integration, so no integration plugin may be imported,
and recording one event must not import the telemetry modules that summarise or render it.
Each probe is a fresh process that runs the CLI and reports ``sys.modules`` at exit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.core.test_cold_start_modules import UNCONFIGURED_PROVIDERS

#: run the CLI, then print the modules it imported (atexit: after click's sys.exit)
RECALL = """
import atexit, json, sys
atexit.register(lambda: print("MODULES " + json.dumps(sorted(sys.modules))))
from paxm_core.cli import main
main(sys.argv[1:])
"""

#: modules a recall must not import (exact names or package prefixes)
NOT_ON_RECALL = (
    "paxm_integration_",  # every harness integration: recall never asks for one
    "paxm_core.integration",  # the integration contract and the hook decoders it brings
    "paxm_core.passive",
    "paxm_core.generated_file",  # the integrations' installers
    "paxm_core.settings_hooks",
    "paxm_core.telemetry.history",  # summaries and rendering are for paxm history / logs
    "paxm_core.telemetry.render",
    "importlib.metadata",  # the entry-point index is cached after the first start
    *UNCONFIGURED_PROVIDERS,
    "mcp",
    "httpx",
    "yaml",  # the config comes from the parsed-config cache the first start wrote
    "tempfile",  # atomic writes (metrics) open their temp file themselves
    "paxm_core.router.admission",  # LTM admission is for writes
    "paxm_core.router.forget",  # paxm forget
    "hashlib",  # OpenSSL: the session id and the query hash use the built-in SHA-256 (paxm_core.digest)
    "difflib",  # "did you mean" is for a config key paxm does not know
    "getpass",  # the login name without $USER comes from pwd (getpass brings termios)
    "termios",
    "importlib.util",  # a built-in command's module is imported, not searched for first
)


def _recall_modules(
    tmp_path: Path, *args: str, identity: str = "identity:\n  user_id: alice\n", config_file: bool = True
) -> list[str]:
    config = tmp_path / "config.yaml"
    if config_file:
        config.write_text(
            f"version: 1\n{identity}providers:\n  sqlite:\n    type: sqlite\n    enabled: true\n"
            f"    path: {tmp_path / 'memory.sqlite'}\ntelemetry:\n  dir: {tmp_path / 'state'}\n"
        )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "HOME": str(tmp_path)}
    env.pop("PAXM_LOAD_PLUGINS", None)
    env.pop("PAXM_CONFIG", None)
    env.pop("USER", None)  # the user id then comes from the login name
    argv = [sys.executable, "-P", "-c", RECALL, "--config", str(config), "recall", "--query", "deploy", *args]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    line = next(line for line in out.stdout.splitlines() if line.startswith("MODULES "))
    return list(json.loads(line.removeprefix("MODULES ")))


def _unwanted(modules: list[str]) -> list[str]:
    return sorted(
        name
        for name in modules
        for banned in NOT_ON_RECALL
        if name == banned or name.startswith(banned if banned.endswith("_") else banned + ".")
    )


def test_recall_imports_no_integration_and_no_telemetry_rendering(tmp_path: Path) -> None:
    # the first start writes the entry-point index; the second is the cold start users see
    _recall_modules(tmp_path)
    modules = _recall_modules(tmp_path)
    assert not _unwanted(modules), _unwanted(modules)
    assert "paxm_provider_sqlite.provider" in modules  # the configured provider is there
    assert "paxm_core.telemetry.recorder" in modules  # and the recall was recorded


def test_recall_as_json_imports_no_integration_either(tmp_path: Path) -> None:
    _recall_modules(tmp_path, "--json")
    modules = _recall_modules(tmp_path, "--json")
    assert not _unwanted(modules), _unwanted(modules)


def test_recall_without_a_config_file_imports_no_other_provider(tmp_path: Path) -> None:
    # the built-in config lists every installed backend, disabled: that list is for paxm config
    _recall_modules(tmp_path, config_file=False)
    modules = _recall_modules(tmp_path, config_file=False)
    assert not _unwanted(modules), _unwanted(modules)
    assert "paxm_provider_sqlite.provider" in modules


def test_recall_without_a_configured_user_imports_no_getpass(tmp_path: Path) -> None:
    # no identity.user_id and no $USER: the user id is the login name
    _recall_modules(tmp_path, identity="")
    modules = _recall_modules(tmp_path, identity="")
    assert not _unwanted(modules), _unwanted(modules)


def test_the_built_in_sha256_gives_hashlibs_digest() -> None:
    import hashlib

    from paxm_core.digest import sha256_hex

    for data in (b"", b"paxm", "\x00".join(("cli", "u", "/c", "/w")).encode(), bytes(range(256)) * 9):
        assert sha256_hex(data) == hashlib.sha256(data).hexdigest()


def test_the_login_name_is_what_getpass_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    import getpass

    from paxm_core.config.normalize import _login_name

    for variable in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        monkeypatch.delenv(variable, raising=False)
    assert _login_name() == getpass.getuser()
    monkeypatch.setenv("USERNAME", "carol")
    assert _login_name() == getpass.getuser() == "carol"
    monkeypatch.setenv("LOGNAME", "dave")
    assert _login_name() == getpass.getuser() == "dave"


def test_a_missing_command_module_is_skipped_and_a_broken_one_raises(tmp_path: Path) -> None:
    from paxm_core.cli import _import_if_present

    assert _import_if_present("paxm_core.cli.no_such_command") is None
    assert _import_if_present("paxm_no_such_package.cli") is None
    (tmp_path / "paxm_broken_command.py").write_text("import paxm_no_such_dependency\n")
    sys.path.insert(0, str(tmp_path))
    try:
        with pytest.raises(ModuleNotFoundError):
            _import_if_present("paxm_broken_command")
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("paxm_broken_command", None)


#: import every integration plugin's entry-point module, then register its integrations
PLUGIN_MODULES = """
import json, sys
from importlib import import_module
from importlib.metadata import entry_points
from paxm_core.plugins import get_plugin_manager
modules = sorted({ep.value.partition(":")[0].strip() for ep in entry_points(group="paxm")})
integration_plugins = [m for m in modules if m.startswith("paxm_integration_")]
before = set(sys.modules)
for module in integration_plugins:
    import_module(module)
on_import = sorted(set(sys.modules) - before)
exported = {m: sorted(name for name in import_module(m).__all__ if getattr(import_module(m), name, None) is None)
            for m in integration_plugins}
registered = sorted(get_plugin_manager().integrations())
print(json.dumps({"plugins": integration_plugins, "on_import": on_import, "missing": exported,
                  "registered": registered}))
"""


def test_an_integration_plugin_module_is_cheap_to_load_and_still_registers(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "HOME": str(tmp_path)}
    env.pop("PAXM_LOAD_PLUGINS", None)
    out = subprocess.run(
        [sys.executable, "-P", "-c", PLUGIN_MODULES], capture_output=True, text=True, check=True, timeout=120, env=env
    )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert len(got["plugins"]) >= 9, got["plugins"]
    # importing a plugin module imports the plugin package and nothing of its integration
    assert sorted(got["on_import"]) == sorted(got["plugins"]), got["on_import"]
    # every public name still resolves from the package (imported on first use)
    assert all(not missing for missing in got["missing"].values()), got["missing"]
    assert {"claude", "codex", "cursor", "kilo", "opencode", "pi", "qwen"} <= set(got["registered"])
