"""`mlagent-train`: RL fine-tuning of the local model from logged sessions and fresh rollouts.

Every command has --help; --json prints one JSON object on stdout (progress goes to stderr).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(
    help="mlagent-train: fine-tune the local model with RL from the sessions mlagent logged "
    "and from fresh rollouts in the sandbox.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
console = Console()
err = Console(stderr=True, soft_wrap=True)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]
DbOpt = Annotated[
    Path | None,
    typer.Option("--db", help="The session database (default: the home's mlagent.db)."),
]
HomeOpt = Annotated[
    Path | None,
    typer.Option("--home", help="Home of database and workspaces (default ./sessions)."),
]


def fail(message: str, code: int = 1) -> None:
    err.print(f"[bold red]error:[/] {message}", highlight=False)
    raise typer.Exit(code)


def emit_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, default=str) + "\n")


def open_store(db: Path | None, home: Path | None, must_exist: bool = False) -> Any:
    from mlagent_tui.core.home import Home
    from mlagent_tui.core.store import Store, StoreError

    path = db if db is not None else Home.at(home).db_path
    if must_exist and not Path(path).is_file():
        fail(f"no database at {path}")
    try:
        return Store(path)
    except StoreError as exc:
        fail(str(exc))


@app.callback()
def main_callback() -> None:
    """mlagent-train: fine-tune the local model with RL from the sessions mlagent logged."""


@app.command("data")
def data_cmd(
    db: DbOpt = None,
    home: HomeOpt = None,
    base_model: Annotated[
        str | None,
        typer.Option("--base-model", help="Count samples a ratio-based recipe would exclude."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """What a database holds that the trainer can learn from: sessions, samples, groups (task
    and state), reward statistics."""
    from trainer.data import data_summary

    store = open_store(db, home, must_exist=db is not None)
    summary = data_summary(store, base_model=base_model)
    if as_json:
        emit_json(summary.model_dump())
        return
    console.print(summary.message, highlight=False)
    if not summary.samples:
        return
    r = summary.reward
    console.print(
        f"sessions {summary.sessions_trainable}/{summary.sessions_total} trainable, "
        f"{summary.samples} samples ({summary.solutions} solutions, {summary.parse_failures} "
        f"unparsed), {summary.groups} groups ({summary.groups_with_signal} with reward spread), "
        f"{summary.samples_with_logprobs} with sampler log-probabilities",
        highlight=False,
    )
    console.print(
        f"reward: mean {r.mean:.3f} std {r.std:.3f} min {r.min:.3f} max {r.max:.3f}",
        highlight=False,
    )
    if summary.base_model:
        console.print(
            f"excluded as another base model than {summary.base_model!r}: "
            f"{summary.excluded_other_base_model} samples from {summary.excluded_sessions} "
            "sessions",
            highlight=False,
        )
    table = Table("task", "sessions", "samples", "solutions", "groups", "reward mean")
    for t in summary.tasks:
        table.add_row(
            t.task,
            str(t.sessions),
            str(t.samples),
            str(t.solutions),
            str(t.groups),
            f"{t.reward.mean:.3f}",
        )
    console.print(table)


def _split(values: list[str] | None) -> list[str]:
    return [v.strip() for value in values or [] for v in value.split(",") if v.strip()]


def _seeds(values: list[str] | None, default: list[int]) -> list[int]:
    raw = _split(values)
    try:
        return [int(v) for v in raw] if raw else default
    except ValueError:
        fail(f"--seeds takes whole numbers separated by commas, got {','.join(raw)!r}", 2)
        raise


def _chosen_tasks(names: list[str], dirs: list[Path] | None, exclude: list[str]) -> list[Any]:
    """Tasks by name or folder (default: every bundled task), less the excluded names."""
    from mlagent_tui.core.tasks import TaskError, find_task, list_tasks

    try:
        tasks = [find_task(n) for n in names] + [find_task(task_dir=str(d)) for d in dirs or []]
        if not tasks:
            tasks = list_tasks()
    except TaskError as exc:
        fail(str(exc), 2)
    unknown = set(exclude) - {t.name for t in tasks} - {t.name for t in list_tasks()}
    if unknown:
        fail(f"--exclude-tasks names unknown task(s): {', '.join(sorted(unknown))}", 2)
    kept = [t for t in tasks if t.name not in exclude]
    if not kept:
        fail("no tasks left to record (every task was excluded)", 2)
    return kept


@app.command("demos")
def demos_cmd(
    tasks: Annotated[
        list[str] | None, typer.Option("--tasks", help="Bundled task names (default: all).")
    ] = None,
    task_dir: Annotated[
        list[Path] | None, typer.Option("--task-dir", help="A task folder (repeatable).")
    ] = None,
    levels: Annotated[
        list[str] | None,
        typer.Option("--levels", help="Reference levels: median,bronze,silver,gold (default all)."),
    ] = None,
    exclude_tasks: Annotated[
        list[str] | None, typer.Option("--exclude-tasks", help="Task names to leave out.")
    ] = None,
    seeds: Annotated[
        list[str] | None, typer.Option("--seeds", help="Task seeds (default 0).")
    ] = None,
    agents: Annotated[
        list[str] | None, typer.Option("--agents", help="solve,research (default both).")
    ] = None,
    workers: Annotated[int, typer.Option("--workers", help="Sessions at a time.")] = 2,
    db: DbOpt = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Record each task's reference solutions as real sessions (model `reference:<level>`) of
    the solve and the research agent, executed and graded like any session: the data
    `mlagent-train run --recipe sft` learns from."""
    from trainer.demos import AGENTS, LEVELS, DemoError, DemoResult, record_demos, summary

    chosen = _chosen_tasks(_split(tasks), task_dir, _split(exclude_tasks))
    store = open_store(db, home)
    from mlagent_tui.core.home import Home

    where = Home.at(home if db is None else (home or Path(db).parent))

    def progress(r: DemoResult) -> None:
        score = "no valid submission" if r.final_score is None else f"score {r.final_score:.4g}"
        mark = "beats baseline" if r.beats_baseline else ("valid" if r.valid else "invalid")
        err.print(
            f"{r.task} seed {r.seed} {r.level} {r.agent}: {score}, {mark} ({r.session_id}, "
            f"{r.seconds:.1f} s)",
            highlight=False,
        )

    try:
        results, notes = record_demos(
            where,
            store,
            chosen,
            seeds=_seeds(seeds, [0]),
            levels=_split(levels) or list(LEVELS),
            agents=_split(agents) or list(AGENTS),
            workers=workers,
            on_done=progress,
        )
    except DemoError as exc:
        fail(str(exc), 2)
    for note in notes:
        err.print(note, highlight=False)
    out = {**summary(results), "db": str(store.path), "notes": notes}
    if as_json:
        emit_json({**out, "results": [r.model_dump() for r in results]})
        return
    console.print(
        f"recorded {out['sessions']} demonstration sessions in {store.path}: {out['valid']} valid, "
        f"{out['beats_baseline']} better than the baseline (what --recipe sft learns from)",
        highlight=False,
    )


@app.command("run")
def run_cmd(
    recipe: Annotated[
        str, typer.Option("--recipe", help="sft | offline | single-step | trajectory | acegrpo")
    ] = "single-step",
    base_model: Annotated[
        str,
        typer.Option(
            "--base-model",
            help="smollm2 (the bare bundled SmolLM2-135M) | local (the same plus the shipped "
            "adapter) | a GGUF file | an HF folder",
        ),
    ] = "smollm2",
    tasks: Annotated[
        list[str] | None, typer.Option("--tasks", help="Bundled task names (comma-separated).")
    ] = None,
    task_dir: Annotated[
        list[Path] | None, typer.Option("--task-dir", help="A task folder (repeatable).")
    ] = None,
    steps: Annotated[int | None, typer.Option("--steps", help="Policy updates (total).")] = None,
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
    sft_agents: Annotated[
        str, typer.Option("--sft-agents", help="sft: whose sessions: solve,research.")
    ] = "solve,research",
    lora_r: Annotated[int, typer.Option("--lora-r", help="LoRA rank.")] = 8,
    group_size: Annotated[int, typer.Option("--group-size", help="Samples per prompt (G).")] = 4,
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
    max_new_tokens: Annotated[int, typer.Option("--max-new-tokens")] = 256,
    lr: Annotated[float, typer.Option("--lr", help="AdamW learning rate (LoRA).")] = 1e-4,
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
    as_json: JsonOpt = False,
) -> None:
    """Train with a recipe; records the run and per-update metrics in the database.

    Rollouts are real solve sessions in the database, named after the policy checkpoint:
    `mlagent replay ID` shows what the trainer saw. A checkpoint follows every update.
    """
    from pydantic import ValidationError

    from mlagent_tui.core.tasks import TaskError
    from trainer.recipes import (
        RECIPES,
        UNBOUNDED_STEPS,
        CheckpointError,
        NothingToTrain,
        RunOptions,
        run_training,
    )

    options = None
    if resume is None:
        if recipe not in RECIPES:
            fail(f"unknown recipe {recipe!r} ({' | '.join(RECIPES)})")
        if minutes is not None and minutes <= 0:
            fail(f"--minutes must be more than 0, got {minutes:g}", 2)
        names, dirs = _split(tasks), [str(d) for d in task_dir or []]
        if recipe not in ("offline", "sft") and not names and not dirs:
            fail(f"--recipe {recipe} needs tasks: --tasks NAMES or --task-dir DIR")
        settings: dict[str, Any] = {
            "recipe": recipe,
            "base_model": base_model,
            "tasks": names,
            "task_dirs": dirs,
            "steps": steps or (UNBOUNDED_STEPS if minutes else 1),
            "minutes": minutes,
            "exclude_tasks": _split(exclude_tasks),
            "init": str(init) if init else None,
            "sft_filter": sft_filter,
            "sft_batch": sft_batch,
            "sft_agents": _split([sft_agents]),
            "lora_r": lora_r,
            "group_size": group_size,
            "max_new_tokens": max_new_tokens,
            "lr": lr,
            "seed": seed,
            "temperature": temperature,
            "kl_coef": kl_coef,
            "instrument_model": instrument_model,
            "exec_timeout_s": exec_timeout,
            "max_session_steps": max_session_steps,
            "max_minutes": max_minutes,
            "backend": backend,
            "db": str(db) if db else None,
            "home": str(home) if home else None,
            "out": str(out) if out else None,
        }
        if workers:
            settings["workers"] = workers
        try:
            options = RunOptions.model_validate(settings)
        except ValidationError as exc:
            fail("; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()))
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


@app.command("runs")
def runs_cmd(db: DbOpt = None, home: HomeOpt = None, as_json: JsonOpt = False) -> None:
    """Training runs recorded in the database, newest first."""
    from mlagent_tui.core.store import training_runs, training_updates

    store = open_store(db, home, must_exist=db is not None)
    runs = training_runs(store)
    if as_json:
        rows = []
        for r in runs:
            ups = training_updates(store, r.id)
            rows.append({**r.model_dump(), "reward_mean": [u.reward_mean for u in ups]})
        emit_json({"runs": rows})
        return
    if not runs:
        console.print("no training runs recorded yet (mlagent-train run --help)")
        return
    table = Table("run", "recipe", "base", "status", "updates", "last reward", "folder")
    for r in runs:
        ups = training_updates(store, r.id)
        last = f"{ups[-1].reward_mean:.3f}" if ups else "-"
        table.add_row(r.id, r.recipe, r.base_model, r.status, str(r.updates), last, r.out_dir)
    console.print(table)


@app.command("export")
def export_cmd(
    run: Annotated[Path, typer.Option("--run", help="A run folder or a checkpoint folder.")],
    to: Annotated[Path, typer.Option("--to", help="The GGUF file to write.")],
    quant: Annotated[str, typer.Option("--quant", help="q8_0 | f16 | f32 ...")] = "q8_0",
    verify: Annotated[
        bool, typer.Option("--verify/--no-verify", help="Load it back with llama.cpp and compare.")
    ] = True,
    as_json: JsonOpt = False,
) -> None:
    """Merge a run's LoRA into its base and write a GGUF that `mlagent --model local:FILE` runs."""
    from trainer.recipes import CheckpointError, latest_checkpoint

    try:
        checkpoint = latest_checkpoint(run)
    except CheckpointError as exc:
        fail(str(exc))
    if checkpoint is None:
        fail(f"{run} has no checkpoint (is it a run folder written by mlagent-train run?)")
    from trainer.export import ExportError, export_gguf

    try:
        report = export_gguf(checkpoint, to, quant=quant, verify=verify)
    except (ExportError, ValueError, FileNotFoundError, RuntimeError) as exc:
        fail(str(exc))
    if as_json:
        emit_json({**report.model_dump(), "checkpoint": str(checkpoint)})
        return
    console.print(
        f"wrote {report.out} ({report.quant}, {report.size_bytes / 1e6:.1f} MB) from {checkpoint}; "
        f"llama.cpp greedy match: {report.greedy_match}",
        highlight=False,
    )


EVAL_HELP = (
    "Run N real sessions of an agent per task and seed with a model and report valid_rate, "
    "beats_baseline_rate, medal_rate and mean_reward, overall and per task (the JSON's "
    "`definitions` repeats these).\n\n"
    "valid: the session ended with a valid final submission (graded on the test split of its "
    "seed).\n\n"
    "beats_baseline: valid, and the final score strictly better than the task's \\[baseline] "
    "score in the metric's direction; that score is the starter script's on seed 0's test "
    "split, not re-measured for each evaluation seed.\n\n"
    "medal: the session has a medal (its final score reaches bronze or better).\n\n"
    "mean_reward: the mean of trainer.data.unit_score: 0 without a valid submission, 0.1 at or "
    "below the baseline score, 1 at gold.\n\n"
    "Held out: a task any training data came from (--trained-on, else the model's own record) "
    "is refused unless named in --tasks with --seeds all different from its training seeds. "
    "Sessions go to a temporary home, deleted afterwards, unless --home keeps them."
)


@app.command("eval", help=EVAL_HELP)
def eval_cmd(
    model: Annotated[
        str,
        typer.Option("--model", help="local | smollm2 | local:PATH.gguf | replay:PATH | API id."),
    ],
    tasks: Annotated[
        list[str] | None, typer.Option("--tasks", help="Bundled task names: a,b (repeatable).")
    ] = None,
    task_dir: Annotated[
        list[Path] | None, typer.Option("--task-dir", help="A task folder (repeatable).")
    ] = None,
    seeds: Annotated[
        list[str] | None, typer.Option("--seeds", help="Task seeds to evaluate on: S1,S2.")
    ] = None,
    samples: Annotated[int, typer.Option("--samples", help="Sessions per task and seed.")] = 1,
    agent: Annotated[str, typer.Option("--agent", help="solve | research.")] = "solve",
    max_steps: Annotated[
        int | None,
        typer.Option("--max-steps", help="Steps per session (default 3 solve, 15 research)."),
    ] = None,
    trained_on: Annotated[
        Path | None,
        typer.Option(
            "--trained-on",
            help="The model's training record: a run folder, a checkpoint, a .json or a GGUF "
            "(its .training.json sidecar). Default: the model's own record.",
        ),
    ] = None,
    home: Annotated[
        Path | None,
        typer.Option("--home", help="Keep the sessions here (default: a temporary home, deleted)."),
    ] = None,
    workers: Annotated[
        int | None, typer.Option("--workers", help="Sessions at a time (default: cores).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    from trainer.evaluate import EvalError, EvalRequest, SessionFigure, plan_eval, run_eval

    def progress(r: SessionFigure) -> None:
        score = "no score" if r.final_score is None else f"score {r.final_score:.4g}"
        mark = "beats baseline" if r.beats_baseline else ("valid" if r.valid else "invalid")
        why = f" - {r.why}" if r.why else ""
        err.print(
            f"{r.task} seed {r.seed} #{r.sample}: {mark}, {score} ({r.session_id}, "
            f"{r.seconds:.1f} s){why}",
            highlight=False,
            markup=False,
        )

    request = EvalRequest(
        model=model,
        tasks=tasks or [],
        task_dirs=task_dir or [],
        seeds=seeds or [],
        samples=samples,
        agent=agent,
        max_steps=max_steps,
        trained_on=trained_on,
        home=home,
        workers=workers,
    )
    try:
        report = run_eval(plan_eval(request), on_done=progress)
    except EvalError as exc:
        fail(str(exc), 2)
        raise
    if report.home:
        first = report.sessions[0].session_id
        err.print(
            f"sessions kept in {report.home}: mlagent replay {first} --home {report.home}",
            highlight=False,
            markup=False,
        )
    if as_json:
        emit_json(report.model_dump())
        return
    table = Table("task", "samples", "valid", "beats baseline", "medal", "mean reward")
    rows = [*report.tasks.items(), ("all", report)]
    for name, f in rows:
        table.add_row(
            name,
            str(f.samples),
            f"{f.valid_rate:.0%}",
            f"{f.beats_baseline_rate:.0%}",
            f"{f.medal_rate:.0%}",
            f"{f.mean_reward:.3f}",
        )
    held = report.held_out
    seeds_of = [f"{t} (trained on {h.trained_seeds})" for t, h in held.held_out_seeds.items()]
    console.print(
        f"{report.model_name}, {report.agent} agent, at most {report.max_steps} steps, seeds "
        f"{report.seeds}, {report.seconds:.0f} s. Held-out tasks: {', '.join(held.tasks) or '-'}; "
        f"held-out seeds of: {', '.join(seeds_of) or '-'}; training data: "
        f"{held.training_data or 'none known'}",
        highlight=False,
        markup=False,
    )
    console.print(table)


def main() -> None:
    app()
