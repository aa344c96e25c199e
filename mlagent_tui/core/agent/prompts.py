"""Prompts of the research agent (MLAgentBench's, with MLGym's memory) and the solve agent."""

from __future__ import annotations

import json

from pydantic import BaseModel, Field

from .actions import ActionSpec

OBSERVATION_LIMIT = 3_000

INSTRUCTIONS = """You are a helpful research assistant. You have access to the following tools:
{actions}

Research Problem:
{problem}

You do not know anything about this problem so far.

Follow these instructions and do not forget them:
- First, come up with a high level plan based on your understanding of the problem and available \
tools and record it in the Research Plan and Status. You can revise the plan later.
- Research Plan and Status should well organized and succinctly keep track of 1) high level plan \
(can be revised), 2) what steps have been done and what steps are in progress, 3) short results \
and conclusions of each step after it has been performed. Mark what changed with **double stars**.
- Research Plan and Status must only include progress that has been made by previous steps. It \
should not include results not directly confirmed by the previous observation.
- Performance numbers and estimates can only be confirmed and included in the status by running \
the code and observing the output.
- You should come up with a good experiment design that addresses the problem, and whenever \
applicable, define and measure the baseline performance of the relevant system or model before \
attempting any improvements.
- Follow the plan and try to achieve the goal as straightforwardly as possible.
- Highlight the supporting experiment results and reasoning before drawing any conclusions.
- Do not try installing any new packages or libraries.
- Use Validate to score your submission file ({submission}) without ending; use Final Answer \
only when you are confident you have achieved the goal.

Always respond in this format exactly:
Reflection: What does the observation mean? If there is an error, what caused the error and how \
to debug?
Research Plan and Status: The full high level research plan, with current status and confirmed \
results of each step briefly annotated.
Fact Check: List all objective statements in the updates to Research Plan and Status one by one \
and point out whether it is guessed versus directly confirmed by the previous observation directly \
above. Performance numbers can only be confirmed by running the code and observing the output.
Thought: What you are currently doing, what actions to perform and why
Action: the action to take, should be one of the names of the tools
Action Input: the input to the action as a valid JSON object
"""


class StepRecord(BaseModel):
    """One completed step as the prompt needs it."""

    step: int
    action: str
    action_input: dict = Field(default_factory=dict)
    response_text: str = ""
    observation: str = ""
    ok: bool = True


def describe_actions(actions: list[ActionSpec]) -> str:
    return "\n".join(
        f"- {a.name}:\n    {a.description}\n    Usage: Action: {a.name}\n"
        f"    Action Input: {a.example()}"
        for a in actions
    )


def cut_middle(text: str, limit: int = OBSERVATION_LIMIT) -> str:
    """Keep the head and the tail of a long observation, saying how much was cut."""
    if len(text) <= limit:
        return text
    head, tail = text[: limit * 2 // 3], text[-(limit // 3) :]
    return f"{head}\n[... {len(text) - len(head) - len(tail)} characters cut ...]\n{tail}"


def score_line(metric: str, score: float, higher_is_better: bool) -> str:
    """A validation score as the solve prompts show it: "accuracy = 0.9 (higher is better)"."""
    direction = "higher" if higher_is_better else "lower"
    return f"{metric} = {score:.6g} ({direction} is better)"


def hints_block(hints: list[str], keep: int = 5) -> str:
    """The person's most recent hints."""
    return "Hints from the person supervising you:\n" + "\n".join(f"- {h}" for h in hints[-keep:])


def one_line(record: StepRecord) -> str:
    args = json.dumps(record.action_input)[:80]
    first = next((ln for ln in record.observation.splitlines() if ln.strip()), "")[:100]
    status = "" if record.ok else " [failed]"
    return f"Step {record.step}: {record.action} {args}{status} -> {first}"


def research_messages(
    *,
    actions: list[ActionSpec],
    problem: str,
    submission: str,
    plan: str,
    memory_summary: str,
    hints: list[str],
    history: list[StepRecord],
    k_recent: int = 3,
    observation_limit: int = OBSERVATION_LIMIT,
) -> list[dict[str, str]]:
    system = INSTRUCTIONS.format(
        actions=describe_actions(actions), problem=problem.strip(), submission=submission
    )
    parts: list[str] = []
    split = max(len(history) - k_recent, 0) if k_recent else len(history)
    older, recent = history[:split], history[split:]
    if older:
        parts.append("Summary of earlier steps:\n" + "\n".join(one_line(r) for r in older))
    for r in recent:
        parts.append(
            f"Step {r.step}:\n{r.response_text.strip()}\nObservation:\n```\n"
            f"{cut_middle(r.observation, observation_limit)}\n```"
        )
    if plan.strip():
        parts.append(f"Current Research Plan and Status:\n{plan.strip()}")
    parts.append(memory_summary)
    if hints:
        parts.append(hints_block(hints))
    step = history[-1].step + 1 if history else 1
    parts.append(f"Now give your response for step {step} in the format above.")
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(parts)}]


SOLVE_SYSTEM = """You are an expert machine-learning engineer. You solve the task below by writing \
one complete, self-contained python script per step. The script runs in the task's folder with \
numpy, pandas and scikit-learn available (no other packages, no network) and must write the \
submission file {submission}. It should print its validation numbers.

Task:
{problem}
{folder}
Respond in this format exactly:
Plan: a short plan (a few sentences)
```python
# the complete script
```
"""

MODES = {
    "draft": "Draft: there is no working solution yet. Write a first simple, correct solution; "
    "where a starter script is shown, it already writes a valid submission: copy it and improve "
    "it, using only the column names shown.",
    "debug": "Debug: the previous script failed. Fix the error below; keep what worked.",
    "improve": "Improve: the previous script worked. Make one concrete change that should improve "
    "the validation score.",
}


def solve_messages(
    *,
    problem: str,
    submission: str,
    mode: str,
    previous_script: str | None,
    previous_output: str | None,
    previous_score: str | None,
    hints: list[str],
    observation_limit: int = OBSERVATION_LIMIT,
    preview: str = "",
) -> list[dict[str, str]]:
    folder = f"\nThe task's folder:\n{preview.strip()}\n" if preview else ""
    system = SOLVE_SYSTEM.format(problem=problem.strip(), submission=submission, folder=folder)
    parts = [MODES[mode]]
    if previous_script:
        parts.append(f"Previous script:\n```python\n{previous_script.strip()}\n```")
    if previous_output:
        parts.append(f"Its output:\n```\n{cut_middle(previous_output, observation_limit)}\n```")
    if previous_score:
        parts.append(f"Its validation result: {previous_score}")
    if hints:
        parts.append(hints_block(hints))
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(parts)}]
