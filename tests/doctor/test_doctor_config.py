"""Doctor agrees with recall: it fails whenever recall or capture would, naming the key or type and
the fix; a key paxm does not read is a warning everywhere; upstream's documented config passes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from paxm_core.config.loader import read_raw
from paxm_core.config.unknown_keys import unknown_keys

ENTRY = "import sys; from paxm_core.cli import main; main(sys.argv[1:])"
DATA = Path(__file__).resolve().parents[1] / "config" / "data"

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")


def paxm(cfg: Path | None, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    config = ["--config", str(cfg)] if cfg is not None else []
    # no harness on PATH: what doctor says about agents does not depend on this machine
    base = {**os.environ, "PATH": str(Path(sys.executable).parent)}
    return subprocess.run(
        [sys.executable, "-c", ENTRY, *config, *args],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, env={**base, **(env or {})}, timeout=120,
    )  # fmt: skip


def write_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cfg" / "config.yaml"
    path.parent.mkdir(mode=0o700, exist_ok=True)
    path.write_text(text.replace("__DIR__", str(path.parent)), encoding="utf-8")
    path.chmod(0o600)
    return path


def doctor(cfg: Path | None, env: dict[str, str] | None = None) -> tuple[int, list[dict[str, Any]]]:
    result = paxm(cfg, "config", "doctor", "--json", env=env)
    return result.returncode, json.loads(result.stdout)


BROKEN = {
    # upstream reads a file without `providers:` as no provider at all, and so does paxm
    "unknown-key-only": ("foo: bar\n", "providers", "no memory provider is configured", "paxm setup"),
    "not-enabled": (
        "providers:\n  sqlite:\n    type: sqlite\n    path: __DIR__/m.sqlite\n",
        "providers",
        "providers.sqlite has no `enabled: true`",
        "add `enabled: true` under providers.sqlite",
    ),
    "unknown-type": (
        "providers:\n  mine:\n    type: nosuchtype\n    enabled: true\n",
        "providers.mine.type",
        "provider type `nosuchtype` is not installed",
        "install the plugin that provides `nosuchtype`",
    ),
    "misspelt-type": (
        "providers:\n  mine:\n    type: sqlte\n    enabled: true\n    path: __DIR__/m.sqlite\n",
        "providers.mine.type",
        "(did you mean `sqlite`?)",
        "set `type: sqlite` under providers.mine",
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_doctor_fails_where_recall_fails_and_both_name_the_cause(tmp_path: Path, case: str) -> None:
    text, subject, message, fix = BROKEN[case]
    cfg = write_config(tmp_path, text)
    recall = paxm(cfg, "recall", "--query", "anything")
    assert recall.returncode == 1, recall.stdout
    status, rows = doctor(cfg)
    assert status == 1, rows
    (row,) = [r for r in rows if r.get("check") == "config" and r["level"] == "error"]
    assert row["subject"] == subject and message in row["message"] and fix in row["fix"], row
    # recall's own error names the cause and the fix too
    if case in ("not-enabled", "unknown-key-only"):
        assert message in recall.stderr and fix.split(" in ")[0] in recall.stderr, recall.stderr
        assert "no readable memory providers" not in recall.stderr
    else:
        kind = text.split("type: ")[1].split()[0]
        assert f"provider type '{kind}' is not installed" in recall.stderr, recall.stderr
    if case == "misspelt-type":
        assert "did you mean 'sqlite'" in recall.stderr, recall.stderr


def test_a_profile_routing_to_a_disabled_provider_fails_doctor(tmp_path: Path) -> None:
    cfg = write_config(
        tmp_path,
        "providers:\n  sqlite: {type: sqlite, enabled: true, path: __DIR__/m.sqlite}\n"
        "  other: {type: sqlite, path: __DIR__/o.sqlite}\n"
        "recall_profiles:\n  default:\n    providers: [{name: other, required: true}]\n",
    )
    assert paxm(cfg, "recall", "--query", "anything").returncode == 1
    status, rows = doctor(cfg)
    errors = [r for r in rows if r.get("check") == "config" and r["level"] == "error"]
    # the passive profiles paxm derives from `default` (used by the default agent's hooks) too
    assert status == 1 and errors[0]["subject"] == "recall_profiles.default.providers[0]", rows
    assert all("`other`, which is not enabled" in r["message"] for r in errors), errors
    assert all("add `enabled: true` under providers.other" in r["fix"] for r in errors), errors


def test_an_unknown_key_is_a_warning_everywhere_and_breaks_nothing(tmp_path: Path) -> None:
    cfg = write_config(
        tmp_path,
        "providers:\n  sqlite: {type: sqlite, enabled: true, path: __DIR__/m.sqlite, pathh: x}\n"
        "recall_profiles:\n  default:\n    max_result: 2\n    providers: [{name: sqlite, required: true}]\n"
        "foo: bar\n",
    )
    remembered = paxm(cfg, "remember", "--text", "the heron cache holds nine entries")
    assert remembered.returncode == 0, remembered.stderr
    recall = paxm(cfg, "recall", "--query", "heron cache", "--json")
    assert recall.returncode == 0 and "nine entries" in recall.stdout, recall.stderr
    warning = [line for line in recall.stderr.splitlines() if "unknown config key" in line]
    assert len(warning) == 1, recall.stderr  # one line, not one per key
    assert "`foo`" in warning[0] and "`recall_profiles.default.max_result` (did you mean `max_results`?)" in warning[0]
    assert "`providers.sqlite.pathh` (did you mean `path`?)" in warning[0]
    shown = paxm(cfg, "config", "show")
    assert shown.returncode == 0 and "unknown config key" in shown.stderr
    status, rows = doctor(cfg)
    assert status == 0, rows
    warned = {r["subject"]: r for r in rows if r.get("check") == "config"}
    assert set(warned) == {"foo", "recall_profiles.default.max_result", "providers.sqlite.pathh"}, rows
    assert all(r["level"] == "warn" for r in warned.values())
    assert warned["recall_profiles.default.max_result"]["fix"].startswith("rename it to `max_results`")
    assert warned["foo"]["fix"].startswith("remove it from")


def test_upstream_s_documented_config_passes_doctor_in_a_readable_config_directory(tmp_path: Path) -> None:
    """Upstream's set-up: ``mkdir -p ~/.config/paxm`` (0755 under umask 022), its documented config."""
    home = tmp_path / "home"
    config_dir = home / ".config" / "paxm"
    config_dir.mkdir(parents=True)
    config_dir.chmod(0o755)
    cfg = config_dir / "config.yaml"
    cfg.write_text((DATA / "upstream-documented-config.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    cfg.chmod(0o600)
    env = {"HOME": str(home), "XDG_CONFIG_HOME": "", "XDG_DATA_HOME": "", "XDG_STATE_HOME": "", "PAXM_CONFIG": ""}
    result = paxm(None, "config", "doctor", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "unknown config key" not in result.stderr
    assert f"warn: directory {config_dir} is 0755" in result.stdout
    assert "ok: sqlite" in result.stdout


@pytest.mark.parametrize("name", ["upstream-config.yaml", "upstream-documented-config.yaml"])
def test_upstream_s_configs_have_no_unknown_key(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text((DATA / name).read_text(encoding="utf-8").replace("__DIR__", str(tmp_path)), encoding="utf-8")
    assert unknown_keys(read_raw(path)) == []


def test_a_failed_daemon_start_gets_a_fix_that_is_not_doctor_itself(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, "providers:\n  sqlite: {type: sqlite, enabled: true, path: __DIR__/m.sqlite}\n")
    log = cfg.parent / "hooks" / "paxm-hook-daemon.log"
    log.parent.mkdir(mode=0o700)
    log.write_text(
        "2026-01-01T00:00:00+00:00 pid=1 startup failed: capture queue /x/capture.sqlite: database is locked;"
        " another process holds the database; retry, or stop it\n"
    )
    log.chmod(0o600)
    status, rows = doctor(cfg)
    (row,) = [r for r in rows if r.get("subject") == "daemon"]
    assert status == 1 and row["level"] == "error"
    assert "paxm config doctor" not in row["fix"] and "paxm queue flush" in row["fix"], row
    assert "another process holds the database" in row["fix"], row


def test_doctor_names_a_misspelt_key_that_the_provider_type_declares() -> None:
    data = {"providers": {"team": {"type": "zep", "enabled": True, "graph_id": "g", "graph_idd": "g"}}}
    # config loading imports no plugin, so it knows only the core's keys: nothing to flag here
    assert unknown_keys(data) == []
    from paxm_core.doctor.config_check import _declared_keys

    assert "graph_id" in _declared_keys("zep") and _declared_keys("nosuchtype") == []
    found = [(key.path, key.suggestion) for key in unknown_keys(data, _declared_keys)]
    assert found == [("providers.team.graph_idd", "graph_id")]
