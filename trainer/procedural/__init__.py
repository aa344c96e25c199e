"""Procedural training tasks: seeded synthetic tabular tasks with varied names, sizes and types.

`generate_tasks(out, count, seed)` writes task folders in the bundled format (prepare.py,
env/train.py, private/grade.py, private/reference/*.py, description.md, task.toml) whose
thresholds and baseline score are measured by running the references. Names load on first
use, so the measuring worker (`python -m trainer.procedural.measure`) pays for none of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mlagent_tui.core.lazy import lazy_exports

_MODULE_OF = {
    "GeneratedTask": "generate",
    "ProceduralError": "generate",
    "generate_tasks": "generate",
    "TaskDesign": "design",
    "design_task": "design",
    "task_name": "design",
}

if TYPE_CHECKING:
    from .design import TaskDesign, design_task, task_name
    from .generate import GeneratedTask, ProceduralError, generate_tasks

__all__ = [
    "GeneratedTask",
    "ProceduralError",
    "TaskDesign",
    "design_task",
    "generate_tasks",
    "task_name",
]

__getattr__ = lazy_exports(__name__, _MODULE_OF)
