"""Event types, schema versions and a real upcast; replay verification."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import insert

from companyos.agents import in_process_oracle, play
from companyos.api import CompanyOSEnvironment
from companyos.api.verify import verify_episode
from companyos.domain import build_episode
from companyos.events import (
    EVENT_ADAPTER,
    EVENT_TYPES,
    GENESIS,
    InMemoryEventStore,
    first_broken_link,
    upcast,
)
from companyos.events.chain import canonical, chain_hash, event_body
from companyos.events.sql import EVENTS, STREAMS, SQLEventStore, sqlite_url
from companyos.events.store import seal_all
from companyos.events.types import EpisodeStarted, Event
from companyos.events.upcasting import UnknownEventType
from companyos.projections import replay


def all_events() -> list[Event]:
    env = CompanyOSEnvironment()
    oracle = in_process_oracle(env)
    out: list[Event] = []
    for seed in range(10):
        play(env, oracle, seed=seed, difficulty=3)
        out += [r.event for r in env.store.read(env.episode.id)]
    return out


def test_every_type_is_in_the_union_and_payload_is_json():
    seen = {e.type for e in all_events()}
    assert seen <= set(EVENT_TYPES)
    for e in all_events():
        assert e.payload() == e.model_dump(mode="json", exclude={"type"})
        assert EVENT_ADAPTER.validate_python({**e.payload(), "type": e.type}) == e


def test_episode_started_v1_is_upcast_on_read(tmp_path):
    """A real upcast: EpisodeStarted v1 was the original's reset record (task_id, seed,
    max_steps); v2 adds the chaos dial and the reward profile. A stored v1 row reads as v2,
    the stored bytes stay as they were, and the chain still verifies."""
    store = SQLEventStore(sqlite_url(tmp_path / "old.db"))
    v1 = {"seed": 7, "task_id": "vendor_onboarding", "max_steps": 20}
    rest = build_episode("vendor_onboarding", 7, 2)[1:]
    rows, prev = [], GENESIS
    items = [("EpisodeStarted", 1, v1)] + [(e.type, e.schema_version, e.payload()) for e in rest]
    for seq, (kind, version, data) in enumerate(items):
        h = chain_hash(prev, canonical({"seq": seq, "type": kind, "v": version, "data": data}))
        rows.append(
            {
                "episode_id": "old",
                "seq": seq,
                "event_id": f"old:{seq}",
                "type": kind,
                "schema_version": version,
                "payload": orjson.dumps(data).decode(),
                "hash": h,
                "recorded_at": 0.0,
            }
        )
        prev = h
    with store.engine.begin() as conn:
        conn.execute(insert(EVENTS), rows)
        conn.execute(
            insert(STREAMS).values(
                stream_id="old",
                version=len(rows) - 1,
                last_hash=prev,
                first_position=1,
                created_at=0.0,
                updated_at=0.0,
            )
        )
    records = store.read("old")
    first = records[0]
    assert first.schema_version == 1 and first.data == v1
    assert isinstance(first.event, EpisodeStarted)
    assert (first.event.scenario, first.event.difficulty, first.event.reward_profile) == (
        "vendor_onboarding",
        2,
        "original",
    )
    assert first_broken_link(records) is None
    r = replay(records)
    assert r.setup.info is not None and r.setup.info.difficulty == 2
    assert r.profile.name == "original"
    report = verify_episode(store, "old")
    assert report.chain_ok and not report.resimulated
    store.close()


def test_newer_or_unknown_versions_are_refused():
    with pytest.raises(UnknownEventType):
        upcast("EpisodeStarted", 4, {})
    with pytest.raises(UnknownEventType):
        upcast("Teleported", 1, {})


@pytest.mark.parametrize("difficulty", [0, 2, 3])
def test_verify_honest_episodes(any_store, difficulty):
    env = CompanyOSEnvironment(any_store)
    oracle = in_process_oracle(env)
    for seed in range(4):
        play(env, oracle, seed=seed, difficulty=difficulty)
        env.step({"app": "x", "method": "y", "params": {"q": "z" * 20_000}})  # after the end
        report = verify_episode(any_store, env.episode.id)
        assert report.ok and report.resimulated, report.message


def test_verify_covers_refused_calls_forks_and_abandonment():
    env = CompanyOSEnvironment()
    env.reset(seed=5, task_id=0, difficulty=2)
    env.step({"app": "ticketdesk", "method": "search_tickets", "params": {"query": "q" * 9000}})
    env.step({"app": "ticketdesk", "method": "list_tickets"})
    source = env.episode.id
    env.reset(fork_from=source, at_step=1)
    fork = env.episode.id
    env.step({"app": "datahub", "method": "list_metrics"})
    env.reset(seed=6)
    for eid in (source, fork):
        report = verify_episode(env.store, eid)
        assert report.ok, report.message


def test_verify_flags_tampering(sqlite_store):
    env = CompanyOSEnvironment(sqlite_store)
    play(env, in_process_oracle(env), seed=3, task_id=0, difficulty=2)
    eid = env.episode.id
    records = sqlite_store.read(eid)
    target = next(r for r in records if r.type == "MetricRefreshed")
    forged = {**target.data, "new": 99.0}
    with sqlite_store.engine.begin() as conn:
        conn.execute(
            EVENTS.update()
            .where(EVENTS.c.position == target.position)
            .values(payload=orjson.dumps(forged).decode())
        )
    report = verify_episode(sqlite_store, eid)
    assert not report.ok and report.first_broken_seq == target.seq
    # Rewriting the whole chain to match hides it from the chain check, not from re-simulation.
    rows, prev = [], GENESIS
    for r in sqlite_store.read(eid):
        h = chain_hash(
            prev, canonical({"seq": r.seq, "type": r.type, "v": r.schema_version, "data": r.data})
        )
        rows.append((r.position, h))
        prev = h
    with sqlite_store.engine.begin() as conn:
        for pos, h in rows:
            conn.execute(EVENTS.update().where(EVENTS.c.position == pos).values(hash=h))
    report = verify_episode(sqlite_store, eid)
    assert report.chain_ok and not report.ok and report.first_divergent_seq == target.seq


def test_verify_keeps_the_agent_label():
    env = CompanyOSEnvironment()
    play(env, in_process_oracle(env), seed=4)
    records = env.store.read(env.episode.id)
    assert records[0].event.agent == "oracle"
    assert verify_episode(env.store, env.episode.id).ok


_EVENTS = all_events()


@settings(max_examples=150, deadline=None)
@given(
    picks=st.lists(st.integers(0, len(_EVENTS) - 1), min_size=1, max_size=14),
    seq=st.integers(-1, 500),
    prev=st.sampled_from([GENESIS, "ab" * 32]),
)
def test_sealing_matches_the_reference_chain(picks, seq, prev):
    """`seal_all` (inlined and cached for speed) gives each event the canonical JSON of its
    payload and the hash `event_body` and `chain_hash` define, whatever the mix of an
    instance's opening events (sealed as a kept run) and a step's own."""
    events = [_EVENTS[i] for i in picks]
    for _ in range(2):  # the second time from the caches
        h = prev
        for n, (ev, (kind, version, data, data_json, got)) in enumerate(
            zip(events, seal_all(prev, seq, events), strict=True)
        ):
            assert (kind, version, data) == (ev.type, ev.schema_version, ev.payload())
            assert data_json == canonical(ev.payload())
            h = chain_hash(h, event_body(seq + n + 1, ev.type, ev.schema_version, ev.payload()))
            assert got == h


@settings(max_examples=150, deadline=None)
@given(
    appends=st.lists(
        st.lists(st.integers(0, len(_EVENTS) - 1), min_size=1, max_size=12), min_size=1, max_size=6
    )
)
def test_the_memory_stores_appends_seal_as_the_reference_chain(appends):
    """The in-memory store seals a short append (a step's) in its own pass, and a long one (a
    reset's opening run) through `seal_all`: either way every stored row carries the canonical
    JSON of its event's payload and the hash `event_body` and `chain_hash` define, after the
    stream's previous event, through `extend` and `append` alike."""
    for how in ("extend", "append"):
        store = InMemoryEventStore()
        version, h = -1, GENESIS
        for picks in appends:
            events = [_EVENTS[i] for i in picks]
            getattr(store, how)("s", events, version)
            for ev in events:
                version += 1
                h = chain_hash(h, event_body(version, ev.type, ev.schema_version, ev.payload()))
        rows = store._streams["s"]
        assert len(rows) == version + 1 and rows[-1][6] == h
        assert [r[5] for r in rows] == [
            canonical(_EVENTS[i].payload()) for picks in appends for i in picks
        ]
        assert first_broken_link(store.read("s")) is None


@settings(max_examples=60, deadline=None)
@given(kinds=st.lists(st.sampled_from(["Alpha", "Beta", "ToolCalled", "Gamma"]), min_size=1))
def test_sealing_keys_its_kept_formatting_by_type_not_class(kinds):
    """Events of one class whose types differ (the base `Event`, as a reader of an unknown
    vocabulary may hold) each seal under their own type: the kept formatting of the hashed
    body's tail is per type and version, never per class."""
    events = [Event(type=k) for k in kinds]
    h = GENESIS
    for n, (ev, sealed_ev) in enumerate(zip(events, seal_all(GENESIS, -1, events), strict=True)):
        h = chain_hash(h, event_body(n, ev.type, ev.schema_version, ev.payload()))
        assert sealed_ev[4] == h


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5)
    ),
    max_leaves=30,
)


@settings(max_examples=200, deadline=None)
@given(value=_JSON)
def test_canonical_json_is_orjson_s_sorted_output_as_plain_bytes(value):
    """`canonical` copies orjson's result (see its comment): the same bytes, of type bytes, so
    the hashes stored before the copy still verify."""
    out = canonical(value)
    assert type(out) is bytes
    assert out == orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
