"""Play many evaluation episodes, in-process or against a server, on one or more workers.

A job is (agent, instance, trial). Every worker has its own place of play: in-process, its own
`CompanyOSEnvironment` over its own connection to the store (worker processes: the
environment is CPU-bound Python); against a server, its own `/ws` session (worker threads:
the server does the work, the client mostly waits). Every episode is stored by whoever
steps it, labelled with the agent (`EpisodeStarted.agent`), so analytics sees all of them.
"""

from __future__ import annotations

import multiprocessing
import queue
import sys
import threading
import time
import zlib
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from companyos.api.environment import CompanyOSEnvironment
from companyos.domain import instance_id
from companyos.events import open_store

from .base import Playable, play
from .llm import LLMSettings
from .registry import Roster
from .remote import RemoteEnv
from .stats import Record


@dataclass(frozen=True, slots=True)
class Job:
    agent: str
    family: str
    difficulty: int
    seed: int
    trial: int

    @property
    def instance_id(self) -> str:
        return instance_id(self.family, self.difficulty, self.seed)


@dataclass(frozen=True, slots=True)
class Setup:
    """What every worker needs (picklable: worker processes get a copy)."""

    store: str = "memory://"
    """The event store of in-process play."""
    url: str | None = None
    """A CompanyOS server to play against instead."""
    llm: LLMSettings | None = None
    labels: tuple[tuple[str, str], ...] = ()
    """Agent name -> the label its episodes are stored under (default: the name)."""
    agent_seed: int = 0
    max_steps: int | None = None
    """Override every instance's step budget (None: the instance's own)."""

    def label(self, agent: str) -> str:
        return dict(self.labels).get(agent, agent)


def make_jobs(
    agents: Sequence[str], instances: Sequence[tuple[str, int, int]], trials: int
) -> list[Job]:
    """Agents interleaved, so that every agent's progress (and live success rate) moves."""
    return [
        Job(agent, family, difficulty, seed, trial)
        for family, difficulty, seed in instances
        for trial in range(trials)
        for agent in agents
    ]


def agent_seed(job: Job, base: int) -> int:
    """The agent's own seed for a job: stable across runs and machines, different for every
    trial (so a random or sampling agent's trials differ), and independent of the order jobs
    run in."""
    return zlib.crc32(f"{base}/{job.agent}/{job.instance_id}/{job.trial}".encode())


def usage_of(transcript: list[dict[str, Any]]) -> dict[str, Any]:
    """Tokens, requests and model time over an episode's transcript."""
    return {
        "prompt_tokens": sum(e.get("prompt_tokens", 0) for e in transcript),
        "completion_tokens": sum(e.get("completion_tokens", 0) for e in transcript),
        "requests": len(transcript),
        "model_seconds": round(sum(e.get("latency_s", 0.0) for e in transcript), 4),
    }


class Worker:
    """One place of play and the agents that play there."""

    def __init__(self, setup: Setup) -> None:
        self.setup = setup
        self.env: Playable
        if setup.url is not None:
            self.remote: RemoteEnv | None = RemoteEnv(setup.url)
            self.env = self.remote
            self.roster = Roster(url=setup.url, llm=setup.llm)
        else:
            self.remote = None
            self.local = CompanyOSEnvironment(open_store(setup.store))
            self.env = self.local
            self.roster = Roster(env=self.local, llm=setup.llm)

    def run(self, job: Job) -> Record:
        started = time.perf_counter()
        agent = self.roster.agent(job.agent, agent_seed(job, self.setup.agent_seed))
        options: dict[str, Any] = {
            "seed": job.seed,
            "task_id": job.family,
            "difficulty": job.difficulty,
            "agent": self.setup.label(job.agent),
        }
        if self.setup.max_steps is not None:
            options["max_steps"] = self.setup.max_steps
        r = play(self.env, agent, **options)
        transcript = getattr(agent, "transcript", None)
        usage = usage_of(transcript or [])
        return Record(
            agent=job.agent,
            family=job.family,
            difficulty=job.difficulty,
            seed=job.seed,
            trial=job.trial,
            episode_id=r.episode_id,
            outcome=r.outcome,
            steps=r.steps,
            total_return=r.total_return,
            errors=r.errors,
            seconds=time.perf_counter() - started,
            transcript=transcript,
            **usage,
        )

    def close(self) -> None:
        if self.remote is not None:
            self.remote.close()
        else:
            self.local.store.close()


def run_jobs(jobs: Sequence[Job], setup: Setup, workers: int = 1) -> Iterator[Record]:
    """Play every job; the iterator yields records as episodes finish (in no particular order
    when ``workers`` > 1). Worker processes start here, before the caller iterates (and, say,
    starts a progress bar's thread)."""
    if workers < 1:
        raise ValueError(f"workers must be at least 1, not {workers}")
    if workers == 1 or len(jobs) <= 1:
        return _serial(jobs, setup)
    if setup.url is not None:
        return _threads(jobs, setup, workers)
    return _processes(jobs, setup, workers)


def _serial(jobs: Sequence[Job], setup: Setup) -> Iterator[Record]:
    worker = Worker(setup)
    try:
        for job in jobs:
            yield worker.run(job)
    finally:
        worker.close()


def _threads(jobs: Sequence[Job], setup: Setup, workers: int) -> Iterator[Record]:
    """Each thread its own session; jobs are taken from a shared queue as threads free up."""
    todo: queue.SimpleQueue[Job] = queue.SimpleQueue()
    for job in jobs:
        todo.put(job)
    done: queue.SimpleQueue[Record | BaseException] = queue.SimpleQueue()
    stop = threading.Event()

    def loop() -> None:
        try:
            worker = Worker(setup)
        except BaseException as exc:
            done.put(exc)
            return
        try:
            while not stop.is_set():
                try:
                    job = todo.get_nowait()
                except queue.Empty:
                    return
                done.put(worker.run(job))
        except BaseException as exc:
            done.put(exc)
        finally:
            worker.close()

    pool = ThreadPoolExecutor(workers, thread_name_prefix="eval")
    for _ in range(workers):
        pool.submit(loop)
    try:
        for _ in range(len(jobs)):
            item = done.get()
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        # Threads finish the episode they are playing and take no other; an interrupted
        # caller does not wait for them.
        stop.set()
        pool.shutdown(wait=False, cancel_futures=True)


_worker: Worker | None = None


def _start(setup: Setup) -> None:
    global _worker
    _worker = Worker(setup)


def _run_batch(batch: list[Job]) -> list[Record]:
    assert _worker is not None
    return [_worker.run(job) for job in batch]


def _processes(jobs: Sequence[Job], setup: Setup, workers: int) -> Iterator[Record]:
    # The store is opened once here first, so that its schema exists before workers race to
    # create it. Linux forks (a worker starts in milliseconds; a fresh interpreter takes
    # seconds to import the OpenEnv stack); elsewhere fork is unsafe and workers spawn.
    open_store(setup.store).close()
    ctx = multiprocessing.get_context("fork" if sys.platform == "linux" else "spawn")
    pool = ctx.Pool(workers, initializer=_start, initargs=(setup,))
    # All the jobs of an instance go to one worker: building an instance (its world and step
    # budget) costs about as much as playing it, and each worker caches what it built.
    batches: dict[str, list[Job]] = {}
    for job in jobs:
        batches.setdefault(job.instance_id, []).append(job)

    def results() -> Iterator[Record]:
        with pool:
            for done in pool.imap_unordered(_run_batch, batches.values()):
                yield from done

    return results()
