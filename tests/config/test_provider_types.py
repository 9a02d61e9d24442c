"""The config learns provider types from its caller: each type's defaults, checks and secret keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from paxm_core.api.protocols import ConfigKey, ProviderType
from paxm_core.config import ConfigError, ProviderConfig, default_config, load_config, save_config
from paxm_core.config.catalog import NO_PROVIDER_TYPES, ProviderCatalog
from paxm_core.config.codec import dump_config
from paxm_core.plugins import installed_provider_catalog

TYPES = installed_provider_catalog()


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _acme() -> ProviderType:
    def normalize(config: ProviderConfig) -> None:
        config.base_url = config.base_url or "http://acme.invalid:7"

    def validate(config: ProviderConfig) -> list[str]:
        return [] if config.option("region", "eu") in ("eu", "us") else ["region must be eu or us"]

    return ProviderType(
        "acme-cloud",
        lambda name, cfg: None,  # type: ignore[arg-type,return-value]
        config_keys=(ConfigKey("passphrase", secret=True),),
        locality="cloud",
        validate=validate,
        normalize=normalize,
        default_entry=ProviderConfig(type="acme-cloud", base_url="http://acme.invalid:7"),
    )


def test_a_type_s_defaults_checks_and_secrets_come_from_the_catalog(tmp_path: Path) -> None:
    types = ProviderCatalog.of({"acme-cloud": _acme()})
    path = _write(tmp_path / "config.yaml", "providers:\n  a: {type: acme-cloud, enabled: true, passphrase: hunter2}\n")
    config = load_config(path, provider_types=types)
    assert config.providers["a"].base_url == "http://acme.invalid:7"
    assert dump_config(config)["providers"]["a"]["passphrase"] == "<redacted>"
    assert config.provider_types is types  # kept for saving and redacting
    save_config(config, path)
    assert "base_url: http://acme.invalid:7" in path.read_text()
    # the same file without the catalog: no type is known, so none of its rules apply
    bare = load_config(path)
    assert dump_config(bare)["providers"]["a"]["passphrase"] == "hunter2"
    _write(path, "providers:\n  a: {type: acme-cloud, enabled: true, region: mars}\n")
    with pytest.raises(ConfigError, match="region must be eu or us"):
        load_config(path, provider_types=types)
    assert load_config(path).providers["a"].option("region") == "mars"


def test_the_default_config_lists_each_type_s_default_entry(tmp_path: Path) -> None:
    listed = default_config(tmp_path / "config.yaml", ProviderCatalog.of({"acme-cloud": _acme()}))
    assert list(listed.providers) == ["sqlite", "acme_cloud"]
    assert listed.providers["acme_cloud"] == ProviderConfig(type="acme-cloud", base_url="http://acme.invalid:7")
    assert list(default_config(tmp_path / "config.yaml", NO_PROVIDER_TYPES).providers) == ["sqlite"]


def test_installed_types_keep_upstream_defaults(tmp_path: Path) -> None:
    config = default_config(tmp_path / "config.yaml", TYPES)
    expected = {
        "mem0": ("http://localhost:8888", "similarity"),
        "mem0_cloud": ("https://api.mem0.ai", "similarity"),
        "memos": ("http://localhost:8000", ""),
        "memos_cloud": ("https://memos.memtensor.cn/api/openmem/v1", ""),
        "openviking": ("http://localhost:1933", ""),
    }
    for name, (url, semantics) in expected.items():
        entry = config.providers[name]
        assert (entry.base_url, entry.text("score_semantics"), entry.enabled) == (url, semantics, False)
    assert config.providers["zep"].option("search_scope") == "episodes"
    assert config.providers["mem0_cloud"].option("infer") is False
    assert config.providers["memos"].option("search_mode") == "fast"
    assert (config.providers["jsonrpc"].transport, config.providers["jsonrpc"].timeout) == ("stdio", 30.0)
    text = "providers:\n  m: {type: mem0, enabled: true, user_id: a, score_semantics: ' Distance '}\n"
    loaded = load_config(_write(tmp_path / "s.yaml", text), provider_types=TYPES).providers["m"]
    assert (loaded.base_url, loaded.option("score_semantics"), loaded.option("search_scope_payload")) == (
        "http://localhost:8888",
        "distance",
        "auto",
    )
    # a disabled provider is not built: its type (and its plugin) is not asked
    text = "providers:\n  m: {type: mem0}\n"
    assert load_config(_write(tmp_path / "s.yaml", text), provider_types=TYPES).providers["m"].base_url == ""


def test_a_broken_normalize_does_not_make_the_config_unloadable(tmp_path: Path) -> None:
    def broken(config: ProviderConfig) -> None:
        raise RuntimeError("plugin bug")

    buggy = ProviderType("buggy", lambda name, cfg: None, normalize=broken)  # type: ignore[arg-type,return-value]
    path = _write(tmp_path / "config.yaml", "providers:\n  b: {type: buggy, enabled: true}\n")
    assert load_config(path, provider_types=ProviderCatalog.of({"buggy": buggy})).providers["b"].enabled


def test_a_config_loaded_with_the_installed_types_crosses_a_process_boundary(tmp_path: Path) -> None:
    import pickle

    path = _write(tmp_path / "config.yaml", "providers:\n  z: {type: zep, enabled: true, api_key: k}\n")
    config = load_config(path, provider_types=TYPES)
    copy = pickle.loads(pickle.dumps(config))  # backfill's workers get the config this way
    assert copy == config and copy.provider_types.lookup("zep") is not None
    assert dump_config(copy)["providers"]["z"]["api_key"] == "<redacted>"


def test_a_type_s_own_keys_live_in_extra_and_save_back_in_file_order(tmp_path: Path) -> None:
    """The core's ``ProviderConfig`` names no backend key: Zep's, MemOS's and Mem0's stay in ``extra``."""
    assert not {"graph_id", "mem_cube_id", "score_semantics", "infer", "max_characters"} & set(
        ProviderConfig.__dataclass_fields__
    )
    text = (
        "providers:\n"
        "  z: {type: zep, api_key: env:ZEP_KEY, user_id: '', graph_id: team, search_scope: edges, max_characters: 9}\n"
        "  m: {type: memos, mem_cube_id: notes, search_mode: fine}\n"
    )
    config = load_config(_write(tmp_path / "c.yaml", text), provider_types=TYPES)
    zep = config.providers["z"]
    assert zep.extra == {"graph_id": "team", "search_scope": "edges", "max_characters": 9}
    assert (zep.text("graph_id"), zep.option("max_characters"), zep.text("absent", "dflt")) == ("team", 9, "dflt")
    save_config(config, tmp_path / "saved.yaml")
    saved = load_config(tmp_path / "saved.yaml", provider_types=TYPES)
    assert list(dump_config(saved)["providers"]["z"])[-3:] == ["graph_id", "search_scope", "max_characters"]
    assert saved.providers["m"].extra == {"mem_cube_id": "notes", "search_mode": "fine"}
    assert ProviderConfig.of(type="zep", user_id="u", graph_id="g") == ProviderConfig(
        type="zep", user_id="u", extra={"graph_id": "g"}
    )
