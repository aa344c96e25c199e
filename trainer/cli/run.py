"""`mlagent-train run`: train with a recipe."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from .app import (
    DbOpt,
    HomeOpt,
    JsonOpt,
    app,
    console,
    emit_json,
    err,
    fail,
    seed_list,
    split_list,
)


@app.command("run")
def run_cmd(
    recipe: Annotated[
        str,
        typer.Option(
            "--recipe", help="sft | distil | offline | single-step | trajectory | acegrpo"
        ),
    ] = "sft",
    base_model: Annotated[
        str | None,
        typer.Option(
            "--base-model",
            help="smollm2 (the bare bundled SmolLM2-135M) | local (the same plus the shipped "
            "adapter) | a GGUF file | an HF folder (default: smollm2; local for distil)",
        ),
    ] = None,
    tasks: Annotated[
        list[str] | None, typer.Option("--tasks", help="Bundled task names (comma-separated).")
    ] = None,
    task_dir: Annotated[
        list[Path] | None, typer.Option("--task-dir", help="A task folder (repeatable).")
    ] = None,
    steps: Annotated[
        int | None,
        typer.Option(
            "--steps",
            help="Policy updates (total; distil with --rounds: per round, 36; sft: 38).",
        ),
    ] = None,
    rounds: Annotated[
        int | None,
        typer.Option(
            "--rounds",
            help="distil: rounds of search on the training tasks (fresh seeds each) then "
            "training on what it found (default: learn from the stored search sessions).",
        ),
    ] = None,
    search_model: Annotated[
        str,
        typer.Option("--search-model", help="distil: who searches: policy | a --model string."),
    ] = "policy",
    search_steps: Annotated[
        int, typer.Option("--search-steps", help="distil: model calls per search session.")
    ] = 12,
    procedural: Annotated[
        int | None,
        typer.Option(
            "--procedural",
            help="distil: procedural training tasks added (0: none; evaluation's held out; 2).",
        ),
    ] = None,
    sweep_seeds: Annotated[
        int,
        typer.Option(
            "--sweep-seeds",
            help="distil: every one-setting change of each task's starter, run at this many "
            "training seeds before round 1, teaches the choice that helped (0: no sweep).",
        ),
    ] = 3,
    eval_tasks: Annotated[
        list[str] | None,
        typer.Option(
            "--eval-tasks", help="distil: held-out figures at each round's start on these tasks."
        ),
    ] = None,
    eval_seeds: Annotated[
        str | None, typer.Option("--eval-seeds", help="distil: ... at these task seeds (S1,S2).")
    ] = None,
    minutes: Annotated[
        float | None,
        typer.Option("--minutes", help="Wall-clock budget: no update starts after M minutes."),
    ] = None,
    exclude_tasks: Annotated[
        list[str] | None,
        typer.Option("--exclude-tasks", help="Tasks never trained on (comma-separated)."),
    ] = None,
    init: Annotated[
        Path | None,
        typer.Option("--init", help="Start from another run's latest weights (e.g. an sft run)."),
    ] = None,
    sft_filter: Annotated[
        str,
        typer.Option("--sft-filter", help="sft: sessions to imitate: beats-baseline | valid."),
    ] = "beats-baseline",
    sft_batch: Annotated[int, typer.Option("--sft-batch", help="sft: steps per update.")] = 8,
    sft_loss: Annotated[
        str,
        typer.Option(
            "--sft-loss",
            help="sft: step (each answer's mean token loss weighs the same: a short decision "
            "is not drowned by a long script) | token (every token weighs the same).",
        ),
    ] = "step",
    sft_agents: Annotated[
        str, typer.Option("--sft-agents", help="sft: whose sessions: solve,research.")
    ] = "solve,research",
    lora_r: Annotated[
        int | None, typer.Option("--lora-r", help="LoRA rank (default 8; sft, distil 16).")
    ] = None,
    group_size: Annotated[int, typer.Option("--group-size", help="Samples per prompt (G).")] = 4,
    improve_prob: Annotated[
        float,
        typer.Option(
            "--improve-prob",
            help="single-step: the chance that a task's prompt asks to improve (or debug) one "
            "of the run's earlier answers, once there is one, rather than for a first draft.",
        ),
    ] = 0.5,
    guide: Annotated[
        str,
        typer.Option(
            "--guide",
            help="single-step: none, or a reference level (silver ...) whose solution joins "
            "each improve group as an off-policy member.",
        ),
    ] = "none",
    parents: Annotated[
        str,
        typer.Option(
            "--parents",
            help="single-step: improve prompts fork the run's earlier answers (run), or the "
            "store's valid Drafts of each task at --seed, demonstrations' included, and the "
            "run's valid answers (store): the state an evaluation's second step sees.",
        ),
    ] = "run",
    task_seeds: Annotated[
        str | None,
        typer.Option(
            "--task-seeds",
            help="single-step: task seeds (e.g. 3,4,5) its prompts and sessions take in turn, "
            "per update and task; default --seed alone. With --parents store, each needs a "
            "stored Draft (mlagent-train demos --seeds 3,4,5).",
        ),
    ] = None,
    inner_steps: Annotated[
        int,
        typer.Option(
            "--inner-steps",
            help="Optimiser steps on each collected batch (GRPO's mu); after the first, the "
            "clipped ratio to the sampler's log-probs bounds how far they go.",
        ),
    ] = 1,
    anchor: Annotated[
        int | None,
        typer.Option(
            "--anchor",
            help="RL recipes: each optimiser step also imitates this many successful solve "
            "steps of the run's tasks (the sft data), so exploring keeps the warm start's "
            "Drafts (0: off; distil: 4).",
        ),
    ] = None,
    anchor_coef: Annotated[
        float, typer.Option("--anchor-coef", help="The anchor loss's weight.")
    ] = 1.0,
    db: DbOpt = None,
    home: HomeOpt = None,
    out: Annotated[Path | None, typer.Option("--out", help="Run folder (checkpoints).")] = None,
    plots: Annotated[Path | None, typer.Option("--plots", help="Write PNG curves here.")] = None,
    resume: Annotated[
        Path | None,
        typer.Option(
            "--resume",
            help="Continue a run folder from its latest checkpoint, with its saved options "
            "(only --steps, the new total, and --plots apply).",
        ),
    ] = None,
    max_new_tokens: Annotated[int | None, typer.Option("--max-new-tokens")] = None,
    lr: Annotated[
        float | None,
        typer.Option("--lr", help="AdamW learning rate (default 1e-4; sft 1e-3, distil 3e-4)."),
    ] = None,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    temperature: Annotated[float, typer.Option("--temperature")] = 1.0,
    kl_coef: Annotated[float, typer.Option("--kl-coef", help="KL to the base model.")] = 0.0,
    instrument_model: Annotated[
        str,
        typer.Option(
            "--instrument-model",
            help="How failed programs' progress is seen: structure (the default: a progress "
            "marker after each top-level statement, no model), local or an API model string "
            "(a frozen model adds progress prints), or none.",
        ),
    ] = "structure",
    workers: Annotated[
        int | None, typer.Option("--workers", help="Parallel executions (default: cores).")
    ] = None,
    exec_timeout: Annotated[
        float | None, typer.Option("--exec-timeout", help="Cap on one script's run (s).")
    ] = None,
    max_session_steps: Annotated[int, typer.Option("--max-session-steps")] = 3,
    max_minutes: Annotated[float, typer.Option("--max-minutes", help="Per session.")] = 5.0,
    backend: Annotated[str, typer.Option("--backend", help="auto | unsloth | hf")] = "auto",
    load_in_4bit: Annotated[
        bool,
        typer.Option("--load-in-4bit", help="NF4 base weights (unsloth or bitsandbytes; a GPU)"),
    ] = False,
    precision: Annotated[
        str,
        typer.Option(
            "--precision",
            help="Forward passes on the CPU: bfloat16 (autocast; weights stay float32), float32, "
            "or auto (bfloat16 where the CPU has native bf16: AVX512-BF16 or AMX).",
        ),
    ] = "auto",
    sampler: Annotated[
        str,
        typer.Option(
            "--sampler",
            help="Rollout sampling: llama (llama.cpp on the merged policy, fast on a CPU), hf, "
            "or auto (llama on a CPU, hf on a GPU).",
        ),
    ] = "auto",
    ray_address: Annotated[
        str | None,
        typer.Option(
            "--ray",
            help="Rollouts as Ray tasks: HOST:PORT of a head, `auto` (RAY_ADDRESS) or `local`; "
            "the policy and its updates stay here. Needs the `scale` extra.",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Train with a recipe; records the run and per-update metrics in the database.

    Rollouts are real solve sessions in the database, named after the policy checkpoint:
    `mlagent replay ID` shows what the trainer saw. A checkpoint follows every update.
    """
    from pydantic import ValidationError

    from mlagent_tui.core.tasks import TaskError
    from trainer.defaults import recipe_default
    from trainer.recipes import (
        RECIPES,
        UNBOUNDED_STEPS,
        CheckpointError,
        NothingToTrain,
        RunOptions,
        run_training,
    )

    options = None
    if ray_address is not None:
        from mlagent_tui.core.scale import ScaleError, import_ray

        try:
            import_ray()
        except ScaleError as exc:
            fail(str(exc))
    if resume is None:
        if recipe not in RECIPES:
            fail(f"unknown recipe {recipe!r} ({' | '.join(RECIPES)})")
        if rounds is not None and (rounds < 1 or recipe != "distil"):
            fail("--rounds takes 1 or more, with --recipe distil", 2)
        if minutes is not None and minutes <= 0:
            fail(f"--minutes must be more than 0, got {minutes:g}", 2)
        names, dirs = split_list(tasks), [str(d) for d in task_dir or []]
        if recipe not in ("offline", "sft", "distil") and not names and not dirs:
            fail(f"--recipe {recipe} needs tasks: --tasks NAMES or --task-dir DIR")

        def pick(name: str, given: Any) -> Any:
            return recipe_default(recipe, name, given)

        per_round = pick("round_updates", steps) if rounds else None
        if per_round and rounds:
            steps = per_round * rounds
        elif minutes is None:
            steps = pick("steps", steps)
        settings: dict[str, Any] = {
            "recipe": recipe,
            "base_model": pick("base_model", base_model),
            "tasks": names,
            "task_dirs": dirs,
            "steps": steps or (UNBOUNDED_STEPS if minutes else 1),
            "minutes": minutes,
            "exclude_tasks": split_list(exclude_tasks)
            or [t for t in pick("exclude_tasks", None) or [] if t not in names],
            "init": str(init) if init else None,
            "sft_filter": sft_filter,
            "sft_batch": sft_batch,
            "sft_loss": sft_loss,
            "sft_agents": split_list([sft_agents]),
            "lora_r": pick("lora_r", lora_r),
            "group_size": group_size,
            "improve_prob": improve_prob,
            "parents": parents,
            "guide": guide,
            "inner_steps": inner_steps,
            "anchor": pick("anchor", anchor),
            "anchor_coef": anchor_coef,
            "task_seeds": seed_list([task_seeds] if task_seeds else None, [], "--task-seeds"),
            "max_new_tokens": pick("max_new_tokens", max_new_tokens) or 256,
            "lr": pick("lr", lr),
            "seed": seed,
            "temperature": temperature,
            "kl_coef": kl_coef,
            "instrument_model": instrument_model,
            "sampler": sampler,
            "precision": precision,
            "exec_timeout_s": exec_timeout,
            "max_session_steps": max_session_steps,
            "max_minutes": max_minutes,
            "backend": backend,
            "load_in_4bit": load_in_4bit,
            "db": str(db) if db else None,
            "home": str(home) if home else None,
            "out": str(out) if out else None,
            "distil": {
                "rounds": rounds,
                "round_updates": recipe_default("distil", "round_updates", per_round),
                "search_model": search_model,
                "search_steps": search_steps,
                "procedural": recipe_default("distil", "procedural", procedural),
                "sweep_seeds": sweep_seeds,
                "eval_tasks": split_list(eval_tasks),
                "eval_seeds": seed_list([eval_seeds] if eval_seeds else None, [], "--eval-seeds"),
            },
        }
        if workers:
            settings["workers"] = workers
        if ray_address is not None:
            settings["ray"] = ray_address
        try:
            options = RunOptions.model_validate(settings)
        except ValidationError as exc:
            fail("; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()))
        if recipe == "distil":
            from trainer.recipes.distil import precheck

            try:
                missing = precheck(options)
            except ValueError as exc:
                fail(str(exc), 2)
            if missing and as_json:
                emit_json({"updates_done": 0, "message": missing})
            elif missing:
                console.print(missing, highlight=False)
            if missing:
                return
    try:
        result = run_training(
            options,  # type: ignore[arg-type]
            resume=resume,
            steps=steps if resume is not None else None,
            plots=str(plots) if plots else None,
            console=err,
        )
    except NothingToTrain as exc:
        if as_json:
            emit_json({"updates_done": 0, "message": str(exc)})
        else:
            console.print(str(exc), highlight=False)
        return
    except (CheckpointError, TaskError, ValueError, FileNotFoundError) as exc:
        fail(str(exc))
    except RuntimeError as exc:  # ScaleError: no cluster at --ray, no node fit to run
        if options is None or options.ray is None:
            raise
        fail(str(exc))
    if as_json:
        emit_json(result.model_dump())
        return
    console.print(
        f"run {result.run_id}: {result.updates_done} update(s) of {result.recipe}; "
        f"reward per update {[round(r, 3) for r in result.reward_mean]}, valid rate "
        f"{[round(v, 2) for v in result.valid_rate]}, all-equal groups "
        f"{result.all_equal_groups}; checkpoints in {result.out_dir}",
        highlight=False,
    )
    for note in result.notes:
        console.print(note, highlight=False)
    for path in result.plots:
        console.print(f"plot: {path}", highlight=False)
