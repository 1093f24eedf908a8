"""The scripted workload every in-process benchmark row plays: the original CompanyOS's
vendor-onboarding trace (`agents.original.ReadmeTrace`: the README's eight calls, a failed call
made again, the request polled until decided, a rejection escalated) on its fixed world, one
seed an episode.

Each environment plays the script itself once to record its calls (the script reacts to what
it is shown), then the timed rounds replay the recorded calls: only the environment is timed,
and both environments are deterministic for a seed, so the replay takes the same path.
"""

from __future__ import annotations

from typing import Any

from original_model import OriginalStyleEnv

from companyos.agents import RandomAgent
from companyos.agents.original import ReadmeTrace
from companyos.api import CompanyOSAction, CompanyOSEnvironment
from companyos.domain import plan

TASK = "task_vendor_onboarding"
Script = list[tuple[int, list[dict[str, Any]]]]
"""(seed, the calls of that episode) for each episode."""


def script_companyos(env: CompanyOSEnvironment, seeds: range) -> Script:
    out: Script = []
    for seed in seeds:
        obs = env.reset(seed=seed, task_id=TASK)
        policy, calls = ReadmeTrace(), []
        while not obs.done:
            call = policy.act(obs.last_result if calls else None)
            calls.append(call)
            obs = env.step(CompanyOSAction(**call))
        out.append((seed, calls))
    return out


def script_original(env: OriginalStyleEnv, seeds: range) -> Script:
    out: Script = []
    for seed in seeds:
        env.reset(seed)
        policy, calls, done, last = ReadmeTrace(), [], False, None
        while not done:
            call = policy.act(last)
            calls.append(call)
            obs, _, done, _ = env.step(call)
            last = obs["last_result"]
        out.append((seed, calls))
    return out


def as_episodes(script: Script) -> list[Episode]:
    """A recorded CompanyOS script as `Episode`s (reset options, typed calls): the shape
    `record_episodes` gives, so a benchmark plays either alike."""
    return [
        ({"seed": s, "task_id": TASK}, [CompanyOSAction(**c) for c in calls]) for s, calls in script
    ]


def steps_per_episode(script: Script) -> float:
    return sum(len(c) for _, c in script) / len(script)


Episode = tuple[dict[str, Any], list[CompanyOSAction]]


def record_episodes(n_steps: int) -> list[Episode]:
    """Calls of realistic episodes: mostly the oracle, every third call random."""
    env = CompanyOSEnvironment()
    out: list[Episode] = []
    total, seed = 0, 0
    while total < n_steps:
        kwargs = {"seed": seed, "task_id": seed % 5, "difficulty": seed % 4}
        obs = env.reset(**kwargs)
        agent, actions = RandomAgent(seed), []
        while not obs.done:
            ep = env.episode
            assert ep is not None
            call = plan(ep.world)
            raw = agent.act(obs) if len(actions) % 3 == 2 or call is None else call.as_action()
            action = CompanyOSAction(**raw)
            actions.append(action)
            obs = env.step(action)
        out.append((kwargs, actions))
        total += len(actions)
        seed += 1
    return out
