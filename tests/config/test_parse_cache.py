"""The parsed-config cache the hook daemon uses: exact, private, and never stale."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paxm_core.api.errors import ConfigError
from paxm_core.config import load_config
from paxm_core.config.loader import PARSE_CACHE_NAME, read_raw


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_cached_document_equals_the_parsed_one_and_is_private(tmp_path: Path) -> None:
    config = _write(tmp_path / "config.yaml", "version: 1\nidentity:\n  user_id: 'no'\nproviders: {}\n")
    cache = tmp_path / "hooks"
    first = read_raw(config, parse_cache=cache)
    assert first == read_raw(config)
    stored = cache / PARSE_CACHE_NAME
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    assert json.loads(stored.read_text())["data"] == first
    assert read_raw(config, parse_cache=cache) == first


def test_an_edit_of_the_same_size_and_mtime_is_seen(tmp_path: Path) -> None:
    config = _write(tmp_path / "config.yaml", "identity:\n  user_id: alice\n")
    cache = tmp_path / "hooks"
    read_raw(config, parse_cache=cache)
    before = config.stat()
    _write(config, "identity:\n  user_id: bobby\n")
    import os

    os.utime(config, ns=(before.st_atime_ns, before.st_mtime_ns))  # keyed on the bytes, not the stamp
    assert read_raw(config, parse_cache=cache)["identity"]["user_id"] == "bobby"


def test_a_tampered_cache_for_other_bytes_is_ignored(tmp_path: Path) -> None:
    config = _write(tmp_path / "config.yaml", "identity:\n  user_id: alice\n")
    cache = tmp_path / "hooks"
    cache.mkdir(mode=0o700)
    (cache / PARSE_CACHE_NAME).write_text(json.dumps({"digest": "0" * 40, "data": {"identity": {"user_id": "x"}}}))
    assert read_raw(config, parse_cache=cache)["identity"]["user_id"] == "alice"
    (cache / PARSE_CACHE_NAME).write_text("{not json")
    assert read_raw(config, parse_cache=cache)["identity"]["user_id"] == "alice"


def test_documents_json_cannot_give_back_exactly_are_not_cached(tmp_path: Path) -> None:
    config = _write(tmp_path / "config.yaml", "identity:\n  user_id: alice\nextra:\n  1: one\n")
    cache = tmp_path / "hooks"
    data = read_raw(config, parse_cache=cache)
    assert data["extra"] == {1: "one"}
    assert not (cache / PARSE_CACHE_NAME).exists()
    assert read_raw(config, parse_cache=cache)["extra"] == {1: "one"}


def test_syntax_errors_are_reported_as_without_the_cache(tmp_path: Path) -> None:
    config = _write(tmp_path / "config.yaml", "identity: [unclosed\n")
    with pytest.raises(ConfigError, match="invalid YAML"):
        read_raw(config, parse_cache=tmp_path / "hooks")
    with pytest.raises(ConfigError, match="cannot read"):
        read_raw(tmp_path / "missing.yaml", parse_cache=tmp_path / "hooks")


def test_load_config_with_the_cache_validates_every_time(tmp_path: Path) -> None:
    config = _write(tmp_path / "config.yaml", "version: 1\nidentity:\n  user_id: alice\n")
    assert load_config(config, parse_cache=tmp_path / "hooks").identity.user_id == "alice"
    _write(config, "version: 99\n")
    with pytest.raises(ConfigError, match="version"):
        load_config(config, parse_cache=tmp_path / "hooks")


def test_a_cache_hit_does_not_import_yaml(tmp_path: Path) -> None:
    config = _write(tmp_path / "config.yaml", "version: 1\nidentity:\n  user_id: alice\n")
    load_config(config, parse_cache=tmp_path / "hooks")
    probe = (
        "import sys; from paxm_core.config import load_config; "
        f"c = load_config({str(config)!r}, parse_cache={str(tmp_path / 'hooks')!r}); "
        "print(c.identity.user_id, 'yaml' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.split() == ["alice", "False"]


def test_a_config_with_a_credential_in_clear_is_never_cached(tmp_path: Path) -> None:
    config = _write(tmp_path / "config.yaml", "providers:\n  zep:\n    type: zep\n    api_key: z_live_s3cret\n")
    cache = tmp_path / "hooks"
    cache.mkdir(mode=0o700)
    # a cache an older paxm wrote for this very file, secret and all, is removed
    (cache / PARSE_CACHE_NAME).write_text(json.dumps({"digest": "0" * 40, "data": {"api_key": "z_live_s3cret"}}))
    assert read_raw(config, parse_cache=cache)["providers"]["zep"]["api_key"] == "z_live_s3cret"
    assert not (cache / PARSE_CACHE_NAME).exists()
    assert load_config(config, parse_cache=cache).providers["zep"].api_key == "z_live_s3cret"
    assert not (cache / PARSE_CACHE_NAME).exists()


def test_a_config_with_secret_references_only_is_cached(tmp_path: Path) -> None:
    text = "providers:\n  zep:\n    type: zep\n    api_key: env:ZEP_API_KEY\n    token: ${TOKEN}\n    password: ''\n"
    config = _write(tmp_path / "config.yaml", text)
    read_raw(config, parse_cache=tmp_path / "hooks")
    stored = json.loads((tmp_path / "hooks" / PARSE_CACHE_NAME).read_text())
    assert stored["data"]["providers"]["zep"]["api_key"] == "env:ZEP_API_KEY"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    key=st.sampled_from(["api_key", "token", "password", "client_secret", "Authorization", "x-api-key", "apikey"]),
    secret=st.text(alphabet=st.characters(categories=["L", "N", "P"]), min_size=1, max_size=30).filter(
        lambda s: s.strip() and not s.strip().startswith(("env:", "${"))
    ),
    nested=st.booleans(),
)
def test_no_credential_value_ever_reaches_the_cache(tmp_path: Path, key: str, secret: str, nested: bool) -> None:
    provider = {"type": "jsonrpc", "env": {key: secret}} if nested else {"type": "zep", key: secret}
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"providers": {"p": provider}}), encoding="utf-8")
    cache = tmp_path / "hooks"
    assert read_raw(config, parse_cache=cache) == {"providers": {"p": provider}}
    stored = cache / PARSE_CACHE_NAME
    assert not stored.exists() or json.dumps(secret)[1:-1] not in stored.read_text(encoding="utf-8")


def test_a_key_a_provider_type_declares_secret_keeps_the_config_out_of_the_cache(tmp_path: Path) -> None:
    from paxm_core.api.protocols import ConfigKey, ProviderType
    from paxm_core.config import ProviderCatalog

    acme = ProviderType("acme", lambda name, cfg: None, config_keys=(ConfigKey("passphrase", secret=True),))  # type: ignore[arg-type,return-value]
    config = _write(tmp_path / "config.yaml", "providers:\n  a: {type: acme, passphrase: open-sesame}\n")
    cache = tmp_path / "hooks"
    load_config(config, parse_cache=cache)  # no provider types known: "passphrase" is just a key
    assert "open-sesame" in (cache / PARSE_CACHE_NAME).read_text()
    load_config(config, provider_types=ProviderCatalog.of({"acme": acme}), parse_cache=cache)
    assert not (cache / PARSE_CACHE_NAME).exists()
