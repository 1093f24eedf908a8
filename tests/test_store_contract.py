"""One abstract test case for the EventStore contract, subclassed for every backend.

The PostgreSQL subclass runs when COMPANYOS_TEST_POSTGRES_URL is set (`.ci/run` sets it to the
local server); each test gets a fresh schema.
"""

from __future__ import annotations

import sqlite3
import threading
import time

import orjson
import pytest
from sqlalchemy import text

from companyos.events import (
    GENESIS,
    ConcurrencyConflict,
    EventStore,
    InMemoryEventStore,
    StoreError,
    first_broken_link,
)
from companyos.events.chain import canonical, chain_hash
from companyos.events.checkpoints import BACKSTOP_PAGES
from companyos.events.sql import SQLEventStore, sqlite_url
from companyos.events.types import (
    ApprovalSubmitted,
    EpisodeStarted,
    Event,
    StepScored,
    TicketsSearched,
    TicketViewed,
    ToolCalled,
)

from .conftest import POSTGRES_URL, drop_postgres_schema, make_postgres_store
from .helpers import failing_commit


def sample(n: int, start: int = 0) -> list[Event]:
    return [TicketViewed(ticket_id=f"TKT-{start + i}") for i in range(n)]


class StoreContract:
    """Every backend must pass these. Subclasses provide `make_store` and, where the backend
    allows, `tamper` (alter a stored payload behind the store's back) and `write_raw`."""

    store: EventStore

    def make_store(self) -> EventStore:
        raise NotImplementedError

    def tamper(self, stream: str, seq: int, payload: dict) -> None:
        raise NotImplementedError

    @pytest.fixture(autouse=True)
    def _store(self, tmp_path):
        self.tmp_path = tmp_path
        self.store = self.make_store()
        yield
        self.store.close()

    # ------------------------------------------------------------------ append and read

    def test_new_stream_starts_at_zero(self):
        recorded = self.store.append("s1", sample(3), -1)
        assert [r.seq for r in recorded] == [0, 1, 2]
        assert self.store.version("s1") == 2
        assert [r.event for r in self.store.read("s1")] == sample(3)

    def test_append_continues_stream(self):
        self.store.append("s1", sample(2), -1)
        recorded = self.store.append("s1", sample(2, 10), 1)
        assert [r.seq for r in recorded] == [2, 3]
        assert [r.event.ticket_id for r in self.store.read("s1")] == [
            "TKT-0",
            "TKT-1",
            "TKT-10",
            "TKT-11",
        ]

    def test_read_range_is_inclusive(self):
        self.store.append("s1", sample(6), -1)
        assert [r.seq for r in self.store.read("s1", 2, 4)] == [2, 3, 4]
        assert [r.seq for r in self.store.read("s1", 4)] == [4, 5]
        assert [r.seq for r in self.store.read("s1", 0, 0)] == [0]
        assert self.store.read("s1", 7) == []

    def test_bounds_beyond_the_columns_match_nothing(self):
        """Any integer is a valid bound: past the 64-bit columns it simply matches nothing
        (the SQL drivers would raise on the number itself)."""
        self.store.append("s1", sample(2), -1)
        assert self.store.read_all(2**70) == [] and self.store.read("s1", 2**70) == []
        assert [r.seq for r in self.store.read("s1", -(2**70), 2**70)] == [0, 1]
        assert self.store.streams(after_position=2**70) == []
        assert len(self.store.read_all(-(2**70), 2**70)) == 2

    def test_unknown_stream_is_empty(self):
        assert self.store.read("nope") == []
        assert self.store.version("nope") == -1
        assert self.store.stream_info("nope") is None

    def test_recorded_equals_read(self):
        events = [
            EpisodeStarted(seed=3, scenario="x", difficulty=2, max_steps=5),
            ToolCalled(step=1, app="a", method="m", params={"k": [1, 2.5, None, True, "é"]}),
            ApprovalSubmitted(
                approval_id="APR-1",
                approval_type="t",
                approver="u",
                data={"a": 1.25, "b": "x", "c": False},
            ),
            TicketsSearched(query="q", ticket_ids=["TKT-1", "TKT-2"]),
            StepScored(step=1, reward=-0.1, total=1.4, gained=["m1"], terms={"step": -0.1}),
        ]
        recorded = self.store.append("s1", events, -1)
        read = self.store.read("s1")
        assert [r.event for r in read] == events
        assert [(r.seq, r.position, r.hash, r.data, r.type) for r in read] == [
            (r.seq, r.position, r.hash, r.data, r.type) for r in recorded
        ]

    def test_extend_writes_what_append_writes_and_hands_back_the_head(self):
        head = self.store.extend("s1", sample(3), -1)
        self.store.append("s2", sample(3), -1)
        head = self.store.extend("s1", sample(2, 10), head.version)
        self.store.append("s2", sample(2, 10), 2)
        one, two = self.store.read("s1"), self.store.read("s2")
        assert (head.version, head.hash) == (one[-1].seq, one[-1].hash) == (4, two[-1].hash)
        assert [(r.seq, r.hash, r.data) for r in one] == [(r.seq, r.hash, r.data) for r in two]
        assert first_broken_link(one) is None
        with pytest.raises(ConcurrencyConflict):
            self.store.extend("s1", sample(1), 3)
        with pytest.raises(ValueError, match="at least one event"):
            self.store.extend("s1", [], 4)
        assert self.store.version("s1") == 4 and len(self.store.read("s1")) == 5

    # ------------------------------------------------------------------ optimistic concurrency

    def test_conflict_when_stream_exists(self):
        self.store.append("s1", sample(1), -1)
        with pytest.raises(ConcurrencyConflict) as info:
            self.store.append("s1", sample(1), -1)
        assert info.value.actual == 0 and info.value.expected == -1
        assert self.store.version("s1") == 0

    def test_conflict_on_stale_version_writes_nothing(self):
        self.store.append("s1", sample(3), -1)
        with pytest.raises(ConcurrencyConflict):
            self.store.append("s1", sample(5, 100), 1)
        assert self.store.version("s1") == 2
        assert len(self.store.read("s1")) == 3
        assert self.store.read_all(0, 100)[-1].seq == 2

    def test_conflict_on_version_ahead(self):
        self.store.append("s1", sample(1), -1)
        with pytest.raises(ConcurrencyConflict):
            self.store.append("s1", sample(1), 5)
        assert self.store.version("s1") == 0

    def test_empty_append_still_checks_version(self):
        self.store.append("s1", sample(1), -1)
        assert self.store.append("s1", [], 0) == []
        with pytest.raises(ConcurrencyConflict):
            self.store.append("s1", [], 3)

    def test_concurrent_appends_have_exactly_one_winner(self):
        self.store.append("s1", sample(1), -1)
        wins, conflicts, errors = [], [], []
        barrier = threading.Barrier(8)

        def writer(i: int) -> None:
            barrier.wait()
            try:
                self.store.append("s1", sample(2, 100 * i), 0)
                wins.append(i)
            except ConcurrencyConflict:
                conflicts.append(i)
            except Exception as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert len(wins) == 1 and len(conflicts) == 7
        seqs = [r.seq for r in self.store.read("s1")]
        assert seqs == [0, 1, 2]
        assert first_broken_link(self.store.read("s1")) is None

    # ------------------------------------------------------------------ global order

    def test_positions_increase_in_commit_order(self):
        self.store.append("a", sample(2), -1)
        self.store.append("b", sample(1), -1)
        self.store.append("a", sample(1), 1)
        log = self.store.read_all(0, 100)
        assert [(r.stream, r.seq) for r in log] == [("a", 0), ("a", 1), ("b", 0), ("a", 2)]
        positions = [r.position for r in log]
        assert positions == sorted(positions) and len(set(positions)) == 4

    def test_read_all_pages(self):
        for i in range(5):
            self.store.append(f"s{i}", sample(3), -1)
        seen, after = [], 0
        while True:
            page = self.store.read_all(after, 4)
            if not page:
                break
            assert len(page) <= 4
            seen += page
            after = page[-1].position
        assert len(seen) == 15
        assert [r.position for r in seen] == sorted({r.position for r in seen})

    def test_streams_listing(self):
        for name in ["ep-1", "ep-2", "session-1", "ep_3", "ep%4"]:
            self.store.append(name, sample(1), -1)
        self.store.append("ep-1", sample(2), 0)
        listed = self.store.streams()
        assert [s.stream_id for s in listed] == ["ep-1", "ep-2", "session-1", "ep_3", "ep%4"]
        assert listed[0].version == 2
        assert [s.stream_id for s in self.store.streams(prefix="ep-")] == ["ep-1", "ep-2"]
        assert [s.stream_id for s in self.store.streams(prefix="ep_")] == ["ep_3"]
        assert [s.stream_id for s in self.store.streams(prefix="ep%")] == ["ep%4"]
        page1 = self.store.streams(limit=2)
        page2 = self.store.streams(after_position=page1[-1].first_position, limit=2)
        assert [s.stream_id for s in page1 + page2] == ["ep-1", "ep-2", "session-1", "ep_3"]
        newest = self.store.streams(limit=2, newest_first=True)
        older = self.store.streams(
            limit=10, newest_first=True, before_position=newest[-1].first_position
        )
        backwards = ["ep%4", "ep_3", "session-1", "ep-2", "ep-1"]
        assert [s.stream_id for s in newest + older] == backwards
        assert [s.stream_id for s in self.store.streams(prefix="ep-", newest_first=True)] == [
            "ep-2",
            "ep-1",
        ]
        assert self.store.streams(newest_first=True, before_position=-(2**70)) == []
        info = self.store.stream_info("ep-1")
        assert info is not None and info.version == 2
        assert info.last_hash == self.store.read("ep-1")[-1].hash

    # ------------------------------------------------------------------ deferred commit

    def test_appends_in_a_deferred_block_are_all_kept_and_still_checked(self):
        self.store.append("d1", sample(1), -1)
        with self.store.deferred_commit():
            self.store.append("d1", sample(2, 1), 0)
            with pytest.raises(ConcurrencyConflict):
                self.store.append("d1", sample(1, 9), 0)  # stale: refused, nothing written
            self.store.append("d2", sample(3), -1)
            self.store.append("d1", sample(1, 3), 2)
        assert [r.event.ticket_id for r in self.store.read("d1")] == [
            "TKT-0",
            "TKT-1",
            "TKT-2",
            "TKT-3",
        ]
        assert self.store.version("d2") == 2
        assert first_broken_link(self.store.read("d1")) is None

    def test_a_deferred_block_that_fails_keeps_the_appends_made_in_it(self):
        # The caller holds state derived from each append that succeeded: those must stand.
        with pytest.raises(RuntimeError), self.store.deferred_commit():
            self.store.append("d3", sample(2), -1)
            raise RuntimeError("the caller failed after an append")
        assert self.store.version("d3") == 1

    def test_positions_follow_the_appends_of_a_deferred_block(self):
        # Rows of a block may be written late (SQLite keeps an existing stream's rows for the
        # block's commit), never out of order: a new stream and a caller asking positions back
        # come after what was appended before them.
        self.store.append("p1", sample(1), -1)
        self.store.append("p2", sample(1), -1)
        with self.store.deferred_commit():
            self.store.extend("p1", sample(2, 1), 0)
            self.store.append("p3", sample(1), -1)
            self.store.extend("p2", sample(1, 1), 0)
            asked = self.store.append("p1", sample(1, 3), 2)
            self.store.extend("p3", sample(1, 1), 0)
        log = self.store.read_all(0, 100)
        assert [(r.stream, r.seq) for r in log] == [
            ("p1", 0),
            ("p2", 0),
            ("p1", 1),
            ("p1", 2),
            ("p3", 0),
            ("p2", 1),
            ("p1", 3),
            ("p3", 1),
        ]
        positions = [r.position for r in log]
        assert positions == sorted(set(positions))
        assert [r.position for r in asked] == [log[6].position]
        for stream in ("p1", "p2", "p3"):
            assert first_broken_link(self.store.read(stream)) is None

    def test_a_refused_new_stream_in_a_deferred_block_keeps_the_appends_before_it(self):
        self.store.append("r1", sample(1), -1)
        with self.store.deferred_commit():
            self.store.extend("r1", sample(2, 1), 0)
            with pytest.raises(ConcurrencyConflict):
                self.store.append("r2", sample(1), 4)  # a new stream is at -1: refused
            self.store.extend("r1", sample(1, 3), 2)
        assert [r.event.ticket_id for r in self.store.read("r1")] == [
            "TKT-0",
            "TKT-1",
            "TKT-2",
            "TKT-3",
        ]
        assert self.store.version("r2") == -1

    # ------------------------------------------------------------------ hash chain

    def test_hash_chain(self):
        self.store.append("s1", sample(3), -1)
        self.store.append("s1", sample(2, 3), 2)
        records = self.store.read("s1")
        assert first_broken_link(records) is None
        prev = GENESIS
        for r in records:
            body = canonical({"seq": r.seq, "type": r.type, "v": r.schema_version, "data": r.data})
            assert r.hash == chain_hash(prev, body)
            prev = r.hash

    def test_hash_ignores_stream_and_position(self):
        self.store.append("other", sample(4, 50), -1)
        a = self.store.append("a", sample(3), -1)
        b = self.store.append("b", sample(3), -1)
        assert [r.hash for r in a] == [r.hash for r in b]

    def test_tampering_is_detected(self):
        self.store.append("s1", sample(4), -1)
        try:
            self.tamper("s1", 2, {"ticket_id": "TKT-666"})
        except NotImplementedError:
            pytest.skip("backend cannot be tampered with from outside")
        records = self.store.read("s1")
        assert records[2].event.ticket_id == "TKT-666"
        assert first_broken_link(records) == 2


class TestInMemoryStore(StoreContract):
    def make_store(self) -> EventStore:
        return InMemoryEventStore()

    def tamper(self, stream: str, seq: int, payload: dict) -> None:
        store = self.store
        assert isinstance(store, InMemoryEventStore)
        old = store._streams[stream][seq]
        new = (*old[:5], orjson.dumps(payload), *old[6:])
        store._streams[stream][seq] = new
        store._log[old[2] - 1] = new


class SQLContract(StoreContract):
    def tamper(self, stream: str, seq: int, payload: dict) -> None:
        store = self.store
        assert isinstance(store, SQLEventStore)
        with store.engine.begin() as conn:
            conn.execute(
                text("UPDATE events SET payload = :p WHERE episode_id = :s AND seq = :q"),
                {"p": orjson.dumps(payload).decode(), "s": stream, "q": seq},
            )


class TestSQLiteStore(SQLContract):
    def make_store(self) -> EventStore:
        return SQLEventStore(sqlite_url(self.tmp_path / "events.db"))

    def test_wal_mode_and_reopen(self):
        self.store.append("s1", sample(2), -1)
        self.store.close()
        reopened = SQLEventStore(sqlite_url(self.tmp_path / "events.db"))
        assert reopened.version("s1") == 1
        with reopened.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        reopened.append("s1", sample(1), 1)
        assert first_broken_link(reopened.read("s1")) is None
        reopened.close()

    def test_a_deferred_block_commits_once_and_is_invisible_elsewhere_until_then(self):
        store = self.store
        assert isinstance(store, SQLEventStore)
        other = SQLEventStore(sqlite_url(self.tmp_path / "events.db"))
        commits = []
        end = store._end
        store._end = lambda conn, cur, commit: (commits.append(commit), end(conn, cur, commit))
        with store.deferred_commit():
            for i in range(5):
                store.append(f"g{i}", sample(2), -1)
            assert other.version("g0") == -1  # not committed yet
        assert commits == []  # no append committed on its own
        assert [other.version(f"g{i}") for i in range(5)] == [1] * 5
        store.append("g0", sample(1, 2), 1)  # after the block: a commit per append again
        assert commits == [True]
        other.close()

    def test_a_failed_deferred_commit_keeps_nothing_of_the_block(self):
        store = self.store
        assert isinstance(store, SQLEventStore)
        store.append("f1", sample(1), -1)
        with failing_commit(store), pytest.raises(StoreError), store.deferred_commit():
            store.append("f1", sample(2, 1), 0)
            store.append("f2", sample(1), -1)
        assert store.version("f1") == 0 and store.version("f2") == -1
        store.append("f1", sample(1, 5), 0)  # the store works on
        assert [r.event.ticket_id for r in store.read("f1")] == ["TKT-0", "TKT-5"]

    def test_a_failed_insert_in_a_group_leaves_none_of_its_events_and_the_rest(self):
        # The second append of a stream in a group is one INSERT without a savepoint: SQLite
        # must back out the whole failed statement and keep the group's earlier appends.
        store = self.store
        assert isinstance(store, SQLEventStore)
        store.append("g1", sample(1), -1)
        with store.deferred_commit():
            store.append("g1", sample(1, 1), 0)  # g1's head is now known to the group
            store._writer().cursor().execute(  # a row in the way of seq 3, behind its back
                "INSERT INTO events (episode_id, seq, event_id, type, schema_version, payload, "
                "hash, recorded_at) VALUES ('g1', 3, 'g1:3', 'TicketViewed', 1, '{}', 'x', 0)"
            )
            with pytest.raises(ConcurrencyConflict):
                store.append("g1", sample(3, 2), 1)  # seqs 2, 3, 4: fails at 3
            store._writer().cursor().execute("DELETE FROM events WHERE event_id = 'g1:3'")
            store.append("g1", sample(1, 7), 1)
        assert [r.event.ticket_id for r in store.read("g1")] == ["TKT-0", "TKT-1", "TKT-7"]
        assert store.version("g1") == 2 and first_broken_link(store.read("g1")) is None

    def test_rows_a_group_keeps_that_cannot_be_written_lose_the_group_and_say_so(self):
        # An existing stream's rows in a group wait for its commit, checked against a head the
        # group's lock makes exact; only a writer ignoring the lock can be in their way. Then
        # the group is lost whole, as when its COMMIT fails, and the caller is told.
        store = self.store
        assert isinstance(store, SQLEventStore)
        store.append("k1", sample(1), -1)
        store.append("k2", sample(1), -1)
        with pytest.raises(StoreError, match="read back from the store"), store.deferred_commit():
            store.extend("k2", sample(1, 1), 0)
            store.extend("k1", sample(1, 1), 0)
            store._writer().cursor().execute(  # a row in the way of k1's seq 2, behind its back
                "INSERT INTO events (episode_id, seq, event_id, type, schema_version, payload, "
                "hash, recorded_at) VALUES ('k1', 2, 'k1:2', 'TicketViewed', 1, '{}', 'x', 0)"
            )
            store.extend("k1", sample(1, 2), 1)
        assert store.version("k1") == 0 and store.version("k2") == 0
        assert [r.seq for r in store.read("k1")] == [0]  # the row in the way went with it
        store.extend("k1", sample(1, 5), 0)  # the store works on, in a group too
        with store.deferred_commit():
            store.extend("k1", sample(1, 6), 1)
            store.extend("k2", sample(1, 6), 0)
        assert [r.event.ticket_id for r in store.read("k1")] == ["TKT-0", "TKT-5", "TKT-6"]
        assert [r.event.ticket_id for r in store.read("k2")] == ["TKT-0", "TKT-6"]
        assert first_broken_link(store.read("k1")) is None

    def test_a_new_stream_that_fails_in_a_group_keeps_the_rows_before_it(self):
        # A new stream's INSERT runs under a savepoint; the rows the group kept until then are
        # written before it, not inside it, so backing it out leaves them.
        store = self.store
        assert isinstance(store, SQLEventStore)
        store.append("m1", sample(1), -1)
        raw = store._writer().cursor().execute
        with store.deferred_commit():
            store.extend("m1", sample(2, 1), 0)
            raw(  # a row in the way of m2's first event, behind the store's back
                "INSERT INTO events (episode_id, seq, event_id, type, schema_version, payload, "
                "hash, recorded_at) VALUES ('m2', 0, 'm2:0', 'TicketViewed', 1, '{}', 'x', 0)"
            )
            with pytest.raises(ConcurrencyConflict):
                store.append("m2", sample(1), -1)
            raw("DELETE FROM events WHERE event_id = 'm2:0'")
        assert [r.event.ticket_id for r in store.read("m1")] == ["TKT-0", "TKT-1", "TKT-2"]
        assert store.version("m2") == -1 and first_broken_link(store.read("m1")) is None

    def test_a_timed_commit_that_fails_loses_its_group_and_the_flusher_lives_on(self):
        store = SQLEventStore(
            sqlite_url(self.tmp_path / "timed.db"), group_commit=1000, group_delay=0.02
        )
        other = SQLEventStore(sqlite_url(self.tmp_path / "timed.db"))

        def until(done) -> None:
            deadline = time.monotonic() + 10
            while not done():
                assert time.monotonic() < deadline, "the group was never committed"
                time.sleep(0.01)

        try:
            store.append("t1", sample(1), -1)
            until(lambda: other.version("t1") == 0)  # committed by the flusher
            with failing_commit(store):
                store.extend("t1", sample(1, 1), 0)
                until(lambda: not store._open)  # the flusher tried, and the disk failed
            assert other.version("t1") == 0  # the group is lost, as in a crash
            with pytest.raises(ConcurrencyConflict):
                store.extend("t1", sample(1, 2), 1)  # state past the store's head finds out
            store.extend("t1", sample(1, 2), 0)
            until(lambda: other.version("t1") == 1)  # and the flusher still commits
            assert [r.event.ticket_id for r in other.read("t1")] == ["TKT-0", "TKT-2"]
        finally:
            store.close()
            other.close()

    def test_heads_a_group_knows_give_way_to_other_writers(self):
        # A group's heads carry over to the next group only while nobody else has written.
        store = self.store
        assert isinstance(store, SQLEventStore)
        other = SQLEventStore(sqlite_url(self.tmp_path / "events.db"))
        try:
            with store.deferred_commit():
                store.append("h1", sample(1), -1)
            with store.deferred_commit():
                store.append("h1", sample(1, 1), 0)  # from the head the last group left
            other.append("h1", sample(1, 2), 1)  # another connection moves it on
            with store.deferred_commit(), pytest.raises(ConcurrencyConflict):
                store.append("h1", sample(1, 9), 1)  # stale: refused, nothing written
            with store.deferred_commit():
                store.append("h1", sample(1, 3), 2)
            store.append("h1", sample(1, 4), 3)  # outside a group, then in one again
            with store.deferred_commit():
                store.append("h1", sample(1, 5), 4)
            ids = [r.event.ticket_id for r in other.read("h1")]
            assert ids == ["TKT-0", "TKT-1", "TKT-2", "TKT-3", "TKT-4", "TKT-5"]
            assert first_broken_link(other.read("h1")) is None and other.version("h1") == 5
        finally:
            other.close()

    def test_the_wal_is_checkpointed_off_the_writers_path(self):
        # The writer's own checkpoint waits for a log of BACKSTOP_PAGES: the few hundred pages
        # written here are folded back into the database by the store's thread alone.
        store = self.store
        assert isinstance(store, SQLEventStore)
        checkpointer = store._checkpointer
        assert checkpointer is not None
        checkpointer.checkpoint_now()
        for i in range(100):
            store.append(f"w{i}", sample(3), -1)
        deadline = time.monotonic() + 10
        while checkpointer.runs == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert checkpointer.runs >= 1 and checkpointer.failures == 0
        probe = sqlite3.connect(self.tmp_path / "events.db")
        try:
            assert probe.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000  # its own
            with store.engine.connect() as conn:
                assert conn.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == BACKSTOP_PAGES
            # Everything committed before the thread's checkpoint is in the database file: a
            # checkpoint now finds at most what was appended after it (nothing) left to copy.
            busy, log, copied = probe.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            assert busy == 0 and log == copied and log > 0
        finally:
            probe.close()
        assert [store.version(f"w{i}") for i in range(100)] == [2] * 100
        store.close()
        assert not checkpointer.alive  # closing the store stops its thread

    def test_a_failing_checkpoint_is_retried_and_loses_nothing(self):
        store = self.store
        assert isinstance(store, SQLEventStore)
        checkpointer = store._checkpointer
        assert checkpointer is not None
        connect, calls = checkpointer._connect, []

        def flaky() -> object:
            calls.append(1)
            if len(calls) == 1:
                raise sqlite3.OperationalError("disk I/O error")
            return connect()

        checkpointer._connect = flaky
        checkpointer.checkpoint_now()
        store.append("c1", sample(2), -1)
        deadline = time.monotonic() + 10
        while checkpointer.runs == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        store.append("c1", sample(1, 2), 1)  # a later append triggers the retry
        while checkpointer.runs == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert checkpointer.failures == 1 and checkpointer.runs >= 1
        assert [r.event.ticket_id for r in store.read("c1")] == ["TKT-0", "TKT-1", "TKT-2"]

    def test_two_store_objects_on_one_file_conflict_cleanly(self):
        other = SQLEventStore(sqlite_url(self.tmp_path / "events.db"))
        self.store.append("s1", sample(1), -1)
        other.append("s1", sample(1), 0)
        with pytest.raises(ConcurrencyConflict):
            self.store.append("s1", sample(1), 0)
        assert [r.seq for r in self.store.read("s1")] == [0, 1]
        other.close()


@pytest.mark.postgres
@pytest.mark.skipif(not POSTGRES_URL, reason="set COMPANYOS_TEST_POSTGRES_URL to run")
class TestPostgresStore(SQLContract):
    def make_store(self) -> EventStore:
        assert POSTGRES_URL
        store, self.schema = make_postgres_store(POSTGRES_URL)
        return store

    @pytest.fixture(autouse=True)
    def _drop_schema(self, _store):
        yield
        assert POSTGRES_URL
        drop_postgres_schema(POSTGRES_URL, self.schema)


class TestSQLiteGroupCommitStore(SQLContract):
    """The whole contract holds with group commit too (reads flush the open group)."""

    def make_store(self) -> EventStore:
        return SQLEventStore(sqlite_url(self.tmp_path / "events.db"), group_commit=8)

    def tamper(self, stream: str, seq: int, payload: dict) -> None:
        assert isinstance(self.store, SQLEventStore)
        self.store.flush()
        super().tamper(stream, seq, payload)
