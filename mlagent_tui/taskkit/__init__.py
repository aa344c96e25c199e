"""The public, stable surface for task authors: everything a task's private/grade.py may import.

Import from here, never from mlagent_tui.core (whose modules may move): docs/tasks.md describes
each name and the task-folder contract. The grading protocol, the submission readers and checks
and the metrics need only the standard library, numpy and pandas, so they import anywhere a
grader runs: on the host, and inside the sandbox, where `mlagent tasks synth` checks generated
graders from a copy of this package (mlagent_tui.core.tasks.kit). The worker pool and the game
harness run agent code in the sandbox, so they work only on the host, where the project is.

Grading protocol
    run_grader, SubmissionError, sandbox_backend, SANDBOXES, CURRENT_CONTRACT, OLDEST_CONTRACT
Reading and checking submissions
    load_answers, load_csv_submission, check_range, check_whole
Metrics
    accuracy, log_loss, macro_f1, mae, rmse, roc_auc, smape
Code tasks (host only)
    worker_pool, WorkerPool, Worker, WORKER_PRELUDE
Repeated two-player games (host only)
    grade_game, Opponent, play, play_all
"""

from __future__ import annotations

import sys
from importlib import import_module
from typing import TYPE_CHECKING

# Each name loads its module on first use: a grader pays only for what it touches, and the
# host-only names never load inside the sandbox unless asked for.
_MODULE_OF = {
    "SANDBOXES": "mlagent_tui.core.tasks.grading",
    "SubmissionError": "mlagent_tui.core.tasks.grading",
    "check_range": "mlagent_tui.core.tasks.grading",
    "check_whole": "mlagent_tui.core.tasks.grading",
    "load_answers": "mlagent_tui.core.tasks.grading",
    "load_csv_submission": "mlagent_tui.core.tasks.grading",
    "run_grader": "mlagent_tui.core.tasks.grading",
    "sandbox_backend": "mlagent_tui.core.tasks.grading",
    "CURRENT_CONTRACT": "mlagent_tui.core.tasks.contract",
    "OLDEST_CONTRACT": "mlagent_tui.core.tasks.contract",
    "accuracy": "mlagent_tui.core.tasks.metrics",
    "log_loss": "mlagent_tui.core.tasks.metrics",
    "macro_f1": "mlagent_tui.core.tasks.metrics",
    "mae": "mlagent_tui.core.tasks.metrics",
    "rmse": "mlagent_tui.core.tasks.metrics",
    "roc_auc": "mlagent_tui.core.tasks.metrics",
    "smape": "mlagent_tui.core.tasks.metrics",
    "WORKER_PRELUDE": "mlagent_tui.core.tasks.grading_worker",
    "Worker": "mlagent_tui.core.tasks.grading_worker",
    "WorkerPool": "mlagent_tui.core.tasks.grading_worker",
    "worker_pool": "mlagent_tui.core.tasks.grading_worker",
    "Opponent": "mlagent_tui.core.tasks.grading_games",
    "grade_game": "mlagent_tui.core.tasks.grading_games",
    "play": "mlagent_tui.core.tasks.grading_games",
    "play_all": "mlagent_tui.core.tasks.grading_games",
}
HOST_ONLY = frozenset(
    name for name, module in _MODULE_OF.items() if module.endswith(("_worker", "_games"))
)

if TYPE_CHECKING:
    from mlagent_tui.core.tasks.contract import CURRENT_CONTRACT, OLDEST_CONTRACT
    from mlagent_tui.core.tasks.grading import (
        SANDBOXES,
        SubmissionError,
        check_range,
        check_whole,
        load_answers,
        load_csv_submission,
        run_grader,
        sandbox_backend,
    )
    from mlagent_tui.core.tasks.grading_games import Opponent, grade_game, play, play_all
    from mlagent_tui.core.tasks.grading_worker import (
        WORKER_PRELUDE,
        Worker,
        WorkerPool,
        worker_pool,
    )
    from mlagent_tui.core.tasks.metrics import (
        accuracy,
        log_loss,
        macro_f1,
        mae,
        rmse,
        roc_auc,
        smape,
    )

__all__ = [
    "CURRENT_CONTRACT",
    "OLDEST_CONTRACT",
    "Opponent",
    "SANDBOXES",
    "SubmissionError",
    "WORKER_PRELUDE",
    "Worker",
    "WorkerPool",
    "accuracy",
    "check_range",
    "check_whole",
    "grade_game",
    "load_answers",
    "load_csv_submission",
    "log_loss",
    "macro_f1",
    "mae",
    "play",
    "play_all",
    "rmse",
    "roc_auc",
    "run_grader",
    "sandbox_backend",
    "smape",
    "worker_pool",
]


def __getattr__(name: str) -> object:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        value = getattr(import_module(module), name)
    except ImportError as exc:
        if name not in HOST_ONLY:
            raise
        raise ImportError(
            f"mlagent_tui.taskkit.{name} runs agent code in the sandbox and works only on the "
            f"host, where mlagent is installed ({exc})",
            name=exc.name,
        ) from exc
    setattr(sys.modules[__name__], name, value)
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_MODULE_OF])
