"""The session screen's panes; each one renders from a SessionView."""

from .panes import DiffPane, ExecLog, FactCheckPane, PlanPane
from .scores import ScoresPane
from .status import StatusBar
from .timeline import Timeline

__all__ = [
    "DiffPane",
    "ExecLog",
    "FactCheckPane",
    "PlanPane",
    "ScoresPane",
    "StatusBar",
    "Timeline",
]
