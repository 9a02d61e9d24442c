"""The entry-point index: lazy plugin managers defer integration-only plugins, safely."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from plugin_site import SECRET_PLUGIN, make_dist, new_site, provider_plugin

PROBE = """
import json, sys
from paxm_core.plugins import get_plugin_manager
pm = get_plugin_manager(lazy=True)
out = {"types": sorted(pm.provider_types()), "loaded_early": "idx_integ" in sys.modules}
found = pm.integration(sys.argv[1]) if len(sys.argv) > 1 else None
out["found"] = getattr(found, "name", None)
out["other_loaded"] = "idx_other" in sys.modules
out["all"] = sorted(pm.integrations())
out["errors"] = [e.plugin for e in pm.load_errors]
print(json.dumps(out))
"""


def _dist(site: Path, name: str, module: str, body: str) -> None:
    make_dist(site, name, module, body, "0.1.0")


_INTEGRATION = """
from paxm_core import hookimpl
@hookimpl
def paxm_register_integrations(register):
    from paxm_core.integration import IntegrationBase
    class Real(IntegrationBase):
        name = "{name}"
        aliases = ("{alias}",)
        label = "{name}"
    register(Real())
"""


@pytest.fixture
def site(tmp_path: Path) -> Path:
    site = new_site(tmp_path)
    _dist(site, "paxm-provider-idx", "idx_provider", provider_plugin('"idxtype", lambda name, cfg: None'))
    _dist(site, "paxm-integration-idx", "idx_integ", _INTEGRATION.format(name="idxharness", alias="idxh"))
    _dist(site, "paxm-integration-other", "idx_other", _INTEGRATION.format(name="otherharness", alias="oh"))
    return site


def _probe(site: Path, cache: Path, *args: str) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(site), "XDG_CACHE_HOME": str(cache)}
    env.pop("PAXM_LOAD_PLUGINS", None)
    out = subprocess.run(
        [sys.executable, "-c", PROBE, *args], env=env, capture_output=True, text=True, check=True, timeout=120
    )
    data: dict[str, object] = json.loads(out.stdout)
    return data


def _index_files(cache: Path) -> list[Path]:
    return sorted((cache / "paxm").glob("plugins-*.json"))


def test_first_run_loads_all_and_writes_a_private_index(site: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = _probe(site, cache, "idxh")
    assert first["loaded_early"] is True  # nothing known yet: everything is imported
    assert "idxtype" in first["types"] and first["found"] == "idxharness"
    [index] = _index_files(cache)
    assert stat.S_IMODE(index.stat().st_mode) == 0o600
    assert stat.S_IMODE((cache / "paxm").stat().st_mode) == 0o700
    entries = {e["name"]: e for e in json.loads(index.read_text())["entries"]}
    assert entries["idx_integ"]["integrations"] == ["idxh", "idxharness"]
    assert entries["idx_provider"]["providers"] == ["idxtype"]


def test_second_run_defers_integration_plugins_until_asked(site: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _probe(site, cache)
    second = _probe(site, cache, "IDXH")
    assert second["loaded_early"] is False  # provider types came without importing it
    assert "idxtype" in second["types"]
    assert second["found"] == "idxharness"
    assert second["other_loaded"] is False  # only the integration asked for was imported
    assert {"idxharness", "otherharness"} <= set(second["all"])  # asking for all imports the rest
    assert second["errors"] == []


def test_a_changed_plugin_is_loaded_and_reindexed(site: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _probe(site, cache)
    # the integration plugin now also registers a provider type: a stale index must not hide it
    (site / "idx_integ.py").write_text(
        (site / "idx_integ.py").read_text()
        + textwrap.dedent(
            """
            @hookimpl
            def paxm_register_providers(register):
                register("newtype", lambda name, cfg: None)
            """
        )
    )
    again = _probe(site, cache)
    assert "newtype" in again["types"]
    entries = {e["name"]: e for e in json.loads(_index_files(cache)[0].read_text())["entries"]}
    assert entries["idx_integ"]["providers"] == ["newtype"]


def test_an_installed_or_removed_distribution_invalidates_the_index(site: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _probe(site, cache)
    _dist(site, "paxm-integration-late", "idx_late", _INTEGRATION.format(name="lateharness", alias="lh"))
    assert _probe(site, cache, "lh")["found"] == "lateharness"
    import shutil

    shutil.rmtree(site / "paxm_integration_late-0.1.0.dist-info")
    assert "lateharness" not in _probe(site, cache)["all"]


def test_an_unknown_name_falls_back_to_every_plugin(site: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _probe(site, cache)
    out = _probe(site, cache, "no-such-harness")
    assert out["found"] is None and {"idxharness", "otherharness"} <= set(out["all"])


def test_an_unwritable_cache_directory_only_costs_a_scan(site: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.write_text("not a directory")
    out = _probe(site, cache, "idxh")
    assert out["found"] == "idxharness" and "idxtype" in out["types"]


def test_a_canonical_name_beats_another_plugins_alias_when_deferred(site: Path, tmp_path: Path) -> None:
    # "aa_alias" sorts first and claims "otherharness" as an alias; the canonical owner must win
    _dist(site, "paxm-integration-aa", "aa_alias", _INTEGRATION.format(name="aaharness", alias="otherharness"))
    cache = tmp_path / "cache"
    eager = _probe(site, cache, "otherharness")
    lazy = _probe(site, cache, "otherharness")
    assert eager["found"] == lazy["found"] == "otherharness"


SECRET_PROBE = """
import json, sys
from paxm_core import plugins
from paxm_core.plugins import is_secret_option as is_secret_key
out = {"secret": is_secret_key("idx_passphrase"), "after_secrets": "idx_secret" in sys.modules}
spec = plugins.registered_provider_type(" SecretType ")
out["type"] = getattr(spec, "type", None)
out["after_lookup"] = "idx_secret" in sys.modules
out["other_loaded"] = "idx_provider" in sys.modules
out["all"] = sorted(plugins.registered_provider_types())
print(json.dumps(out))
"""


def _secret_site(site: Path) -> None:
    _dist(site, "paxm-provider-secret", "idx_secret", SECRET_PLUGIN)


def _secret_probe(site: Path, cache: Path) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(site), "XDG_CACHE_HOME": str(cache)}
    env.pop("PAXM_LOAD_PLUGINS", None)
    out = subprocess.run(
        [sys.executable, "-c", SECRET_PROBE], env=env, capture_output=True, text=True, check=True, timeout=120
    )
    data: dict[str, object] = json.loads(out.stdout)
    return data


def test_provider_plugins_wait_until_their_type_is_asked_for(site: Path, tmp_path: Path) -> None:
    _secret_site(site)
    cache = tmp_path / "cache"
    first = _secret_probe(site, cache)
    assert first["secret"] is True and first["type"] == "secrettype"
    [index] = _index_files(cache)
    entries = {e["name"]: e for e in json.loads(index.read_text())["entries"]}
    assert entries["idx_secret"]["secret_keys"] == ["idx_passphrase"]
    second = _secret_probe(site, cache)
    # redaction knows the declared secret from the index, without importing the plugin
    assert second["secret"] is True and second["after_secrets"] is False
    assert second["type"] == "secrettype" and second["after_lookup"] is True
    assert second["other_loaded"] is False  # another type's plugin stays unimported
    assert {"idxtype", "secrettype"} <= set(second["all"])  # type: ignore[call-overload]  # asking for all imports the rest


def test_a_type_two_plugins_register_is_not_deferred(site: Path, tmp_path: Path) -> None:
    # the first plugin in name order keeps the type, as when every plugin loads
    _dist(site, "paxm-provider-dup", "idx_dup", provider_plugin('"idxtype", lambda name, cfg: "dup"'))
    cache = tmp_path / "cache"
    first = _probe(site, cache)
    second = _probe(site, cache)
    assert first["errors"] == ["idx_provider"]  # idx_dup (first by name) keeps the type
    assert second["errors"] == first["errors"]
