"""``PostgresProvider``: one shared PostgreSQL store for a team (type ``postgres``)."""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

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
from paxm_core.api.timefmt import utcnow
from paxm_provider_postgres.db import Database
from paxm_provider_postgres.search import RAW_SCORE_KIND, STAMP, search, tsvector_text
from paxm_provider_postgres.settings import Settings, validate
from paxm_provider_sqlite.attribution import (
    FINGERPRINT,
    FIRST_SEEN,
    LAST_SEEN,
    OCCURRENCES,
    apply_hit_attribution,
    occurrences,
    prepare_metadata,
)
from paxm_provider_sqlite.retrieval.analyzer import index_text
from paxm_provider_sqlite.retrieval.excerpt import excerpt_candidates
from paxm_provider_sqlite.retrieval.model import Request, Trace
from paxm_provider_sqlite.timestamps import parse_stamp

__all__ = ["PostgresProvider"]

_CLEANUP_MAX = 500
EVAL_PREFIX = "paxm-eval-"

# One statement per row: a plain replace for ordinary memories; for LTM re-observations (same
# id, same fingerprint) the counters are merged by the server under the row lock, so writers on
# different machines never lose an occurrence.  A different fingerprint matches no row (the
# WHERE), RETURNING is empty, and the write fails; so does reusing the id of a row in a scope
# this config cannot see (another user's personal memory is never overwritten).
_FIRST_SEEN_SQL = (
    "LEAST(COALESCE(m.first_seen_at, m.created_at), COALESCE(excluded.first_seen_at, m.first_seen_at, m.created_at))"
)
_LAST_SEEN_SQL = (
    "GREATEST(COALESCE(m.last_seen_at, m.created_at), COALESCE(excluded.last_seen_at, excluded.created_at))"
)
_UPSERT = f"""
INSERT INTO {{t}} AS m (id, text, source, metadata, scope, writer, tier, created_at, updated_at, expires_at,
                       fingerprint, occurrences, first_seen_at, last_seen_at, terms, extras, nterms, tsv)
VALUES (%(id)s, %(text)s, %(source)s, %(metadata)s::jsonb, %(scope)s, %(writer)s, %(tier)s, %(created)s, now(),
        %(expires)s, %(fp)s, %(occ)s, %(first)s, %(last)s, %(terms)s, %(extras)s, %(nterms)s, %(tsv)s::tsvector)
ON CONFLICT (id) DO UPDATE SET
  text = excluded.text, source = excluded.source, scope = excluded.scope, writer = excluded.writer,
  tier = excluded.tier, updated_at = now(), expires_at = excluded.expires_at,
  terms = excluded.terms, extras = excluded.extras, nterms = excluded.nterms, tsv = excluded.tsv,
  occurrences = CASE WHEN excluded.fingerprint = '' THEN excluded.occurrences
                     ELSE m.occurrences + excluded.occurrences END,
  first_seen_at = CASE WHEN excluded.fingerprint = '' THEN excluded.first_seen_at ELSE {_FIRST_SEEN_SQL} END,
  last_seen_at = CASE WHEN excluded.fingerprint = '' THEN excluded.last_seen_at ELSE {_LAST_SEEN_SQL} END,
  fingerprint = excluded.fingerprint,
  metadata = CASE WHEN excluded.fingerprint = '' THEN excluded.metadata
    ELSE m.metadata || excluded.metadata || jsonb_build_object(
      '{OCCURRENCES}', (m.occurrences + excluded.occurrences)::text,
      '{FIRST_SEEN}', {STAMP.format(_FIRST_SEEN_SQL)},
      '{LAST_SEEN}', {STAMP.format(_LAST_SEEN_SQL)})
  END
WHERE (excluded.fingerprint = '' OR m.fingerprint = excluded.fingerprint) AND m.scope = ANY(%(visible)s::text[])
RETURNING m.id
"""


def _aware(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


class PostgresProvider:
    """A PostgreSQL store shared by a team; recall sees only the user's and its ``teams``' scopes
    (a filter, not authorization: ``docs/providers/postgres.md`` has row-level security)."""

    def __init__(self, name: str, config: ProviderConfig | None = None) -> None:
        if not name.strip():
            raise ProviderError("", "open", "postgres provider name is required")
        config = config or ProviderConfig(type="postgres")
        problems = validate(config)
        if problems:
            raise ProviderError(name, "open", "; ".join(problems))
        self._name = name
        self.settings = Settings.from_config(config)
        self._db = Database(name, self.settings)
        self.last_trace: Trace | None = None

    @property
    def name(self) -> str:
        """The configured instance name."""
        return self._name

    @property
    def database(self) -> Database:
        """The connection layer (tests read its statement log)."""
        return self._db

    @property
    def _table(self) -> str:
        return f'"{self.settings.schema}".paxm_memories'

    def preserve_turn_boundaries(self) -> bool:
        """A captured turn is stored as one memory (long ones are excerpted at recall)."""
        return True

    # -- setup and health -----------------------------------------------------------------

    def ensure_target(self, deadline: Deadline) -> tuple[str, str]:
        """Connect, apply migrations, and report whether paxm's tables were ``created`` or already ``exist``."""
        from paxm_provider_postgres.migrations import LATEST

        deadline.check(f"{self._name} ensure_target")
        existed, db = self._db.migrate("ensure_target", deadline)
        return f"{db}/{self.settings.schema} (schema v{LATEST})", "exists" if existed else "created"

    def health(self, deadline: Deadline) -> None:
        """Connect (migrating on first use) and read the schema version."""
        with self._db.transaction("health", deadline) as conn:
            conn.execute(f'SELECT max(version) FROM "{self.settings.schema}".paxm_migrations').fetchone()

    # -- writes ---------------------------------------------------------------------------

    def _scope_of(self, item: MemoryItem, meta: dict[str, str]) -> str:
        kind = meta.get("paxm_scope_type", "").strip()
        ident = meta.get("paxm_scope_id", "").strip()
        if not kind or not ident:
            # Unscoped writes belong to the writer, never to everyone.
            meta["paxm_scope_type"], meta["paxm_scope_id"] = "personal", self.settings.user_id
            return f"personal:{self.settings.user_id}"
        if kind == "personal" and ident != self.settings.user_id:
            raise ProviderError(
                self._name,
                "put",
                f"cannot write into another user's personal scope ({ident!r}); this config is "
                f"for user {self.settings.user_id!r}",
            )
        return f"{kind}:{ident}"

    def _row(self, item: MemoryItem, now: datetime) -> dict[str, Any]:
        meta = prepare_metadata(item)
        scope = self._scope_of(item, meta)
        indexed = index_text(item.text)
        fingerprint = meta.get(FINGERPRINT, "").strip()
        return {
            "id": item.id.strip() or secrets.token_hex(16),
            "text": item.text,
            "source": item.source,
            "metadata": json.dumps(meta, ensure_ascii=False),
            "scope": scope,
            "writer": self.settings.user_id,
            "tier": normalize_tier(item.tier),
            "created": _aware(item.created_at or now),
            "expires": _aware(item.expires_at) if item.expires_at is not None else None,
            "fp": fingerprint,
            "occ": occurrences(meta) if fingerprint else 1,
            "first": parse_stamp(meta.get(FIRST_SEEN, "").strip()) if fingerprint else None,
            "last": parse_stamp(meta.get(LAST_SEEN, "").strip()) if fingerprint else None,
            "terms": indexed.terms,
            "extras": indexed.extras,
            "nterms": indexed.unique,
            "tsv": tsvector_text(indexed),
        }

    def put(self, item: MemoryItem, deadline: Deadline) -> MemoryRef:
        """Store one memory (idempotent on its id)."""
        return self.put_batch([item], deadline)[0]

    def put_batch(self, items: Sequence[MemoryItem], deadline: Deadline) -> list[MemoryRef]:
        """Store ``items`` in one transaction; all or nothing; refs in item order.

        Rows are written in item order (insertion order breaks ranking ties, as in SQLite) after
        taking one advisory lock per id in sorted order, so concurrent batches sharing ids, new
        or existing, wait for each other instead of deadlocking.  A retried delivery of the same
        ids updates instead of duplicating.
        """
        if not items:
            return []
        for index, item in enumerate(items):
            if not item.text.strip():
                raise ProviderError(self._name, "put", f"memory text is required (item {index})")
        deadline.check(f"{self._name} put")
        now = utcnow()
        rows = [self._row(item, now) for item in items]
        sql = _UPSERT.format(t=self._table)
        with self._db.transaction("put", deadline) as conn:
            conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(id, 4177)) FROM unnest(%s::text[]) AS id ORDER BY id",
                (sorted({str(r["id"]) for r in rows}),),
            )
            visible = self.settings.scopes()
            for row in rows:
                done = conn.execute(sql, {**row, "visible": visible}).fetchone()
                if done is None:
                    found = conn.execute(
                        f"SELECT scope = ANY(%s) FROM {self._table} WHERE id = %s", (visible, row["id"])
                    ).fetchone()
                    reason = (
                        "fingerprint conflict" if found and found[0] else "id is taken in a scope this user cannot see"
                    )
                    raise ProviderError(self._name, "put", f"postgres memory {row['id']!r}: {reason}")
        return [MemoryRef(self._name, str(row["id"])) for row in rows]

    def delete(self, ref: MemoryRef, deadline: Deadline) -> bool:
        """Delete one memory of a visible scope; ``False`` if there was none (not an error)."""
        with self._db.transaction("delete", deadline) as conn:
            cursor = conn.execute(
                f"DELETE FROM {self._table} WHERE id = %s AND scope = ANY(%s)", (ref.id, self.settings.scopes())
            )
            return cursor.rowcount > 0

    def cleanup_expired(self, limit: int, deadline: Deadline) -> int:
        """Delete up to ``limit`` (clamped to 1..500) expired memories, oldest expiry first.

        ``SKIP LOCKED`` lets several machines clean up at once without waiting on each other.
        """
        if limit <= 0 or limit > _CLEANUP_MAX:
            limit = _CLEANUP_MAX
        with self._db.transaction("cleanup_expired", deadline) as conn:
            cursor = conn.execute(
                f"""DELETE FROM {self._table} WHERE id IN (
                      SELECT id FROM {self._table} WHERE expires_at IS NOT NULL AND expires_at <= now()
                      ORDER BY expires_at LIMIT %s FOR UPDATE SKIP LOCKED)""",
                (limit,),
            )
            return max(cursor.rowcount, 0)

    def cleanup_eval_scope(self, deadline: Deadline) -> None:
        """Remove this user's eval memories (ids ``paxm-eval-*``) left by ``paxm eval``."""
        with self._db.transaction("cleanup_eval_scope", deadline) as conn:
            conn.execute(
                f"DELETE FROM {self._table} WHERE id LIKE %s AND writer = %s",
                (EVAL_PREFIX + "%", self.settings.user_id),
            )

    # -- recall ---------------------------------------------------------------------------

    def search(self, query: SearchQuery, deadline: Deadline) -> list[MemoryHit]:
        """Recall from the user's personal scope and the configured teams only.

        ``query.metadata["workspace"]`` narrows to that workspace (plus unscoped memories), as
        the SQLite provider does; nothing in the metadata can widen the visible scopes.
        """
        request = Request.of(query)
        trace = Trace()
        with self._db.transaction("search", deadline) as conn:
            found = search(conn, self._db, request, self.settings.scopes(), deadline, trace)
        self.last_trace = trace
        found = excerpt_candidates(request.text, found, label="postgres")
        return [apply_hit_attribution(hit.to_hit(self._name, RAW_SCORE_KIND)) for hit in found]

    def close(self) -> None:
        """Close the pool; later calls raise :class:`ProviderError`."""
        self._db.close()
