"""mlagent: an ML-engineering agent you watch and steer, in the terminal (core, tui, cli)."""

from .taskkit.legacy import install as _install_old_grading_names

# Graders of contract-1 task folders import the grading modules by their first names.
_install_old_grading_names()
