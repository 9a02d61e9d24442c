"""Hypothesis: random interleavings of append/seal/claim/deliver/fail/crash/reopen keep the invariants."""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from pathlib import Path

from _capture_helpers import Clock, event
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from paxm_core.capture import CaptureQueue, DeliveryClaim

SESSIONS = ("s0", "s1", "s2")
ROUTES = {"default": ["a", "b"], "ltm": ["b"]}
MAX_ATTEMPTS = 3


class QueueMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="paxm-capture-sm-"))
        self.path = self.dir / "capture.sqlite"
        self.clock = Clock()
        self.queue = self._open()
        self.appended: dict[str, tuple[str, str, bool, str]] = {}
        self.outstanding: list[DeliveryClaim] = []
        self.item_ids: dict[tuple[str, str], list[str]] = {}
        self.delivered: set[tuple[str, str]] = set()
        self.counter = 0
        self.interrupted: dict[tuple[str, str], int] = {}

    def _open(self) -> CaptureQueue:
        return CaptureQueue(self.path, routes=ROUTES, retry_min=1.0, max_attempts=MAX_ATTEMPTS, clock=self.clock)

    def teardown(self) -> None:
        self.queue.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def sql(self, query: str, *args: object) -> list[tuple[object, ...]]:
        conn = sqlite3.connect(self.path)
        try:
            return conn.execute(query, args).fetchall()
        finally:
            conn.close()

    # -- rules -----------------------------------------------------------------------------

    @rule(session=st.sampled_from(SESSIONS), terminal=st.booleans(), profile=st.sampled_from(["default", "ltm"]))
    def append(self, session: str, terminal: bool, profile: str) -> None:
        self.counter += 1
        event_id = f"evt_{self.counter}"
        text = f"event {self.counter} in {session}"
        result = self.queue.append(event(event_id, session, text, profile=profile, terminal=terminal))
        assert not result.duplicate
        self.appended[event_id] = (session, text, terminal, profile)

    @precondition(lambda self: bool(self.appended))
    @rule(data=st.data())
    def replay(self, data: st.DataObject) -> None:
        event_id = data.draw(st.sampled_from(sorted(self.appended)))
        session, text, terminal, profile = self.appended[event_id]
        assert self.queue.append(event(event_id, session, text, profile=profile, terminal=terminal)).duplicate

    @rule()
    def seal_all(self) -> None:
        self.queue.seal_all()

    @rule(age=st.sampled_from([0.0, 5.0, 60.0]))
    def seal_expired(self, age: float) -> None:
        self.queue.seal_expired(age)

    @rule(seconds=st.sampled_from([0.5, 1.0, 4.0, 70.0]))
    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)

    @rule()
    def claim(self) -> None:
        claims, quarantined = [], []
        for provider in ("a", "b"):  # claims of one, until each session's head is leased
            while True:
                got, dead = self.queue.claim_batch(provider, limit=1)
                claims += got
                quarantined += dead
                if not got and not dead:
                    break
        # nothing was tampered with: the only quarantine is a delivery interrupted too often
        for outcome in quarantined:
            assert outcome.state == "dead" and "most of them interrupted" in outcome.error
            assert outcome.attempt > 2 * MAX_ATTEMPTS
        for claim in claims:
            key = (claim.episode_id, claim.provider)
            assert key not in self.delivered, "a delivered delivery was claimed again"
            assert all(c.episode_id != claim.episode_id or c.provider != claim.provider for c in self.outstanding)
            ids = [i.id for i in claim.items]
            assert self.item_ids.setdefault(key, ids) == ids, "episode item ids changed between attempts"
            # strict order: no earlier episode of this session still owed to this provider
            earlier = self.sql(
                "SELECT COUNT(*) FROM capture_episodes pe JOIN capture_deliveries pd ON pd.episode_id = pe.episode_id"
                " JOIN capture_episodes e ON e.episode_id = ? WHERE pe.session_key = e.session_key"
                " AND pe.first_sequence < e.first_sequence AND pd.provider = ?"
                " AND pd.state NOT IN ('delivered', 'dead')",
                claim.episode_id,
                claim.provider,
            )
            assert earlier == [(0,)]
        self.outstanding.extend(claims)

    @precondition(lambda self: bool(self.outstanding))
    @rule(data=st.data(), succeed=st.booleans())
    def finish(self, data: st.DataObject, succeed: bool) -> None:
        claim = self.outstanding.pop(data.draw(st.integers(0, len(self.outstanding) - 1)))
        if succeed:
            (outcome,) = self.queue.complete_many([claim], [claim.items[0].id])
            self.delivered.add((claim.episode_id, claim.provider))
        else:
            (outcome,) = self.queue.fail_many([claim], "injected")
            assert outcome.state == ("dead" if claim.attempt >= MAX_ATTEMPTS else "retry")

    @rule()
    def crash_and_reopen(self) -> None:
        # SIGKILL-like: in-flight claims are simply lost with the process
        self.queue.close()
        for claim in self.outstanding:
            key = (claim.episode_id, claim.provider)
            self.interrupted[key] = self.interrupted.get(key, 0) + 1
        self.outstanding.clear()
        self.queue = self._open()
        assert self.sql("SELECT COUNT(*) FROM capture_deliveries WHERE state = 'delivering'") == [(0,)]

    @rule()
    def retry_dead(self) -> None:
        dead = self.sql("SELECT episode_id, provider FROM capture_deliveries WHERE state = 'dead'")
        assert self.queue.retry_dead() == len(dead)
        for key in dead:
            self.interrupted.pop(key, None)  # type: ignore[call-overload]  # attempts start again from zero

    # -- invariants ------------------------------------------------------------------------

    @invariant()
    def nothing_lost_or_duplicated(self) -> None:
        rows = self.sql("SELECT event_id FROM capture_events")
        assert sorted(r[0] for r in rows) == sorted(self.appended)

    @invariant()
    def episodes_are_contiguous_runs(self) -> None:
        for episode_id, session, first, last in self.sql(
            "SELECT episode_id, session_key, first_sequence, last_sequence FROM capture_episodes"
        ):
            seqs = [r[0] for r in self.sql("SELECT sequence FROM capture_events WHERE episode_id = ?", episode_id)]
            assert sorted(seqs) == list(range(first, last + 1))  # type: ignore[arg-type]
            inside = self.sql(
                "SELECT COUNT(*) FROM capture_events WHERE session_key = ? AND sequence BETWEEN ? AND ?",
                session,
                first,
                last,
            )
            assert inside == [(len(seqs),)]

    @invariant()
    def terminal_events_always_sealed(self) -> None:
        assert self.sql("SELECT COUNT(*) FROM capture_events WHERE terminal = 1 AND episode_id = ''") == [(0,)]

    @invariant()
    def deliveries_match_routes_and_states(self) -> None:
        for episode_id, state in self.sql("SELECT episode_id, state FROM capture_episodes"):
            profiles = {
                self.appended[r[0]][3]
                for r in self.sql("SELECT event_id FROM capture_events WHERE episode_id = ?", episode_id)
            }
            expected = sorted({p for prof in profiles for p in ROUTES[prof]})
            deliveries = self.sql(
                "SELECT provider, state, attempts, provider_ref, delivered_at, lease_owner FROM capture_deliveries"
                " WHERE episode_id = ? ORDER BY provider",
                episode_id,
            )
            assert [d[0] for d in deliveries] == expected
            states = {d[1] for d in deliveries}
            assert states <= {"pending", "delivering", "retry", "delivered", "dead"}
            for provider, dstate, attempts, ref, delivered_at, lease in deliveries:
                # interrupted attempts (crashes) are counted but never make a delivery dead by themselves
                allowance = self.interrupted.get((episode_id, provider), 0)  # type: ignore[arg-type]
                assert 0 <= attempts <= MAX_ATTEMPTS + allowance  # type: ignore[operator]
                if dstate == "delivered":
                    assert ref and delivered_at and not lease
                    assert (episode_id, provider) in self.delivered
                if dstate == "delivering":
                    assert lease == self.queue.lease
                    assert any(c.episode_id == episode_id and c.provider == provider for c in self.outstanding)
            want = "dead" if "dead" in states else "delivered" if states == {"delivered"} else "pending"
            assert state == want


QueueMachine.TestCase.settings = settings(
    max_examples=40, stateful_step_count=35, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
TestCaptureQueueStateMachine = QueueMachine.TestCase
