"""Routes about one episode read what they answer from, not the whole stream: the events page
reads its page (and the first event, to know the episode exists), however long the episode."""

from __future__ import annotations

from fastapi.testclient import TestClient

from companyos.api import CompanyOSEnvironment
from companyos.api.server import build_app
from companyos.api.settings import Settings
from companyos.events.sql import SQLEventStore, sqlite_url


def test_an_events_page_reads_only_its_page(tmp_path):
    url = sqlite_url(tmp_path / "r.db")
    store = SQLEventStore(url)
    env = CompanyOSEnvironment(store)
    env.reset(seed=2, task_id=2, difficulty=1, max_steps=100)
    for _ in range(40):
        env.step({"app": "ticketdesk", "method": "list_tickets"})
    assert env.episode is not None
    eid = env.episode.id
    every = store.read(eid)
    with TestClient(build_app(Settings(store=url))) as http:
        served = http.app.state.store  # type: ignore[attr-defined]
        reads: list[tuple[int, int | None]] = []
        read = served.read

        def counted(stream: str, from_seq: int = 0, to_seq: int | None = None):  # type: ignore[no-untyped-def]
            reads.append((from_seq, to_seq))
            return read(stream, from_seq, to_seq)

        served.read = counted
        page = http.get(f"/episodes/{eid}/events", params={"from_seq": 60, "limit": 5}).json()
        assert [e["seq"] for e in page["events"]] == [60, 61, 62, 63, 64]
        assert [e["hash"] for e in page["events"]] == [r.hash for r in every[60:65]]
        assert page["next_seq"] == 65 and page["version"] == every[-1].seq
        assert reads and all(hi is not None and hi - lo < 5 for lo, hi in reads), reads

        reads.clear()
        assert http.get("/episodes/no-such/events").status_code == 404
        assert reads == [(0, 0)]
    store.close()
