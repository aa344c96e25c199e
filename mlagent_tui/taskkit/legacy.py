"""The grading modules' first names still import, with a DeprecationWarning.

Task folders written to contract 1 import `mlagent_tui.core.grading`, `grading_worker` and
`grading_games`. Those modules are gone; a finder on sys.meta_path (installed when `mlagent_tui`
is imported) answers for exactly these three names with the module that holds the code now, so
an old grader gets the very same objects (SubmissionError, run_grader, worker_pool) as a new
one, and a warning naming mlagent_tui.taskkit.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from importlib.abc import Loader, MetaPathFinder
from importlib.machinery import ModuleSpec
from importlib.util import spec_from_loader
from types import ModuleType

OLD_NAMES = {
    "mlagent_tui.core.grading": "mlagent_tui.core.tasks.grading",
    "mlagent_tui.core.grading_worker": "mlagent_tui.core.tasks.grading_worker",
    "mlagent_tui.core.grading_games": "mlagent_tui.core.tasks.grading_games",
}


class _AliasLoader(Loader):
    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return None  # a throwaway module: exec_module puts the real one in its place

    def exec_module(self, module: ModuleType) -> None:
        name = module.__name__
        target = importlib.import_module(OLD_NAMES[name])
        warnings.warn(
            f"{name} is deprecated: import the same names from mlagent_tui.taskkit (docs/tasks.md)",
            DeprecationWarning,
            stacklevel=2,  # the first frame outside the import machinery: the grader's import
        )
        # the import system returns what sys.modules holds once this returns
        sys.modules[name] = target


class AliasFinder(MetaPathFinder):
    """Finds the three old names, and nothing else."""

    def find_spec(
        self, fullname: str, path: object = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname not in OLD_NAMES:
            return None
        return spec_from_loader(fullname, _AliasLoader())


def install() -> None:
    """Put the finder first on sys.meta_path, once."""
    if not any(isinstance(finder, AliasFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, AliasFinder())
