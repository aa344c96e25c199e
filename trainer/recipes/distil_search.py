"""A distillation round's search: one search session per training task at the round's seed.

The searcher is the policy being trained (merged and run by llama.cpp on a CPU, as the RL
sampler does; transformers elsewhere) or any `--model` string (`--search-model`), so an API
model's search can be distilled into the local model. Sessions are ordinary search sessions
in the run's store, named after the policy checkpoint, so `mlagent replay ID` shows them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mlagent_tui.core.llm import ChatModel, make_model
from mlagent_tui.core.session.config import LOCAL_TEMPERATURE

from ..heldout import held_out_reason
from ..rollout import LockedModel, new_session, run_session
from .common import RunContext

SEED_BASE = 10_000  # far from the demonstrations' (0-6) and evaluations' (100-109) seeds


def round_seed(run_seed: int, round_no: int) -> int:
    """The task seed every training task's search session takes in round `round_no` (1-based):
    fresh each round, never an evaluation seed."""
    seed = SEED_BASE + run_seed * 1_000 + round_no
    if held_out_reason("any", seed) is not None:  # pragma: no cover - the base rules it out
        raise ValueError(f"round seed {seed} is an evaluation seed")
    return seed


def searcher(ctx: RunContext, sampler: Any) -> Callable[[], ChatModel]:
    """What each search session talks to: a fresh instance of `--search-model` per session
    (a replay model serves its answers in order), or the current policy."""
    spec = ctx.options.distil.search_model
    if spec != "policy":
        return lambda: make_model(spec)
    if sampler is not None:
        sampler.refresh(ctx.update)
        shared = LockedModel(sampler.llm)
    else:
        from trainer.policy import PolicyChatModel

        shared = LockedModel(PolicyChatModel(ctx.policy))
    shared.name = ctx.model_name
    return lambda: shared


def search_round(
    ctx: RunContext, round_no: int, sampler: Any, phase: Callable[[str], None]
) -> list[str]:
    """Run the round's search sessions (one per task); their ids."""
    opts = ctx.options.distil
    seed = round_seed(ctx.options.seed, round_no)
    models = searcher(ctx, sampler)
    spec = None if opts.search_model == "policy" else opts.search_model
    # the policy samples as `mlagent run --agent search --model local` does; a --model string
    # at its own session default
    temperature = LOCAL_TEMPERATURE if spec is None else None
    ids: list[str] = []
    for i, task in enumerate(ctx.tasks, 1):
        phase(f"round {round_no}: search {i}/{len(ctx.tasks)} on {task.name}")

        def make(task: Any = task) -> Any:
            model = models()
            return new_session(
                ctx.home,
                ctx.store,
                task,
                model,
                model_spec=spec or model.name,
                agent="search",
                seed=seed,
                max_steps=opts.search_steps,
                policy=opts.search_policy,
                workers=opts.search_workers,
                exec_timeout_s=ctx.options.exec_timeout_s,
                temperature=temperature,
            )

        ids.append(run_session(make, ctx.store, task, instrument="none").session_id)
    return ids


def round_eval(ctx: RunContext, sampler: Any, round_no: int) -> dict[str, Any] | None:
    """Held-out figures of the policy a round starts from (`--eval-tasks`, `--eval-seeds`):
    `mlagent-train eval` of its llama.cpp copy, held to the run's own training record, so a
    task or seed any phase trained on is refused. None where no evaluation was asked."""
    from trainer.evaluate import EvalError, EvalRequest, plan_eval, run_eval

    opts = ctx.options.distil
    if not opts.eval_seeds or not opts.eval_tasks:
        return None
    if sampler is None:
        return {"note": "no figures: the policy has no llama.cpp copy on this device"}
    sampler.refresh(ctx.update)
    request = EvalRequest(
        model=f"local:{sampler.folder / 'policy.gguf'}",
        tasks=list(opts.eval_tasks),
        seeds=[",".join(map(str, opts.eval_seeds))],
        max_steps=opts.eval_max_steps,
        trained_on=ctx.out_dir,
    )
    try:
        report = run_eval(plan_eval(request))
    except EvalError as exc:
        raise ValueError(f"round {round_no}'s evaluation: {exc}") from None
    keys = ("valid_rate", "beats_baseline_rate", "medal_rate", "mean_reward", "samples")
    return {
        "of": f"the policy round {round_no} started from (update {ctx.update - 1})",
        **{k: getattr(report, k) for k in keys},
        "intervals": report.intervals,
        "tasks": list(opts.eval_tasks),
        "seeds": list(opts.eval_seeds),
    }
