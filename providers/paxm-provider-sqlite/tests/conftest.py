"""Core test fixtures.  Every test runs with HOME/XDG/PAXM_* pointed at a temp dir."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from paxm_contracttest.fakes import isolated_home, paxm_unset_env  # noqa: F401  (autouse: no test touches the real home)
from paxm_core import Deadline, ProviderConfig
from paxm_provider_sqlite.provider import SQLiteProvider


@pytest.fixture
def provider(tmp_path: Path) -> Iterator[SQLiteProvider]:
    """A SQLite provider on a fresh file, closed after the test (a module may define its own)."""
    prov = SQLiteProvider("sqlite", ProviderConfig(path=str(tmp_path / "m.sqlite")))
    yield prov
    prov.close()


#: a plan step that reads the whole memories table (``m`` is its alias in the search SQL)
_FULL_SCAN = re.compile(r"^SCAN (m|memories)\b(?! USING (COVERING )?INDEX)")

#: ``(provider, run, pick)``: the statements ``run()`` makes that ``pick`` selects, planned without a full scan
NoFullScan = Callable[[SQLiteProvider, Callable[[], object], Callable[[str], bool]], None]


@pytest.fixture
def assert_no_full_scan() -> NoFullScan:
    """Runs a search with SQLite's statement trace on; every statement picked (at least one)
    must plan without scanning the whole memories table."""

    def check(provider: SQLiteProvider, run: Callable[[], object], pick: Callable[[str], bool]) -> None:
        statements: list[str] = []
        provider.health(Deadline.none())
        conn = provider._db._conn
        assert conn is not None
        conn.set_trace_callback(statements.append)
        try:
            run()
        finally:
            conn.set_trace_callback(None)
        picked = [s for s in statements if pick(s)]
        assert picked
        checker = sqlite3.connect(provider.path)
        try:
            for sql in picked:
                plan = [row[3] for row in checker.execute("EXPLAIN QUERY PLAN " + sql)]
                assert not any(_FULL_SCAN.match(step) for step in plan), (sql, plan)
        finally:
            checker.close()

    return check
