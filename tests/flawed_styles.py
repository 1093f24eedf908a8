"""Other habits of work for the flawed agents (`agents.flawed`), none of them a mistake: the
same flaw played by an agent that works in another order, reads figures another way or checks
its work, the way agents written elsewhere differ from the honest solver the forks use. Each
style is a `HonestSolver` with one habit changed; `styled` gives a flawed agent playing on it."""

from __future__ import annotations

from collections.abc import Callable

from companyos.agents.flawed import Flawed
from companyos.domain.honest import HonestSolver, Seen
from companyos.domain.honest.solver import Call

SURVEY: tuple[Call, ...] = (
    ("ticketdesk", "list_tickets", {}),
    ("approvalflow", "list_approvals", {}),
    ("datahub", "list_metrics", {}),
)


class Surveyor(HonestSolver):
    """Looks around every app before it starts work."""

    def __init__(self, task: str, family: str) -> None:
        super().__init__(task, family)
        self.survey = list(SURVEY)

    def act(self, seen: Seen | None) -> Call:
        if not self.survey:
            return super().act(seen)
        if seen is not None:
            self.observe(seen)
        call = self.survey.pop(0)
        self.last = call
        self.calls.setdefault(call[0], []).append(self.now + 5)
        return call


class QueriesFirst(HonestSolver):
    """Reads a figure with query_metric and refreshes it only when the answer says it is stale;
    a figure it queried it reads again before each request (a served value can go stale)."""

    def __init__(self, task: str, family: str) -> None:
        super().__init__(task, family)
        self.stale: set[str] = set()
        self.queried: set[str] = set()
        self.checked = False
        """Its queried figures were read again for the request about to go out."""

    def _chain(self) -> list[Call]:
        out = super()._chain()
        if not out or out[0][1] != "submit_approval":
            return out
        if self.checked or not self.queried:
            self.checked = False
            return out
        for name in self.queried:
            self.values.pop(name, None)  # read again first
        self.queried.clear()
        self.checked = True
        return self._figures() + out

    def observe(self, seen: Seen) -> None:
        call = self.last
        super().observe(seen)
        if call is None or call[1] != "query_metric" or seen.error is not None:
            return
        result = seen.result if isinstance(seen.result, dict) else {}
        name = str(call[2]["metric_name"])
        if result.get("is_stale"):
            self.stale.add(name)
        elif "value" in result:
            self.values[name] = float(result["value"])
            self.queried.add(name)

    def _figures(self) -> list[Call]:
        return [
            c if c[2]["metric_name"] in self.stale else ("datahub", "query_metric", c[2])
            for c in super()._figures()
        ]


class Rechecks(HonestSolver):
    """Reads a ticket again after each change it makes to it."""

    def act(self, seen: Seen | None) -> Call:
        last = self.last
        if seen is None or last is None or last[1] != "update_ticket" or seen.error is not None:
            return super().act(seen)
        self.observe(seen)
        call = ("ticketdesk", "get_ticket", {"ticket_id": last[2]["ticket_id"]})
        self.last = call
        self.calls.setdefault(call[0], []).append(self.now + 5)
        return call


STYLES: dict[str, type[HonestSolver]] = {
    "surveyor": Surveyor,
    "queries_first": QueriesFirst,
    "rechecks": Rechecks,
}


def styled(agent: Callable[[], Flawed], style: str) -> type[Flawed]:
    """``agent``'s flaw, played on the solver of ``style``."""
    assert isinstance(agent, type)
    return type(f"{agent.__name__}_{style}", (agent,), {"solver_class": STYLES[style]})
