"""The classes of attack `mlagent sandbox check` probes beyond the basic ones.

Each entry is a function `probe(executor, ws, home, session_id, report)` that adds one or more
probes to `report` (a SelfTest); it must pass only when the attack fails. One module per class.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .hostile import hostile_probes
from .hostreads import hostreads_probes
from .memory import memory_probes
from .privilege import privilege_probes
from .stored import stored_probes

ClassProbe = Callable[[Any, Path, Path, str, Any], None]

CLASS_PROBES: list[ClassProbe] = [
    hostile_probes,
    hostreads_probes,
    memory_probes,
    privilege_probes,
    stored_probes,
]
