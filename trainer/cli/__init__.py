"""`mlagent-train`: RL fine-tuning of the local model from logged sessions and fresh rollouts.

Every command has --help; --json prints one JSON object on stdout (progress goes to stderr).
"""

from . import data, demos, evaluate, export, procedural, run  # noqa: F401 - each registers its commands
from .app import app, main

__all__ = ["app", "main"]
