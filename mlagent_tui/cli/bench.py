"""`mlagent bench`: many runs per task and model, and their metrics (MLAgentBench, MLGym,
MLE-bench)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..core.safe_text import visible
from .bench_progress import BenchProgress
from .bench_view import agent_names, print_report
from .budgets import MaxMinutesOpt, MaxStepsOpt
from .exits import BENCH_EXIT_CODES_HELP, FAILED, USAGE, interrupt_code, signals_interrupt
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


def _finish(store_: Any, bench_id: str, out: Path | None, json_out: bool) -> None:
    from ..core.bench import build_report, write_outputs

    report = build_report(store_, bench_id)
    write_outputs(report, _out_dir(out, bench_id))
    if json_out:
        emit_json(report.summary())
    else:
        print_report(report)


@app.callback(epilog=BENCH_EXIT_CODES_HELP)
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
    agent: Annotated[
        str | None, typer.Option("--agent", help="research (default) | solve | search")
    ] = None,
    agents: Annotated[
        str | None,
        typer.Option(
            "--agents",
            help="Agents to compare, comma-separated (e.g. research,solve,search): each "
            "runs every task and model with the same --max-steps and --max-minutes.",
        ),
    ] = None,
    runs: Annotated[int, typer.Option("--runs", help="Sessions per task and model.")] = 1,
    max_steps: MaxStepsOpt = None,  # 0 or less: a usage error, as for `run`
    max_minutes: MaxMinutesOpt = None,
    parallel: Annotated[int, typer.Option("--parallel", help="Sessions at a time.")] = 1,
    sandbox: SandboxOpt = "local",
    out: OutOpt = None,
    resume: Annotated[
        str | None, typer.Option("--resume", help="A bench ID: run only what is missing.")
    ] = None,
    ray_address: Annotated[
        str | None,
        typer.Option(
            "--ray",
            help="Run each session as a Ray task: HOST:PORT of a head, `auto` (RAY_ADDRESS) or "
            "`local` (a cluster in this process). Needs the `scale` extra.",
        ),
    ] = None,
    json_out: JsonOpt = False,
    home_dir: HomeOpt = None,
) -> None:
    """Run N sessions per task, model and agent, P at a time, and report (or a command below)."""
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
        if ray_address is not None:
            from ..core.bench import check_ray_options

            check_ray_options(ray_address)
        names_of_agents = agent_names(agent, agents)
        if resume:
            if tasks or task_dirs or models or agent or agents:
                fail(
                    "--resume ID takes the tasks, models and agents of that bench; drop the others",
                    USAGE,
                )
            bench_id = resume
            config = load_bench(st, bench_id)
        else:
            names = [n.strip() for n in (tasks or "").split(",") if n.strip()]
            config = make_config(
                resolve_tasks(names, task_dirs),
                (models or "").split(","),
                agents=names_of_agents,
                runs=runs,
                max_steps=max_steps,
                max_minutes=max_minutes,
                parallel=parallel,
                sandbox=sandbox,
            )
            bench_id = start_bench(h, st, config)
    except BenchError as exc:
        fail(str(exc), USAGE)
    runner = BenchRunner(h, st, bench_id, config)
    scale_errors: tuple[type[Exception], ...] = ()
    if ray_address is not None:
        from ..core.bench import RayBenchRunner
        from ..core.scale import ScaleError

        scale_errors = (ScaleError,)

        def note(msg: str) -> None:
            err.print(f"[dim]ray:[/] {escape(visible(msg))}", highlight=False)

        runner = RayBenchRunner(h, st, bench_id, config, ray_address, on_note=note)
    total = len(config.tasks) * len(config.models) * len(config.agents) * config.runs
    pending = len(runner.pending())
    err.print(
        f"bench {bench_id}: {pending} of {total} run(s) to go, "
        + (f"as Ray tasks on {ray_address}" if ray_address else f"{config.parallel} at a time"),
        highlight=False,
    )
    progress = BenchProgress()
    runner.on_event = progress.on_event
    try:
        with signals_interrupt():
            runner.run(progress.on_run)
    except scale_errors as exc:  # no cluster at the address, no node fit to run
        fail(f"{exc}; the bench stays resumable: mlagent bench --resume {bench_id}")
    except KeyboardInterrupt as exc:
        err.print(f"interrupted; go on with: mlagent bench --resume {bench_id}")
        raise typer.Exit(interrupt_code(exc)) from None
    _finish(st, bench_id, out, json_out)
    from ..core.store import bench_sessions

    crashed = [r for r in bench_sessions(st, bench_id) if r["status"] == "crashed"]
    if crashed:
        err.print(f"{len(crashed)} run(s) crashed (see the report's failures)", highlight=False)
        raise typer.Exit(FAILED)


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
                        "agents": r["config"].get("agents") or [r["config"]["agent"]],
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
        total = len(c["tasks"]) * len(c["models"]) * len(c.get("agents") or [0]) * c["runs"]
        table.add_row(
            r["id"],
            r["status"],
            Text(visible(",".join(t["name"] for t in c["tasks"]))),
            Text(visible(",".join(c["models"]))),
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
        list[Path],
        typer.Option(
            "--scores",
            help="CSV: task, higher_is_better, baseline, then one column per method. Repeat it "
            "to compare several tables on one shared tau axis.",
        ),
    ],
    definition: Annotated[
        str,
        typer.Option(
            "--definition",
            help="mlgym: MLGym's AUP over log10(ratio) on a 500-point grid (comparable with "
            "published numbers); linear: the exact integral over the ratio.",
        ),
    ] = "mlgym",
    tau_max: Annotated[
        float | None,
        typer.Option(
            "--tau-max",
            help="End of the tau axis (log10 of a ratio for mlgym; MLGym's paper v1 used 2). "
            "Default: from the tables.",
        ),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Also draw the profiles (PNG) into this folder.")
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Performance profiles and AUP (MLGym) of tables of scores, on one shared tau axis."""
    from ..core.bench import AupError, ScoreTableError, compute_aups, load_score_table

    tables = {}
    for path in scores:
        name = path.name if path.name not in tables else str(path)
        if name in tables:
            fail(f"the table {path} is given twice")
        try:
            tables[name] = load_score_table(path)
        except ScoreTableError as exc:
            fail(str(exc))
    try:
        results = compute_aups(tables, definition=definition, tau_max=tau_max)
    except AupError as exc:
        fail(str(exc))
    first = next(iter(results.values()))
    files = {}
    if out is not None:
        from ..core.bench import plot_profiles

        out.mkdir(parents=True, exist_ok=True)
        files["profiles"] = str(plot_profiles(results, out / "performance_profile.png"))
    notes = _infeasible_notes(results)
    if json_out:
        emit_json(
            {
                "definition": first.definition,
                "axis": "log10(ratio)" if first.definition == "mlgym" else "ratio",
                "tau_max": first.tau_max,
                "epsilon": first.epsilon,
                "grid_points": first.grid_points,
                "tables": {name: r.summary() for name, r in results.items()},
                "notes": notes,
                "files": files,
            }
        )
        return
    _print_aups(results)
    for line in notes:
        console.print(visible(line), highlight=False, markup=False)
    for path in files.values():
        console.print(f"[dim]{path}[/]", highlight=False)


def _print_aups(results: dict[str, Any]) -> None:
    """One row per method, one AUP column per table (ranked by the first), then the axis."""
    from ..core.bench import short_name

    first = next(iter(results.values()))
    methods = list(dict.fromkeys(m for r in results.values() for m in r.methods))
    methods.sort(key=lambda m: -first.aup.get(m, float("-inf")))
    table = Table("method", *results, title="AUP (higher is better)")
    for m in methods:
        cells = [f"{r.aup[m]:.3f}" if m in r.aup else "-" for r in results.values()]
        table.add_row(Text(visible(short_name(m))), *cells)
    console.print(table)
    if first.definition == "mlgym":
        axis = (
            f"MLGym's AUP: log10(ratio) in [0, {first.tau_max:g}], {first.grid_points}-point grid"
        )
    else:
        axis = f"exact AUP over the ratio in [1, {first.tau_max:.4g}]"
    console.print(f"{axis}, shared by the tables; ratios per task: --json", highlight=False)


def _infeasible_notes(results: dict[str, Any]) -> list[str]:
    """What was infeasible and why, negative scores named one by one (MLGym's rule)."""
    lines = []
    for name, r in results.items():
        if not r.infeasible:
            continue
        counts: dict[str, int] = {}
        for i in r.infeasible:
            counts[i.reason] = counts.get(i.reason, 0) + 1
        lines.append(
            f"{name}: {len(r.infeasible)} infeasible: "
            + ", ".join(f"{n} {reason}" for reason, n in counts.items())
        )
        negative = [
            f"{i.task} {i.method} {i.score:g}" for i in r.infeasible if i.reason == "negative"
        ]
        if negative:
            lines.append("  negative: " + ", ".join(negative))
        unsolved = [
            t for t, row in r.ratios.items() if all(x == float("inf") for x in row.values())
        ]
        if unsolved:
            lines.append("  nothing feasible (solved by no method): " + ", ".join(unsolved))
    if lines:
        eps = next(iter(results.values())).epsilon
        lines.append(
            "infeasible = missing, worse than the baseline, or <= 0 (as in MLGym: a negative "
            f"score has no ratio); its ratio is {1 + eps:g} x the task's worst feasible one"
        )
    return lines
