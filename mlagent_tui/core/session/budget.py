"""A session's budgets (steps, minutes, cost, tokens) and the point they count from.

`run` counts from the start. `fork` counts only the new session's own steps (from the fork
step). `resume` with new budgets counts from where it resumes; `resume` without them goes on
with the budget the session had (a run interrupted at step 3 of 5 gets 2 more, so a bench stays
fair). The budget in force is stored: in `SessionStarted.config["budget"]` and in the
`Resumed` event that sets a new one, so a later resume finds it again.
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from ..events import Event
from ..store import Store
from ..tasks import Task
from .config import SessionConfig
from .state import LoadedState, SessionError

if TYPE_CHECKING:
    from .parts import SessionParts

BUDGET_KEY = "budget"


class Budget(BaseModel):
    """Limits, and the step, cost and tokens already spent when they started to count."""

    max_steps: int = Field(ge=1)
    max_minutes: float | None = Field(default=None, gt=0)
    max_cost: float | None = Field(default=None, gt=0)
    max_tokens: int | None = Field(default=None, ge=1)
    from_step: int = Field(default=0, ge=0)
    from_cost: float = 0.0
    from_tokens: int = 0

    @property
    def last_step(self) -> int:
        """The last step this budget lets the session run."""
        return self.from_step + self.max_steps


class BudgetLimits(BaseModel):
    """What a command line gives: each limit or nothing (0 and negatives are refused)."""

    max_steps: int | None = Field(default=None, ge=1)
    max_minutes: float | None = Field(default=None, gt=0)
    max_cost: float | None = Field(default=None, gt=0)
    max_tokens: int | None = Field(default=None, ge=1)

    @property
    def given(self) -> bool:
        return any(v is not None for v in self.model_dump().values())

    def starting(
        self, default_steps: int, *, step: int = 0, cost: float = 0.0, tokens: int = 0
    ) -> Budget:
        """A budget of these limits counting from (step, cost, tokens); steps default to the
        task's limit, as for `run`."""
        return Budget(
            max_steps=self.max_steps or default_steps,
            max_minutes=self.max_minutes,
            max_cost=self.max_cost,
            max_tokens=self.max_tokens,
            from_step=step,
            from_cost=cost,
            from_tokens=tokens,
        )


def stored_budget(started: Event, resumes: list[Event], fallback: Budget) -> Budget:
    """The budget in force: the last one a resume set, else the one the session started with,
    else (a session stored before budgets were) `fallback`."""
    for event in reversed(resumes):
        if event.payload.budget:
            return Budget.model_validate(event.payload.budget)
    raw: Any = (started.payload.config or {}).get(BUDGET_KEY)
    return Budget.model_validate(raw) if raw else fallback


def budget_reason(s: SessionParts) -> tuple[str, str] | None:
    """Why the session must end before its next step (a stop or a spent budget), if it must."""
    if s._stop_reason:
        return "stopped", s._stop_reason
    return stuck(s) or spent(
        s.budget, s.completed, s.cost_usd, s.tokens_in + s.tokens_out, s._started
    )


def stuck(s: SessionParts) -> tuple[str, str] | None:
    """("stopped", why) once the last `stuck_after` steps of this budget were one action with
    one input that failed each time, or that returned the same observation each time: a small
    model can repeat it until the step budget is gone (make run once sent `Execute Script
    validated.py`, a file that does not exist, for 28 steps, and once validated one unchanged
    submission from step 10 to 30)."""
    n = s.config.stuck_after
    recent = [r for r in s.state.history if r.step > s.budget.from_step][-n:] if n else []
    if len(recent) < max(n, 1):
        return None
    first = recent[0]
    if any((r.action, r.action_input) != (first.action, first.action_input) for r in recent):
        return None
    args = " ".join(str(v) for v in first.action_input.values()).split()
    what = f"{first.action or 'an unparsed answer'} {' '.join(args)[:40]}".strip()
    if not any(r.ok for r in recent):
        return "stopped", f"stuck: {what} failed {n} times in a row"
    if len({_untimed(r.observation) for r in recent}) == 1:
        return "stopped", f"stuck: {what} gave the same result {n} times in a row"
    return None


def _untimed(observation: str) -> str:
    """An observation without its run time ("exit code 0, 0.3 s"): an unchanged script that
    prints the same is the same result, however long it took this time."""
    return _RUN_TIME.sub(r"\1", observation)


_RUN_TIME = re.compile(r"(exit code -?\d+), \d+(?:\.\d+)? s")


def spent(
    b: Budget, completed: int, cost: float, tokens: int, started: float | None = None
) -> tuple[str, str] | None:
    """("budget", which one) once a limit is reached; the time limit counts in this process."""
    since = f" (counted from step {b.from_step})" if b.from_step else ""
    if completed >= b.last_step:
        return "budget", f"step budget of {b.max_steps} used{since}"
    if (
        b.max_minutes is not None
        and started is not None
        and time.monotonic() - started > b.max_minutes * 60
    ):
        return "budget", f"time budget of {b.max_minutes:g} minutes used"
    if b.max_cost is not None and cost - b.from_cost >= b.max_cost:
        return "budget", f"cost budget of ${b.max_cost:g} used{since}"
    if b.max_tokens is not None and tokens - b.from_tokens >= b.max_tokens:
        return "budget", f"token budget of {b.max_tokens} used{since}"
    return None


def limits_of(config: SessionConfig) -> BudgetLimits:
    return BudgetLimits(
        max_steps=config.max_steps,
        max_minutes=config.max_minutes,
        max_cost=config.max_cost,
        max_tokens=config.max_tokens,
    )


def resumed_budget(
    store: Store,
    session_id: str,
    config: SessionConfig,
    task: Task,
    loaded: LoadedState,
    limits: BudgetLimits | None,
) -> tuple[Budget, bool]:
    """(the budget a resume runs under, whether it is new)."""
    tokens = loaded.tokens_in + loaded.tokens_out
    default_steps = config.max_steps or task.spec.limits.max_steps
    if limits is not None and limits.given:
        return limits.starting(
            default_steps, step=loaded.last_step, cost=loaded.cost_usd, tokens=tokens
        ), True
    events = store.events(session_id, kinds=["session_started", "resumed"])
    fallback = limits_of(config).starting(task.spec.limits.max_steps)
    budget = stored_budget(events[0], events[1:], fallback)
    used = spent(budget, loaded.last_step, loaded.cost_usd, tokens)
    if used is not None:
        raise SessionError(
            f"session {session_id} cannot go on: {used[1]}; give it a new budget, counted from "
            f"step {loaded.last_step}: mlagent resume {session_id} --max-steps N "
            "(or --max-minutes, --max-cost, --max-tokens)"
        )
    return budget, False


def refuse_ended(row: dict[str, Any], limits: BudgetLimits | None) -> None:
    """A SessionError for a session that ended `stopped` (by the person, stuck, the model ran
    out) when no new budget is given: resuming it on its old budget would end it again at once
    and record a new end over the one the person saw."""
    if row["status"] != "stopped" or (limits is not None and limits.given):
        return
    sid = row["id"]
    raise SessionError(
        f"session {sid} has ended ({row.get('end_reason') or 'stopped'}); to go on, give it a "
        f"new budget counted from its last step: mlagent resume {sid} --max-steps N "
        "(or --max-minutes, --max-cost, --max-tokens)"
    )
