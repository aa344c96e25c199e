"""Old name of `mlagent_tui.core.tasks.grading_worker`, kept for graders outside this repo."""

# Task folders of your own and `mlagent tasks synth` output import it by this name; it is the
# very same module object, so nothing differs but the name.
import sys

from .tasks import grading_worker

sys.modules[__name__] = grading_worker
