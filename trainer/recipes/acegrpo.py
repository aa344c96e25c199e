"""acegrpo: step-wise GRPO over AceGRPO's evolving buffer, with adaptive sampling.

The buffer starts with one Draft state per task. Each update draws `states_per_update` states by
learnability potential (trainer.buffer); for each, the policy answers the state's prompt G times
(a Draft prompt, or the prompt of a fork of the session step the state came from: Debug after a
failure, Improve after a valid solution), the answers run as real sessions in parallel, and every
executed answer becomes a child state. Reward: (1-a)·s + a·max(0, (s - s_parent)/(1 - s_parent))
for a valid submission; below it, the dense credit of trainer.rewards.execution_reward, with
progress seen by structure (`--instrument-model structure`, the default; any other value runs
the scripts as they are here).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mlagent_tui.core.agent import ResponseParseError, parse_solve_response

from ..remote import solution_sessions_on
from ..rewards import Execution
from ..rollout import sampled_completion
from .common import Collected, RunContext, TrainItem
from .single_step import sample_answers


class AceGrpoRecipe:
    name = "acegrpo"

    def __init__(self, ctx: RunContext) -> None:
        from trainer.buffer import EvolvingBuffer

        if not ctx.tasks:
            raise ValueError("acegrpo needs tasks: --tasks NAMES or --task-dir DIR")
        self.buffer = EvolvingBuffer()
        self.where: dict[int, tuple[str, int]] = {}
        for task in ctx.tasks:
            self.buffer.add_root(task.name)
        self.notes: list[str] = []

    # -- state (the buffer is rebuilt from its states on resume) --------------------------------
    def state(self) -> dict[str, Any]:
        return {
            **self.buffer.to_dict(),
            "where": {str(k): list(v) for k, v in self.where.items()},
        }

    def restore(self, state: dict[str, Any]) -> None:
        if not state.get("states"):
            return
        self.buffer.load_dict(state)
        self.where = {int(k): (v[0], int(v[1])) for k, v in state.get("where", {}).items()}

    # -- collection ------------------------------------------------------------------------------
    def collect(self, ctx: RunContext, phase: Any) -> Collected:
        from trainer.buffer import ExecutionOutcome
        from trainer.rewards import execution_reward

        tasks = {t.name: t for t in ctx.tasks}
        rng = np.random.default_rng([ctx.options.seed, ctx.update])
        picked = self.buffer.sample(ctx.options.states_per_update, t=ctx.update, rng=rng)
        out = Collected(items=[], extra={"buffer": len(self.buffer), "states": []})
        for state in picked:
            task = tasks[state.task]
            parent = self.where.get(state.id)
            out.extra["states"].append(f"{state.kind.value}:{state.id}")
            phase(f"{task.name} {state.kind.value} state {state.id}: sampling")
            samples = sample_answers(ctx, task, parent, out)
            phase(f"{task.name} state {state.id}: executing {len(samples)} in parallel")
            outcomes = solution_sessions_on(ctx.options.ray)(
                ctx.home,
                ctx.store,
                task,
                [
                    sampled_completion(
                        s.text,
                        s.completion_ids,
                        s.logprobs,
                        ctx.policy.eos_ids,
                        tokens_in=len(s.prompt_ids),
                    )
                    for s in samples
                ],
                model_name=ctx.model_name,
                parent=parent,
                workers=ctx.options.workers,
                exec_timeout_s=ctx.options.exec_timeout_s,
                seed=ctx.options.seed,
                instrument="structure" if ctx.options.instrument_model == "structure" else "none",
            )
            rewards = []
            for sample, outcome in zip(samples, outcomes, strict=True):
                step = outcome.steps[-1] if outcome.steps else None
                valid = bool(step and step.valid)
                unit = step.unit if step else 0.0
                ex = step.execution() if step else Execution()
                reward = execution_reward(ex, shaping="acegrpo", parent_score=state.score)
                rewards.append(reward)
                out.items.append(
                    TrainItem(
                        prompt_ids=sample.prompt_ids,
                        completion_ids=sample.completion_ids,
                        old_logprobs=sample.logprobs,
                        reward=reward,
                        group=f"state{state.id}/{ctx.update}",
                        valid=valid,
                        exec_seconds=step.exec_seconds if step else 0.0,
                    )
                )
                if step is None or step.exec_seconds <= 0:
                    continue  # never ran (unparsed): no program to debug or improve
                try:
                    _, code = parse_solve_response(step.response)
                except ResponseParseError:
                    continue
                child = self.buffer.add_child(
                    state,
                    ExecutionOutcome(
                        code=code,
                        valid=valid,
                        score=unit if valid else None,
                        feedback=step.output[-1000:],
                    ),
                )
                self.where[child.id] = (outcome.session_id, step.step)
            if state.id in self.buffer:  # a full buffer may have evicted it for a child
                self.buffer.update(state.id, rewards, t=ctx.update)
        self.where = {k: v for k, v in self.where.items() if k in self.buffer}
        return out
