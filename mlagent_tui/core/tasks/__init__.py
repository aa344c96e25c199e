"""Tasks: the task.toml spec and registry, preparing, grading, checking, baselines, milestones."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

# A task's private/grade.py imports mlagent_tui.taskkit, which re-exports grading, metrics,
# grading_worker and grading_games, in a fresh process for every grading (and a copy of grading
# and metrics runs inside the sandbox). So that it pays for those alone, the package loads a
# module of its own only when one of its names is first asked for.
_PUBLIC = {
    "baseline": ("BaselineResult", "run_baseline"),
    "check": ("Check", "TaskReport", "check_task", "tree_hashes"),
    "contract": ("CURRENT_CONTRACT", "OLDEST_CONTRACT"),
    "grading": ("SubmissionError",),
    "result": ("GradeResult",),
    "milestones": ("MILESTONE_WEIGHTS", "milestone_reward", "milestone_reward_for"),
    "preview": ("folder_preview", "runnable_starter", "task_preview"),
    "spec": (
        "BUNDLED_TASKS",
        "DEFAULT_TASK",
        "MEDALS",
        "Task",
        "TaskError",
        "TaskSpec",
        "find_task",
        "list_tasks",
        "load_spec",
        "tasks_in",
        "tasks_root",
    ),
}
_MODULE_OF = {name: module for module, names in _PUBLIC.items() for name in names}

if TYPE_CHECKING:
    from .baseline import BaselineResult, run_baseline
    from .check import Check, TaskReport, check_task, tree_hashes
    from .contract import CURRENT_CONTRACT, OLDEST_CONTRACT
    from .grading import SubmissionError
    from .milestones import MILESTONE_WEIGHTS, milestone_reward, milestone_reward_for
    from .preview import folder_preview, runnable_starter, task_preview
    from .result import GradeResult
    from .spec import (
        BUNDLED_TASKS,
        DEFAULT_TASK,
        MEDALS,
        Task,
        TaskError,
        TaskSpec,
        find_task,
        list_tasks,
        load_spec,
        tasks_in,
        tasks_root,
    )

__all__ = [
    "BUNDLED_TASKS",
    "CURRENT_CONTRACT",
    "DEFAULT_TASK",
    "MEDALS",
    "MILESTONE_WEIGHTS",
    "OLDEST_CONTRACT",
    "BaselineResult",
    "Check",
    "GradeResult",
    "SubmissionError",
    "Task",
    "TaskError",
    "TaskReport",
    "TaskSpec",
    "check_task",
    "find_task",
    "folder_preview",
    "list_tasks",
    "load_spec",
    "milestone_reward",
    "milestone_reward_for",
    "run_baseline",
    "runnable_starter",
    "task_preview",
    "tasks_in",
    "tasks_root",
    "tree_hashes",
]


__getattr__ = lazy_exports(__name__, _MODULE_OF)
