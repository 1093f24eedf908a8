"""The step's shortcuts give exactly what the long way gives (issue 17).

- An event built by the simulation without running the validator equals the same event
  validated, field for field, and so has the same payload and hash; so does one built from
  any keywords, right or wrong, or it is refused as validation refuses it. The reference is
  pydantic's own validation, not ``model_validate``, which calls the event's constructor.
- The milestone graph's memo (whole-world and per-milestone) gives, after every step, the
  milestones that a fresh graph evaluating every predicate gives; so do its collateral count
  (also against `goals.collateral`), its per-submission verdicts (against `goals`) and its
  "finished" test; asked only whether the task's end counts (`reached`, what a simulated
  fork asks), a graph answers as the full evaluation does; and the world folded while
  deciding equals the fold of the log.
- The signatures kept for OpenEnv's per-request look-up are the functions' own.
"""

from __future__ import annotations

import collections
import inspect
import types

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from companyos.api import CompanyOSEnvironment
from companyos.domain import FAMILY_NAMES, fold, goals, model, plan
from companyos.domain.catalogue import TOOLS
from companyos.domain.decider import decide_and_fold, decide_step
from companyos.events import EVENT_TYPES, InMemoryEventStore, canonical
from companyos.events.types import MetricQueried, ToolCalled
from companyos.projections import milestones_for

from .strategies import ORACLE, action, call_for


def _play(seed: int, task: int, difficulty: int, actions: list) -> bool:
    """Plays ``actions``, checking every shortcut after each step; whether the task's end was
    reached."""
    env = CompanyOSEnvironment(InMemoryEventStore())
    obs = env.reset(seed=seed, task_id=task, difficulty=difficulty)
    assert env.episode is not None and env.episode.world.task is not None
    # Asked only whether the end counts, step after step, as a simulated fork asks.
    ends_only = milestones_for(env.episode.world.task.goal)
    for a in actions:
        ep = env.episode
        assert ep is not None
        a = call_for(a, ep.world)
        if isinstance(a, dict):  # deciding and folding at once = deciding, then the fold
            args = (ep.world, a.get("app"), a.get("method"), a.get("params"), ep.version + 1)
            caused, after = decide_and_fold(*args, ep.rng, ep.limits)
            assert caused == decide_step(*args, ep.rng, ep.limits)
            assert after == fold(caused, ep.world)
        obs = env.step(a)
        ep = env.episode
        assert ep is not None
        for record in env.store.read(ep.id, from_seq=ep.version - 12):
            live = record.event
            again = _validated(EVENT_TYPES[live.type], live.model_dump())
            assert again == live and again.__dict__ == live.__dict__
            assert canonical(again.payload()) == canonical(live.payload())
        fresh = milestones_for(ep.world.task.goal)  # type: ignore[union-attr]
        assert ep.graph.achieved(ep.world) == fresh._evaluate(ep.world) == ep.score.achieved
        reached = fresh.success_id in ep.score.achieved
        assert ends_only.reached(ep.world) == ep.graph.reached(ep.world) == reached
        assert (
            ep.graph.damage(ep.world) == fresh.damage(ep.world) == len(goals.collateral(ep.world))
        )
        g, memo = ep.world.task.goal, ep.graph.memo  # type: ignore[union-attr]
        assert memo is not None
        for i in range(len(g.approvals)):  # the per-submission memo against the functions
            assert memo.valid_submissions(ep.world, i) == goals.valid_submissions(ep.world, g, i)
            assert memo.approved(ep.world, i) == goals.approved(ep.world, g, i)
        assert ep.graph.finished(ep.world) == goals.finished(ep.world)
        last = len(g.approvals) - 1
        long_way = (  # `goals.complete` by its definition: judge every request, then the status
            goals.decision_ok(ep.world, g)
            if g.decision != "approve"
            else bool(g.approvals)
            and any(a.status == "approved" for a in goals.valid_submissions(ep.world, g, last))
        )
        assert goals.complete(ep.world) == long_way
        assert ep.world == fold(r.event for r in env.store.read(ep.id))  # deciding = after
        if obs.done:
            break
    return reached


@settings(max_examples=120, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    task=st.integers(0, len(FAMILY_NAMES) - 1),
    difficulty=st.integers(0, 3),
    actions=st.lists(action, min_size=1, max_size=30),
)
def test_shortcuts_equal_the_long_way(seed, task, difficulty, actions):
    _play(seed, task, difficulty, actions)


def test_oracle_episodes_over_every_family_and_level():
    ended = [
        _play(task * 7 + difficulty, task, difficulty, [ORACLE] * 40)
        for task in range(len(FAMILY_NAMES))
        for difficulty in range(4)
    ]
    assert sum(ended) >= len(ended) - 2  # `reached` was seen true, not only false


def test_a_value_validation_would_convert_takes_the_validated_path():
    # An int for a float field is widened exactly as validation widens it.
    q = MetricQueried(metric="m", value=72, stale_days=4, stale=True)
    assert type(q.value) is float and q == _validated(MetricQueried, q.model_dump())
    assert canonical(q.payload()) == b'{"metric":"m","stale":true,"stale_days":4,"value":72.0}'
    # A bool for an int field, a wrong type, an unknown or a missing field: validation decides.
    for bad in (
        {"step": True, "app": "a", "method": "m"},
        {"step": "1", "app": "a", "method": "m"},
        {"step": 1, "app": "a", "method": "m", "extra": 1},
        {"app": "a", "method": "m"},
    ):
        try:
            built = ToolCalled(**bad)
        except ValueError:
            continue
        assert built == _validated(ToolCalled, bad)  # validation accepted it, converted


def test_an_original_worlds_start_equals_the_fold_of_its_opening_events():
    from companyos.domain.instances import build_episode, start_world
    from companyos.domain.original import TASK_IDS

    for task in TASK_IDS:
        for difficulty in range(4):
            for seed in (0, 1, 99):
                events = build_episode(task, seed, difficulty)
                assert start_world(events) == fold(events)
                assert start_world(events) == fold(events)  # the kept one too


def test_a_request_verdict_follows_its_status():
    """The memo keeps verdicts per submission: a decision on the same submission (an unfit
    request approved, then rejected) must still be seen."""
    for task in range(len(FAMILY_NAMES)):
        env = CompanyOSEnvironment(InMemoryEventStore())
        env.reset(seed=task, task_id=task, difficulty=1)
        ep = env.episode
        assert ep is not None
        for _ in range(60):  # the oracle until its first request is out
            if ep.world.approvals or ep.world.ended:
                break
            call = plan(ep.world)
            if call is None:
                break
            env.step(call.as_action())
            ep = env.episode
            assert ep is not None
        if not ep.world.approvals:
            continue
        graph = milestones_for(ep.world.task.goal)  # type: ignore[union-attr]
        memo = graph.memo
        assert memo is not None
        aid, a = next(iter(ep.world.approvals.items()))
        unfit = a._replace(evidence=a.evidence._replace(unread=("made up",)))
        worlds = [
            ep.world._replace(approvals={**ep.world.approvals, aid: unfit}),
            ep.world._replace(
                approvals={**ep.world.approvals, aid: unfit._replace(status="approved")}
            ),
            ep.world._replace(
                approvals={**ep.world.approvals, aid: unfit._replace(status="rejected")}
            ),
            ep.world._replace(approvals={**ep.world.approvals, aid: a._replace(status="approved")}),
        ]
        g = ep.world.task.goal  # type: ignore[union-attr]
        for w in worlds * 2:  # twice: the second pass answers from the memo
            assert memo.collateral(w) == len(goals.collateral(w)), task
            for i in range(len(g.approvals)):
                assert memo.valid_submissions(w, i) == goals.valid_submissions(w, g, i)
                assert memo.approved(w, i) == goals.approved(w, g, i)


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(),
    st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0xDFFF), max_size=8),
)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.one_of(st.text(max_size=6), st.integers()), _scalars, max_size=8))
def test_the_input_check_of_a_flat_mapping_equals_the_long_way(value):
    from companyos.domain.inputs import hostile, walk

    assert hostile(value) == walk(value)


def _rewards(env: CompanyOSEnvironment, moves: int) -> list[float]:
    out = []
    for _ in range(moves):
        ep = env.episode
        assert ep is not None
        call = plan(ep.world)
        obs = env.step(
            call.as_action() if call else {"app": "ticketdesk", "method": "list_tickets"}
        )
        out.append(obs.reward)
        if obs.done:
            break
    return out


def test_episodes_of_one_instance_share_a_graph_and_score_as_alone():
    """`graph_for`: the episodes of an instance share one milestone graph (and its memos);
    interleaved, and played in threads at once, each scores exactly as it does alone."""
    import threading

    from companyos.projections import graph_for

    for task in range(len(FAMILY_NAMES)):
        alone = CompanyOSEnvironment(InMemoryEventStore())
        alone.reset(seed=task, task_id=task, difficulty=2)
        expected = _rewards(alone, 40)
        envs = [CompanyOSEnvironment(InMemoryEventStore()) for _ in range(3)]
        for env in envs:
            env.reset(seed=task, task_id=task, difficulty=2)
        graphs = {id(env.episode.graph) for env in envs}  # type: ignore[union-attr]
        assert len(graphs) == 1
        goal = envs[0].episode.world.task.goal  # type: ignore[union-attr]
        assert envs[0].episode.graph is graph_for(goal)  # type: ignore[union-attr]
        got: list[list[float]] = [[] for _ in envs]
        for _ in range(40):  # interleaved, a step each in turn
            for i, env in enumerate(envs):
                if not env.episode.world.ended:  # type: ignore[union-attr]
                    got[i] += _rewards(env, 1)
        assert got == [expected] * 3, task
        results: list[list[float]] = []
        threads = []
        for _ in range(3):
            env = CompanyOSEnvironment(InMemoryEventStore())
            env.reset(seed=task, task_id=task, difficulty=2)

            def play(env: CompanyOSEnvironment = env, out: list = results) -> None:
                out.append(_rewards(env, 40))

            threads.append(threading.Thread(target=play))
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert results == [expected] * 3, task


def test_the_kept_signatures_are_the_functions_own():
    # OpenEnv reads them on every request; kept once, they must be what the code says.
    for name in ("reset", "step", "step_async"):
        function = vars(CompanyOSEnvironment)[name]
        assert "__signature__" in vars(function)
        bare = types.FunctionType(
            function.__code__, function.__globals__, name, function.__defaults__
        )
        bare.__kwdefaults__ = function.__kwdefaults__
        bare.__annotations__ = function.__annotations__
        assert function.__signature__ == inspect.signature(bare)


def test_the_end_does_not_count_while_a_prerequisite_fails():
    """`reached` asks the end's own predicate first; a world where it holds but `clean` does
    not (another ticket meddled with after the approval) is not a success, by either way."""
    from companyos.agents import in_process_oracle, play

    ends = 0
    for family in FAMILY_NAMES:
        env = CompanyOSEnvironment()
        r = play(env, in_process_oracle(env), seed=3, task_id=family, difficulty=1)
        assert env.episode is not None and r.outcome == "success"
        w = env.episode.world
        assert w.task is not None
        graph = milestones_for(w.task.goal)
        assert graph.reached(w)
        goal_tickets = {t.ticket_id for t in w.task.goal.tickets}
        other = next(t for t in w.tickets.values() if t.ticket_id not in goal_tickets)
        meddled = w._replace(
            tickets={**w.tickets, other.ticket_id: other._replace(verified=not other.verified)}
        )
        last = graph.milestones[-1]
        ends += last.check(meddled)  # the end's own predicate still holds ...
        fresh = milestones_for(w.task.goal)
        assert not graph.reached(meddled)  # ... yet the end does not count
        assert graph.success_id not in fresh._evaluate(meddled)
        assert graph.reached(w)
    assert ends >= len(FAMILY_NAMES) // 2


_QUICK = (
    model.Ticket,
    model.Metric,
    model.Approval,
    model.EpisodeInfo,
    model.ChaosLedger,
    model.Services,
    model.AppRules,
    model.World,
)
_anything = st.one_of(st.none(), st.integers(), st.text(max_size=3), st.booleans())


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(_QUICK), st.data())
def test_the_quick_replace_equals_namedtuple_s_own(cls, data):
    stock = collections.namedtuple("Stock", cls._fields)._replace  # the library's own
    obj = cls(*data.draw(st.tuples(*[_anything] * len(cls._fields))))
    names = data.draw(st.lists(st.sampled_from(cls._fields), unique=True))
    unknown = data.draw(st.lists(st.sampled_from(("nope", "_x", "Step")), unique=True))
    changes = {n: data.draw(_anything) for n in [*names, *unknown]}
    try:
        want = stock(obj, **changes)
    except ValueError as exc:
        with pytest.raises(ValueError) as got:
            obj._replace(**changes)
        assert str(got.value) == str(exc)
        return
    got_value = obj._replace(**changes)
    assert type(got_value) is cls and got_value == want
    assert tuple(got_value) == tuple(want)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    task=st.integers(0, len(FAMILY_NAMES) - 1),
    actions=st.lists(action, min_size=1, max_size=12),
)
def test_an_event_read_back_is_the_validated_event(seed, task, actions):
    """`parse_event` builds a stored event with its constructor: the same event, field for
    field and type for type, as validating the stored payload."""
    from companyos.events.upcasting import parse_event, upcast

    env = CompanyOSEnvironment(InMemoryEventStore())
    env.reset(seed=seed, task_id=task, difficulty=2)
    for a in actions:
        assert env.episode is not None
        if env.step(call_for(a, env.episode.world)).done:
            break
    assert env.episode is not None
    for r in env.store.read(env.episode.id):
        data = upcast(r.type, r.schema_version, r.data)
        validated = _validated(EVENT_TYPES[r.type], {**data, "type": r.type})
        for built in (parse_event(r.type, r.schema_version, r.data), r.event):
            assert built == validated and built.__dict__ == validated.__dict__
            assert [type(v) for v in built.__dict__.values()] == [
                type(v) for v in validated.__dict__.values()
            ]


@settings(max_examples=300, deadline=None)
@given(
    st.integers(min_value=0, max_value=2**40),
    st.text(max_size=30),
    st.lists(
        st.tuples(st.integers(min_value=0, max_value=10**6), st.text(max_size=40)),
        min_size=1,
        max_size=8,
    ),
)
def test_a_keyed_draw_is_the_hash_of_its_key_and_draw_together(seed, scope, draws):
    """`KeyedRNG` hashes on from its key's kept hash: each draw is still blake2b (8 bytes) of
    the key and the draw in one, whatever was drawn before, as the logs recorded so far were
    made."""
    import hashlib

    from companyos.domain.rng import KeyedRNG

    rng = KeyedRNG(seed, scope)
    key = (f"{scope}|{seed}|" if scope else f"{seed}|").encode()
    for seq, purpose in [*draws, *draws]:  # again: a draw must not change the kept hash
        whole = hashlib.blake2b(key + f"{seq}|{purpose}".encode(), digest_size=8).digest()
        assert rng._bits(seq, purpose) == int.from_bytes(whole, "big")
    assert KeyedRNG(7, "s")._bits(3, "fault") == 0xFE9336D02A32C25F  # as recorded before


def test_a_keyed_rng_copies_and_pickles_with_its_draws():
    """The kept hash is not picklable; the RNG is, as before (a copy draws what it draws)."""
    import copy
    import pickle

    from companyos.domain.rng import AdversarialRNG, KeyedRNG, PlacedFaults

    for rng in (KeyedRNG(5), KeyedRNG(5, "scope"), AdversarialRNG(), PlacedFaults(3, 0.5)):
        for again in (pickle.loads(pickle.dumps(rng)), copy.deepcopy(rng), copy.copy(rng)):
            assert type(again) is type(rng)
            for seq in range(20):
                assert again.uniform(seq, "fault") == rng.uniform(seq, "fault")
                assert again.randint(seq, "x", 1, 9) == rng.randint(seq, "x", 1, 9)


_MENTION_CHARS = st.sampled_from([*"aAbBkKsS09 -_.,'/", "\u017f", "\u212a", "\u0130", "é"])


@settings(max_examples=1000, deadline=None)
@given(st.text(_MENTION_CHARS, max_size=24), st.text(_MENTION_CHARS, max_size=4))
def test_a_mention_is_found_as_the_regular_expression_finds_it(text, word):
    """`model.mentions` reads ASCII text without its regular expression: the same answer, for
    any text and word (non-ASCII ones, which fold differently, keep the expression)."""
    import re

    from companyos.domain.model import mentions

    pattern = rf"(?<![0-9A-Za-z]){re.escape(word)}(?![0-9A-Za-z])"
    assert mentions(text, word) == (re.search(pattern, text, re.IGNORECASE) is not None)
    # A word set in a sentence is found; glued to a letter or digit, it is not.
    if word.isascii() and word and word[0].isalnum() and word[-1].isalnum():
        assert mentions(f"re: {word}, ok", word) and not mentions(f"x{word}", word)


_PANEL = (
    *(True, 0, 2, 1.5, -0.0, "x", "", None, [], ["a"], [1], ("a",), {}, {"k": 1.0}, {"k": "v"}),
    *(2**53, 2**53 + 1, -(2**60), 10**400),
)
"""Values of every kind a caller could pass, each tried in every field of every event (ints too
large to be exact as floats, or to be floats at all, included)."""


def _example(annotation):
    """A value validation keeps unchanged for a field of this type."""
    import typing

    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Literal:
        return args[0]
    if origin in (list, dict):
        return origin()
    if args:  # a union: its first member
        return _example(args[0])
    return {str: "a", int: 1, float: 1.0, bool: True}.get(annotation)


def _flat_events() -> list[type]:
    return sorted((c for c in EVENT_TYPES.values() if not c.nested), key=lambda c: c.__name__)


@pytest.mark.parametrize("cls", _flat_events(), ids=lambda c: c.__name__)
def test_an_event_built_without_its_validator_is_the_validated_event(cls, monkeypatch):
    """Keywords right and wrong, for every flat event: all fields given as validation keeps
    them (the fast build is taken), then each field given each value of a panel (a bool for an
    int, an int for a float, a tuple for a list, ...) or left out, then a keyword the class
    does not have. The constructor gives what validation gives, field for field and type for
    type, or refuses as validation refuses."""
    from companyos.events import types

    fields = {n: _example(f.annotation) for n, f in cls.model_fields.items() if n != "type"}
    _as_validated(cls, fields)
    assert getattr(cls.__init__, "fast", False), "the class has no constructor of its own"
    with monkeypatch.context() as m:
        m.setattr(types, "_validate", _refuse)
        cls(**fields)  # the fast build is taken: validation is not called
        with pytest.raises(AssertionError, match="validated"):
            cls(**fields, unknown_field=1)  # the watch itself works
    for name in fields:
        for value in _PANEL:
            _as_validated(cls, {**fields, name: value})
        _as_validated(cls, {k: v for k, v in fields.items() if k != name})
    _as_validated(cls, {**fields, "unknown_field": 1})
    _as_validated(cls, {**fields, "type": cls.model_fields["type"].default})


def _refuse(event, data):
    raise AssertionError("validated")


def _validated(cls: type, kwargs: dict):
    """``cls`` validated by pydantic itself. Not ``model_validate``: for a class with its own
    ``__init__``, pydantic's validation calls it, so that would be the fast build again."""
    from pydantic import BaseModel

    event = cls.__new__(cls)
    BaseModel.__init__(event, **kwargs)
    return event


def _as_validated(cls: type, kwargs: dict) -> None:
    from pydantic import ValidationError

    try:
        validated = _validated(cls, kwargs)
    except ValidationError:
        with pytest.raises(ValidationError):
            cls(**kwargs)
        return
    built = cls(**kwargs)
    assert built == validated and built.__dict__ == validated.__dict__
    assert list(built.__dict__) == list(validated.__dict__)
    assert [type(v) for v in built.__dict__.values()] == [
        type(v) for v in validated.__dict__.values()
    ]
    assert built.model_fields_set == validated.model_fields_set
    # repr, not canonical JSON: it tells 1 from 1.0 and True from 1 as well, and takes the
    # panel's int beyond 64 bits (which the API's inputs refuse before any event holds one).
    assert repr(built.payload()) == repr(validated.payload())


_PARAM_VALUES = st.one_of(
    st.sampled_from(["T-001", " T-001 ", "", "CFO", "x" * 64, "x" * 65, 0, 1, True, False, None]),
    st.sampled_from([1.0, -2, 2**53, [], ["a"], {}, {"k": "v"}]),
    st.text(max_size=8),
)


@given(
    tool=st.sampled_from(sorted(TOOLS)),
    params=st.dictionaries(
        st.sampled_from(
            [
                "ticket_id",
                "field",
                "value",
                "metric_name",
                "role",
                "query",
                "approval_id",
                "reason",
                "approval_type",
                "approver",
                "data",
                "other",
            ]
        ),
        _PARAM_VALUES,
        max_size=4,
    ),
)
@settings(max_examples=400, deadline=None)
def test_kept_params_are_the_validated_params(tool, params):
    """A tool's params as the decider parses them (kept for calls of short scalars) are what
    the params model validates, field for field and type for type, asked once and again; what
    validation refuses is refused each time, and never kept."""
    from pydantic import ValidationError

    from companyos.domain.decider import parse_params

    spec = TOOLS[tool]
    try:
        want = spec.params.model_validate(params)
    except ValidationError:
        for _ in range(2):
            with pytest.raises(ValidationError):
                parse_params(spec, dict(params))
        return
    for _ in range(2):
        got = parse_params(spec, dict(params))
        assert type(got) is type(want) and got == want
        assert [type(v) for v in got.__dict__.values()] == [type(v) for v in want.__dict__.values()]


def test_kept_params_tell_equal_values_of_other_types_apart():
    """True == 1 and False == 0 in Python, as keys too: a call with one must not be handed the
    params kept for the other (`update_ticket`'s value keeps either type)."""
    from companyos.domain.decider import parse_params

    spec = TOOLS[("ticketdesk", "update_ticket")]
    for value in (True, 1, False, 0, True, 0):
        params = {"ticket_id": "T-001", "field": "priority", "value": value}
        assert type(parse_params(spec, params).value) is type(value)


def test_event_subclasses_get_their_own_constructor_or_keep_theirs():
    """A subclass of a flat event builds its own fields, not its parent's; one that writes
    its own constructor keeps it; one with a field called ``self`` validates."""
    from typing import Literal

    from companyos.events.types import Event, TicketUpdated

    class Tagged(TicketUpdated):
        tag: str = "t"

    built = Tagged(ticket_id="T-1", field="f", old=None, new=1, tag="x")
    assert built.tag == "x" and built.model_fields_set == {
        "ticket_id",
        "field",
        "old",
        "new",
        "tag",
    }
    assert getattr(Tagged.__init__, "fast", False) and Tagged.__init__ is not TicketUpdated.__init__

    class Own(Event):
        type: Literal["Own"] = "Own"
        n: int

        def __init__(self, **data):
            super().__init__(**{**data, "n": data.get("n", 0) + 1})

    assert Own(n=1).n == 2

    class Odd(Event):  # a field the generated code could not take as a parameter
        type: Literal["Odd"] = "Odd"
        self: int

    assert Odd(self=1).self == 1 and not getattr(Odd.__init__, "fast", False)
