"""Flawed agents: observation-only agents with one realistic flaw each (`base`), the fixtures
that show failure analysis names the flaw. Each module is one flaw; its ``label`` is what the
analysis should call a failure it caused."""

from __future__ import annotations

from collections.abc import Callable

from .base import Flawed
from .fixes_too_late import FixesTooLate
from .gives_up import GivesUp
from .hallucinates_tool import HallucinatesTool
from .misses_retry import MissesRetry
from .mixes_up_metrics import MixesUpMetrics
from .mixes_up_tickets import MixesUpTickets
from .picks_absent_approver import PicksAbsentApprover
from .skips_verification import SkipsVerification
from .uses_stale_data import UsesStaleData

FLAWED: dict[str, Callable[[], Flawed]] = {
    f"{cls.name}:{cls.flaw}" if cls.flaw else cls.name: cls
    for cls in (
        GivesUp,
        HallucinatesTool,
        MixesUpTickets,
        MixesUpMetrics,
        SkipsVerification,
        MissesRetry,
        FixesTooLate,
        PicksAbsentApprover,
        UsesStaleData,
    )
}
"""Each flawed agent by the label of its flaw (``label:flaw`` when two flaws share a label)."""

__all__ = ["FLAWED", "Flawed"]
