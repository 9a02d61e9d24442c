"""Plugin loading: isolation of broken plugins, allow-listing, registration reporting."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from plugin_site import SECRET_PLUGIN, command_plugin, make_dist, new_site, provider_plugin

from paxm_core import ProviderConfig, ProviderNotInstalled, ProviderType, hookimpl
from paxm_core.integration import IntegrationBase
from paxm_core.plugins import get_plugin_manager


class _Fake:
    def __init__(self, name: str) -> None:
        self.name = name


class GoodPlugin:
    @hookimpl
    def paxm_register_providers(self, register: Callable[..., None]) -> None:
        register("fake", lambda name, cfg: _Fake(name), description="a fake")
        register(ProviderType("fake2", lambda name, cfg: _Fake(name)))

    @hookimpl
    def paxm_register_integrations(self, register: Callable[[Any], None]) -> None:
        class Integ(IntegrationBase):
            name = "claude"
            aliases = ("claude-code",)

        class NotAnIntegration:  # a name but none of the contract: reported, not registered
            name = "half"

        register(Integ())
        register(NotAnIntegration())


class BrokenPlugin:
    @hookimpl
    def paxm_register_providers(self, register: Callable[..., None]) -> None:
        raise RuntimeError("boom")


class DuplicatePlugin:
    @hookimpl
    def paxm_register_providers(self, register: Callable[..., None]) -> None:
        register("fake", lambda name, cfg: _Fake(name))


def test_registered_types_build_providers_and_broken_plugins_are_reported() -> None:
    pm = get_plugin_manager(load_entrypoints=False)
    pm.register(GoodPlugin(), name="good")
    pm.register(BrokenPlugin(), name="broken")
    pm.register(DuplicatePlugin(), name="dup")
    types = pm.provider_types()
    assert sorted(types) == ["fake", "fake2"]
    provider = types["fake"].factory("mine", ProviderConfig(type="fake"))
    assert provider.name == "mine"
    errors = {e.plugin: e.error for e in pm.load_errors}
    assert "RuntimeError: boom" in errors["broken"]
    assert "already registered by good" in errors["dup"]
    infos = {i.name: i for i in pm.plugin_infos()}
    assert infos["good"].providers == ["fake", "fake2"]  # sorted, as `paxm plugins` prints them
    assert infos["good"].integrations == ["claude"]
    late = {e.plugin: e.error for e in pm.load_errors}
    assert "integration 'half' does not implement Integration" in late["good"]


def test_integration_lookup_accepts_aliases_case_insensitively() -> None:
    pm = get_plugin_manager(load_entrypoints=False)
    pm.register(GoodPlugin(), name="good")
    assert pm.integration("Claude-Code").name == "claude"
    assert pm.integration("codex") is None


class _Named(IntegrationBase):
    def __init__(self, name: str, aliases: tuple[str, ...] = ()) -> None:
        self.name = name
        self.aliases = aliases


class AliasClashPlugin:
    @hookimpl
    def paxm_register_integrations(self, register: Callable[[Any], None]) -> None:
        # an older integration whose alias is a newer one's canonical name, registered first
        register(_Named("kimi", ("kimi-code",)))
        register(_Named("kimi-code", ("kimi",)))


def test_a_canonical_name_wins_over_another_integrations_alias() -> None:
    from paxm_core.config.setup import SetupCatalog

    pm = get_plugin_manager(load_entrypoints=False)
    pm.register(AliasClashPlugin(), name="clash")
    assert pm.integration("kimi-code").name == "kimi-code"
    assert pm.integration("KIMI").name == "kimi"
    assert SetupCatalog.from_plugins(pm).canonical_agent("kimi-code") == "kimi-code"


def test_unknown_provider_type_names_the_package_to_install() -> None:
    pm = get_plugin_manager(load_entrypoints=False)
    with pytest.raises(ProviderNotInstalled, match="pip install paxm-provider-zep"):
        pm.provider_type("zep")
    with pytest.raises(ProviderNotInstalled, match="'mystery' is not installed"):
        pm.provider_type("mystery")


@pytest.fixture
def fake_site(tmp_path: Path) -> Path:
    site = new_site(tmp_path)
    good = provider_plugin('"goodtype", lambda name, cfg: None, description="good"')
    make_dist(site, "paxm-provider-good", "good_plugin", good)
    make_dist(site, "paxm-provider-bad", "bad_plugin", "raise ImportError('missing sdk')\n")
    return site


def _plugins_json(site: Path, env_extra: dict[str, str]) -> dict[str, Any]:
    import os

    env = {**os.environ, "PYTHONPATH": str(site), **env_extra}
    out = subprocess.run(
        [sys.executable, "-c", "from paxm_core.cli import main; main(['plugins', '--json'])"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    data: dict[str, Any] = json.loads(out.stdout)
    return data


def test_entry_points_load_in_isolation_and_report_distributions(fake_site: Path) -> None:
    data = _plugins_json(fake_site, {})
    plugins = {p["name"]: p for p in data["plugins"]}
    assert plugins["good_plugin"]["distribution"] == "paxm-provider-good"
    assert plugins["good_plugin"]["version"] == "1.2.3"
    assert plugins["good_plugin"]["providers"] == ["goodtype"]
    assert plugins["sqlite"]["providers"] == ["sqlite"]
    errors = {e["plugin"]: e for e in data["errors"]}
    assert errors["bad_plugin"]["distribution"] == "paxm-provider-bad"
    assert "missing sdk" in errors["bad_plugin"]["error"]


def test_load_plugins_allow_list(fake_site: Path) -> None:
    data = _plugins_json(fake_site, {"PAXM_LOAD_PLUGINS": "good_plugin"})
    assert [p["name"] for p in data["plugins"]] == ["good_plugin"]
    assert data["errors"] == []
    assert _plugins_json(fake_site, {"PAXM_LOAD_PLUGINS": ""}) == {"plugins": [], "errors": []}


def test_plugin_commands_join_the_cli_and_a_broken_one_does_not_break_it(tmp_path: Path) -> None:
    import os

    site = new_site(tmp_path, "cmdsite")
    hello = """
        def hello():
            \"\"\"Say hello.\"\"\"
            click.echo("hello from a plugin")
        """
    make_dist(site, "paxm-hello", "hello_plugin", command_plugin(hello))
    env = {**os.environ, "PYTHONPATH": str(site)}
    run = [sys.executable, "-c", "import sys; from paxm_core.cli import main; main(sys.argv[1:])"]
    out = subprocess.run([*run, "hello"], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "hello from a plugin"
    listing = subprocess.run([*run, "--help"], capture_output=True, text=True, env=env, check=True)
    assert "hello" in listing.stdout and "plugins" in listing.stdout
    blocked = subprocess.run(
        [*run, "hello"], capture_output=True, text=True, env={**env, "PAXM_LOAD_PLUGINS": "sqlite"}
    )
    assert blocked.returncode == 2 and "No such command 'hello'" in blocked.stderr


def test_ctx_exit_codes_from_commands_reach_the_process(tmp_path: Path) -> None:
    import os

    site = new_site(tmp_path, "exitsite")
    fail3 = """
        @click.pass_context
        def fail3(ctx):
            ctx.exit(3)
        """
    make_dist(site, "paxm-exit", "exit_plugin", command_plugin(fail3))
    env = {**os.environ, "PYTHONPATH": str(site)}
    out = subprocess.run(
        [sys.executable, "-c", "import sys; from paxm_core.cli import main; main(sys.argv[1:])", "fail3"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert out.returncode == 3, out.stderr


SECRET_PROBE = """
import json
from paxm_core import plugins
from paxm_core.plugins import is_secret_option as is_secret_key
spec = plugins.registered_provider_type(" SecretType ")
print(json.dumps({"secret": is_secret_key("idx_passphrase"), "type": getattr(spec, "type", None),
                  "all": sorted(plugins.registered_provider_types()),
                  "shared": plugins.shared_plugin_manager() is plugins.shared_plugin_manager()}))
"""


def test_an_installed_types_secret_keys_and_lookup_reach_config_code(fake_site: Path) -> None:
    import os

    make_dist(fake_site, "paxm-provider-secret", "secret_plugin", SECRET_PLUGIN)
    env = {**os.environ, "PYTHONPATH": str(fake_site)}
    env.pop("PAXM_LOAD_PLUGINS", None)
    out = subprocess.run([sys.executable, "-c", SECRET_PROBE], env=env, capture_output=True, text=True, check=True)
    got = json.loads(out.stdout)
    assert got["secret"] is True  # redaction knows the key the plugin declares secret
    assert got["type"] == "secrettype"  # looked up trimmed and case-insensitively
    assert {"goodtype", "secrettype", "sqlite"} <= set(got["all"])
    assert got["shared"] is True  # one manager per process for config code and the daemon


def test_a_type_two_plugins_register_stays_with_the_first_by_name(fake_site: Path) -> None:
    dup = provider_plugin('"goodtype", lambda name, cfg: "dup"')
    make_dist(fake_site, "paxm-provider-dup", "aa_dup_plugin", dup)
    data = _plugins_json(fake_site, {})
    plugins = {p["name"]: p for p in data["plugins"]}
    assert plugins["aa_dup_plugin"]["providers"] == ["goodtype"]
    errors = {e["plugin"]: e["error"] for e in data["errors"]}
    assert "already registered by aa_dup_plugin" in errors["good_plugin"]
