"""Connection errors, read-only servers, deadlines, migrations and secrets, against a real server."""

from __future__ import annotations

import os
import socket
import threading
import time

import pytest
from pgserver import APP_PASSWORD, APP_USER, PASSWORD_ENV, PgServer, pg_config

from paxm_core import Deadline, DeadlineExceeded, MemoryItem, ProviderError, SearchQuery
from paxm_provider_postgres import provider_type
from paxm_provider_postgres.migrations import LATEST
from paxm_provider_postgres.provider import PostgresProvider


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_unreachable_server_is_reported_clearly(schema: str, pg_server: PgServer) -> None:
    port = _closed_port()
    prov = PostgresProvider("pg", pg_config(pg_server, schema, dsn=f"host=127.0.0.1 port={port} dbname=x user=y"))
    started = time.monotonic()
    with pytest.raises(ProviderError) as info:
        prov.health(Deadline.after(5))
    assert "cannot reach the PostgreSQL server" in str(info.value) and info.value.retryable
    assert time.monotonic() - started < 5
    assert APP_PASSWORD not in str(info.value)


def test_wrong_password_is_an_auth_failure_and_never_printed(
    pg_server: PgServer, schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    wrong = "wrong-Password-93817"
    monkeypatch.setenv("PAXM_TEST_WRONG_PW", wrong)
    prov = PostgresProvider("pg", pg_config(pg_server, schema, password="env:PAXM_TEST_WRONG_PW"))
    for call in (lambda: prov.health(Deadline.after(5)), lambda: prov.ensure_target(Deadline.after(5))):
        with pytest.raises(ProviderError) as info:
            call()
        message = str(info.value)
        assert "authentication failed" in message and APP_USER in message
        assert wrong not in message and wrong not in repr(info.value)
        assert info.value.__cause__ is None and not info.value.retryable


def test_password_in_dsn_is_rejected_without_echoing_it(pg_server: PgServer, schema: str) -> None:
    config = pg_config(pg_server, schema, dsn=f"postgresql://{APP_USER}:{APP_PASSWORD}@127.0.0.1:{pg_server.port}/paxm")
    problems = provider_type().validate(config)  # type: ignore[misc]
    assert any("contains a password" in p for p in problems)
    assert all(APP_PASSWORD not in p for p in problems)
    with pytest.raises(ProviderError) as info:
        PostgresProvider("pg", config)
    assert APP_PASSWORD not in str(info.value)


def test_validation_names_each_problem(pg_server: PgServer, schema: str) -> None:
    config = pg_config(pg_server, "Bad-Schema", user_id="", password="plain-text", pool_size=0, sslmode="sometimes")
    problems = " | ".join(provider_type().validate(config))  # type: ignore[misc]
    for fragment in ("env:NAME reference", "`schema`", "`pool_size`", "`sslmode`", "`user_id` is required"):
        assert fragment in problems
    assert "plain-text" not in problems
    unset = pg_config(pg_server, schema, password="env:PAXM_TEST_UNSET_VAR_X")
    assert any("not set in the environment" in p for p in provider_type().validate(unset))  # type: ignore[misc]


def test_read_only_server_recalls_but_refuses_writes_clearly(pg_server: PgServer, schema: str) -> None:
    writer = PostgresProvider("pg", pg_config(pg_server, schema))
    writer.put(MemoryItem(id="ro-1", text="replica heron note"), Deadline.after(10))
    writer.close()
    pg_server.sql(
        "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'paxm_ro') THEN "
        f"CREATE ROLE paxm_ro LOGIN PASSWORD '{APP_PASSWORD}'; END IF; END $$",
        "ALTER ROLE paxm_ro SET default_transaction_read_only = on",
        f"GRANT USAGE ON SCHEMA {schema} TO paxm_ro",
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema} TO paxm_ro",
    )
    reader = PostgresProvider("pg", pg_config(pg_server, schema, dsn=pg_server.dsn(user="paxm_ro")))
    try:
        reader.health(Deadline.after(10))
        assert [h.id for h in reader.search(SearchQuery("heron", limit=3), Deadline.after(10))] == ["ro-1"]
        with pytest.raises(ProviderError, match="read-only"):
            reader.put(MemoryItem(text="cannot land"), Deadline.after(10))
    finally:
        reader.close()
    fresh = PostgresProvider("pg", pg_config(pg_server, schema + "_new", dsn=pg_server.dsn(user="paxm_ro")))
    with pytest.raises(ProviderError, match="read-only"):
        fresh.health(Deadline.after(10))


def test_statement_timeout_follows_the_deadline(pg_server: PgServer, schema: str) -> None:
    prov = PostgresProvider("pg", pg_config(pg_server, schema))
    try:
        prov.health(Deadline.after(10))
        started = time.monotonic()
        with pytest.raises(DeadlineExceeded):
            with prov.database.transaction("probe", Deadline.after(0.3)) as conn:
                conn.execute("SELECT pg_sleep(5)")
        assert time.monotonic() - started < 2.0
        # The connection went back to the pool healthy.
        prov.health(Deadline.after(10))
    finally:
        prov.close()


def test_migrations_from_many_starters_apply_once(pg_server: PgServer, schema: str) -> None:
    errors: list[BaseException] = []
    states: list[str] = []

    def start() -> None:
        prov = PostgresProvider("pg", pg_config(pg_server, schema))
        try:
            states.append(prov.ensure_target(Deadline.after(30))[1])
        except BaseException as exc:  # recorded for the assertion below
            errors.append(exc)
        finally:
            prov.close()

    threads = [threading.Thread(target=start) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors
    assert len(states) == 6
    import psycopg

    with psycopg.connect(pg_server.superuser_conninfo("paxm")) as conn:
        versions = conn.execute(f"SELECT version FROM {schema}.paxm_migrations").fetchall()
    assert [v[0] for v in versions] == list(range(1, LATEST + 1))
    prov = PostgresProvider("pg", pg_config(pg_server, schema))
    target, state = prov.ensure_target(Deadline.after(10))
    assert state == "exists" and f"paxm/{schema}" in target
    prov.close()


def test_ensure_target_reports_created_for_a_new_schema(pg_server: PgServer, schema: str) -> None:
    prov = PostgresProvider("pg", pg_config(pg_server, schema))
    assert prov.ensure_target(Deadline.after(10))[1] == "created"
    prov.close()


def test_password_env_is_read_at_use(pg_server: PgServer, schema: str) -> None:
    assert os.environ[PASSWORD_ENV] == APP_PASSWORD
    prov = PostgresProvider("pg", pg_config(pg_server, schema))
    assert APP_PASSWORD not in repr(prov.settings.redact(prov.settings.conninfo()))
    prov.close()
