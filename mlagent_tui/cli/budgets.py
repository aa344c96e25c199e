"""The budget options of `mlagent run | resume | fork` (and the refusal of 0 and negatives).

A budget of 0 used to mean "the task's default" and a negative one was accepted: both are a
usage error now (exit code 2), with one line naming the option.
"""

from __future__ import annotations

from typing import Annotated

import typer


def _positive(value: float | None) -> float | None:
    if value is not None and value <= 0:
        raise typer.BadParameter(f"{value:g} is not a budget: give more than 0, or leave it out")
    return value


MaxStepsOpt = Annotated[
    int | None,
    typer.Option("--max-steps", min=1, help="Steps to run (default: the task's limit)."),
]
MaxMinutesOpt = Annotated[
    float | None, typer.Option("--max-minutes", callback=_positive, help="Wall-clock minutes.")
]
MaxCostOpt = Annotated[
    float | None, typer.Option("--max-cost", callback=_positive, help="US dollars.")
]
MaxTokensOpt = Annotated[
    int | None, typer.Option("--max-tokens", min=1, help="Model tokens, in and out.")
]
StuckAfterOpt = Annotated[
    int,
    typer.Option(
        "--stuck-after",
        min=0,
        help="End the session (its best validated submission graded) once the same action "
        "with the same input failed, or gave the same result, this many times in a row; "
        "0: never.",
    ),
]
RESUME_BUDGET_HELP = (
    "Budgets given here count from where the session resumes (steps default to its own step "
    "budget); without any, it goes on with the budget it had. A session whose budget is spent, "
    "or that ended stopped (by you, stuck, the model ran out), needs a new budget."
)
FORK_BUDGET_HELP = "A fork's budgets count its own new steps, from step K."
