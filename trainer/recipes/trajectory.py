"""trajectory (SandMLE): G whole solve sessions per task with the policy, milestone reward.

Each session runs with the policy as its ChatModel under a step and a time limit. Its reward is
the dense milestone reward of its final submission (format, valid, above median, medals), and
without one a little for the furthest its programs got (trainer.rewards.session_reward; progress
seen by structure with `--instrument-model structure`, the default); the advantage is shared by
all its answers; loss falls on the agent's own tokens only (prompts, which hold the
observations, are context); sessions that timed out are masked.
"""

from __future__ import annotations

from typing import Any

from mlagent_tui.core.llm import Completion, Message

from ..data import session_samples
from ..remote import solve_sessions_on
from .common import Collected, RunContext, TrainItem, answer_ids, fits


class CappedModel:
    """The policy's ChatModel with the run's token cap and temperature (an agent asks for more)."""

    def __init__(self, inner: Any, max_tokens: int, temperature: float) -> None:
        self.inner = inner
        self.name = inner.name
        self.supports_grammar = inner.supports_grammar
        self.max_tokens = max_tokens
        self.temperature = temperature

    def complete(self, messages: list[Message], **kwargs: Any) -> Completion:
        kwargs["max_tokens"] = min(int(kwargs.get("max_tokens", self.max_tokens)), self.max_tokens)
        kwargs["temperature"] = self.temperature
        return self.inner.complete(messages, **kwargs)


class TrajectoryRecipe:
    name = "trajectory"

    def __init__(self, ctx: RunContext) -> None:
        if not ctx.tasks:
            raise ValueError("trajectory needs tasks: --tasks NAMES or --task-dir DIR")
        self.notes: list[str] = []

    def state(self) -> dict[str, Any]:
        return {}

    def restore(self, state: dict[str, Any]) -> None:
        return None

    def collect(self, ctx: RunContext, phase: Any) -> Collected:
        from trainer.policy import PolicyChatModel
        from trainer.rewards import session_reward

        o = ctx.options
        model = CappedModel(
            PolicyChatModel(ctx.policy, name=ctx.model_name), o.max_new_tokens, o.temperature
        )
        out = Collected(items=[], extra={"sessions": 0, "timed_out": 0})
        for task in ctx.tasks:
            phase(f"{task.name}: {o.group_size} sessions of up to {o.max_session_steps} steps")
            outcomes = solve_sessions_on(o.ray)(
                ctx.home,
                ctx.store,
                task,
                model,
                o.group_size,
                max_steps=o.max_session_steps,
                max_minutes=o.max_minutes,
                workers=o.workers,
                exec_timeout_s=o.exec_timeout_s,
                seed=o.seed,
                instrument="structure" if o.instrument_model == "structure" else "none",
            )
            for outcome in outcomes:
                out.extra["sessions"] += 1
                out.extra["timed_out"] += outcome.timed_out
                steps = outcome.steps
                parsed = sum(s.parsed for s in steps) / len(steps) if steps else 0.0
                score = outcome.final_score if outcome.valid else None
                reward = session_reward(task, score, parsed, [s.execution() for s in steps])
                row = ctx.store.session(outcome.session_id) or {}
                for s in session_samples(ctx.store, row):
                    prompt = ctx.policy.chat_prompt_ids(s.messages)
                    ids = s.token_ids
                    ok = ids is not None and s.logprobs is not None and len(ids) == len(s.logprobs)
                    item = TrainItem(
                        prompt_ids=prompt,
                        completion_ids=list(ids)
                        if ok and ids
                        else answer_ids(ctx.policy, s.response),
                        old_logprobs=list(s.logprobs or []) if ok else None,
                        reward=reward,
                        group=f"{task.name}/{ctx.update}",
                        unit_id=outcome.session_id,
                        masked=outcome.timed_out,
                        valid=outcome.valid,
                        exec_seconds=s.exec_seconds,
                    )
                    if fits(ctx.policy, item):
                        out.items.append(item)
                for call in ctx.store.events(outcome.session_id, kinds=["llm_call"]):
                    out.generated_tokens += call.payload.tokens_out
                    out.generation_seconds += call.payload.latency_s
        return out
