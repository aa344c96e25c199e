"""Guided improve groups for single-step: the task's reference solution as one more, off-policy
member of a group, and a count of the policy's own answers that beat the script they improve.

Why: two single-step runs from the shipped warm start sampled 65 valid answers to improve
prompts: 56 copied their parent (the same score to the last digit), 8 were worse, 1 better.
GRPO can then mostly teach copying more reliably, which a held-out session at temperature 0.2
already does. The reference member (off-policy guidance, as in LUFFY) puts one better answer in
each group: its advantage is measured against the group's own answers, its ratio against the
current policy.
"""

from __future__ import annotations

from mlagent_tui.core.store import Store
from mlagent_tui.core.tasks import Task

from ..demos import method_of, solve_answer
from ..policy.batch import Sample
from ..rollout import SessionOutcome
from .common import RunContext, answer_ids


def reference_sample(ctx: RunContext, task: Task, prompt_ids: list[int]) -> Sample | None:
    """The answer a demonstration's Improve step gives (plan and the `--guide` level's reference
    script) to the group's prompt; None where the task has no reference of that level or the
    answer would not fit the policy's context."""
    path = task.references().get(ctx.options.guide)
    if path is None:
        return None
    reference = path.read_text(encoding="utf-8")
    text = solve_answer(task, reference, method_of(reference, task.name))(2, "")
    ids = answer_ids(ctx.policy, text)
    if len(prompt_ids) + len(ids) > ctx.policy.max_context:
        return None
    # no sampler log-probs: the loss takes the ratio's base from the policy's first inner step
    return Sample(
        text=text,
        prompt_ids=list(prompt_ids),
        completion_ids=ids,
        logprobs=[],
        finish_reason="stop",
        seconds=0.0,
    )


def parent_score(store: Store, parent: tuple[str, int]) -> float | None:
    """The validation score of the step an improve prompt forks (None: it had none)."""
    rows = store.fetch_dicts(
        "SELECT score FROM scores WHERE session_id = ? AND step = ? AND split = 'validate' "
        "AND valid = 1 ORDER BY seq DESC LIMIT 1",
        parent,
    )
    return rows[0]["score"] if rows else None


def better_than_parent(task: Task, before: float | None, outcomes: list[SessionOutcome]) -> int:
    """How many answers validated strictly better than the script they were asked to improve."""
    if before is None:
        return 0
    scores = [o.steps[-1].score for o in outcomes if o.steps and o.steps[-1].valid]
    return sum(1 for s in scores if s is not None and task.better(s, before))
