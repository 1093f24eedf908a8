"""The honest solver: plays from observations only (see `solver`)."""

from __future__ import annotations

from .brief import Brief, Rule, TicketNeed, read_brief
from .solver import Call, HonestSolver, Seen

__all__ = ["Brief", "Call", "HonestSolver", "Rule", "Seen", "TicketNeed", "read_brief"]
