"""The crash audit can fail: each kind of damage it looks for, made on purpose, is reported."""

from __future__ import annotations

from companyos.api import CompanyOSEnvironment
from companyos.events import InMemoryEventStore
from companyos.events.types import StepScored, TicketViewed, ToolCalled

from .audit import Ack, audit_store, torn_steps


def played(steps: int = 3) -> tuple[InMemoryEventStore, str, list[Ack]]:
    store = InMemoryEventStore()
    env = CompanyOSEnvironment(store)
    eid = env.reset(seed=4, task_id=0, difficulty=2).episode_id
    acks = []
    for _ in range(steps):
        obs = env.step({"app": "ticketdesk", "method": "list_tickets"})
        acks.append(Ack(eid, obs.step, obs.reward, obs.done))
    return store, eid, acks


def test_a_clean_store_passes():
    store, _, acks = played()
    audit = audit_store(store, acks)
    assert audit.clean and audit.episodes == 1 and audit.steps == 3 and audit.acknowledged == 3


def test_a_step_without_its_score_is_torn():
    store, eid, _ = played(1)
    store.append(
        eid, [ToolCalled(step=2, app="ticketdesk", method="list_tickets")], store.version(eid)
    )
    records = store.read(eid)
    assert torn_steps(records) == [records[-1].seq]
    assert audit_store(store).torn


def test_a_score_outside_its_step_is_torn():
    store, eid, _ = played(1)
    store.append(eid, [StepScored(step=1, reward=0.0, total=0.0)], store.version(eid))
    assert audit_store(store).torn


def test_an_altered_event_breaks_the_chain_and_verification():
    store, eid, _ = played()
    rows = store._streams[eid]
    i = next(i for i, row in enumerate(rows) if b'"ticket_id":"TKT-' in row[5])
    ticket = rows[i][5].split(b'"ticket_id":"')[1].split(b'"')[0]
    altered = rows[i][5].replace(ticket, b"TKT-0000")
    rows[i] = (*rows[i][:5], altered, *rows[i][6:])
    audit = audit_store(store)
    assert audit.broken_chains == [eid] and audit.verify_failures == [eid]


def test_an_acknowledged_step_missing_from_the_log_is_lost():
    store, eid, acks = played(2)
    ghost = Ack(eid, 3, -0.1, False)
    elsewhere = Ack("never-stored", 1, -0.1, False)
    wrong_reward = Ack(eid, 1, acks[0].reward + 1.0, False)
    audit = audit_store(store, [*acks, ghost, elsewhere, wrong_reward])
    assert set(audit.lost) == {ghost, elsewhere, wrong_reward}


def test_a_session_stream_must_hold_pairs():
    store = InMemoryEventStore()
    store.append(
        "session-x", [ToolCalled(step=0, app="a", method="b"), TicketViewed(ticket_id="t")], -1
    )
    assert audit_store(store).torn == [("session-x", 0)]
