"""Connections: a small pool, one transaction per operation bounded by the deadline (``SET LOCAL
statement_timeout``), and a direct first connection so a wrong password or a replica is reported
as such, not as a pool timeout.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from paxm_core import Deadline, DeadlineExceeded, ProviderError
from paxm_provider_postgres.settings import Settings

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

__all__ = ["Database", "describe_error"]

#: Floor for a statement timeout: a few milliseconds left must still fail fast, not be "0 = no limit".
_MIN_STATEMENT_MS = 5


def describe_error(settings: Settings, exc: BaseException) -> tuple[str, bool]:
    """A one-line, secret-free explanation of a psycopg error and whether a retry may help."""
    import psycopg
    from psycopg import errors

    text = settings.redact(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)
    if isinstance(exc, errors.ReadOnlySqlTransaction):
        return (
            "the server is read-only (a standby replica, or default_transaction_read_only is on); "
            "point `dsn` at the primary to write",
            False,
        )
    if isinstance(exc, errors.InsufficientPrivilege):
        return (
            f"permission denied ({text}); grant the role access to the paxm schema (docs/providers/postgres.md)",
            False,
        )
    if isinstance(exc, errors.SerializationFailure | errors.DeadlockDetected):
        return f"concurrent write conflict, retry ({text})", True
    if isinstance(exc, psycopg.OperationalError):
        lowered = text.lower()
        if "password authentication failed" in lowered or "authentication failed" in lowered:
            return f"authentication failed: {text} (check `user` and the `password` env reference)", False
        if "no password supplied" in lowered:
            return "authentication failed: the server wants a password; set `password: env:NAME`", False
        if "does not exist" in lowered:
            return f"{text} (check `dbname`/`user`)", False
        return f"cannot reach the PostgreSQL server: {text}", True
    return text, False


class Database:
    """The pool of one provider instance, opened (and migrated) on first use."""

    def __init__(self, provider: str, settings: Settings) -> None:
        self._provider = provider
        self.settings = settings
        self._lock = threading.Lock()
        self._pool: ConnectionPool[psycopg.Connection[Any]] | None = None
        self._closed = False
        #: Set by tests: every recall-path statement is appended as ``(sql, params)``.
        self.statement_log: list[tuple[str, Any]] | None = None
        self.read_only = False

    def _fail(self, op: str, exc: BaseException) -> ProviderError:
        message, retryable = describe_error(self.settings, exc)
        return ProviderError(self._provider, op, message, retryable=retryable)

    def migrate(self, op: str, deadline: Deadline) -> tuple[bool, str]:
        """Connect directly and apply migrations: (whether paxm's tables existed before, the database name)."""
        import psycopg

        from paxm_provider_postgres.migrations import migrate

        timeout = deadline.timeout(self.settings.timeout) or self.settings.timeout
        try:
            with psycopg.connect(self.settings.conninfo(connect_timeout=timeout), autocommit=True) as conn:
                row = conn.execute(
                    "SELECT to_regclass(%s) IS NOT NULL, current_database()",
                    (f'"{self.settings.schema}".paxm_migrations',),
                ).fetchone()
                self.read_only = migrate(conn, self.settings.schema, deadline)
        except psycopg.Error as exc:
            raise self._fail(op, exc) from None
        return bool(row and row[0]), str(row[1]) if row else "?"

    def _open(self, op: str, deadline: Deadline) -> ConnectionPool[psycopg.Connection[Any]]:
        from psycopg_pool import ConnectionPool

        self.migrate(op, deadline)
        pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
            self.settings.conninfo(connect_timeout=self.settings.timeout),
            min_size=1,
            max_size=max(1, self.settings.pool_size),
            open=False,
            name=f"paxm-{self._provider}",
            kwargs={"autocommit": False},
            # A connection that sat idle this long is dropped; a hook process is short-lived anyway.
            max_idle=120.0,
        )
        pool.open(wait=False)
        return pool

    @contextmanager
    def transaction(self, op: str, deadline: Deadline) -> Iterator[psycopg.Connection[Any]]:
        """Yield a pooled connection inside one transaction bounded by ``deadline``."""
        import psycopg
        from psycopg_pool import PoolTimeout

        deadline.check(f"{self._provider} {op}")
        with self._lock:
            if self._closed:
                raise ProviderError(self._provider, op, "postgres provider is closed")
            if self._pool is None:
                self._pool = self._open(op, deadline)
            pool = self._pool
        deadline.check(f"{self._provider} {op}")
        wait = deadline.timeout(self.settings.timeout) or self.settings.timeout
        try:
            with pool.connection(timeout=max(0.001, wait)) as conn:
                deadline.check(f"{self._provider} {op}")
                left = deadline.remaining()
                limit = self.settings.timeout if math.isinf(left) else left
                with conn.transaction():
                    conn.execute(
                        "SELECT set_config('statement_timeout', %s, true)",
                        (f"{max(_MIN_STATEMENT_MS, int(limit * 1000))}ms",),
                    )
                    yield conn
        except PoolTimeout:
            if deadline.expired():
                raise DeadlineExceeded(
                    f"{self._provider} {op}: deadline exceeded waiting for a connection", cancelled=deadline.cancelled
                ) from None
            raise ProviderError(
                self._provider,
                op,
                f"no free connection within {wait:.1f}s (pool_size {self.settings.pool_size})",
                retryable=True,
            ) from None
        except psycopg.errors.QueryCanceled:
            raise DeadlineExceeded(f"{self._provider} {op}: deadline exceeded", cancelled=deadline.cancelled) from None
        except psycopg.Error as exc:
            raise self._fail(op, exc) from None

    def log(self, sql: str, params: Any) -> None:
        """Record a recall-path statement when a test asked for it."""
        if self.statement_log is not None:
            self.statement_log.append((sql, params))

    def close(self) -> None:
        """Close the pool; later operations fail with a clear error."""
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close(timeout=2.0)
