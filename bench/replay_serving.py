"""Serving stored episodes of growing length, over HTTP from a real `companyos serve`.

For episodes of 14, 66 and 500 steps (SQLite, made before the server starts, so it has seen
none of them):

- `GET /episodes/{id}/state`, the latest state: from the episode's snapshot and the events
  after it (not loaded yet), then from the server's cache (loaded). The reference is the same
  state asked by its step number (`?step=N`), which replays the whole stream, as every state
  did before; and the episode's summary (`GET /episodes/{id}`: counts over the whole
  stream, a replay);
- the first `POST /step` naming an episode the server has not loaded (a cache miss: another
  worker played it, or the server restarted). The reference is the next step on the same
  episode, now in the server's cache.

Each figure is the median over half the episodes of a length (the other half answer the other
kind of request: a miss happens once per episode), asked one at a time on a keep-alive
connection; the 500 / 14 column says whether a figure grows with
the episode's length.

    python bench/replay_serving.py [--episodes N] [--json out.json]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import bench_options


def options() -> argparse.ArgumentParser:
    parser = bench_options.parser(__doc__)
    parser.add_argument("--episodes", type=int, default=24, help="episodes a length (24)")
    return bench_options.with_json(parser)


if __name__ == "__main__":
    options().parse_args()  # --help answers before the imports below

import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from typing import Any  # noqa: E402

import httpx  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.progress import track  # noqa: E402
from rich.table import Table  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from companyos.api import CompanyOSEnvironment  # noqa: E402
from companyos.events.sql import SQLEventStore, sqlite_url  # noqa: E402
from tests.serving import ServerProcess  # noqa: E402

LENGTHS = (14, 66, 500)
CALL = {"app": "ticketdesk", "method": "list_tickets", "params": {}}


def make_episodes(db: Path, per_length: int) -> dict[int, list[str]]:
    store = SQLEventStore(sqlite_url(db))
    env = CompanyOSEnvironment(store)
    out: dict[int, list[str]] = {n: [] for n in LENGTHS}
    jobs = [(n, i) for n in LENGTHS for i in range(per_length + (n == LENGTHS[0]))]
    for n, i in track(jobs, description="recording episodes", transient=True):
        env.reset(seed=1000 * n + i, task_id=2, difficulty=1, max_steps=n + 5)
        for _ in range(n):
            env.step(CALL)
        assert env.episode is not None
        out[n].append(env.episode.id)
    store.close()
    return out


def timed(http: httpx.Client, method: str, path: str, body: Any = None) -> float:
    t = time.perf_counter()
    r = http.request(method, path, json=body)
    elapsed = time.perf_counter() - t
    r.raise_for_status()
    return elapsed


def measure(url: str, episodes: dict[int, list[str]]) -> dict[str, dict[int, float]]:
    """Half the episodes of a length answer the state requests, the other half the steps:
    each kind of request meets episodes the server has not loaded yet."""
    rows: dict[str, dict[int, list[float]]] = {
        "latest state, not loaded": {},
        "latest state, loaded": {},
        "the same state by replay (?step=N)": {},
        "summary (GET /episodes/{id}, a replay)": {},
        "first step, not loaded (cache miss)": {},
        "next step, loaded": {},
    }
    with httpx.Client(base_url=url, timeout=60) as http:
        warm = episodes[LENGTHS[0]].pop()  # the server's first requests pay for warming up
        for _ in range(3):
            timed(http, "GET", f"/episodes/{warm}/state")
            timed(http, "GET", f"/episodes/{warm}/state?step=1")
            timed(http, "POST", "/step", {"action": {**CALL, "episode_id": warm}})
        for n, ids in episodes.items():
            for row in rows.values():
                row[n] = []
            half = len(ids) // 2
            for eid in ids[:half]:
                path = f"/episodes/{eid}/state"
                rows["latest state, not loaded"][n].append(timed(http, "GET", path))
                rows["latest state, loaded"][n].append(timed(http, "GET", path))
                rows["the same state by replay (?step=N)"][n].append(
                    timed(http, "GET", f"{path}?step={n}")
                )
                rows["summary (GET /episodes/{id}, a replay)"][n].append(
                    timed(http, "GET", f"/episodes/{eid}")
                )
            for eid in ids[half:]:
                step = {"action": {**CALL, "episode_id": eid}}
                rows["first step, not loaded (cache miss)"][n].append(
                    timed(http, "POST", "/step", step)
                )
                rows["next step, loaded"][n].append(timed(http, "POST", "/step", step))
    return {name: {n: statistics.median(v) for n, v in row.items()} for name, row in rows.items()}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = options().parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "episodes.db"
        episodes = make_episodes(db, args.episodes)
        server = ServerProcess(f"sqlite:///{db}")
        try:
            medians = measure(server.start(), episodes)
        finally:
            server.stop()
    table = Table(title=f"Stored episodes served over HTTP (median of {args.episodes // 2})")
    table.add_column("request")
    for n in LENGTHS:
        table.add_column(f"{n} steps", justify="right")
    table.add_column("500 / 14", justify="right")
    for name, by_length in medians.items():
        table.add_row(
            name,
            *(f"{by_length[n] * 1e3:.1f} ms" for n in LENGTHS),
            f"{by_length[500] / by_length[14]:.2f}x",
        )
    console = Console(width=80)
    console.print(table)
    state = medians["latest state, not loaded"]
    replayed = medians["the same state by replay (?step=N)"]
    miss, hit = medians["first step, not loaded (cache miss)"], medians["next step, loaded"]
    console.print(
        f"At 500 steps: the latest state of an episode not loaded is "
        f"{replayed[500] / state[500]:.1f}x faster than by replay; a cache miss costs "
        f"{miss[500] / hit[500]:.1f}x a loaded step."
    )
    out = {name: {str(n): v * 1e3 for n, v in row.items()} for name, row in medians.items()}
    bench_options.write_json(args.json, out)
    return out


if __name__ == "__main__":
    main()
