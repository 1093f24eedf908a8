"""Audit of a whole store after faults: what the event log promises, checked stream by stream.

- no torn step: a step is `ToolCalled`, what it caused, `StepScored` [, `EpisodeEnded`]; every
  step in the log is whole, and no stream ends inside one;
- every stream's hash chain is intact (`first_broken_link`);
- every episode replays (`projections.replay`, reproducing its cached rewards) and verifies
  (`api.verify.verify_episode`: the chain plus a re-simulation from the seed);
- nothing acknowledged is lost: each step a client was told about is in the log with the
  reward the client saw; and nothing is duplicated (steps are numbered 1, 2, ... once each).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from companyos.api.verify import verify_episode
from companyos.events import EventStore, RecordedEvent, first_broken_link
from companyos.projections import replay
from companyos.projections.replay import cached_rewards


@dataclass(frozen=True, slots=True)
class Ack:
    """A step a client was told about: the observation it received."""

    episode_id: str
    step: int
    reward: float
    done: bool


@dataclass(slots=True)
class Audit:
    streams: int = 0
    episodes: int = 0
    events: int = 0
    steps: int = 0
    acknowledged: int = 0
    torn: list[tuple[str, int]] = field(default_factory=list)
    broken_chains: list[str] = field(default_factory=list)
    replay_failures: list[str] = field(default_factory=list)
    verify_failures: list[str] = field(default_factory=list)
    lost: list[Ack] = field(default_factory=list)
    duplicated: list[tuple[str, int]] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not (
            self.torn
            or self.broken_chains
            or self.replay_failures
            or self.verify_failures
            or self.lost
            or self.duplicated
        )

    def problems(self) -> str:
        return (
            f"torn={self.torn[:5]} broken={self.broken_chains[:5]} "
            f"replay={self.replay_failures[:5]} verify={self.verify_failures[:5]} "
            f"lost={self.lost[:5]} duplicated={self.duplicated[:5]}"
        )


def torn_steps(records: Sequence[RecordedEvent]) -> list[int]:
    """Seqs where a stream breaks the shape of whole steps (empty: every step is whole)."""
    types = [r.type for r in records]
    if not types:
        return []
    calls = [i for i, t in enumerate(types) if t == "ToolCalled"]
    bad: list[int] = []
    if all(t == "AgentReplied" for t in types):
        return []  # an episode's replies (`replies:<id>`), beside it: no steps
    if types[0] != "EpisodeStarted":
        # A session's stream (calls made with no episode): pairs of ToolCalled, InvalidAction.
        for i in range(0, len(types), 2):
            if types[i : i + 2] != ["ToolCalled", "InvalidAction"]:
                bad.append(records[i].seq)
        return bad
    if "StepScored" in types[: calls[0] if calls else len(types)]:
        bad.append(records[types.index("StepScored")].seq)
    for n, start in enumerate(calls, 1):
        end = calls[n] if n < len(calls) else len(types)
        chunk = types[start:end]
        scored = [start + i for i, t in enumerate(chunk) if t == "StepScored"]
        tail = types[scored[0] + 1 : end] if len(scored) == 1 else None
        if (
            len(scored) != 1
            or records[scored[0]].event.step != n  # type: ignore[union-attr]
            or records[start].event.step != n  # type: ignore[union-attr]
            or tail is None
            or len(tail) > 1
            or any(t != "EpisodeEnded" for t in tail)
        ):
            bad.append(records[start].seq)
    return bad


def step_rewards(records: Sequence[RecordedEvent]) -> dict[int, float]:
    return {
        r.event.step: r.event.reward  # type: ignore[union-attr]
        for r in records
        if r.type == "StepScored"
    }


def audit_store(store: EventStore, acks: Iterable[Ack] = (), verify: bool = True) -> Audit:
    """Check every stream of ``store``; ``acks`` are the steps clients were told about."""
    audit = Audit()
    by_episode: dict[str, list[Ack]] = defaultdict(list)
    for ack in acks:
        by_episode[ack.episode_id].append(ack)
        audit.acknowledged += 1
    after = 0
    while True:
        page = store.streams(after_position=after, limit=500)
        if not page:
            break
        after = page[-1].first_position
        for info in page:
            records = store.read(info.stream_id)
            audit.streams += 1
            audit.events += len(records)
            if first_broken_link(records) is not None:
                audit.broken_chains.append(info.stream_id)
            audit.torn += [(info.stream_id, seq) for seq in torn_steps(records)]
            if not records or records[0].type != "EpisodeStarted":
                continue
            audit.episodes += 1
            rewards = step_rewards(records)
            audit.steps += len(rewards)
            if sorted(rewards) != list(range(1, len(rewards) + 1)):
                audit.duplicated.append((info.stream_id, len(rewards)))
            try:
                r = replay(records)
                if [round(s.score.reward, 6) for s in r.steps] != [
                    round(x, 6) for x in cached_rewards(records)
                ]:
                    audit.replay_failures.append(info.stream_id)
            except Exception as exc:  # any failure to fold is what this audit looks for
                audit.replay_failures.append(f"{info.stream_id}: {exc!r}")
            if verify and not verify_episode(store, info.stream_id).ok:
                audit.verify_failures.append(info.stream_id)
            ended = any(r.type == "EpisodeEnded" for r in records)
            for ack in by_episode.pop(info.stream_id, []):
                if (
                    ack.step not in rewards
                    or abs(rewards[ack.step] - ack.reward) > 1e-9
                    or (ack.done and not ended)
                ):
                    audit.lost.append(ack)
    for missing in by_episode.values():  # acknowledged episodes whose stream is not there
        audit.lost += missing
    return audit
