"""Fork at step k: the fork's state equals the original's state at k, the original stream is
untouched, and replaying the original's later calls on the fork reproduces its events."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from companyos.agents import RandomAgent
from companyos.api import CompanyOSEnvironment, ResetError
from companyos.domain import plan
from companyos.events.types import EpisodeStarted, StepScored, ToolCalled
from companyos.projections import replay


def play_mixed(env: CompanyOSEnvironment, seed: int, steps: int) -> str:
    obs = env.reset(seed=seed, task_id=seed % 5, difficulty=2 + seed % 2)
    agent = RandomAgent(seed)
    for i in range(steps):
        ep = env.episode
        assert ep is not None
        call = plan(ep.world)
        action = agent.act(obs) if i % 3 == 1 or call is None else call.as_action()
        obs = env.step(action)
        if obs.done:
            break
    assert obs.episode_id is not None
    return obs.episode_id


@settings(max_examples=40)
@given(seed=st.integers(0, 10_000), steps=st.integers(1, 14), data=st.data())
def test_fork_state_equals_original_at_k(seed, steps, data):
    env = CompanyOSEnvironment()
    source = play_mixed(env, seed, steps)
    before = [(r.seq, r.hash) for r in env.store.read(source)]
    original = replay(env.store.read(source))
    last_allowed = len(original.steps) - (1 if original.outcome not in (None, "abandoned") else 0)
    k = data.draw(st.integers(0, max(0, last_allowed)))
    obs = env.reset(fork_from=source, at_step=k)
    fork = env.episode
    assert fork is not None and obs.episode_id == fork.id != source
    assert fork.world.without_lineage() == original.world_at(k).without_lineage()
    assert fork.world.info is not None and fork.world.info.forked_from == (source, k)
    assert obs.step == k
    # The source stream is byte-for-byte what it was.
    assert [(r.seq, r.hash) for r in env.store.read(source)] == before
    # The fork's events after its first are the source's, payload for payload.
    src, dst = env.store.read(source), env.store.read(fork.id)
    assert isinstance(dst[0].event, EpisodeStarted) and dst[0].event.forked_from is not None
    assert [r.data for r in dst[1:]] == [r.data for r in src[1 : len(dst)]]


def test_fork_continued_with_the_same_calls_reproduces_the_original():
    env = CompanyOSEnvironment()
    source = play_mixed(env, 5, 12)
    src = env.store.read(source)
    calls = [r.event for r in src if isinstance(r.event, ToolCalled)]
    env.reset(fork_from=source, at_step=4)
    fork = env.episode
    assert fork is not None
    for call in calls[4:]:
        env.step({"app": call.app, "method": call.method, "params": call.params})
    dst = env.store.read(fork.id)
    assert [r.data for r in dst[1:]] == [r.data for r in src[1 : len(dst)]]
    assert [r.event.reward for r in dst if isinstance(r.event, StepScored)] == [
        r.event.reward for r in src if isinstance(r.event, StepScored)
    ]


def test_fork_errors_are_clear():
    env = CompanyOSEnvironment()
    source = play_mixed(env, 1, 3)
    with pytest.raises(ResetError, match="at_step must be"):
        env.reset(fork_from=source, at_step=99)
    with pytest.raises(ResetError, match="no such episode"):
        env.reset(fork_from="nope", at_step=0)
    with pytest.raises(ResetError, match="needs at_step"):
        env.reset(fork_from=source)
    ep = env.episode
    assert ep is not None
    while not ep.world.ended:
        call = plan(ep.world)
        assert call is not None
        env.step(call.as_action())
    done = replay(env.store.read(ep.id))
    with pytest.raises(ResetError, match="already ended"):
        env.reset(fork_from=ep.id, at_step=len(done.steps))
    obs = env.reset(fork_from=ep.id, at_step=len(done.steps) - 1)
    assert not obs.done and obs.step == len(done.steps) - 1
