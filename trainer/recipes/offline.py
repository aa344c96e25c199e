"""offline: advantage-weighted policy gradient over logged answers, grouped by task and state.

Samples come from the store (--db). Answers whose sampler recorded token ids and log-probabilities
under the same base model get the clipped importance ratio; the rest are learnt without it
(plain advantage-weighted log-likelihood). Sessions of another known base model are excluded and
counted. Rewards: AceGRPO's shaping of the task-normalised validation score.
"""

from __future__ import annotations

from typing import Any

from ..data import StepSample, groups, load_samples, ratio_eligible, split_by_base_model
from .common import Collected, NothingToTrain, RunContext, TrainItem, answer_ids, fits

MAX_GROUP = 16


class OfflineRecipe:
    name = "offline"

    def __init__(self, ctx: RunContext) -> None:
        samples = load_samples(ctx.store)
        names = {t.name for t in ctx.tasks}
        if names:
            samples = [s for s in samples if s.task in names]
        keep, other = split_by_base_model(samples, ctx.options.base_model)
        self.excluded = len(other)
        self.excluded_sessions = len({s.session_id for s in other})
        self.groups = groups(keep)
        self.cursor = 0
        self.notes = []
        if self.excluded:
            self.notes.append(
                f"excluded {self.excluded} sample(s) from {self.excluded_sessions} session(s) of "
                f"another base model than {ctx.options.base_model!r}"
            )
        if not self.groups:
            raise NothingToTrain(
                f"no trainable sessions in {ctx.store.path}: {len(keep)} usable sample(s) form no "
                f"group of two answers to one task and state"
                + (f"; {self.notes[0]}" if self.notes else "")
            )

    def state(self) -> dict[str, Any]:
        return {"cursor": self.cursor}

    def restore(self, state: dict[str, Any]) -> None:
        self.cursor = int(state.get("cursor", 0))

    def collect(self, ctx: RunContext, phase: Any) -> Collected:
        from trainer.rewards import acegrpo_reward

        phase("tokenising logged answers")
        out = Collected(items=[], extra={"ratio_items": 0, "no_ratio_items": 0})
        out.extra["excluded_other_base_model"] = self.excluded
        count = min(ctx.options.groups_per_update, len(self.groups))
        vocab = len(ctx.policy.tokenizer)
        for k in range(count):
            index = (self.cursor + k) % len(self.groups)
            for s in self.groups[index][:MAX_GROUP]:
                item = self._item(ctx, s, f"g{index}", vocab)
                item.reward = acegrpo_reward(s.reward if s.valid else None, s.parent_score)
                if not fits(ctx.policy, item):
                    continue
                out.extra["ratio_items" if item.old_logprobs else "no_ratio_items"] += 1
                out.items.append(item)
        self.cursor = (self.cursor + count) % len(self.groups)
        return out

    def _item(self, ctx: RunContext, s: StepSample, group: str, vocab: int) -> TrainItem:
        prompt = ctx.policy.chat_prompt_ids(s.messages)
        usable = (
            ratio_eligible(s, ctx.options.base_model)
            and s.token_ids is not None
            and s.logprobs is not None
            and len(s.token_ids) == len(s.logprobs)
            and all(0 <= t < vocab for t in s.token_ids)
        )
        if usable:
            return TrainItem(
                prompt_ids=prompt,
                completion_ids=list(s.token_ids or []),
                old_logprobs=list(s.logprobs or []),
                reward=0.0,
                group=group,
                valid=s.valid,
                exec_seconds=s.exec_seconds,
            )
        return TrainItem(
            prompt_ids=prompt,
            completion_ids=answer_ids(ctx.policy, s.response),
            reward=0.0,
            group=group,
            valid=s.valid,
            exec_seconds=s.exec_seconds,
        )
