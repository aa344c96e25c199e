"""The solve agent's improvement as one edit of its best valid script (tweak.py).

A small model asked to improve a script writes a whole new one, and most of those do not run
(the distilled 135M model: 15 of 18 on held-out tasks; its answers began with a reference
script's header). Asked to choose one setting's new value under a grammar, it writes a change
that always applies, and the search's edits ran in 161 of 180. So once a run is valid, each
improve step changes one setting (a number, a column list, the model) of the best valid script
so far, and a change that failed or scored worse costs one step, not the session: the next
edit starts again from the best. The model chooses the setting from a menu, then its value
(menu.py). Where no setting is left to change, the agent writes a whole script as before.
"""

from __future__ import annotations

import random
import re

from pydantic import BaseModel

from .menu import menu_of
from .prompts import StepRecord
from .tweak import Tweak, pick_tweak

_SCORE = re.compile(r"\n\nValidation: [^\n=]*=\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)")


class Run(BaseModel):
    """One Run Solution step: the script it ran and its validation score (None: not valid)."""

    step: int
    script: str
    score: float | None = None


class EditPlan(BaseModel):
    """The next improve step: the run it starts from and the settings it may change (one
    where the setting was drawn for the model: `choose` False, as sessions stored before the
    menu ran)."""

    base: Run
    menu: list[Tweak]
    choose: bool = True


def runs_of(history: list[StepRecord]) -> list[Run]:
    """Every Run Solution step of the history, its score read from its validation line."""
    out: list[Run] = []
    for r in history:
        if r.action != "Run Solution":
            continue
        match = _SCORE.search(r.observation) if r.ok else None
        out.append(
            Run(
                step=r.step,
                script=str(r.action_input.get("content", "")),
                score=float(match.group(1)) if match else None,
            )
        )
    return out


def best_run(runs: list[Run], higher_is_better: bool) -> Run | None:
    """The best valid run; of equal scores the first (the later one changed nothing)."""
    valid = [r for r in runs if r.score is not None and r.score == r.score]  # not NaN
    if not valid:
        return None
    sign = 1 if higher_is_better else -1
    return max(valid, key=lambda r: (sign * r.score, -r.step))  # type: ignore[operator]


def plan_edit(
    history: list[StepRecord],
    columns: list[str],
    higher_is_better: bool,
    *,
    menu: bool = True,
    seed: int = 0,
) -> EditPlan | None:
    """The edit of the best valid run to try next: its settings with a value no earlier run
    tried (without `menu`, one of them drawn at random by `seed`). None where nothing ran
    validly or every setting's values were tried."""
    runs = runs_of(history)
    best = best_run(runs, higher_is_better)
    if best is None:
        return None
    siblings = [r.script for r in runs]
    if not menu:
        rng = random.Random(f"{seed}:{len(runs)}:{best.step}")
        focus = pick_tweak(best.script, columns, rng, siblings)
        return EditPlan(base=best, menu=[focus], choose=False) if focus is not None else None
    settings = menu_of(best.script, columns, siblings)
    return EditPlan(base=best, menu=settings) if settings else None
