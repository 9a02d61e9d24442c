"""The parsed-config cache the hook daemon uses: exact, private, and never stale."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from paxm_core.config import load_config
from paxm_core.config.loader import PARSE_CACHE_NAME, read_raw
from paxm_core.errors import ConfigError


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
