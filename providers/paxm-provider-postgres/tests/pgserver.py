"""A throwaway PostgreSQL server from the distribution's packages, on a free 127.0.0.1 port.

Used by the tests and ``benchmarks/postgres_bench.py``.  As root, ``initdb`` and ``postgres``
run as the ``postgres`` OS user (PostgreSQL refuses to run as root) in a temporary directory
owned by it.  TCP connections need a password (scram-sha-256), so the auth-failure path is
real; the superuser connects over TCP with its own password too.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["PASSWORD_ENV", "PgServer", "find_bin_dir", "pg_config", "start_server"]

SUPERUSER_PASSWORD = "su-secret-Zq81"
APP_USER = "paxm_app"
APP_PASSWORD = "app-secret-Wk27"
APP_DB = "paxm"
#: The environment variable the test configs' `password: env:...` reference.
PASSWORD_ENV = "PAXM_TEST_PG_PASSWORD"


def find_bin_dir() -> Path | None:
    """The newest ``/usr/lib/postgresql/*/bin`` with ``initdb``, or ``$PAXM_PG_BIN``."""
    explicit = os.environ.get("PAXM_PG_BIN")
    if explicit:
        return Path(explicit) if (Path(explicit) / "initdb").exists() else None
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parent.parent.name or 0))
    return Path(found[-1]).parent if found else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class PgServer:
    """A running server; :meth:`stop` removes it."""

    bin_dir: Path
    root: Path
    port: int
    as_postgres: bool

    @property
    def data(self) -> Path:
        return self.root / "data"

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        cmd = list(args)
        if self.as_postgres:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        return subprocess.run(cmd, check=check, capture_output=True, text=True, timeout=120, cwd="/")

    def dsn(self, user: str = APP_USER, dbname: str = APP_DB) -> str:
        """A password-less dsn (the password goes through ``password: env:...``)."""
        return f"host=127.0.0.1 port={self.port} dbname={dbname} user={user}"

    def superuser_conninfo(self, dbname: str = "postgres") -> str:
        return f"host=127.0.0.1 port={self.port} dbname={dbname} user=postgres password={SUPERUSER_PASSWORD}"

    def sql(self, *statements: str, dbname: str = APP_DB) -> None:
        """Run statements as the superuser (autocommit)."""
        import psycopg

        with psycopg.connect(self.superuser_conninfo(dbname), autocommit=True) as conn:
            for statement in statements:
                conn.execute(statement)

    def stop(self) -> None:
        self._run(str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop", check=False)
        shutil.rmtree(self.root, ignore_errors=True)


def start_server(bin_dir: Path) -> PgServer:
    """initdb + start on a free port, then create the app role and database."""
    as_postgres = os.geteuid() == 0
    root = Path(tempfile.mkdtemp(prefix="paxm-pg-"))
    os.chmod(root, 0o700)
    if as_postgres:
        shutil.chown(root, "postgres", "postgres")
    server = PgServer(bin_dir, root, _free_port(), as_postgres)
    pwfile = root / "pwfile"
    pwfile.write_text(SUPERUSER_PASSWORD + "\n")
    os.chmod(pwfile, 0o600)
    if as_postgres:
        shutil.chown(pwfile, "postgres", "postgres")
    try:
        server._run(
            str(bin_dir / "initdb"),
            "-D",
            str(server.data),
            "-U",
            "postgres",
            "--pwfile",
            str(pwfile),
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            "-E",
            "UTF8",
            "--locale=C.UTF-8",
            "--no-sync",
        )
        for attempt in range(3):
            started = server._run(
                str(bin_dir / "pg_ctl"),
                "-D",
                str(server.data),
                "-w",
                "-t",
                "60",
                "-l",
                str(root / "server.log"),
                "-o",
                f"-p {server.port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off "
                "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200",
                "start",
                check=False,
            )
            if started.returncode == 0:
                break
            server.port = _free_port()  # the port was taken between probing and binding
            time.sleep(0.2 * (attempt + 1))
        else:
            log = (root / "server.log").read_text() if (root / "server.log").exists() else ""
            raise RuntimeError(f"postgres did not start: {started.stderr}\n{log}")
        server.sql(
            f"CREATE ROLE {APP_USER} LOGIN PASSWORD '{APP_PASSWORD}'",
            f"CREATE DATABASE {APP_DB} OWNER {APP_USER}",
            dbname="postgres",
        )
    except BaseException:
        server.stop()
        raise
    return server


def pg_config(server: PgServer, schema: str, **extra: Any) -> Any:
    """A provider config for the app role in ``schema`` (password through an env reference)."""
    values: dict[str, Any] = {
        "dsn": server.dsn(),
        "password": f"env:{PASSWORD_ENV}",
        "schema": schema,
        "teams": ["contract-team"],
        "pool_size": 3,
    }
    values.update(extra)
    user_id = str(values.pop("user_id", "alice"))
    from paxm_core import ProviderConfig

    return ProviderConfig(type="postgres", enabled=True, user_id=user_id, extra=values)
