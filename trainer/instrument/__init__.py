"""Progress instrumentation for the trainer's partial credit: how far a failing program got.

`model.py` (progress prints a frozen model inserts, verified), `structure.py` (a marker after
each stage, placed by the program's own syntax, with a per-execution nonce), `bootstrap.py`
(the fixed program that runs the instrumented copy, isolated from the workspace) and
`executor.py` (the Executor wrapper that runs `python X.py` instrumented and reports the
stages reached, the program never seeing its markers).
"""

from .executor import ProgressExecutor, ProgressLog, ProgressReport
from .model import count_progress, instrument, markers_in
from .structure import instrument_structure, tamper_risk

__all__ = [
    "ProgressExecutor",
    "ProgressLog",
    "ProgressReport",
    "count_progress",
    "instrument",
    "instrument_structure",
    "markers_in",
    "tamper_risk",
]
