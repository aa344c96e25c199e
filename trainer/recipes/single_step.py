"""single-step (RL for MLE agents): G answers per task prompt, instrumented, run, dense reward.

Per update and task: the prompt is the solve agent's Draft prompt, or — with probability
`improve_prob`, once the run has an earlier solution of the task — the prompt of a fork of that
earlier session ("improve this previous solution", or "debug" when it failed, with its output).
The policy samples G answers (plan + script); each runs as one step of a real solve session, in
parallel. Progress is seen by structure by default (`--instrument-model structure`: a marker
after each top-level statement, in the executed copy only, trainer.instrument), or by a
separate frozen model's prints (`local` or an API model, instrument.model), or not (`none`).
Reward: trainer.rewards.execution_reward (the unit score when valid, else -1 + format, compile,
progress, exit and submission credit); each sample's gradient is weighted by its execution time
over the batch mean (duration-aware policy gradient). `--guide LEVEL` adds the task's reference
solution to each improve group as an off-policy member (recipes.guide); every update counts the
answers that validated better than the script they were asked to improve.
"""

from __future__ import annotations

import functools
import random
import time
from typing import Any

from mlagent_tui.core.agent import AgentState, ResponseParseError, parse_solve_response
from mlagent_tui.core.llm import ChatModel, Completion
from mlagent_tui.core.session import solve_preview
from mlagent_tui.core.tasks import Task

from ..prompts import agent_messages, solve_response, step_prompt
from ..remote import solution_sessions_on
from ..rollout import SessionOutcome, sampled_completion
from .common import Collected, RunContext, TrainItem
from .guide import better_than_parent, parent_score, reference_sample
from .sampler import LlamaSampler, wants_llama

KEEP_PREVIOUS = 32


def draft_prompt(task: Task, seed: int = 0) -> list[dict[str, str]]:
    state = AgentState(task=task, step=1, preview=solve_preview(task, seed))
    return agent_messages(task, "solve", state)


def instrument_budget(code: str) -> int:
    """Enough tokens for the program plus a print per stage, not the default 4096."""
    return min(4096, len(code) // 3 + 256)


def sample_answers(
    ctx: RunContext,
    task: Task,
    parent: tuple[str, int] | None,
    out: Collected,
    sampler: LlamaSampler | None = None,
    seed: int | None = None,
) -> list[Any]:
    """G answers of the policy to the Draft prompt of the task at `seed` (default --seed), or
    to the step after `parent` (improve), from llama.cpp's copy of the policy when a sampler is
    given."""
    seed = ctx.options.seed if seed is None else seed
    messages = (
        step_prompt(ctx.store, parent[0], parent[1] + 1, task, {"agent": "solve", "seed": seed})
        if parent
        else draft_prompt(task, seed)
    )
    started = time.perf_counter()
    generate = (
        functools.partial(sampler.generate, version=ctx.update) if sampler else ctx.policy.generate
    )
    samples = generate(
        messages,
        n=ctx.options.group_size,
        max_new_tokens=ctx.options.max_new_tokens,
        temperature=ctx.options.temperature,
    )
    out.generation_seconds += time.perf_counter() - started
    out.generated_tokens += sum(len(s.completion_ids) for s in samples)
    return samples


class SingleStepRecipe:
    name = "single-step"

    def __init__(self, ctx: RunContext) -> None:
        if not ctx.tasks:
            raise ValueError("single-step needs tasks: --tasks NAMES or --task-dir DIR")
        self.notes: list[str] = []
        self.previous: dict[str, list[tuple[str, int]]] = {}
        if ctx.options.parents == "store":
            for task in ctx.tasks:
                for seed in ctx.options.task_seeds or [ctx.options.seed]:
                    found = stored_drafts(ctx, task.name, seed)[-KEEP_PREVIOUS:]
                    self.previous[_key(ctx, task, seed)] = found
                    if not found:
                        self.notes.append(
                            f"no valid Draft of {task.name} at seed {seed} in the store: its "
                            "prompts are Drafts until the run has a valid answer (record one: "
                            f"mlagent-train demos --tasks {task.name} --seeds {seed})"
                        )
        self._instrumenter: ChatModel | None = None
        self._llm_markers: list[list[str] | None] = []  # per sample: the frozen model's markers
        self.sampler = (
            LlamaSampler(ctx.policy) if wants_llama(ctx.options.sampler, ctx.policy) else None
        )
        if self.sampler:
            self.notes.append("sampling with llama.cpp (the policy merged as Q8_0 each update)")

    # -- state ---------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        return {"previous": {k: [list(p) for p in v] for k, v in self.previous.items()}}

    def restore(self, state: dict[str, Any]) -> None:
        self.previous = {
            k: [(s, int(n)) for s, n in v] for k, v in state.get("previous", {}).items()
        }

    # -- collection ----------------------------------------------------------------------------
    def instrumenter(self, spec: str) -> ChatModel | None:
        """The frozen model inserting progress prints; None for "structure" and "none"."""
        if spec in ("none", "structure"):
            return None
        if self._instrumenter is None:
            from mlagent_tui.core.llm import make_model

            self._instrumenter = make_model(spec)
        return self._instrumenter

    def collect(self, ctx: RunContext, phase: Any) -> Collected:
        rng = random.Random(ctx.options.seed * 100_003 + ctx.update)
        out = Collected(
            items=[],
            extra={"instrumented": 0, "improve_prompts": 0, "better_than_parent": 0, "guided": 0},
        )
        for i, task in enumerate(ctx.tasks):
            seed = task_seed(ctx, i)
            parent = self._pick_parent(_key(ctx, task, seed), rng, ctx.options.improve_prob)
            out.extra["improve_prompts"] += parent is not None
            group = f"group {i + 1} of {len(ctx.tasks)} ({task.name})"
            phase(f"{group}: generating {ctx.options.group_size} answers")
            samples = sample_answers(ctx, task, parent, out, self.sampler, seed)
            phase(f"{group}: instrumenting")
            self._llm_markers = []
            completions = [self._executable(s, ctx, out) for s in samples]
            guide = None
            if parent is not None and ctx.options.guide != "none" and samples:
                guide = reference_sample(ctx, task, samples[0].prompt_ids)
            if guide is not None:
                out.extra["guided"] += 1
                completions.append(Completion(text=guide.text))
            phase(f"{group}: executing {len(completions)} in parallel")
            outcomes = solution_sessions_on(ctx.options.ray)(
                ctx.home,
                ctx.store,
                task,
                completions,
                model_name=ctx.model_name,
                parent=parent,
                workers=ctx.options.workers,
                exec_timeout_s=ctx.options.exec_timeout_s,
                seed=seed,
                instrument="structure" if ctx.options.instrument_model == "structure" else "none",
            )
            if ctx.options.instrument_model == "structure":
                out.extra["instrumented"] += sum(
                    bool(o.steps and o.steps[-1].stages) for o in outcomes
                )
            own = outcomes[: len(samples)]  # the guide's answer never becomes a parent
            if parent is not None:
                before = parent_score(ctx.store, parent)
                out.extra["better_than_parent"] += better_than_parent(task, before, own)
            members = [*samples, guide] if guide is not None else samples
            out.items += self._items(task, members, outcomes, f"{task.name}/{ctx.update}")
            self._remember(_key(ctx, task, seed), own, ctx.options.parents == "store")
        _duration_weights(out.items)
        return out

    def _pick_parent(self, key: str, rng: random.Random, prob: float) -> tuple[str, int] | None:
        earlier = self.previous.get(key, [])
        if earlier and rng.random() < prob:
            return earlier[rng.randrange(len(earlier))]
        return None

    def _executable(self, sample: Any, ctx: RunContext, out: Collected) -> Completion:
        """The answer as the session will run it: instrumented when the frozen model's prints
        verify (then without the sampler's ids: the text is no longer the sample's), else the
        sample itself (an unparseable answer stays as it is and fails in the session)."""
        text = sample.text
        unchanged = sampled_completion(
            text,
            sample.completion_ids,
            sample.logprobs,
            ctx.policy.eos_ids,
            tokens_in=len(sample.prompt_ids),
        )
        self._llm_markers.append(None)
        model = self.instrumenter(ctx.options.instrument_model)
        if model is None:
            return unchanged
        try:
            plan, script = parse_solve_response(text)
        except ResponseParseError:
            return unchanged
        from ..instrument import instrument

        result = instrument(script, model, max_tokens=instrument_budget(script))
        if not result.ok:
            return unchanged
        out.extra["instrumented"] += 1
        self._llm_markers[-1] = result.markers
        return Completion(text=solve_response(plan, result.code))

    def _items(
        self, task: Task, samples: list[Any], outcomes: list[SessionOutcome], group: str
    ) -> list[TrainItem]:
        from trainer.rewards import Execution, execution_reward

        from ..instrument import markers_in

        items = []
        markers = self._llm_markers + [None] * (len(samples) - len(self._llm_markers))
        for sample, outcome, inserted in zip(samples, outcomes, markers, strict=True):
            step = outcome.steps[-1] if outcome.steps else None
            valid = bool(step and step.valid and step.score is not None)
            ex = step.execution() if step else Execution()
            if step and inserted:  # the frozen model's prints: distinct markers it inserted
                seen = set(markers_in(step.output)) & set(inserted)
                ex = ex.model_copy(update={"stages": len(inserted), "stages_reached": len(seen)})
            reward = execution_reward(ex)
            items.append(
                TrainItem(
                    prompt_ids=sample.prompt_ids,
                    completion_ids=sample.completion_ids,
                    # llama.cpp's Q8_0 copy is not the policy, nor is a guide's reference: the
                    # first inner step sets the ratio's base
                    old_logprobs=None if self.sampler or not sample.logprobs else sample.logprobs,
                    reward=reward,
                    group=group,
                    valid=valid,
                    exec_seconds=step.exec_seconds if step else 0.0,
                )
            )
        return items

    def _remember(self, key: str, outcomes: list[SessionOutcome], only_valid: bool) -> None:
        """Executed answers (valid ones only, with `--parents store`) become candidates for a
        later improve/debug prompt of the same task and seed."""
        kept = self.previous.setdefault(key, [])
        for o in outcomes:
            if only_valid and not (o.steps and o.steps[-1].valid):
                continue
            if o.steps and o.steps[-1].exec_seconds > 0 and not o.timed_out:
                kept.append((o.session_id, o.steps[-1].step))
        del kept[:-KEEP_PREVIOUS]


def task_seed(ctx: RunContext, index: int) -> int:
    """The seed of the `index`-th task's prompt this update: --task-seeds in turn, else --seed."""
    seeds = ctx.options.task_seeds
    return seeds[(ctx.update - 1 + index) % len(seeds)] if seeds else ctx.options.seed


def _key(ctx: RunContext, task: Task, seed: int) -> str:
    """Where earlier answers are kept: per task, and per seed where the seeds vary (an improve
    prompt shows its parent's seed's data)."""
    return f"{task.name}@{seed}" if ctx.options.task_seeds else task.name


def stored_drafts(ctx: RunContext, task: str, seed: int) -> list[tuple[str, int]]:
    """The store's valid first steps (Drafts) of solve sessions of `task` at `seed`,
    whatever their model (demonstrations included): improve prompts as an evaluation's second
    step sees them, rather than debug prompts of the run's own broken first answers."""
    rows = ctx.store.fetch_dicts(
        "SELECT s.id FROM sessions s JOIN scores c ON c.session_id = s.id"
        " WHERE s.task = ? AND s.agent = 'solve' AND s.parent_session_id IS NULL"
        " AND json_extract(s.config, '$.seed') = ? AND c.step = 1 AND c.split = 'validate'"
        " AND c.valid = 1 GROUP BY s.id ORDER BY s.started_at",
        (task, seed),
    )
    return [(row["id"], 1) for row in rows]


def _duration_weights(items: list[TrainItem]) -> None:
    """Weight = execution time / batch mean (answers that never ran count as the mean)."""
    from trainer.grpo import duration_weights

    ran = [it.exec_seconds for it in items if it.exec_seconds > 0]
    if not ran:
        return
    mean = sum(ran) / len(ran)
    weights = duration_weights([it.exec_seconds if it.exec_seconds > 0 else mean for it in items])
    for it, w in zip(items, weights.tolist(), strict=True):
        it.weight = float(w)
