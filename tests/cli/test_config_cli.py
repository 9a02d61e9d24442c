"""``paxm config path|show|doctor`` and invalid-config errors, run as real ``paxm`` processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from paxm_core.cli import main

ENTRY = "import sys; from paxm_core.cli import main; main(sys.argv[1:])"


def paxm(*args: str, env: dict[str, str] | None = None, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """Run the real CLI in a fresh interpreter with the test's (isolated) environment."""
    return subprocess.run(
        [sys.executable, "-c", ENTRY, *args],
        capture_output=True,
        text=True,
        input=stdin,
        env={**os.environ, **(env or {})},
        timeout=60,
    )


def write_config(tmp_path: Path, text: str, name: str = "config.yaml") -> Path:
    path = tmp_path / "cfg" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def test_config_path_follows_flag_env_and_xdg(isolated_home: Path, tmp_path: Path) -> None:
    assert paxm("config", "path").stdout.strip() == str(isolated_home / ".config/paxm/config.yaml")
    env = {"PAXM_CONFIG": str(tmp_path / "env.yaml")}
    assert paxm("config", "path", env=env).stdout.strip() == str(tmp_path / "env.yaml")
    # --config wins, wherever it is on the line.
    flagged = paxm("config", "path", "--config", str(tmp_path / "flag.yaml"), env=env)
    assert flagged.stdout.strip() == str(tmp_path / "flag.yaml")


def test_show_without_a_file_prints_the_defaults(isolated_home: Path) -> None:
    result = paxm("config", "show")
    assert result.returncode == 0, result.stderr
    data = yaml.safe_load(result.stdout)
    assert data["providers"]["sqlite"]["path"] == str(isolated_home / ".local/share/paxm/memory.sqlite")
    assert data["write_profiles"]["stm"]["expires_after"] == "24h"
    assert "built-in defaults" in result.stderr
    as_json = json.loads(paxm("config", "show", "--json").stdout)
    assert as_json == data


def test_show_never_prints_secrets(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        """
        providers:
          sqlite: {enabled: true}
          zep: {type: zep, enabled: true, api_key: zk-TOPSECRET, headers_token: hd-TOPSECRET}
          rpc:
            type: jsonrpc
            command: plugin
            env: {PLUGIN_PASSWORD: pw-TOPSECRET}
        """,
    )
    for fmt in ([], ["--json"]):
        result = paxm("--config", str(path), "config", "show", *fmt)
        assert result.returncode == 0, result.stderr
        assert "TOPSECRET" not in result.stdout + result.stderr
        assert result.stdout.count("<redacted>") == 3
    assert "zk-TOPSECRET" in path.read_text()  # the file itself keeps the key


INVALID = {
    "yaml-syntax": ("providers:\n  sqlite: {enabled: true\n", "invalid YAML at line"),
    "not-a-mapping": ("- just\n- a list\n", "config: expected a mapping, got a list"),
    "wrong-type": ("providers:\n  sqlite:\n    enabled: maybe\n", "providers.sqlite.enabled: expected true or false"),
    "bad-duration": (
        "providers: {sqlite: {enabled: true}}\nrecall_profiles:\n  passive:\n"
        "    providers: [{name: sqlite, timeout: soon}]\n",
        "recall_profiles.passive.providers[0].timeout: 'soon' is not a duration; write it like",
    ),
    "negative-timeout": (
        "providers: {sqlite: {enabled: true}}\nwrite_profiles:\n  default:\n"
        "    providers: [{name: sqlite, timeout: -5s}]\n",
        "write_profiles.default.providers[0].timeout: must be a positive duration",
    ),
    "bad-tier": (
        "providers: {sqlite: {enabled: true}}\nrecall_profiles:\n  default:\n    tiers: [stm, forever]\n",
        "recall_profiles.default.tiers[1]: 'forever' is invalid; use stm or ltm",
    ),
    "ltm-expiry": (
        "write_profiles:\n  ltm: {tier: ltm, expires_after: 1h}\n",
        "write_profiles.ltm.expires_after: long-term (ltm) memories never expire; remove expires_after",
    ),
    "stm-without-expiry": (
        "write_profiles:\n  scratch: {tier: stm}\n",
        'write_profiles.scratch.expires_after: is required for tier stm; add e.g. `expires_after: "24h"`',
    ),
    "bad-scope": (
        "write_profiles:\n  default: {scope: {type: company, id: acme}}\n",
        "write_profiles.default.scope.type: 'company' is invalid; use personal or team",
    ),
    "bad-owner": (
        "agents:\n  cursor: {enabled: true, integration: {owner: 'Bad Owner!'}}\n",
        "agents.cursor.integration.owner: 'Bad Owner!' is invalid; use paxm or an integration's owner name",
    ),
    "type-validate": (  # the provider type's own validate() runs on load
        "providers:\n  z: {type: zep, enabled: true, search_scope: everything}\n",
        "providers.z: search_scope 'everything' is invalid; use one of episodes, edges, nodes, observations,"
        " thread_summaries, auto",
    ),
    "user-id": ('identity: {user_id: "!!!"}\n', "identity.user_id: must contain letters or numbers"),
    "unknown-route": (
        "providers: {sqlite: {enabled: true}}\nrecall_profiles:\n  default:\n    providers: [{name: sqllite}]\n",
        "recall_profiles.default.providers[0].name: unknown provider 'sqllite'; define providers.sqllite or use one of",
    ),
    "concurrency": (
        "capture_queue:\n  provider_concurrency: {sqlite: 0}\n",
        "capture_queue.provider_concurrency.sqlite: must be a positive whole number",
    ),
    "threshold-range": (
        "recall_profiles:\n  default:\n    thresholds: {min_score: 7}\n",
        "recall_profiles.default.thresholds.min_score: 7.0 is out of range; use a number from 0 to 1",
    ),
    "version": ("version: 3\n", "version: unsupported config version 3; this paxm reads version 1"),
}


def run_main(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """The console-script entry point in-process (fast); exit status, stdout, stderr."""
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


@pytest.mark.parametrize("kind", sorted(INVALID))
def test_invalid_config_is_a_precise_error(tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    text, expected = INVALID[kind]
    path = write_config(tmp_path, text)
    before = path.read_bytes()
    for command in (["config", "show"], ["config", "show", "--json"], ["recall", "--query", "x"]):
        code, out, err = run_main("--config", str(path), *command, capsys=capsys)
        assert code == 1
        assert out == ""
        assert err.startswith(f"Error: {path}: "), err
        assert expected in err, err
        assert "Traceback" not in err
    assert path.read_bytes() == before


def test_invalid_config_in_a_real_process(tmp_path: Path) -> None:
    path = write_config(tmp_path, INVALID["ltm-expiry"][0])
    result = paxm("--config", str(path), "config", "show")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == f"Error: {path}: {INVALID['ltm-expiry'][1]} or set tier: stm\n"


def test_invalid_json_config_names_line_and_column(tmp_path: Path) -> None:
    path = write_config(tmp_path, '{"providers": {"sqlite": {"enabled": true,}}}', name="config.json")
    result = paxm("--config", str(path), "config", "show")
    assert result.returncode == 1
    assert f"Error: {path}: invalid JSON at line 1 column" in result.stderr


def test_doctor_reports_health_and_fails_on_required(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        """
        providers:
          sqlite: {type: sqlite, enabled: true}
          broken: {type: jsonrpc, enabled: true, command: /nonexistent/paxm-plugin, timeout: 2s}
        recall_profiles:
          default:
            providers: [{name: sqlite, required: true}, {name: broken, required: true}]
        write_profiles:
          default:
            providers: [{name: sqlite, required: true}]
        """,
    )
    text = paxm("--config", str(path), "config", "doctor")
    assert text.returncode == 1
    lines = text.stdout.splitlines()
    assert "ok: sqlite" in lines
    assert any(line.startswith("error: broken: ") and "/nonexistent/paxm-plugin" in line for line in lines)
    assert "Error: required provider(s) unhealthy: broken" in text.stderr
    as_json = paxm("--config", str(path), "config", "doctor", "--json")
    assert as_json.returncode == 1
    rows = {row["provider"]: row for row in json.loads(as_json.stdout)}
    assert rows["sqlite"] == {"provider": "sqlite", "required": True, "ok": True}
    assert rows["broken"]["ok"] is False and rows["broken"]["required"] is True and rows["broken"]["error"]


def test_doctor_ok_on_defaults(tmp_path: Path) -> None:
    result = paxm("--config", str(tmp_path / "d" / "config.yaml"), "config", "doctor", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [{"provider": "sqlite", "required": True, "ok": True}]
