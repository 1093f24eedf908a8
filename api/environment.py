"""The OpenEnv environment of CompanyOS, usable in-process and served by `api.server`.

    env = CompanyOSEnvironment()                       # in-memory store
    obs = env.reset(seed=7, task_id="vendor_onboarding", difficulty=2)
    obs = env.step(CompanyOSAction(app="ticketdesk", method="get_ticket",
                                   params={"ticket_id": "TKT-1042"}))

Bad input never raises from `step`: it becomes an `InvalidAction` event with a message and a
penalty. A step with no episode to go to (none started, an unknown id) is answered with an
error code and writes nothing. Text and numbers nothing can keep (lone surrogates, NUL, NaN,
infinities: `domain.inputs`) are refused like any other bad value. `reset` raises
`ResetError` (a ValueError) with a message that says what to send instead.

An action may name a stored episode (`episode_id`): that is how stateless HTTP continues an
episode. With an `EpisodeCache` (the server passes one) the folded episode is reused while the
store says it is current.
"""

from __future__ import annotations

import contextlib
import inspect
import secrets
import uuid
from typing import Any

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.mcp_types import (
    CallToolAction,
    CallToolObservation,
    ListToolsAction,
    ListToolsObservation,
)
from openenv.core.env_server.types import EnvironmentMetadata, Observation

from companyos.domain import BY_NAME, DEFAULT_LIMITS, ORIGINAL_DIFFICULTY, Limits
from companyos.domain.goals import collateral
from companyos.domain.inputs import hostile, printable
from companyos.domain.limits import clip_name
from companyos.domain.model import clock_label
from companyos.events import ConcurrencyConflict, EventStore, InMemoryEventStore, StoreError
from companyos.events.types import AgentReplied, InvalidAction, replies_stream
from companyos.projections import progress, render_result, render_world, tool_manifest

from .cache import EpisodeCache
from .episode import (
    EPISODE_ID,
    MAX_EPISODE_STEPS,
    Episode,
    EpisodeExists,
    EpisodeNotFound,
    ResetError,
    check_difficulty,
    check_seed,
)
from .models import (
    AgentReply,
    CompanyOSAction,
    CompanyOSBatchAction,
    CompanyOSBatchObservation,
    CompanyOSObservation,
    CompanyOSState,
    observation_from,
    unwrap,
    wire,
)

RESET_OPTIONS = (
    "seed",
    "episode_id",
    "task_id",
    "difficulty",
    "fork_from",
    "at_step",
    "max_steps",
    "reward_profile",
    "agent",
    "show_progress",
    "batch",
)
_MANIFEST = tool_manifest()


class CompanyOSEnvironment(Environment[CompanyOSAction, CompanyOSObservation, CompanyOSState]):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(
        self,
        store: EventStore | None = None,
        *,
        difficulty: int = ORIGINAL_DIFFICULTY,
        reward_profile: str = "default",
        limits: Limits = DEFAULT_LIMITS,
        cache: EpisodeCache | None = None,
        max_episode_steps: int = MAX_EPISODE_STEPS,
    ) -> None:
        super().__init__()
        self._owns_store = store is None
        self.store: EventStore = store if store is not None else InMemoryEventStore()
        self.default_difficulty = check_difficulty(difficulty)
        self.default_profile = reward_profile
        self.limits = limits
        self.cache = cache
        self.max_episode_steps = max_episode_steps
        self._episode: Episode | None = None
        self._session = f"session-{uuid.uuid4().hex}"
        """Names this session (in logs); no stream is written under it."""
        self._mcp_server: Any = None
        self._batch: dict[str, Episode] = {}
        """Episodes this session started with `reset_batch`, by id."""

    # ------------------------------------------------------------------ OpenEnv API

    def reset(
        self,
        /,  # OpenEnv passes a request's JSON keys as keywords: {"self": 1} must not bind here
        seed: int | None = None,
        episode_id: str | None = None,
        task_id: str | int | None = None,
        difficulty: int | None = None,
        fork_from: str | None = None,
        at_step: int | None = None,
        max_steps: int | None = None,
        reward_profile: str | None = None,
        agent: str | None = None,
        show_progress: bool | None = None,
        batch: list[Any] | None = None,
        **kwargs: Any,
    ) -> CompanyOSObservation:
        given = {
            "seed": seed,
            "episode_id": episode_id,
            "task_id": task_id,
            "difficulty": difficulty,
            "fork_from": fork_from,
            "at_step": at_step,
            "max_steps": max_steps,
            "reward_profile": reward_profile,
            "agent": agent,
            "show_progress": show_progress,
            "batch": batch,
            **kwargs,
        }
        found = hostile(given)
        if found is not None:  # before anything quotes the value in a message or stores it
            raise ResetError(f"{found.describe()}; nothing was started")
        if batch is not None:  # many resets in one message (`reset_batch`)
            if kwargs or any(
                v is not None
                for v in (seed, episode_id, task_id, difficulty, fork_from, at_step, max_steps)
            ):
                raise ResetError("a batch reset takes only batch: put each reset's options in it")
            return _batch_observation(self.reset_batch(batch))  # type: ignore[return-value]
        if kwargs:
            raise ResetError(
                f"unknown reset option(s) {', '.join(sorted(kwargs))}; "
                f"known: {', '.join(RESET_OPTIONS)}"
            )
        new_id = episode_id if episode_id is not None else str(uuid.uuid4())
        if fork_from is not None:
            if at_step is None:
                raise ResetError("fork_from needs at_step: the step to fork after (0 = the start)")
            # A fork branches off: the episode it leaves stays open (it may be the source).
            episode = Episode.fork(
                self.store, fork_from, at_step, new_id, self.limits, agent, show_progress
            )
            message = f"Forked {fork_from} at step {at_step} into {new_id}."
        else:
            if at_step is not None:
                raise ResetError("at_step is only meaningful with fork_from")
            seed = secrets.randbelow(2**31) if seed is None else check_seed(seed)
            episode = Episode.start(
                self.store,
                new_id,
                seed=seed,
                task_id=task_id,
                difficulty=self.default_difficulty if difficulty is None else difficulty,
                reward_profile=self.default_profile if reward_profile is None else reward_profile,
                max_steps=max_steps,
                agent=agent,
                limits=self.limits,
                max_episode_steps=self.max_episode_steps,
                show_progress=False if show_progress is None else show_progress,
            )
            assert episode.world.info is not None
            message = f"New episode {new_id}: {episode.world.info.scenario} (seed {seed})."
            # Starting over gives up the episode this session was playing.
            self._abandon_current()
        self._episode = episode
        if self.cache is not None:
            self.cache.put(episode)
        return self._observation(episode, message=message, tools=True)

    def step(self, action: Any, /, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        action = unwrap(action)
        if isinstance(action, CompanyOSBatchAction):
            return _batch_observation(self.step_batch(action.batch))
        if isinstance(action, ListToolsAction):
            from .mcp import openenv_tools

            return ListToolsObservation(tools=openenv_tools())
        if isinstance(action, CallToolAction):
            obs = self.call_tool(action.tool_name, action.arguments)
            from .mcp import tool_result

            return CallToolObservation(
                tool_name=action.tool_name,
                result=tool_result(obs),
                done=obs.done,
                reward=obs.reward,
            )
        app, method, params, episode_id, expected_step = _unpack(action)
        return self.act(app, method, params, episode_id, expected_step, _reply_of(action))

    async def step_async(
        self, action: Any, /, timeout_s: float | None = None, **kwargs: Any
    ) -> Observation:
        return self.step(action, timeout_s=timeout_s, **kwargs)

    # ------------------------------------------------------------------ batches

    def reset_batch(self, resets: list[Any]) -> list[CompanyOSObservation]:
        """Start many episodes in one call (offline evaluation, search): each item is a dict
        of `reset` options. The episodes belong to this session's batch, which `step_batch`
        plays; the session's own episode is left as it was. A bad item raises `ResetError`
        naming its index, and then none is started."""
        if not isinstance(resets, list) or not 1 <= len(resets) <= MAX_BATCH:
            raise ResetError(f"batch must be a list of 1 to {MAX_BATCH} resets")
        # All or nothing: every item is first tried on a scratch store (a refused reset writes
        # nothing, in a batch too); forks are not batched.
        scratch = CompanyOSEnvironment(
            InMemoryEventStore(),
            difficulty=self.default_difficulty,
            reward_profile=self.default_profile,
            limits=self.limits,
            max_episode_steps=self.max_episode_steps,
        )
        ids: set[str] = set()
        for i, options in enumerate(resets):
            if not isinstance(options, dict) or {"batch", "fork_from", "at_step"} & set(options):
                raise ResetError(f"batch[{i}] must be an object of reset options (no fork)")
            try:
                scratch.reset(**options)
            except ResetError as exc:
                raise type(exc)(f"batch[{i}]: {exc}") from None
            eid = options.get("episode_id")
            if eid is not None and (eid in ids or self.store.version(eid) != -1):
                raise EpisodeExists(f"batch[{i}]: episode {eid!r} already exists")
            ids.add(eid)
        own, out = self._episode, []
        try:
            for options in resets:
                self._episode = None  # so that starting one does not abandon the last
                out.append(self.reset(**options))
                assert self._episode is not None
                self._batch[self._episode.id] = self._episode
        finally:
            self._episode = own
        return out

    def step_batch(self, actions: list[Any]) -> list[CompanyOSObservation]:
        """Many calls in one, each naming an episode of this session's batch (`reset_batch`)
        by ``episode_id``; applied in order, each exactly as `step` applies one call. A call
        naming no episode of the batch is answered with ``error: "not_in_batch"`` and
        changes nothing."""
        if not isinstance(actions, list) or not 1 <= len(actions) <= MAX_BATCH:
            return [_not_in_batch(f"batch must be a list of 1 to {MAX_BATCH} calls")]
        own, out = self._episode, []
        touched: set[str] = set()
        try:
            # One message is answered once: its steps are made durable together.
            with self.store.deferred_commit():
                for a in actions:
                    app, method, params, episode_id, expected = _unpack(a)
                    episode = self._batch.get(episode_id) if episode_id is not None else None
                    if episode is None:
                        out.append(
                            _not_in_batch(
                                f"episode_id {clip_name(episode_id, self.limits)!r} is not one "
                                "this session started with a batch reset; reset it in a batch "
                                "first"
                            )
                        )
                        continue
                    self._episode = episode
                    touched.add(episode.id)
                    out.append(self.act(app, method, params, None, expected))
                    if self._episode is not None and self._episode is not episode:
                        self._batch[episode.id] = self._episode  # reloaded after a conflict
        except StoreError:
            # Steps of this message may be lost with it: the copies held here must again be
            # the fold of what the store has, or be dropped (reloaded at their next use).
            for eid in touched:
                self._forget(eid)
            raise
        finally:
            self._episode = own
        return out

    def _forget(self, episode_id: str) -> None:
        """Let go of our folded copy of an episode whose latest appends may not have been
        kept: the batch's copy is loaded again from the store if it can be, else dropped; a
        cached copy is dropped."""
        if self.cache is not None:
            self.cache.discard(episode_id)
        if episode_id in self._batch:
            try:
                self._batch[episode_id] = Episode.load(self.store, episode_id, self.limits)
            except (StoreError, EpisodeNotFound):
                del self._batch[episode_id]

    def call_tool(self, name: str, arguments: dict[str, Any]) -> CompanyOSObservation:
        """Run a tool by its flat MCP name (``ticketdesk_get_ticket``); ``arguments`` may carry
        ``episode_id``."""
        args = dict(arguments) if isinstance(arguments, dict) else {"_": arguments}
        episode_id = args.pop("episode_id", None)
        spec = BY_NAME.get(name)
        if spec is not None:
            app, method = spec.app, spec.method
        else:  # unknown: let the decider explain, with the app the name suggests
            app, _, method = str(name).partition("_")
        return self.act(app, method, args, episode_id if isinstance(episode_id, str) else None)

    def act(
        self,
        app: Any,
        method: Any,
        params: Any,
        episode_id: str | None = None,
        expected_step: int | None = None,
        reply: AgentReply | None = None,
    ) -> CompanyOSObservation:
        """One tool call in this session's episode, or in the stored episode ``episode_id``.
        ``reply``, the model reply the call was read from, is logged beside the episode just
        before the call is made (`log_reply`); a call that is not made logs none.

        A session (an environment that has started, forked or continued an episode) plays that
        episode only: an action naming another is refused, as a step of its own episode, so
        that nobody can act in, or take the outcome of, an episode that is not theirs."""
        own = self._episode
        if own is not None and episode_id is not None and episode_id != own.id:
            return self._refuse(
                own,
                app,
                method,
                params,
                InvalidAction(
                    code="foreign_episode",
                    message=f"This session plays episode {own.id}; it cannot act in "
                    f"{clip_name(episode_id, self.limits)!r}. Leave episode_id out (or pass "
                    "this one), or reset() to start another.",
                ),
            )
        try:
            episode = self._resolve(episode_id)
        except EpisodeNotFound as exc:
            return self._orphan(
                "episode_not_found",
                f"{exc}. Start one with reset() or pass an existing episode_id.",
            )
        if episode is None:
            return self._orphan(
                "no_episode",
                "No episode is running: call reset() first (over plain HTTP, "
                "pass the episode_id that /reset returned with every step).",
            )
        # A call that names its episode acts on the episode as it is in the store: if our copy
        # was stale (another process stepped it), the append refuses and we decide again on the
        # fresh one. A session's own episode, or a call that states the step it expects, gets
        # the conflict back instead: its caller decided on what it last saw.
        retries = RETRIES if episode_id is not None and expected_step is None else 0
        reloaded = False
        while True:
            snapshot = episode.snapshot
            if snapshot.world.ended:
                return self._observation(
                    episode,
                    message=f"Episode {episode.id} has ended ({snapshot.world.outcome}); "
                    "nothing was done. Call reset() to start a new one, or fork this one.",
                    error="episode_ended",
                    reward=0.0,
                )
            if expected_step is not None and expected_step != snapshot.world.step:
                if not reloaded and self.store.version(episode.id) != snapshot.version:
                    # Our copy is stale (another process or replica stepped the episode): the
                    # caller may have seen the newer step. Judge against the store's.
                    episode, reloaded = self._reload(episode), True
                    continue
                return self._observation(
                    episode,
                    message=f"Not applied: episode {episode.id} is at step "
                    f"{snapshot.world.step}, not {expected_step}. Look at the current state "
                    "and decide again.",
                    error="conflict",
                    reward=0.0,
                )
            if reply is not None:
                log_reply(self.store, episode.id, snapshot.world.step + 1, reply)
                reply = None  # once, though a conflict decides the call again
            try:
                result = episode.step(app, method, params)
            except ConcurrencyConflict as exc:
                episode = self._reload(episode)
                if retries:
                    retries -= 1
                    continue
                return self._observation(
                    episode, message=f"Not applied: {exc}.", error="conflict", reward=0.0
                )
            shown, message, error = render_result(episode.world, result.caused)
            return self._observation(
                episode, result=shown, message=message, error=error, reward=result.reward
            )

    def _refuse(
        self, episode: Episode, app: Any, method: Any, params: Any, refusal: InvalidAction
    ) -> CompanyOSObservation:
        if episode.snapshot.world.ended:
            return self._observation(
                episode,
                message=f"Episode {episode.id} has ended; nothing was done. {refusal.message}",
                error=refusal.code,
                reward=0.0,
            )
        try:
            result = episode.step(app, method, params, refuse=refusal)
        except ConcurrencyConflict as exc:
            return self._observation(
                self._reload(episode), message=f"Not applied: {exc}.", error="conflict", reward=0.0
            )
        shown, message, error = render_result(episode.world, result.caused)
        return self._observation(
            episode, result=shown, message=message, error=error, reward=result.reward
        )

    @property
    def state(self) -> CompanyOSState:
        return state_of(self._episode)

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name="CompanyOS",
            description="Multi-step enterprise workflows across TicketDesk, DataHub and "
            "ApprovalFlow with chaos, served from an event-sourced, replayable log.",
            version="0.1.0",
            documentation_url="https://github.com/companyos/companyos#readme",
        )

    @property
    def mcp_server(self) -> Any:
        """This environment's tools as an MCP server (built on first use: OpenEnv's `/mcp`
        route asks for it; plain steps never do)."""
        if self._mcp_server is None:
            from .mcp import server_for

            self._mcp_server = server_for(self)
        return self._mcp_server

    def close(self) -> None:
        if self._owns_store:
            self.store.close()

    # ------------------------------------------------------------------ helpers

    @property
    def episode(self) -> Episode | None:
        return self._episode

    def _resolve(self, episode_id: str | None) -> Episode | None:
        current = self._episode
        if episode_id is None or (current is not None and current.id == episode_id):
            return current
        if not isinstance(episode_id, str) or not EPISODE_ID.match(episode_id):
            # No stored episode has such an id: answer without asking the store (a NUL or a
            # lone surrogate in a query is a driver error, which would read as an outage).
            raise EpisodeNotFound(f"no episode {printable(episode_id)!r} in the store")
        if self.cache is not None:
            self._episode = self.cache.get(episode_id, check=False)
        else:
            self._episode = Episode.load(self.store, episode_id, self.limits)
        return self._episode

    def _reload(self, stale: Episode) -> Episode:
        fresh = (
            self.cache.reload(stale.id)
            if self.cache is not None
            else Episode.load(self.store, stale.id, self.limits)
        )
        if self._episode is stale:
            self._episode = fresh
        return fresh

    def _abandon_current(self) -> None:
        ep = self._episode
        if ep is not None and not ep.world.ended:
            with contextlib.suppress(ConcurrencyConflict):  # someone else moved it on
                ep.abandon()

    def _orphan(self, code: str, message: str) -> CompanyOSObservation:
        """A call with no episode to go to: answered, and nothing written. A refused request
        must not grow the store: anyone who can reach the port could fill it with streams of
        their own params."""
        return CompanyOSObservation(
            done=False,
            reward=0.0,
            message=f"Invalid action: {message}",
            error=code,
            last_result={"error": code, "message": message},
        )

    def _observation(
        self,
        ep: Episode,
        *,
        result: Any = None,
        message: str = "",
        error: str | None = None,
        reward: float | None = None,
        tools: bool = False,
    ) -> CompanyOSObservation:
        w, score, _ = ep.snapshot
        info = w.info
        assert info is not None and w.task is not None
        # The agent's view: what a person doing the job would see. Nothing of the grader
        # (milestones, return, shortcut counts) unless the episode asked for a curriculum.
        return observation_from(
            {
                "done": w.ended,
                "reward": reward,
                "metadata": {},
                "episode_id": ep.id,
                "seed": info.seed,
                "task_id": info.scenario,
                "difficulty": info.difficulty,
                "task": w.task.text,
                "step": w.step,
                "max_steps": info.max_steps,
                "steps_remaining": w.steps_remaining,
                "clock_minutes": w.clock,
                "time": clock_label(w.clock),
                "instance_id": w.task.instance_id or None,
                "progress": progress(ep.graph, score.achieved) if info.show_progress else {},
                "last_result": result,
                "message": message,
                "error": error,
                "outcome": w.outcome,
                "tools": _MANIFEST if tools else [],
            }
        )


def _keep_signatures(cls: type) -> None:
    """OpenEnv's HTTP routes look up ``inspect.signature`` of ``step``/``reset`` on every
    request (to pass on only the options they accept): tens of microseconds each time. A
    function's ``__signature__``, where it has one, is what ``inspect.signature`` returns."""
    for name in ("reset", "reset_async", "step", "step_async"):
        function = cls.__dict__.get(name)
        if callable(function):
            function.__signature__ = inspect.signature(function)


_keep_signatures(CompanyOSEnvironment)


RETRIES = 4
"""Times a call naming its episode (without expected_step) is decided again after losing the
append to a simultaneous step: each loss means another step won, so this only runs out when
five others won in between."""

MAX_BATCH = 1024
"""Calls (or resets) in one batch."""


def _batch_observation(results: list[CompanyOSObservation]) -> CompanyOSBatchObservation:
    # Built without validation: each answer is `wire` of an observation made here (JSON
    # values only), which validating as list[dict[str, Any]] would only copy, 64 times a
    # message (a test checks the result equals the validated model).
    return CompanyOSBatchObservation.model_construct(
        results=[wire(o) for o in results], done=all(o.done for o in results), reward=None
    )


def _not_in_batch(message: str) -> CompanyOSObservation:
    return CompanyOSObservation(
        done=False,
        reward=0.0,
        message=f"Not applied: {message}.",
        error="not_in_batch",
        last_result={"error": "not_in_batch", "message": message},
    )


def state_of(ep: Episode | None) -> CompanyOSState:
    if ep is None:
        return CompanyOSState(episode_id=None, step_count=0)
    w, score, version = ep.snapshot
    info = w.info
    assert info is not None
    return CompanyOSState(
        episode_id=ep.id,
        step_count=w.step,
        seed=info.seed,
        task_id=info.scenario,
        difficulty=info.difficulty,
        max_steps=info.max_steps,
        done=w.ended,
        outcome=w.outcome,
        cumulative_return=score.total,
        stream_version=version,
        progress=progress(ep.graph, score.achieved),
        shortcut_attempts=score.shortcut_attempts,
        collateral=collateral(w) if w.task is not None else [],
        show_progress=info.show_progress,
        forked_from=info.forked_from[0] if info.forked_from else None,
        fork_step=info.forked_from[1] if info.forked_from else None,
        world=render_world(w),
    )


def _reply_of(action: Any) -> AgentReply | None:
    """The reply an action carries (a dict action's is validated here: a bad one raises
    before anything is done, as a bad typed action fails to build)."""
    if isinstance(action, CompanyOSAction):
        return action.reply
    if isinstance(action, dict) and action.get("reply") is not None:
        return AgentReply.model_validate(action["reply"])
    return None


def log_reply(store: EventStore, episode_id: str, step: int, reply: AgentReply) -> None:
    """Append ``reply`` as an `AgentReplied` to the episode's replies stream (beside the
    episode: its seq, fold and score do not see it)."""
    stream = replies_stream(episode_id)
    event = AgentReplied(episode_id=episode_id, step=step, **reply.model_dump())
    for _ in range(20):  # two sessions stepping one episode: each reply gets its turn
        try:
            store.append(stream, [event], store.version(stream))
            return
        except ConcurrencyConflict:
            continue
    raise ConcurrencyConflict(f"the replies of {episode_id} are being written concurrently")


def _unpack(action: Any) -> tuple[Any, Any, Any, str | None, int | None]:
    if isinstance(action, CompanyOSAction):
        return action.app, action.method, action.params, action.episode_id, action.expected_step
    if isinstance(action, dict):
        eid, expected = action.get("episode_id"), action.get("expected_step")
        return (
            action.get("app"),
            action.get("method"),
            action.get("params"),
            eid if isinstance(eid, str) else None,
            expected if isinstance(expected, int) and not isinstance(expected, bool) else None,
        )
    return (
        getattr(action, "app", None),
        getattr(action, "method", None),
        getattr(action, "params", None),
        None,
        None,
    )


__all__ = ["CompanyOSEnvironment", "ResetError", "state_of"]
