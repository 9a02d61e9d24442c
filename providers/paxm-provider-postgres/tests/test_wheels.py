"""The team install path: wheels built from this repo, plain pip, two users' configs on one database.

``pip install paxm paxm-provider-postgres`` into a fresh venv; each user writes the
``providers.postgres`` entry (dsn, ``password: env:...``, ``user_id``, ``teams``) and runs
``paxm setup --yes --provider postgres``, which connects and migrates before saving; then
remember / recall / ``config doctor`` run through the CLI.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from pgserver import APP_PASSWORD, PgServer

ROOT = Path(__file__).resolve().parents[3]
pytestmark = [pytest.mark.slow, pytest.mark.prefetch_wheel_venv("paxm", "paxm-provider-postgres")]


@pytest.fixture(scope="module")
def paxm_bin() -> str:
    from paxm_contracttest.servers import wheel_venv

    # plain pip from the workspace's wheels, built in the background from collection on
    return str(wheel_venv(ROOT, ("paxm", "paxm-provider-postgres")) / "bin" / "paxm")


def _user(tmp: Path, name: str, server: PgServer, schema: str) -> dict[str, str]:
    home = tmp / name
    (home / "cfg" / "paxm").mkdir(parents=True, mode=0o700)  # private, as setup makes it (0755 is a doctor warning)
    (home / "cfg" / "paxm" / "config.yaml").write_text(
        f"""identity:
  user_id: {name}
providers:
  postgres:
    type: postgres
    dsn: {server.dsn()}
    password: env:PAXM_PG_PASSWORD
    schema: {schema}
    user_id: {name}
    teams: [platform]
"""
    )
    from paxm_contracttest.servers import user_env

    return {**user_env(home), "PAXM_PG_PASSWORD": APP_PASSWORD}


def _run(paxm: str, env: dict[str, str], *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([paxm, *args], env=env, cwd=env["HOME"], capture_output=True, text=True, timeout=120)
    assert APP_PASSWORD not in done.stdout + done.stderr
    if ok:
        assert done.returncode == 0, done.stderr
    return done


def _recall(paxm: str, env: dict[str, str], query: str) -> set[str]:
    hits = json.loads(_run(paxm, env, "recall", "--query", query, "--json").stdout)["hits"]
    return {h["text"] for h in hits}


def test_two_users_share_team_memories_and_keep_personal_ones_apart(
    paxm_bin: str, pg_server: PgServer, tmp_path: Path
) -> None:
    alice = _user(tmp_path, "alice", pg_server, "wheel_team")
    bob = _user(tmp_path, "bob", pg_server, "wheel_team")
    setup = ("setup", "--yes", "--force", "--provider", "postgres", "--team-id", "platform", "--user-id")
    created = _run(paxm_bin, alice, *setup, "alice")
    assert "(created)" in created.stdout
    again = _run(paxm_bin, bob, *setup, "bob")
    assert "(exists)" in again.stdout
    listing = json.loads(_run(paxm_bin, alice, "plugins", "--json").stdout)["plugins"]
    assert any(p["name"] == "postgres" and p["distribution"] == "paxm-provider-postgres" for p in listing)

    assert _run(paxm_bin, alice, "remember", "--text", "alice private gannet note").stdout.startswith(
        "stored memory: postgres/"
    )
    _run(paxm_bin, alice, "remember", "--profile", "team-platform", "--text", "team gannet decision: blue deploys")
    _run(paxm_bin, bob, "remember", "--text", "bob private gannet note")

    assert _recall(paxm_bin, alice, "gannet") == {"alice private gannet note", "team gannet decision: blue deploys"}
    assert _recall(paxm_bin, bob, "gannet") == {"bob private gannet note", "team gannet decision: blue deploys"}

    doctor = json.loads(_run(paxm_bin, alice, "config", "doctor", "--json").stdout)
    assert doctor == [{"provider": "postgres", "required": True, "ok": True}]
    shown = _run(paxm_bin, alice, "config", "show")  # _run checks the password is not in it
    assert "type: postgres" in shown.stdout and "teams:" in shown.stdout


def test_doctor_reports_a_wrong_password_without_printing_it(
    paxm_bin: str, pg_server: PgServer, tmp_path: Path
) -> None:
    env = _user(tmp_path, "carol", pg_server, "wheel_team")
    _run(paxm_bin, env, "setup", "--yes", "--force", "--provider", "postgres", "--user-id", "carol")
    env["PAXM_PG_PASSWORD"] = "Wrong-Pw-55510"
    done = _run(paxm_bin, env, "config", "doctor", "--json", ok=False)
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert report[0]["ok"] is False and "authentication failed" in report[0]["error"]
    assert "Wrong-Pw-55510" not in done.stdout + done.stderr
    # Setup checks the connection first and saves nothing when it fails.
    before = (Path(env["XDG_CONFIG_HOME"]) / "paxm" / "config.yaml").read_text()
    failed = _run(paxm_bin, env, "setup", "--yes", "--force", "--provider", "postgres", "--user-id", "carol", ok=False)
    assert failed.returncode != 0 and "authentication failed" in failed.stderr
    assert "Wrong-Pw-55510" not in failed.stdout + failed.stderr
    assert (Path(env["XDG_CONFIG_HOME"]) / "paxm" / "config.yaml").read_text() == before
