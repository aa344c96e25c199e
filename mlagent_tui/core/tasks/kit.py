"""A copy of mlagent_tui.taskkit's pure part, for a grader that runs inside the sandbox.

The sandbox cannot import the project itself: bwrap mounts the virtual environment but not an
editable install's source folder, and the docker image has neither the project nor pydantic.
What a grader needs there (run_grader, the submission readers, the metrics) is standard library
plus numpy and pandas, so those files are copied, as they are, into a folder the sandbox sees;
with that folder on PYTHONPATH, `import mlagent_tui.taskkit` works the same inside as outside.
The worker pool and the game harness are not copied: they start sandboxes of their own.
"""

from __future__ import annotations

import shutil
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2]  # mlagent_tui/
KIT_FILES = (
    "__init__.py",
    "taskkit/__init__.py",
    "taskkit/legacy.py",
    "core/__init__.py",
    "core/lazy.py",
    "core/tasks/__init__.py",
    "core/tasks/contract.py",
    "core/tasks/grading.py",
    "core/tasks/metrics.py",
)


def install_taskkit(dest: Path) -> Path:
    """Copy the taskkit's pure files into `dest`/mlagent_tui; put `dest` on the grader's
    PYTHONPATH. Returns the package folder written."""
    root = Path(dest) / PACKAGE.name
    for rel in KIT_FILES:
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(PACKAGE / rel, target)
    return root
