"""`mlagent bench`: many runs per task and model, and their metrics (MLAgentBench, MLGym,
MLE-bench)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from .options import HomeOpt, JsonOpt, SandboxOpt, console, emit_json, err, fail, home, store

app = typer.Typer(
    help="Benchmarks: N sessions per task and model; success, medals, best attempt/submission, "
    "AUP. Without a command: run one (see the options).",
    invoke_without_command=True,
)

OutOpt = Annotated[
    Path | None,
    typer.Option(
        "--out", help="Folder for report.md, CSV tables and PNGs (default HOME/bench/ID)."
    ),
]


def _out_dir(out: Path | None, bench_id: str) -> Path:
    return out if out is not None else home().root / "bench" / bench_id


def _print_report(report: Any) -> None:
    from ..core.bench import short_name

    table = Table(
        "task",
        "model",
        "runs",
        "success",
        "valid",
        "impr. %",
        "medal",
        "best att.",
        "best sub.",
        "failures",
    )
    for r in report.results:
        fails = ", ".join(f"{k}={v}" for k, v in r.failures.items() if v) or "-"
        impr = "-" if r.mean_improvement_pct is None else f"{r.mean_improvement_pct:.3g}"
        if r.sem_improvement_pct is not None:
            impr += f" ± {r.sem_improvement_pct:.2g}"
        table.add_row(
            r.task,
            short_name(r.model),
            str(r.runs),
            f"{r.success_rate:.0%}",
            f"{r.valid_rate:.0%}",
            impr,
            f"{r.any_medal_rate:.0%}",
            "-" if r.best_attempt is None else f"{r.best_attempt:.4g}",
            "-" if r.best_submission is None else f"{r.best_submission:.4g}",
            fails,
        )
    console.print(table)
    for kind, values in report.aup.items():
        ranked = sorted(values.items(), key=lambda x: -x[1])
        console.print(f"AUP {kind}: " + ", ".join(f"{short_name(m)} {v:.3f}" for m, v in ranked))
    for name, path in report.files.items():
        console.print(f"[dim]{name}: {path}[/]", highlight=False)


def _finish(store_: Any, bench_id: str, out: Path | None, json_out: bool) -> None:
    from ..core.bench import build_report, write_outputs

    report = build_report(store_, bench_id)
    write_outputs(report, _out_dir(out, bench_id))
    if json_out:
        emit_json(report.summary())
    else:
        _print_report(report)


@app.callback()
def bench(
    ctx: typer.Context,
    tasks: Annotated[
        str | None, typer.Option("--tasks", help="Bundled tasks, comma-separated, or `all`.")
    ] = None,
    task_dirs: Annotated[
        list[Path] | None, typer.Option("--task-dir", help="A task folder (repeatable).")
    ] = None,
    models: Annotated[
        str | None,
        typer.Option("--models", help="Comma-separated: local, replay:F.jsonl, openai/gpt-4o..."),
    ] = None,
    agent: Annotated[str, typer.Option("--agent", help="research | solve")] = "research",
    runs: Annotated[int, typer.Option("--runs", help="Sessions per task and model.")] = 1,
    max_steps: Annotated[int | None, typer.Option(help="Default: each task's limit.")] = None,
    max_minutes: Annotated[float | None, typer.Option(help="Per session.")] = None,
    parallel: Annotated[int, typer.Option("--parallel", help="Sessions at a time.")] = 1,
    sandbox: SandboxOpt = "local",
    out: OutOpt = None,
    resume: Annotated[
        str | None, typer.Option("--resume", help="A bench ID: run only what is missing.")
    ] = None,
    json_out: JsonOpt = False,
    home_dir: HomeOpt = None,
) -> None:
    """Run N sessions per task and model, P at a time, and report (or a command below)."""
    if ctx.invoked_subcommand is not None:
        return
    from ..core.bench import (
        BenchError,
        BenchRunner,
        load_bench,
        make_config,
        resolve_tasks,
        start_bench,
    )

    h, st = home(home_dir), store(home_dir)
    try:
        if resume:
            if tasks or task_dirs or models:
                fail("--resume ID takes the tasks and models of that bench; drop the others")
            bench_id = resume
            config = load_bench(st, bench_id)
        else:
            names = [n.strip() for n in (tasks or "").split(",") if n.strip()]
            config = make_config(
                resolve_tasks(names, task_dirs),
                (models or "").split(","),
                agent=agent,
                runs=runs,
                max_steps=max_steps,
                max_minutes=max_minutes,
                parallel=parallel,
                sandbox=sandbox,
            )
            bench_id = start_bench(h, st, config)
    except BenchError as exc:
        fail(str(exc))
    runner = BenchRunner(h, st, bench_id, config)
    total = len(config.tasks) * len(config.models) * config.runs
    pending = len(runner.pending())
    err.print(
        f"bench {bench_id}: {pending} of {total} run(s) to go, {config.parallel} at a time",
        highlight=False,
    )
    started = time.monotonic()

    def on_run(job: Any, status: str, session_id: str | None) -> None:
        if status != "running":
            err.print(
                f"[dim]{time.monotonic() - started:7.1f}s[/] {job.task} {job.model} "
                f"#{job.run_index}: {status} ({session_id or 'no session'})",
                highlight=False,
            )

    try:
        runner.run(on_run)
    except KeyboardInterrupt:
        err.print(f"interrupted; go on with: mlagent bench --resume {bench_id}")
        raise typer.Exit(130) from None
    _finish(st, bench_id, out, json_out)


@app.command("list")
def bench_list(json_out: JsonOpt = False, home_dir: HomeOpt = None) -> None:
    """Recent benches: id, status, tasks, models, runs done."""
    from ..core.store import list_benches

    rows = list_benches(store(home_dir))
    for r in rows:
        r["config"] = json.loads(r["config"])
    if json_out:
        emit_json(
            {
                "benches": [
                    {
                        "id": r["id"],
                        "status": r["status"],
                        "created_at": r["created_at"],
                        "tasks": [t["name"] for t in r["config"]["tasks"]],
                        "models": r["config"]["models"],
                        "runs": r["config"]["runs"],
                        "done": r["done"] or 0,
                        "crashed": r["crashed"] or 0,
                    }
                    for r in rows
                ]
            }
        )
        return
    table = Table("id", "status", "tasks", "models", "runs done")
    for r in rows:
        c = r["config"]
        total = len(c["tasks"]) * len(c["models"]) * c["runs"]
        table.add_row(
            r["id"],
            r["status"],
            ",".join(t["name"] for t in c["tasks"]),
            ",".join(c["models"]),
            f"{r['done'] or 0}/{total}",
        )
    console.print(table)


@app.command("report")
def bench_report(
    bench_id: Annotated[str, typer.Argument(help="The bench (see `mlagent bench list`).")],
    out: OutOpt = None,
    json_out: JsonOpt = False,
    home_dir: HomeOpt = None,
) -> None:
    """Re-render a bench's tables and figures from the store."""
    from ..core.bench import BenchError

    st = store(home_dir)
    try:
        _finish(st, bench_id, out, json_out)
    except BenchError as exc:
        fail(str(exc))


@app.command("aup")
def bench_aup(
    scores: Annotated[
        Path,
        typer.Option(
            "--scores", help="CSV: task, higher_is_better, baseline, then one column per method."
        ),
    ],
    out: Annotated[
        Path | None, typer.Option("--out", help="Also draw the profile (PNG) into this folder.")
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Performance profiles and AUP (MLGym) of any table of scores."""
    from ..core.bench import ScoreTableError, compute_aup, load_score_table

    try:
        result = compute_aup(load_score_table(scores))
    except ScoreTableError as exc:
        fail(str(exc))
    files = {}
    if out is not None:
        from ..core.bench import plot_profiles

        out.mkdir(parents=True, exist_ok=True)
        files["profiles"] = str(
            plot_profiles({scores.stem: result}, out / "performance_profile.png")
        )
    if json_out:
        emit_json(
            {
                "aup": result.aup,
                "tau_max": result.tau_max,
                "epsilon": result.epsilon,
                "ratios": result.ratios,
                "files": files,
            }
        )
        return
    table = Table("method", "AUP", *result.ratios)
    for m in sorted(result.methods, key=lambda m: -result.aup[m]):
        table.add_row(m, f"{result.aup[m]:.4f}", *(f"{r[m]:.4g}" for r in result.ratios.values()))
    console.print(table)
    console.print(f"[dim]ratios per task shown; tau_max {result.tau_max:.4g}[/]", highlight=False)
    for path in files.values():
        console.print(f"[dim]{path}[/]", highlight=False)
