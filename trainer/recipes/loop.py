"""The training loop every recipe runs in: set up or resume, collect, update, record, checkpoint.

Per update: the recipe collects items (rollouts or logged samples with rewards), the shared
update takes one optimiser step, the metrics go to the store's training tables, and a checkpoint
is written, so `--resume` continues after the last completed update.
"""

from __future__ import annotations

import functools
import random
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from mlagent_tui.core.home import Home, new_session_id
from mlagent_tui.core.store import (
    Store,
    UpdateRecord,
    finish_training_run,
    record_update,
    start_training_run,
)

from .checkpoint import (
    CheckpointError,
    TrainState,
    latest_checkpoint,
    load_checkpoint,
    read_run_file,
    save_checkpoint,
    write_run_file,
)
from .common import (
    UNBOUNDED_STEPS,
    Phase,
    Recipe,
    RunContext,
    RunOptions,
    policy_update,
    resolve_tasks,
    set_torch_threads,
)
from .messages import phase_printer, start_text, unchanged_note, update_line
from .stats import all_equal_groups, reward_stats


class RunResult(BaseModel):
    """What `mlagent-train run --json` prints."""

    run_id: str
    recipe: str
    base_model: str
    updates_done: int
    reward_mean: list[float] = Field(default_factory=list)
    valid_rate: list[float] = Field(default_factory=list)
    seconds_per_update: list[float] = Field(default_factory=list)
    loss: list[float] = Field(default_factory=list)
    all_equal_groups: list[int] = Field(
        default_factory=list, description="per update: groups with all-equal rewards (no signal)"
    )
    out_dir: str
    checkpoint: str | None = None
    plots: list[str] = Field(default_factory=list)
    resumed_from: str | None = None
    notes: list[str] = Field(default_factory=list)
    engine: str = Field("", description="what trained: backend (unsloth or hf) on which device")


def make_recipe(ctx: RunContext) -> Recipe:
    name = ctx.options.recipe
    if name == "sft":
        from .sft import SftRecipe

        return SftRecipe(ctx)
    if name == "offline":
        from .offline import OfflineRecipe

        return OfflineRecipe(ctx)
    if name == "single-step":
        from .single_step import SingleStepRecipe

        return SingleStepRecipe(ctx)
    if name == "trajectory":
        from .trajectory import TrajectoryRecipe

        return TrajectoryRecipe(ctx)
    if name == "distil":
        from .distil import DistilRecipe

        return DistilRecipe(ctx)
    if name == "acegrpo":
        from .acegrpo import AceGrpoRecipe

        return AceGrpoRecipe(ctx)
    raise ValueError(f"unknown recipe {name!r}")


def _places(options: RunOptions) -> tuple[Home, Store]:
    if options.db:
        db = Path(options.db)
        home = Home.at(options.home or db.parent)
        return home, Store(db)
    home = Home.at(options.home)
    return home, Store(home.db_path)


def run_training(
    options: RunOptions,
    *,
    resume: Path | None = None,
    steps: int | None = None,
    plots: str | None = None,
    console: Console | None = None,
) -> RunResult:
    """Train for `options.steps` updates in total (a resumed run continues to that number)."""
    import torch

    from trainer.policy import load_policy

    console = console or Console(stderr=True)
    state: TrainState | None = None
    optim_state: dict[str, Any] | None = None
    checkpoint: Path | None = None
    if resume is not None:
        run_file = read_run_file(resume)
        options = run_file.options.model_copy(update={"out": str(resume)})
        checkpoint = latest_checkpoint(resume)
        run_id = run_file.run_id
    else:
        run_id = "train-" + new_session_id()
    if steps is not None:
        options = options.model_copy(update={"steps": steps})
    if plots is not None:
        options = options.model_copy(update={"plots": plots})
    home, store = _places(options)
    set_torch_threads(options)
    out_dir = Path(options.out) if options.out else home.root / "training" / run_id
    start = start_text(options.base_model, options.init, checkpoint)
    console.print(f"{run_id}: loading the policy: {start} ...", highlight=False, markup=False)
    if checkpoint is not None:
        policy, optim_state, state = load_checkpoint(checkpoint)
        if state.run_id != run_id:
            raise CheckpointError(f"{checkpoint} belongs to run {state.run_id}, not {run_id}")
    elif options.init:
        torch.manual_seed(options.seed)
        policy = init_policy(Path(options.init), options)
        options = options.model_copy(update={"base_model": policy.config.base_model})
    else:
        torch.manual_seed(options.seed)
        policy = load_policy(
            options.base_model,
            lora_r=options.lora_r,
            backend=options.backend,
            seed=options.seed,
            load_in_4bit=options.load_in_4bit,
        )
    compute = policy.set_precision(options.precision)
    random.seed(options.seed)
    ctx = RunContext(
        options=options,
        policy=policy,
        store=store,
        home=home,
        tasks=resolve_tasks(options),
        run_id=run_id,
        out_dir=out_dir,
    )
    console.print(
        f"{run_id}: preparing {options.recipe} (loading its data; {engine(policy)}, forward "
        f"passes in {compute})",
        highlight=False,
    )
    anchor = make_anchor(ctx)
    recipe = make_recipe(ctx)
    optimizer = torch.optim.AdamW(policy.trainable_parameters(), lr=options.lr, weight_decay=0.0)
    history: list[dict[str, Any]] = []
    done = 0
    if state is not None and optim_state is not None:
        optimizer.load_state_dict(optim_state)
        recipe.restore(state.recipe_state)
        history, done = list(state.history), state.update
    write_run_file(out_dir, run_id, options)
    start_training_run(
        store,
        run_id,
        recipe=options.recipe,
        base_model=options.base_model,
        config=options.model_dump(),
        out_dir=str(out_dir),
    )
    last: Path | None = checkpoint
    data = run_training_data(ctx, recipe, anchor)
    data.save(out_dir)
    started = time.monotonic()
    stopped_by_time = False
    try:
        with _progress(console) as progress:
            total = options.steps if options.steps < UNBOUNDED_STEPS else None
            bar = progress.add_task("starting", total=total, completed=done)
            for update in range(done + 1, options.steps + 1):
                if options.minutes and time.monotonic() - started >= options.minutes * 60:
                    stopped_by_time = True
                    break
                ctx.update = update

                said = None if console.is_terminal else phase_printer(console, update)

                def phase(text: str, update: int = update, said=said) -> None:  # noqa: ANN001
                    progress.update(bar, description=f"update {update}: {text}")
                    if said is not None:  # a log file: no live bar shows the phase
                        said(text)

                record = _one_update(ctx, recipe, optimizer, phase, anchor)
                record_update(store, run_id, record)
                history.append(record.model_dump())
                phase("checkpoint")
                last = save_checkpoint(
                    out_dir,
                    policy,
                    optimizer,
                    TrainState(
                        run_id=run_id, update=update, history=history, recipe_state=recipe.state()
                    ),
                )
                line = update_line(update, record)
                progress.update(bar, advance=1, description=line)
                if not console.is_terminal:  # a log file gets one line per update
                    console.print(line, highlight=False)
                imitates = hasattr(recipe, "update")  # sft, distil: their own update
                note = unchanged_note(record, anchored=anchor is not None, imitates=imitates)
                if note:
                    progress.console.print(note, highlight=False, markup=False)
    except BaseException:
        finish_training_run(store, run_id, "failed")
        raise
    finish_training_run(store, run_id, "finished")
    notes = list(getattr(recipe, "notes", [])) + (anchor.notes if anchor else [])
    if stopped_by_time:
        notes.append(
            f"stopped after {len(history)} update(s): the {options.minutes:g}-minute "
            "budget was spent"
        )
    written = []
    if options.plots:
        from trainer.plots import write_plots

        written = [str(p) for p in write_plots(history, Path(options.plots), title=run_id)]
    return RunResult(
        run_id=run_id,
        recipe=options.recipe,
        base_model=options.base_model,
        updates_done=len(history),
        reward_mean=[h["reward_mean"] for h in history],
        valid_rate=[h["valid_rate"] for h in history],
        seconds_per_update=[h["seconds"] for h in history],
        loss=[h["loss"] for h in history],
        all_equal_groups=[int(h.get("all_equal_groups", 0)) for h in history],
        out_dir=str(out_dir),
        checkpoint=str(last) if last else None,
        plots=written,
        resumed_from=str(checkpoint) if checkpoint else None,
        notes=notes,
        engine=engine(policy),
    )


def engine(policy: Any) -> str:
    """Which engine trains: a GPU run that silently fell back from unsloth to transformers is
    slower and larger, and the user should see it in the first line, not in a profiler."""
    name = "unsloth" if policy.backend == "unsloth" else "transformers + peft"
    return f"{name} on {policy.device}"


def make_anchor(ctx: RunContext) -> Any:
    """The demonstrations an RL run imitates alongside its reward (`--anchor N`), or None."""
    if not ctx.options.anchor:
        return None
    if ctx.options.recipe == "sft":
        raise ValueError("--anchor is for RL recipes: sft imitates the demonstrations already")
    if ctx.options.recipe == "distil":
        return None  # distil anchors its own update (recipes.distil)
    from .anchor import Anchor

    return Anchor(ctx)


def _one_update(
    ctx: RunContext, recipe: Recipe, optimizer: Any, phase: Phase, anchor: Any = None
) -> UpdateRecord:
    started = time.perf_counter()
    collected = recipe.collect(ctx, phase)
    phase("policy update")
    updating = time.perf_counter()
    own_update = getattr(recipe, "update", None)
    metrics = (
        own_update(ctx, optimizer, collected.items)
        if own_update is not None
        else policy_update(
            ctx.policy,
            optimizer,
            collected.items,
            ctx.options,
            functools.partial(anchor.backward, ctx) if anchor else None,
        )
    )
    update_s = time.perf_counter() - updating
    live = [it for it in collected.items if not it.masked]
    mean, std = reward_stats(collected.items)
    equal, groups = all_equal_groups(collected.items)
    executed = [it.exec_seconds for it in live if it.exec_seconds > 0]
    gen_s = collected.generation_seconds
    return UpdateRecord(
        update=ctx.update,
        reward_mean=round(mean, 6),
        reward_std=round(std, 6),
        valid_rate=round(sum(it.valid for it in live) / len(live), 6) if live else 0.0,
        loss=metrics["loss"],
        kl=metrics["kl"],
        exec_seconds_mean=round(sum(executed) / len(executed), 4) if executed else 0.0,
        tokens_per_s=round(collected.generated_tokens / gen_s, 3) if gen_s > 0 else 0.0,
        seconds=round(time.perf_counter() - started, 3),
        all_equal_groups=equal,
        extra={
            **collected.extra,
            "groups": groups,
            "items": len(collected.items),
            "masked": len(collected.items) - len(live),
            "items_with_signal": int(metrics["items_with_signal"]),
            "clip_frac": metrics["clip_frac"],
            "entropy": metrics["entropy"],
            "ratio_mean": metrics["ratio_mean"],
            **({"anchor_loss": metrics.get("anchor_loss", 0.0)} if anchor else {}),
            # where the update's time went: sampling (with its export), the optimiser steps
            "generation_seconds": round(gen_s, 3),
            "update_seconds": round(update_s, 3),
        },
    )


def init_policy(run: Path, options: RunOptions) -> Any:
    """The latest weights of another run (`--init RUN`, e.g. an sft warm start), to train on."""
    from trainer.policy import Policy

    checkpoint = latest_checkpoint(run)
    if checkpoint is None:
        raise CheckpointError(f"--init {run}: no checkpoint there (is it a run folder?)")
    try:
        backend = None if options.backend == "auto" else options.backend
        policy = Policy.load(checkpoint, backend=backend)
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"--init {run}: cannot load {checkpoint}: {exc}") from None
    for name, p in policy.model.named_parameters():
        if "lora_" in name:  # the loaded adapter goes on training
            p.requires_grad_(True)
    return policy


def run_training_data(ctx: RunContext, recipe: Recipe, anchor: Any = None) -> Any:
    """What this run learns from (tasks and seeds), with what its --init run learnt from and
    its anchor imitates: the record `mlagent-train eval` checks held-out tasks and seeds against."""
    from trainer.provenance import ProvenanceError, TrainingData

    data = getattr(recipe, "training_data", None) or TrainingData()
    if anchor is not None:
        data = data.merge(anchor.training_data)
    if ctx.options.recipe != "sft":
        for task in ctx.tasks:
            for seed in {ctx.options.seed, *ctx.options.task_seeds}:
                data.add(task.name, seed)
    data.runs = sorted({*data.runs, ctx.run_id})
    if ctx.options.init:
        try:
            data = data.merge(TrainingData.load(Path(ctx.options.init)))
        except ProvenanceError:
            pass  # an --init run from before provenance was recorded: nothing more is known
    return data


def _progress(console: Console) -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=not console.is_terminal,  # else its last state repeats the last update's line
    )
