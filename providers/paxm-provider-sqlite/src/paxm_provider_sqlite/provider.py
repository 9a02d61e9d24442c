"""``SQLiteProvider``: paxm's default memory store (type ``sqlite``)."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from paxm_core import (
    Deadline,
    MemoryHit,
    MemoryItem,
    MemoryRef,
    ProviderConfig,
    ProviderError,
    SearchQuery,
    normalize_tier,
)
from paxm_core.api.protocols import (
    CAP_ATTRIBUTION,
    CAP_DEADLINE_BOUND,
    CAP_DELETE,
    CAP_LARGE_BATCHES,
    CAP_PUT_BATCH,
)
from paxm_core.api.timefmt import utcnow
from paxm_provider_sqlite._db import Database, immediate
from paxm_provider_sqlite.attribution import (
    FINGERPRINT,
    FingerprintConflict,
    apply_hit_attribution,
    merge_lifecycle,
    prepare_metadata,
    stored_rows,
)
from paxm_provider_sqlite.expiry import advance_horizon
from paxm_provider_sqlite.records import encode_metadata
from paxm_provider_sqlite.retrieval.analyzer import IndexedText, index_text
from paxm_provider_sqlite.retrieval.excerpt import excerpt_candidates
from paxm_provider_sqlite.retrieval.model import Request, Trace
from paxm_provider_sqlite.retrieval.search import search
from paxm_provider_sqlite.timestamps import stamp

__all__ = ["SQLiteProvider", "store_path"]

_CLEANUP_MAX = 500
_CAPABILITIES = frozenset({CAP_PUT_BATCH, CAP_DELETE, CAP_ATTRIBUTION, CAP_DEADLINE_BOUND, CAP_LARGE_BATCHES})

#: The upsert parameters of one row, in ``_UPSERT``'s column order.
_Row = tuple[str | int, ...]

_UPSERT = """
INSERT INTO memories(id, text, source, metadata_json, created_at, updated_at, tier, expires_at, terms, extras, nterms)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT(id) DO UPDATE SET
  text = excluded.text,
  terms = excluded.terms,
  extras = excluded.extras,
  nterms = excluded.nterms,
  source = excluded.source,
  metadata_json = excluded.metadata_json,
  updated_at = excluded.updated_at,
  tier = excluded.tier,
  expires_at = excluded.expires_at
"""


def store_path(configured: str) -> Path:
    """The database file of a ``path`` setting: ``~`` expanded; empty is upstream's default under the XDG data dir."""
    raw = configured.strip()
    if raw:
        return Path(os.path.expanduser(raw))
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "paxm" / "memory.sqlite"


class SQLiteProvider:
    """A local SQLite database with an FTS5 term index; thread-safe, one connection per instance.

    :param name: the instance name stamped on refs and hits.
    :param config: ``path`` is the database file (``~`` expanded; empty = XDG default).
    """

    def __init__(self, name: str, config: ProviderConfig | None = None) -> None:
        if not name.strip():
            raise ProviderError("", "open", "sqlite provider name is required")
        self._name = name
        self._db = Database(name, store_path(config.path if config is not None else ""))
        self.last_trace: Trace | None = None

    @property
    def name(self) -> str:
        """The configured instance name."""
        return self._name

    @property
    def path(self) -> Path:
        """The database file."""
        return self._db.path

    def capabilities(self) -> frozenset[str]:
        """Batch writes, delete, attribution, ``deadline_bound`` (every wait and statement ends with
        the deadline) and ``large_batches`` (a batch costs per memory, not per call)."""
        return _CAPABILITIES

    def preserve_turn_boundaries(self) -> bool:
        """A captured turn is stored as one memory (long ones are excerpted at recall)."""
        return True

    def health(self, deadline: Deadline) -> None:
        """Open (and migrate) the database and run a trivial query."""
        with self._db.session("health", deadline) as conn:
            conn.execute("SELECT count(*) FROM _paxm_migrations").fetchone()

    def put(self, item: MemoryItem, deadline: Deadline) -> MemoryRef:
        """Store one memory (an upsert on its id)."""
        return self.put_batch([item], deadline)[0]

    def put_batch(self, items: Sequence[MemoryItem], deadline: Deadline) -> list[MemoryRef]:
        """Store ``items`` in one transaction, all or nothing, refs in item order (everything that
        needs no database is computed before the write lock is taken)."""
        if not items:
            return []
        for index, item in enumerate(items):
            if not item.text.strip():
                raise ProviderError(self._name, "put", f"memory text is required (item {index})")
        now = utcnow()
        now_text = stamp(now)
        ids: list[str] = []
        metas: list[dict[str, str]] = []
        rows: list[_Row] = []
        # Only ids of fingerprinted (LTM) items ever need the stored row (see merge_lifecycle).
        fingerprinted: set[str] = set()
        # a batch often repeats a text (re-delivered or re-observed): analyse each distinct one once
        analysed: dict[str, IndexedText] = {}
        for item in items:
            item_id = item.id.strip() or os.urandom(16).hex()  # secrets.token_hex's source, without hmac/random
            created = item.created_at or now
            meta = prepare_metadata(item)
            text = item.text
            indexed = analysed.get(text)
            if indexed is None:
                indexed = analysed[text] = index_text(text)
            if meta.get(FINGERPRINT, "").strip():
                fingerprinted.add(item_id)
                encoded = ""  # encoded once merged, in _consolidate
            else:
                encoded = encode_metadata(meta)
            ids.append(item_id)
            metas.append(meta)
            rows.append(
                (
                    item_id,
                    text,
                    item.source,
                    encoded,
                    stamp(created),
                    now_text,
                    normalize_tier(item.tier),
                    stamp(item.expires_at) if item.expires_at is not None else "",
                    indexed.terms,
                    indexed.extras,
                    indexed.unique,
                )
            )
        # Every row under such an id is merged in batch order, fingerprinted or not, so a batch
        # consolidates (or conflicts) exactly as the same items put one at a time would.
        pending: list[tuple[int, str, dict[str, str], datetime]] = [
            (index, item_id, metas[index], items[index].created_at or now)
            for index, item_id in enumerate(ids)
            if item_id in fingerprinted
        ]
        with self._db.session("put", deadline) as conn:
            try:
                with immediate(conn):
                    if pending:
                        self._consolidate(stored_rows(conn, (p[1] for p in pending)), pending, rows)
                    conn.executemany(_UPSERT, rows)
                    self._write_sidecars(conn, ids, deadline)
            except FingerprintConflict as exc:
                raise ProviderError(self._name, "put", str(exc)) from exc
        name = self._name
        return [MemoryRef(name, item_id) for item_id in ids]

    def _write_sidecars(self, conn: sqlite3.Connection, ids: list[str], deadline: Deadline) -> None:
        """A subclass's rows for the memories ``ids``, in the put's transaction (an error rolls it back)."""

    @staticmethod
    def _consolidate(
        stored: dict[str, tuple[dict[str, str], str]],
        pending: list[tuple[int, str, dict[str, str], datetime]],
        rows: list[_Row],
    ) -> None:
        """Fill in the fingerprinted rows' metadata, consolidating LTM re-observations as one-by-one writes would.

        ``stored`` is kept current as rows are merged, so an id repeated within the batch
        merges into what the batch wrote before it, exactly as sequential ``put`` calls do.
        """
        for index, item_id, meta, created in pending:
            previous = stored.get(item_id)
            meta = merge_lifecycle(previous, item_id, meta, created)
            row = rows[index]
            # an upsert keeps the first row's created_at
            stored[item_id] = (meta, previous[1] if previous is not None else str(row[4]))
            rows[index] = (*row[:3], encode_metadata(meta), *row[4:])

    def search(self, query: SearchQuery, deadline: Deadline) -> list[MemoryHit]:
        """Recall memories for ``query.text``; see ``docs/sqlite-provider.md`` for the pipeline.

        ``query.metadata["workspace"]`` (trusted runtime context) hides other workspaces'
        memories; unscoped memories stay visible.  ``query.filters`` are exact metadata matches.
        """
        request = Request.of(query)
        trace = Trace()
        with self._db.session("search", deadline) as conn:
            found = search(conn, request, deadline, trace)
        # Excerpting is pure CPU work on the loaded rows: done after releasing the connection.
        found = excerpt_candidates(request.text, found)
        self.last_trace = trace
        return [apply_hit_attribution(hit.to_hit(self._name)) for hit in found]

    def delete(self, ref: MemoryRef, deadline: Deadline) -> bool:
        """Delete the memory ``ref.id`` (its index and sidecar rows go by trigger); ``False`` if there was none."""
        if not ref.id.strip():
            raise ProviderError(self._name, "delete", "delete needs a memory id")
        with self._db.session("delete", deadline) as conn:
            with immediate(conn):
                cursor = conn.execute("DELETE FROM memories WHERE id = ?", (ref.id,))
        return cursor.rowcount > 0

    def cleanup_expired(self, limit: int, deadline: Deadline) -> int:
        """Delete up to ``limit`` (clamped to 1..500) memories expired by a confirmed clock reading
        (``expiry.py``), oldest expiry first."""
        if limit <= 0 or limit > _CLEANUP_MAX:
            limit = _CLEANUP_MAX
        with self._db.session("cleanup_expired", deadline) as conn:
            with immediate(conn):
                horizon = advance_horizon(conn, utcnow())
                cursor = conn.execute(
                    """DELETE FROM memories WHERE rowid IN (
                         SELECT rowid FROM memories WHERE expires_at != '' AND expires_at <= ?
                         ORDER BY expires_at LIMIT ?)""",
                    (horizon, limit),
                )
            return max(cursor.rowcount, 0)

    def close(self) -> None:
        """Close the connection; later calls raise :class:`ProviderError`."""
        self._db.close()
