"""The durable capture queue: events -> episodes -> per-provider deliveries, in one SQLite file.

A hook is acknowledged once :meth:`CaptureQueue.append` has committed; delivery happens later
(:class:`~paxm_core.capture.worker.DeliveryWorker`).  Every event and episode payload carries a
SHA-256 that is checked whenever it is read; a mismatch quarantines the delivery (state
``dead``, error recorded) instead of sending altered text to a provider.

Deliveries are leased to a worker with ``lease_owner = "<pid>:<start time>.<nonce>"``.  When a
queue is opened, only ``delivering`` rows whose owner process is gone (exited, a zombie, or its
pid reused: :mod:`paxm_core.processes`) return to ``retry``, so ``paxm queue flush`` next to a
running daemon never re-sends in-flight episodes.
"""

from __future__ import annotations

import itertools
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import paxm_core.capture._inbox as _inbox
import paxm_core.capture._spool as _spool
from paxm_core.api.errors import QueueError
from paxm_core.capture._inbox import each_in, sha256_hex, utc_stamp
from paxm_core.capture.episode import (
    canonical_json,
    decode_event_payload,
    envelope_json,
    episode_items,
    event_payload_json,
    is_plain_envelope,
    sequence_integrity,
)
from paxm_core.capture.model import (
    AppendResult,
    CaptureEvent,
    DeadDelivery,
    DeliveryClaim,
    DeliveryOutcome,
    DrainReport,
    InboxEntry,
    QueueStatus,
)
from paxm_core.processes import pid_alive, start_time

if TYPE_CHECKING:
    from paxm_core.capture.forget import QueuedCopy

__all__ = ["DEFAULT_MAX_ATTEMPTS", "DEFAULT_RETRY_MIN", "MAX_BACKOFF", "CaptureQueue", "Routes"]

DEFAULT_RETRY_MIN = 1.0
DEFAULT_MAX_ATTEMPTS = 10
MAX_BACKOFF = 64.0
MAX_ERROR_CHARS = 1000
#: due rows a claim reads at least: a small claim (a batch of one) looks past sessions whose
#: earlier episodes are leased or waiting for a retry, as far as this many rows
CLAIM_WINDOW = 64
NO_PROVIDER = "no write-profile provider for profile(s)"

#: write profile -> provider instance names (a mapping or a function).
Routes = Mapping[str, Iterable[str]] | Callable[[str], Iterable[str]]

# Lease tokens of queue objects open in this process; a lease whose pid is ours but whose
# token is not live belongs to a closed queue and may be recovered.
_LIVE_LEASES: set[str] = set()
_LIVE_LOCK = threading.Lock()


def _epoch(stamp: str) -> float:
    return datetime.fromisoformat(stamp).timestamp()  # utc_stamp() text


#: an event validated and encoded for the queue before its transaction starts (by a backfill
#: worker process, or by the appender itself): ``(event_id, session_key, profile, terminal,
#: source_sequence, final_sequence, payload text, its sha256, the item's text, captured_at as
#: epoch seconds or None, bytes truncated)``.
EncodedEvent = tuple[str, str, str, bool, int | None, int | None, str, str, str, float | None, int]


def encode_event(event: CaptureEvent) -> EncodedEvent:
    """Validate and encode ``event`` for :meth:`CaptureQueue.append_many`; raises :class:`QueueError`."""
    if not event.event_id.strip():
        raise QueueError("capture event id is required")
    if not event.session_key.strip():
        raise QueueError("capture event session key is required")
    if not event.item.text.strip() and not event.terminal:
        # only a turn end may be empty: a Stop without assistant text still ends its turn
        raise QueueError("capture event text is required")
    source = _positive_int(event.source_sequence, "sequence")
    final = _positive_int(event.final_sequence, "final_sequence")
    profile = event.profile or "default"
    payload = event_payload_json(event.item, profile)
    return (
        event.event_id,
        event.session_key,
        profile,
        bool(event.terminal),
        source,
        final,
        payload,
        sha256_hex(payload.encode()),
        event.item.text,
        event.captured_at.timestamp() if event.captured_at is not None else None,
        event.truncated_bytes,
    )


def _positive_int(value: object, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise QueueError(f"capture event {what} must be a positive integer")
    return value


_INSERT_EPISODE = (
    "INSERT INTO capture_episodes(episode_id, session_key, first_sequence, last_sequence, complete,"
    " payload_json, payload_hash, state, error, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_DELIVERY = (
    "INSERT INTO capture_deliveries(episode_id, provider, profiles_json, state, last_error, created_at,"
    " session_key, first_sequence, episode_created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_EVENT = (
    "INSERT INTO capture_events(event_id, session_key, sequence, source_sequence, final_sequence, terminal,"
    " payload_json, payload_hash, created_at, episode_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


class _SessionAppend:
    """One session's state while a batch is appended."""

    __slots__ = ("last", "open", "stored_open", "written")

    def __init__(self, last: int, stored_open: list[Any]) -> None:
        #: the session's last sequence so far
        self.last = last
        #: its open events, oldest first: those stored before the batch, then this batch's
        self.open: list[Any] = list(stored_open)
        #: the last sequence of the open events stored before the batch (0: none)
        self.stored_open = int(stored_open[-1][1]) if stored_open else 0
        #: this batch's open event rows, as they will be inserted (the seal sets their episode id)
        self.written: list[list[Any]] = []


class _AppendBatch:
    """What one append transaction has learnt so far, and the rows it will write."""

    __slots__ = ("decoded", "deliveries", "episodes", "event_rows", "existing", "sealed_stored", "sessions")

    def __init__(self, existing: dict[str, tuple[Any, ...]]) -> None:
        #: event id -> (sequence, session, hash, source, final, terminal): stored before, or by this batch
        self.existing = existing
        self.sessions: dict[str, _SessionAppend] = {}
        #: event id -> (item text, profile) of the events it wrote, consumed by the seal
        self.decoded: dict[str, tuple[str, str]] = {}
        self.event_rows: list[list[Any]] = []
        self.episodes: list[tuple[Any, ...]] = []
        self.deliveries: list[tuple[Any, ...]] = []
        #: (episode id, session, last sequence): events stored before the batch that it sealed
        self.sealed_stored: list[tuple[str, str, int]] = []


def _verified_items(
    episode_id: str,
    profiles_json: str,
    payload: str,
    digest: str,
    rows: list[Any],
) -> tuple[tuple[str, ...], list[Any], list[float]]:
    """``(profiles, items, times)`` of an episode's delivery, every checksum verified.

    ``rows``: the episode's events (payload_json, payload_hash, created_at) in sequence order.
    Raises ``ValueError`` on any mismatch.
    """
    if sha256_hex(payload.encode()) != digest:
        raise ValueError(f"capture episode {episode_id} envelope checksum mismatch")
    try:
        envelope = json.loads(payload)
        profiles = json.loads(profiles_json)
    except ValueError as exc:
        raise ValueError(f"capture episode {episode_id} payload is invalid: {exc}") from exc
    if not isinstance(profiles, list) or not all(isinstance(p, str) for p in profiles):
        raise ValueError(f"capture delivery route snapshot of {episode_id} is invalid")
    embedded = _check_embedded_events(episode_id, envelope, payload, rows)
    try:
        items = episode_items(envelope, profiles)
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"capture episode {episode_id} payload is invalid: {exc}") from exc
    if not items:
        raise ValueError(f"capture episode {episode_id} has no events for profiles {profiles}")
    wanted = set(profiles)
    times = [
        _epoch(created)
        for (_, _, created), event in zip(rows, embedded, strict=True)
        if not wanted or (event.get("profile") or "default") in wanted
    ]
    return tuple(profiles), items, times


def _scan_events(
    rows: Sequence[Sequence[Any]], decoded: dict[str, tuple[str, str]]
) -> tuple[list[str], list[str], set[str], set[str]]:
    """Verify and read the events an episode seals: ``(texts, corrupt, profiles, texted)``.

    ``texts``: each event's stored text (or a corrupt-event marker) for the envelope, which
    embeds them as they are (``envelope_json``), so sealing never encodes the events again;
    ``corrupt``: what was wrong with the events that failed their checks; ``profiles``: every
    readable event's profile; ``texted``: the profiles of the events with text to send.
    """
    texts: list[str] = []
    corrupt: list[str] = []
    profiles: set[str] = set()
    texted: set[str] = set()
    for event_id, _seq, _src, _fin, payload, digest, _created in rows:
        known = decoded.pop(event_id, None)
        if known is not None:
            # written by this very transaction from this dict: nothing to re-verify
            text, profile = known
        else:
            try:
                if sha256_hex(payload.encode()) != digest:
                    raise ValueError("payload checksum mismatch")
                decoded_item, profile = decode_event_payload(json.loads(payload))
                text = decoded_item.text
            except ValueError as exc:
                corrupt.append(f"capture event {event_id}: {exc}")
                texts.append(canonical_json({"corrupt_event": event_id}))
                continue
        texts.append(payload)
        profiles.add(profile)
        if text.strip():  # a bare turn-end marker seals, but there is nothing to send
            texted.add(profile)
    return texts, corrupt, profiles, texted


def _check_embedded_events(episode_id: str, envelope: Any, payload: str, rows: Sequence[Any]) -> list[Any]:
    """The envelope's embedded events, checked against the stored event ``rows`` (raises ``ValueError``)."""
    texts = [r[0] for r in rows]
    hashes = [r[1] for r in rows]
    for index, (text, digest) in enumerate(zip(texts, hashes, strict=True), 1):
        if sha256_hex(text.encode()) != digest:
            raise ValueError(f"capture episode {episode_id} event {index} checksum mismatch")
    embedded = envelope.get("events") if isinstance(envelope, dict) else None
    if not isinstance(embedded, list) or len(embedded) != len(rows):
        raise ValueError(f"capture episode {episode_id} event count mismatch")
    # each embedded copy must equal its stored row: in the queue's own splice of the row
    # texts (envelope_json) it is the row; otherwise (an older writer, a tampered copy) each
    # copy is parsed and compared
    fields = {k: v for k, v in envelope.items() if k != "events"}
    if not is_plain_envelope(envelope) or envelope_json(fields, texts) != payload:
        for index, (event, (event_payload, _, _)) in enumerate(zip(embedded, rows, strict=True), 1):
            try:
                same = json.loads(event_payload) == event
            except ValueError:
                same = False
            if not same:
                raise ValueError(f"capture episode {episode_id} event {index} does not match its checksum")
    if sha256_hex("\n".join(hashes).encode()) != envelope.get("checksum"):
        raise ValueError(f"capture episode {episode_id} checksum mismatch")
    return embedded


def _oldest(prefixes: list[list[Any]], rows: Sequence[Any], limit: int) -> list[list[Any]]:
    """The ``limit`` oldest rows (in ``rows``' claim order) of the takeable ``prefixes``.

    Each session's share stays a prefix of its own (it stops at its first row not taken).
    """
    rank = {row[5]: n for n, row in enumerate(rows)}  # by rowid
    kept = {row[5] for row in sorted((r for p in prefixes for r in p), key=lambda r: rank[r[5]])[:limit]}
    out: list[list[Any]] = []
    for prefix in prefixes:
        cut = list(itertools.takewhile(lambda r: r[5] in kept, prefix))
        if cut:
            out.append(cut)
    return out


class CaptureQueue:
    """Durable, crash-safe capture queue (SQLite WAL, one file).

    :param path: the queue file (created 0600 in a 0700 directory).
    :param routes: write profile -> provider names; decides the delivery rows of an episode.
    :param retry_min: first retry delay in seconds; doubles per attempt up to 64 s.
    :param max_attempts: attempts before a delivery is ``dead``.
    :param recover: reset ``delivering`` rows of dead owners to ``retry`` now (off for
        read-only uses such as ``paxm queue status``).
    :param clock: epoch-seconds clock (tests inject one).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        routes: Routes | None = None,
        retry_min: float = DEFAULT_RETRY_MIN,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        recover: bool = True,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = Path(path)
        self._routes = routes
        self.retry_min = retry_min if retry_min and retry_min > 0 else DEFAULT_RETRY_MIN
        self.max_attempts = max_attempts if max_attempts and max_attempts > 0 else DEFAULT_MAX_ATTEMPTS
        self._clock = clock
        self._lock = threading.RLock()
        try:
            self._conn = _inbox.connect(self.path)
        except (sqlite3.Error, OSError) as exc:
            raise self._error(exc) from exc
        # "<pid>:<start time>.<nonce>": the start time tells a reused pid from the owner
        # os.urandom is what secrets.token_hex reads: secrets would bring hmac and random onto the hook path
        self.lease = f"{os.getpid()}:{start_time()}.{os.urandom(6).hex()}"
        with _LIVE_LOCK:
            _LIVE_LEASES.add(self.lease)
        self._closed = False
        self._durable = False
        if routes is not None:
            from paxm_core.capture.upstream_queue import import_waiting_copies

            import_waiting_copies(self)  # upstream's queue found at this path and set aside, if any
        if recover:
            try:
                self.recover_delivering()
            except BaseException:
                self.close()
                raise

    # -- lifecycle ---------------------------------------------------------------------

    def close(self) -> None:
        """Close the database; this queue's leases become recoverable."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            with _LIVE_LOCK:
                _LIVE_LEASES.discard(self.lease)
            self._conn.close()

    def __enter__(self) -> CaptureQueue:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _tx(self, *, durable: bool = False) -> Iterator[sqlite3.Connection]:
        # ``durable``: an acknowledged commit (append) is fsynced (synchronous=FULL); losing a
        # bookkeeping commit (NORMAL) to power loss only causes an idempotent re-delivery
        with self._lock:
            if self._closed:
                raise QueueError("capture queue is closed")
            conn = self._conn
            try:
                if durable != self._durable:
                    conn.execute(f"PRAGMA synchronous = {'FULL' if durable else 'NORMAL'}")
                    self._durable = durable
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise self._error(exc) from exc
            try:
                yield conn
            except BaseException as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise self._error(exc) from exc
                raise
            else:
                try:
                    conn.execute("COMMIT")
                except sqlite3.Error as exc:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise QueueError(f"capture queue {self.path}: commit failed: {exc}") from exc

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._closed:
                raise QueueError("capture queue is closed")
            try:
                yield self._conn
            except sqlite3.Error as exc:
                raise self._error(exc) from exc

    def _error(self, exc: BaseException) -> QueueError:
        return QueueError(f"capture queue {self.path}: {exc}; {_inbox.sqlite_hint(str(exc))}")

    def recover_delivering(self) -> int:
        """Return leased deliveries whose owner is gone to ``retry``."""
        with self._tx() as conn:
            # through the partial index of undelivered rows (spelt with its condition so SQLite uses it)
            rows = conn.execute(
                "SELECT rowid, lease_owner FROM capture_deliveries INDEXED BY capture_deliveries_heads"
                " WHERE state IN ('pending', 'retry', 'delivering') AND state = 'delivering'"
            ).fetchall()
            stale = [(rowid,) for rowid, owner in rows if self._lease_dead(owner)]
            conn.executemany(
                "UPDATE capture_deliveries SET state = 'retry', next_attempt_at = '', lease_owner = ''"
                " WHERE rowid = ? AND state = 'delivering'",
                stale,
            )
        return len(stale)

    @staticmethod
    def _lease_dead(owner: str) -> bool:
        pid_text, _, rest = owner.partition(":")
        if not pid_text.isdigit():
            return True
        pid = int(pid_text)
        if pid == os.getpid():
            with _LIVE_LOCK:
                return owner not in _LIVE_LEASES
        started, dot, _ = rest.partition(".")  # leases written before the start time have none
        return not pid_alive(pid, started if dot else "")

    # -- append ------------------------------------------------------------------------

    def append(self, event: CaptureEvent) -> AppendResult:
        """Store one event durably; returns after COMMIT (a batch of one: :meth:`append_many`)."""
        return self.append_many([event])[0]

    # -- inbox -------------------------------------------------------------------------

    def drain_inbox(
        self, process: Callable[[InboxEntry], list[CaptureEvent]], *, include_failed: bool = False
    ) -> DrainReport:
        """Turn raw inbox entries (oldest first) into events, one transaction per entry.

        ``process`` renders an entry into zero or more events.  If it raises, or its events
        are rejected, the entry stays in the inbox as ``failed`` with the error (shown by
        ``paxm queue status``); ``include_failed`` tries such entries again.
        """
        # spooled events first: they belong in the inbox's order (by received_at)
        self.import_spool()
        states = ("pending", "failed") if include_failed else ("pending",)
        with self._reading() as conn:
            rows = conn.execute(
                f"SELECT event_id, target, event, raw, raw_hash, received_at, attempts FROM capture_inbox"
                f" WHERE state IN ({','.join('?' * len(states))}) ORDER BY received_at, rowid",
                states,
            ).fetchall()
        processed = produced = 0
        failed: list[tuple[str, str]] = []
        for event_id, target, name, raw, raw_hash, received, attempts in rows:
            raw = bytes(raw)
            try:
                if _inbox.raw_hash(target, name, raw) != raw_hash:
                    raise QueueError(f"capture inbox entry {event_id} raw payload checksum mismatch")
                entry = InboxEntry(event_id, target, name, raw, datetime.fromtimestamp(_epoch(received), UTC), attempts)
                events = process(entry)
                encoded = [encode_event(e) for e in events]
                with self._tx(durable=True) as conn:
                    if self._inbox_done(conn, event_id):
                        continue  # another process drained it meanwhile
                    self._append_batch_in_tx(conn, encoded, False)
                    conn.execute(
                        "UPDATE capture_inbox SET state = 'done', raw = X'', last_error = '', attempts = attempts + 1"
                        " WHERE event_id = ?",
                        (event_id,),
                    )
                processed += 1
                produced += len(events)
            except Exception as exc:  # any failure keeps the raw entry for the operator
                message = str(exc)[:MAX_ERROR_CHARS] or type(exc).__name__
                with self._tx() as conn:
                    if self._inbox_done(conn, event_id):
                        continue
                    conn.execute(
                        "UPDATE capture_inbox SET state = 'failed', last_error = ?, attempts = attempts + 1"
                        " WHERE event_id = ?",
                        (message, event_id),
                    )
                failed.append((event_id, message))
        return DrainReport(processed, produced, failed)

    def import_spool(self) -> int:
        """Move events from the spool (``_spool``) into the inbox; returns the number of new entries.

        Each taken spool file is imported in one transaction and deleted after its COMMIT; a
        crash in between imports it again, skipping event ids the inbox has.  A file that
        cannot be read is left for ``paxm config doctor`` to report.
        """
        added = 0
        for path in _spool.take(self.path):
            try:
                records, _torn = _spool.read_records(path)
            except OSError:  # gone (another process imported it meanwhile) or unreadable
                continue
            with self._tx(durable=True) as conn:
                # an event id the inbox has is skipped (the client's own rule)
                added += conn.executemany(
                    "INSERT OR IGNORE INTO capture_inbox(event_id, target, event, raw, raw_hash, received_at)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    [(e, t, n, raw, _inbox.raw_hash(t, n, raw), utc_stamp(at)) for e, t, n, raw, at in records],
                ).rowcount
            with suppress(FileNotFoundError):
                os.unlink(path)
        return added

    def spool_pending(self) -> bool:
        """Whether spooled events wait to be imported (a directory listing; no SQLite)."""
        return bool(_spool.spool_files(self.path))

    @staticmethod
    def _inbox_done(conn: sqlite3.Connection, event_id: str) -> bool:
        row = conn.execute("SELECT state FROM capture_inbox WHERE event_id = ?", (event_id,)).fetchone()
        return row is None or row[0] == "done"

    # -- sealing -----------------------------------------------------------------------

    def seal_session(self, session_key: str, *, complete: bool = False) -> str:
        """Seal a session's open events into one episode; returns its id (``""`` if none open)."""
        with self._tx() as conn:
            session = self._session_append(conn, session_key)
            if not session.open:
                return ""
            batch = _AppendBatch({})
            episode_id = self._seal_open(session_key, session, batch, complete=complete)
            self._write_batch(conn, batch)
            return episode_id

    def seal_expired(self, max_age: float) -> int:
        """Seal (incomplete) every session whose oldest open event is older than ``max_age`` s."""
        cutoff = utc_stamp(self._clock() - max_age)
        return self._seal_matching(
            "SELECT DISTINCT session_key FROM capture_events WHERE episode_id = '' AND created_at <= ?", (cutoff,)
        )

    def seal_all(self) -> int:
        """Seal every open session (flush, shutdown); returns the number of episodes made."""
        return self._seal_matching("SELECT DISTINCT session_key FROM capture_events WHERE episode_id = ''", ())

    def _seal_matching(self, query: str, args: tuple[str, ...]) -> int:
        with self._reading() as conn:
            keys = [r[0] for r in conn.execute(query, args).fetchall()]
        return sum(1 for key in keys if self.seal_session(key))

    def _providers_for(self, profiles: Iterable[str]) -> dict[str, set[str]]:
        """Provider -> the ones of ``profiles`` routed to it."""
        routes, owed = self._routes or {}, dict[str, set[str]]()
        for profile in profiles:
            for name in routes(profile) if callable(routes) else routes.get(profile, ()):
                if name and name.strip():
                    owed.setdefault(name.strip(), set()).add(profile)
        return owed

    def _episode_rows(
        self,
        session_key: str,
        rows: Sequence[Sequence[Any]],
        *,
        complete: bool,
        decoded: dict[str, tuple[str, str]],
    ) -> tuple[tuple[Any, ...], list[tuple[Any, ...]]]:
        """The ``capture_episodes`` row and ``capture_deliveries`` rows sealing ``rows``.

        ``rows``: a session's open events in sequence order, as (event_id, sequence,
        source_sequence, final_sequence, payload_json, payload_hash, created_at).
        """
        episode_id = "ep_" + os.urandom(16).hex()
        texts, corrupt, profiles, texted = _scan_events(rows, decoded)
        providers = self._providers_for(texted)
        missing, integrity = sequence_integrity(complete, [r[2] for r in rows], [r[3] for r in rows])
        if missing or integrity:
            complete = False
        fields = {
            "id": episode_id,
            "session_key": session_key,
            "complete": complete,
            "missing_sequences": missing,
            "integrity_errors": integrity,
            "checksum": sha256_hex("\n".join(r[5] for r in rows).encode()),
            "captured_at": min(r[6] for r in rows),
        }
        body = envelope_json(fields, texts)
        now = utc_stamp(self._clock())
        error = "; ".join(corrupt)
        if not error and not providers and texted:
            error = f"{NO_PROVIDER} {', '.join(sorted(profiles))}"
        # no provider and no error: only turn-end markers, nothing is owed to anyone
        state = "dead" if error else "pending" if providers else "delivered"
        first, last, body_hash = rows[0][1], rows[-1][1], sha256_hex(body.encode())
        episode = (episode_id, session_key, first, last, int(complete), body, body_hash, state, error, now)
        # a corrupt event is never delivered: its deliveries are born dead and visible
        state, last_error = ("dead", error) if corrupt else ("pending", "")
        deliveries = [
            (episode_id, name, json.dumps(sorted(p)), state, last_error, now, session_key, first, now)
            for name, p in sorted(providers.items())
        ]
        return episode, deliveries

    # -- batched path ------------------------------------------------------------------

    def append_many(
        self, events: Sequence[CaptureEvent | EncodedEvent], *, keep_existing: bool = False
    ) -> list[AppendResult]:
        """Store events in ONE durable transaction (all or nothing); returns after COMMIT.

        Same ``event_id`` with identical content is an idempotent duplicate; with different
        content it raises :class:`~paxm_core.api.errors.QueueError`.  A terminal event seals its
        session's open events in the same transaction.  Events may come already encoded by
        :func:`encode_event` (in a backfill worker).  Keep batches small (a few hundred events)
        so a live hook's append never waits long.  ``keep_existing``: an event whose id is
        already stored is a duplicate whatever its content (a resumed backfill re-renders what
        a killed run queued).
        """
        if not events:
            return []
        # validated before the transaction starts
        encoded = [e if isinstance(e, tuple) else encode_event(e) for e in events]
        with self._tx(durable=True) as conn:
            return self._append_batch_in_tx(conn, encoded, keep_existing)

    def _append_batch_in_tx(
        self, conn: sqlite3.Connection, encoded: Sequence[EncodedEvent], keep_existing: bool
    ) -> list[AppendResult]:
        """Append ``encoded`` in the caller's transaction; the one append path.

        Each session's sequence continues from its last stored one; a turn end seals its
        session's open events (stored before the batch, and the batch's own before it) into
        one episode, from memory: the batch's events are inserted already sealed, with three
        ``executemany`` statements at the end.
        """
        sql = (
            "SELECT event_id, sequence, session_key, payload_hash, source_sequence, final_sequence, terminal"
            " FROM capture_events WHERE event_id IN ({})"
        )
        # the events stored already: id -> (sequence, session, hash, source, final, terminal)
        batch = _AppendBatch({row[0]: tuple(row[1:]) for row in each_in(conn, sql, list({e[0] for e in encoded}))})
        results = [self._append_one(conn, event, batch, keep_existing) for event in encoded]
        truncated = sum(1 for e, r in zip(encoded, results, strict=True) if e[10] and not r.duplicate)
        if truncated:
            _inbox.add_counter(conn, "truncated_events", truncated, utc_stamp(self._clock()))
        self._write_batch(conn, batch)
        return results

    @staticmethod
    def _write_batch(conn: sqlite3.Connection, batch: _AppendBatch) -> None:
        """Insert the batch's rows and seal the stored open events it sealed."""
        conn.executemany(_INSERT_EVENT, batch.event_rows)
        conn.executemany(_INSERT_EPISODE, batch.episodes)
        conn.executemany(_INSERT_DELIVERY, batch.deliveries)
        conn.executemany(
            "UPDATE capture_events SET episode_id = ? WHERE session_key = ? AND episode_id = '' AND sequence <= ?",
            batch.sealed_stored,
        )

    def _append_one(
        self, conn: sqlite3.Connection, encoded: EncodedEvent, batch: _AppendBatch, keep_existing: bool
    ) -> AppendResult:
        """Add one event to ``batch``'s rows (or find it already stored); a turn end seals its session."""
        event_id, key, profile, terminal, source, final, payload, digest, text, captured, _cut = encoded
        row = batch.existing.get(event_id)
        if row is not None:
            # an event id seen before must be the same event (a retried hook); anything else is refused
            if not keep_existing and row[1:] != (key, digest, source, final, int(terminal)):
                raise QueueError(f"capture event {event_id} conflicts with an existing event")
            return AppendResult(event_id, row[0], duplicate=True)
        session = batch.sessions.get(key)
        if session is None:
            session = batch.sessions[key] = self._session_append(conn, key)
        session.last += 1
        sequence = session.last
        stamp = utc_stamp(captured if captured is not None else self._clock())
        stored = [event_id, key, sequence, source, final, int(terminal), payload, digest, stamp, ""]
        batch.event_rows.append(stored)
        batch.existing[event_id] = (sequence, key, digest, source, final, int(terminal))
        batch.decoded[event_id] = (text, profile)  # the seal needs only the text and profile
        session.open.append((event_id, sequence, source, final, payload, digest, stamp))
        session.written.append(stored)
        sealed = self._seal_open(key, session, batch) if terminal else ""
        return AppendResult(event_id, sequence, sealed_episode=sealed)

    @staticmethod
    def _session_append(conn: sqlite3.Connection, key: str) -> _SessionAppend:
        """Session ``key``'s last stored sequence and its stored open events."""
        (last,) = conn.execute(
            "SELECT COALESCE(MAX(sequence), 0) FROM capture_events WHERE session_key = ?", (key,)
        ).fetchone()
        stored_open = conn.execute(
            "SELECT event_id, sequence, source_sequence, final_sequence, payload_json, payload_hash, created_at"
            " FROM capture_events WHERE session_key = ? AND episode_id = '' ORDER BY sequence",
            (key,),
        ).fetchall()
        return _SessionAppend(int(last), stored_open)

    def _seal_open(self, key: str, session: _SessionAppend, batch: _AppendBatch, *, complete: bool = True) -> str:
        """Seal the session's open events (stored and the batch's) into one episode; returns its id."""
        episode, owed = self._episode_rows(key, session.open, complete=complete, decoded=batch.decoded)
        episode_id = str(episode[0])
        batch.episodes.append(episode)
        batch.deliveries.extend(owed)
        for row in session.written:
            row[9] = episode_id
        if session.stored_open:
            batch.sealed_stored.append((episode_id, key, session.stored_open))
        session.open, session.written, session.stored_open = [], [], 0
        return episode_id

    def claim_batch(self, provider: str, *, limit: int = 500) -> tuple[list[DeliveryClaim], list[DeliveryOutcome]]:
        """Lease up to ``limit`` due deliveries of ``provider``, several per session, in order.

        A session's consecutive undelivered episodes are taken together, oldest first, as long
        as no earlier one is leased, waiting for a retry or quarantined: the caller delivers
        them in one write and records them with :meth:`complete_many` (or :meth:`fail_many`), so
        per-session order holds.  A claim of one is a batch of one: it takes the oldest due
        episode whose session has nothing earlier in flight.  Integrity is verified here;
        failures are quarantined to ``dead`` and returned as outcomes.
        """
        stamp = utc_stamp(self._clock())
        quarantined: list[DeliveryOutcome] = []
        with self._tx() as conn:
            # the envelopes are read later, for the takeable episodes only
            rows = conn.execute(
                """SELECT d.episode_id, d.profiles_json, d.attempts, d.session_key, d.first_sequence, d.rowid
                   FROM capture_deliveries d INDEXED BY capture_deliveries_due
                   WHERE d.provider = ? AND d.state IN ('pending', 'retry')
                     AND (d.next_attempt_at = '' OR d.next_attempt_at <= ?)
                   ORDER BY d.episode_created_at, d.session_key, d.first_sequence LIMIT ?""",
                (provider, stamp, max(limit, CLAIM_WINDOW)),
            ).fetchall()
            # first which candidates may be taken (each session's undelivered prefix), and only
            # then their events: a claim behind in-flight batches (another stream, or the
            # worker's loop checking for free work) mostly finds every session blocked, and
            # must not read and verify hundreds of episodes only to lease none of them
            takeable = _oldest(self._takeable_prefixes(conn, provider, rows), rows, limit)
            claims = self._verify_prefixes(conn, provider, takeable, stamp, quarantined)
            # leased by rowid (read in this same transaction, so exact)
            lease = (
                "UPDATE capture_deliveries SET state = 'delivering', attempts = attempts + 1, lease_owner = ?,"
                " last_attempt_at = ?, first_attempt_at = CASE WHEN first_attempt_at = '' THEN ? ELSE first_attempt_at"
                " END WHERE rowid IN ({})"
            )
            for _ in each_in(conn, lease, [c.row for c in claims], self.lease, stamp, stamp):
                pass
        return claims, quarantined

    @staticmethod
    def _takeable_prefixes(conn: sqlite3.Connection, provider: str, rows: Sequence[Any]) -> list[list[Any]]:
        """Per session, the due candidates that are its undelivered prefix, in order.

        A candidate behind an earlier undelivered (not dead) episode, leased or not, would
        overtake it.
        """
        by_session: dict[str, list[Any]] = {}
        for row in rows:
            by_session.setdefault(row[3], []).append(row)
        takeable: list[list[Any]] = []
        for session_key, candidates in by_session.items():
            candidates.sort(key=lambda r: r[4])
            ahead = [
                r[0]
                for r in conn.execute(
                    "SELECT first_sequence FROM capture_deliveries INDEXED BY capture_deliveries_heads"
                    " WHERE provider = ? AND session_key = ? AND state IN ('pending', 'retry', 'delivering')"
                    " ORDER BY first_sequence LIMIT ?",
                    (provider, session_key, len(candidates)),
                )
            ]
            prefix = []
            for position, row in enumerate(candidates):
                if position >= len(ahead) or ahead[position] != row[4]:
                    break
                prefix.append(row)
            if prefix:
                takeable.append(prefix)
        return takeable

    def _verify_prefixes(
        self,
        conn: sqlite3.Connection,
        provider: str,
        takeable: list[list[Any]],
        stamp: str,
        quarantined: list[DeliveryOutcome],
    ) -> list[DeliveryClaim]:
        """Claims for the takeable prefixes, each verified; a session stops at its first failure."""
        wanted = [r[0] for prefix in takeable for r in prefix]
        envelopes = {
            episode_id: (payload, digest)
            for episode_id, payload, digest in each_in(
                conn,
                "SELECT episode_id, payload_json, payload_hash FROM capture_episodes WHERE episode_id IN ({})",
                wanted,
            )
        }
        # each episode's events (payload, hash, created), in sequence order
        event_rows: dict[str, list[Any]] = {e: [] for e in wanted}
        for episode_id, *row in each_in(
            conn,
            "SELECT episode_id, payload_json, payload_hash, created_at FROM capture_events"
            " WHERE episode_id IN ({}) ORDER BY episode_id, sequence",
            wanted,
        ):
            event_rows[episode_id].append(row)
        claims: list[DeliveryClaim] = []
        for prefix in takeable:
            for episode_id, profiles_json, attempts, session_key, _, rowid in prefix:
                if episode_id not in envelopes:
                    break  # no episode row: wait
                try:
                    if attempts >= 2 * self.max_attempts:
                        # interrupted attempts (a worker killed mid-delivery) count too: a payload
                        # that keeps crashing its worker must not loop forever
                        raise ValueError(f"gave up after {attempts} attempts, most of them interrupted")
                    verified = _verified_items(
                        episode_id, profiles_json, *envelopes[episode_id], event_rows[episode_id]
                    )
                except ValueError as exc:  # quarantined: dead, with the reason
                    conn.execute(
                        "UPDATE capture_deliveries SET state = 'dead', attempts = attempts + 1, last_error = ?,"
                        " last_attempt_at = ?, lease_owner = '' WHERE episode_id = ? AND provider = ?",
                        (str(exc), stamp, episode_id, provider),
                    )
                    self._refresh_episodes(conn, [episode_id])
                    quarantined.append(
                        DeliveryOutcome(episode_id, provider, session_key, attempts + 1, "dead", error=str(exc))
                    )
                    break  # the session's later episodes wait for the next round
                claims.append(
                    DeliveryClaim(episode_id, provider, session_key, attempts + 1, *verified, self.lease, rowid)
                )
        return claims

    def complete_many(self, claims: Sequence[DeliveryClaim], refs: Sequence[str]) -> list[DeliveryOutcome]:
        """Record successful deliveries in one transaction (``refs`` in claim order)."""
        if len(claims) != len(refs):
            raise QueueError("complete_many needs one ref per claim")
        stamp = utc_stamp(self._clock())
        with self._tx() as conn:
            # the claim's rowid finds the row without the primary-key index; the episode,
            # provider and lease in the same WHERE keep a reused rowid from matching
            conn.executemany(
                "UPDATE capture_deliveries SET state = 'delivered', provider_ref = ?, delivered_at = ?,"
                " last_error = '', lease_owner = '', next_attempt_at = ''"
                " WHERE rowid = ? AND episode_id = ? AND provider = ? AND state = 'delivering' AND lease_owner = ?",
                [(ref, stamp, c.row, c.episode_id, c.provider, c.lease) for c, ref in zip(claims, refs, strict=True)],
            )
            self._refresh_episodes(conn, [c.episode_id for c in claims])
        return [
            DeliveryOutcome(c.episode_id, c.provider, c.session_key, c.attempt, "delivered", ref=r)
            for c, r in zip(claims, refs, strict=True)
        ]

    def release_many(self, claims: Sequence[DeliveryClaim]) -> int:
        """Give leased claims back untried: their attempt is not counted and they are due now.

        For a batch whose delivery stopped early (an earlier episode of the same session
        failed, so sending a later one would overtake it).  Returns how many were released.
        """
        if not claims:
            return 0
        with self._tx() as conn:
            return conn.executemany(
                "UPDATE capture_deliveries SET state = CASE WHEN attempts > 1 THEN 'retry' ELSE 'pending' END,"
                " attempts = MAX(attempts - 1, 0), lease_owner = '', next_attempt_at = ''"
                " WHERE episode_id = ? AND provider = ? AND state = 'delivering' AND lease_owner = ?",
                [(c.episode_id, c.provider, c.lease) for c in claims],
            ).rowcount

    def due_providers(self) -> list[str]:
        """Providers with an undelivered (pending or retry) delivery, due or not (cheap).

        One index probe per provider (a skip scan of the partial ``capture_deliveries_due``
        index, whose condition is exactly this one), not a walk of the whole backlog: the
        worker's loop asks after every batch it is woken for, and a backfill's backlog is
        hundreds of thousands of rows.
        """
        found: list[str] = []
        with self._reading() as conn:
            while True:
                after = " AND provider > ?" if found else ""  # the first probe: any name, even ""
                row = conn.execute(
                    "SELECT provider FROM capture_deliveries INDEXED BY capture_deliveries_due"
                    f" WHERE state IN ('pending', 'retry'){after} ORDER BY provider LIMIT 1",
                    found[-1:],
                ).fetchone()
                if row is None:
                    return found
                found.append(row[0])

    def fail_many(self, claims: Sequence[DeliveryClaim], error: str) -> list[DeliveryOutcome]:
        """Record failed attempts in one transaction: ``retry`` with backoff, or ``dead`` after ``max_attempts``."""
        error = error[:MAX_ERROR_CHARS] or "delivery failed"
        if not claims:
            return []
        now = self._clock()
        # a leased row's attempts are the claim's attempt (the lease counted it in the claim's transaction)
        states = [
            ("dead", "") if c.attempt >= self.max_attempts else ("retry", utc_stamp(now + self.backoff(c.attempt)))
            for c in claims
        ]
        with self._tx() as conn:
            conn.executemany(
                "UPDATE capture_deliveries SET state = ?, next_attempt_at = ?, last_error = ?, lease_owner = ''"
                " WHERE episode_id = ? AND provider = ? AND state = 'delivering' AND lease_owner = ?",
                [
                    (s, due, error, c.episode_id, c.provider, c.lease)
                    for c, (s, due) in zip(claims, states, strict=True)
                ],
            )
            self._refresh_episodes(conn, [c.episode_id for c in claims])
        return [
            DeliveryOutcome(c.episode_id, c.provider, c.session_key, c.attempt, s, error=error)
            for c, (s, _) in zip(claims, states, strict=True)
        ]

    def backoff(self, attempts: int) -> float:
        """Delay after the ``attempts``-th failure: ``retry_min * 2**(attempts-1)``, at most 64 s."""
        return float(min(self.retry_min * (2 ** min(max(attempts - 1, 0), 16)), MAX_BACKOFF))

    @staticmethod
    def _refresh_episodes(conn: sqlite3.Connection, episode_ids: Sequence[str]) -> None:
        """Derive each episode's state from its deliveries."""
        for _ in each_in(
            conn,
            """UPDATE capture_episodes SET state = CASE
                 WHEN error != '' THEN 'dead'
                 WHEN EXISTS (SELECT 1 FROM capture_deliveries d
                              WHERE d.episode_id = capture_episodes.episode_id AND d.state = 'dead') THEN 'dead'
                 WHEN NOT EXISTS (SELECT 1 FROM capture_deliveries d
                              WHERE d.episode_id = capture_episodes.episode_id AND d.state != 'delivered')
                   THEN 'delivered'
                 ELSE 'pending' END
               WHERE episode_id IN ({})""",
            list(dict.fromkeys(episode_ids)),
        ):
            pass

    def retry_dead(self) -> int:
        """Give every dead delivery a fresh set of attempts (integrity failures are re-checked).

        Episodes that died because their profiles reached no provider are routed again with
        the current routes (after a config fix); they count once per new delivery.
        """
        with self._tx() as conn:
            ids = [
                r[0] for r in conn.execute("SELECT DISTINCT episode_id FROM capture_deliveries WHERE state = 'dead'")
            ]
            count = conn.execute(
                "UPDATE capture_deliveries SET state = 'retry', attempts = 0, next_attempt_at = '', lease_owner = ''"
                " WHERE state = 'dead'"
            ).rowcount
            self._refresh_episodes(conn, ids)
            count += self._reroute_unrouted(conn)
        return count

    def _reroute_unrouted(self, conn: sqlite3.Connection) -> int:
        rows = conn.execute(
            "SELECT e.episode_id, e.payload_json, e.payload_hash, e.session_key, e.first_sequence, e.created_at"
            " FROM capture_episodes e WHERE e.error LIKE ?"
            " AND NOT EXISTS (SELECT 1 FROM capture_deliveries d WHERE d.episode_id = e.episode_id)",
            (NO_PROVIDER + "%",),
        ).fetchall()
        added = 0
        now = utc_stamp(self._clock())
        for episode_id, payload, digest, key, first, created in rows:
            if sha256_hex(payload.encode()) != digest:
                continue  # corrupt: stays dead and visible
            providers = self._providers_for(decode_event_payload(e)[1] for e in json.loads(payload).get("events", []))
            if not providers:
                continue
            conn.executemany(
                _INSERT_DELIVERY,
                [
                    (episode_id, name, json.dumps(sorted(p)), "pending", "", now, key, first, created)
                    for name, p in sorted(providers.items())
                ],
            )
            conn.execute(
                "UPDATE capture_episodes SET error = '', state = 'pending' WHERE episode_id = ?", (episode_id,)
            )
            added += len(providers)
        return added

    def make_due(self) -> int:
        """Bring every waiting retry forward to now (``flush`` tries everything once more)."""
        with self._tx() as conn:
            return conn.execute(
                "UPDATE capture_deliveries SET next_attempt_at = ''"
                " WHERE state IN ('pending', 'retry') AND state = 'retry' AND next_attempt_at != ''"
            ).rowcount

    def owed(self, *, include_open: bool = True) -> int:
        """Deliveries not yet delivered or dead, plus open events (cheap; ``flush`` polls it).

        ``include_open=False`` leaves out open events: a flush that keeps live turns whole owes
        only what is sealed.
        """
        with self._reading() as conn:
            (deliveries,) = conn.execute(
                "SELECT COUNT(*) FROM capture_deliveries INDEXED BY capture_deliveries_heads"
                " WHERE state IN ('pending', 'retry', 'delivering')"
            ).fetchone()
            if not include_open:
                return int(deliveries)
            (events,) = conn.execute("SELECT COUNT(*) FROM capture_events WHERE episode_id = ''").fetchone()
        return int(deliveries) + int(events)

    def next_due_in(self) -> float | None:
        """Seconds until the earliest scheduled retry (``None`` if none is waiting)."""
        with self._reading() as conn:
            row = conn.execute(
                "SELECT MIN(next_attempt_at) FROM capture_deliveries WHERE state IN ('pending', 'retry')"
            ).fetchone()
        if row[0] is None:
            return None
        if row[0] == "":
            return 0.0
        return max(0.0, _epoch(row[0]) - self._clock())

    def prune(self, max_age: float) -> int:
        """Delete delivered episodes (with their events and deliveries) and drained inbox rows
        older than ``max_age`` seconds; returns the number of episodes removed.

        Dead and pending work is never pruned: it stays visible until an operator acts.
        """
        cutoff = utc_stamp(self._clock() - max_age)
        with self._tx() as conn:
            ids = [
                (r[0],)
                for r in conn.execute(
                    "SELECT episode_id FROM capture_episodes WHERE state = 'delivered' AND created_at < ?", (cutoff,)
                )
            ]
            conn.executemany("DELETE FROM capture_events WHERE episode_id = ?", ids)
            conn.executemany("DELETE FROM capture_deliveries WHERE episode_id = ?", ids)
            conn.executemany("DELETE FROM capture_episodes WHERE episode_id = ?", ids)
            conn.execute("DELETE FROM capture_inbox WHERE state = 'done' AND received_at < ?", (cutoff,))
        return len(ids)

    # -- forgetting --------------------------------------------------------------------

    def queued_copies(
        self, *, ids: Iterable[str] = (), episode_ids: Iterable[str] = (), query: str = "", limit: int = 0
    ) -> list[QueuedCopy]:
        """Captures holding a memory being forgotten (see :mod:`paxm_core.capture.forget`)."""
        from paxm_core.capture.forget import find_copies

        with self._reading() as conn:
            return find_copies(conn, ids=ids, episode_ids=episode_ids, query=query, limit=limit)

    def delivered_refs(self, episode_ids: Iterable[str]) -> dict[str, list[str]]:
        """Provider -> the refs its delivered copies of ``episode_ids`` got."""
        from paxm_core.capture.forget import linked_refs

        with self._reading() as conn:
            return linked_refs(conn, list(episode_ids))

    def forget_copies(self, copies: Iterable[QueuedCopy], providers: Iterable[str] = ()) -> int:
        """Remove ``copies`` in one transaction so they are never delivered; returns how many changed."""
        from paxm_core.capture.forget import remove_copies

        with self._tx() as conn:
            return remove_copies(conn, list(copies), self._refresh_episodes, providers)

    # -- reporting ---------------------------------------------------------------------

    def status(self, *, dead_limit: int = 50) -> QueueStatus:
        """Counts by state, the age of the oldest undelivered capture, and what is dead."""
        with self._reading() as conn:
            (open_events,) = conn.execute("SELECT COUNT(*) FROM capture_events WHERE episode_id = ''").fetchone()
            episodes = dict(conn.execute("SELECT state, COUNT(*) FROM capture_episodes GROUP BY state").fetchall())
            deliveries = dict(conn.execute("SELECT state, COUNT(*) FROM capture_deliveries GROUP BY state").fetchall())
            inbox = dict(conn.execute("SELECT state, COUNT(*) FROM capture_inbox GROUP BY state").fetchall())
            providers: dict[str, dict[str, int]] = {}
            for provider, state, count in conn.execute(
                "SELECT provider, state, COUNT(*) FROM capture_deliveries GROUP BY provider, state ORDER BY provider"
            ):
                providers.setdefault(provider, {})[state] = count
            oldest = conn.execute(
                """SELECT MIN(t) FROM (
                     SELECT MIN(created_at) AS t FROM capture_events WHERE episode_id = ''
                     UNION ALL SELECT MIN(json_extract(e.payload_json, '$.captured_at')) FROM capture_episodes e
                       WHERE e.state = 'pending'
                     UNION ALL SELECT MIN(received_at) FROM capture_inbox WHERE state = 'pending')"""
            ).fetchone()[0]
            dead = [
                DeadDelivery(*row)
                for row in conn.execute(
                    "SELECT d.episode_id, d.provider, e.session_key, d.attempts, d.last_error, d.last_attempt_at"
                    " FROM capture_deliveries d JOIN capture_episodes e ON e.episode_id = d.episode_id"
                    " WHERE d.state = 'dead' ORDER BY e.created_at LIMIT ?",
                    (dead_limit,),
                )
            ]
            dead_episodes = conn.execute(
                "SELECT episode_id, error FROM capture_episodes WHERE error != '' ORDER BY created_at LIMIT ?",
                (dead_limit,),
            ).fetchall()
            failed_inbox = conn.execute(
                "SELECT event_id, last_error FROM capture_inbox WHERE state = 'failed' ORDER BY received_at LIMIT ?",
                (dead_limit,),
            ).fetchall()
            truncated = conn.execute(
                "SELECT value, updated_at FROM capture_counters WHERE name = 'truncated_events'"
            ).fetchone() or (0, "")
        try:
            age = max(0.0, self._clock() - _epoch(oldest)) if oldest else None
        except ValueError:  # a captured_at that is no timestamp
            age = None
        return QueueStatus(
            path=str(self.path),
            open_events=open_events,
            episodes=episodes,
            deliveries=deliveries,
            inbox=inbox,
            oldest_pending_age=age,
            dead=dead,
            dead_episodes=dead_episodes,
            failed_inbox=failed_inbox,
            providers=providers,
            spooled=_spool.pending_count(self.path),
            truncated=truncated[0],
            last_truncated_at=truncated[1],
        )
