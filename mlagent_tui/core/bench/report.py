"""Many runs: the report of a bench (rates, best attempt/submission, AUP, medals) from the store.

`build_report` reads a bench's rows and its sessions' own rows and events, so a report is the
same whether it is made right after the runs or re-rendered later; `write_outputs` turns it
into a Markdown table, CSV tables (results, runs, and score tables `bench aup` reads back) and
the PNG figures. Running a bench lives in runner.py, the arithmetic in metrics.py and aup.py,
the figures in plots.py.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ..safe_text import one_line
from ..store import Store, bench_sessions, get_bench, session_facts
from ..tasks import TaskSpec
from .agents import AgentSummary, agent_summaries, agents_markdown, method_of, methods
from .aup import AupResult, compute_aups
from .csv_tables import results_csv, runs_csv
from .metrics import (
    RunOutcome,
    TaskModelResult,
    aggregate,
    best_so_far,
    crashed_outcome,
    outcome_from_facts,
)
from .runner import BenchConfig, BenchError, load_bench
from .score_table import TaskScores, score_table_csv

SCORE_KINDS = ("best_attempt", "best_submission")


class BenchReport(BaseModel):
    bench_id: str
    status: str
    config: BenchConfig
    results: list[TaskModelResult]
    aup: dict[str, dict[str, float]] = Field(description="best_attempt|best_submission -> AUP")
    agents: list[AgentSummary] = Field(default_factory=list, description="per agent, all runs")
    profiles: dict[str, AupResult] = Field(default_factory=dict)
    runs: list[RunOutcome]
    mean_overhead_s: float | None = None
    scale: dict[str, Any] | None = Field(
        default=None, description="`--ray`: nodes probed, left out and lost; retries"
    )
    files: dict[str, str] = Field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """The `--json` object: bench_id, results, aup, and the per-run figures."""
        return {
            "bench_id": self.bench_id,
            "status": self.status,
            "results": [r.model_dump() for r in self.results],
            "aup": self.aup,
            "agents": [a.model_dump() for a in self.agents],
            "runs": [
                {
                    k: getattr(r, k)
                    for k in (
                        "task",
                        "model",
                        "agent",
                        "run_index",
                        "session_id",
                        "selection_gap",
                        "status",
                        "final_score",
                        "valid",
                        "best_attempt",
                        "tokens_in",
                        "tokens_out",
                        "cost_usd",
                        "wall_seconds",
                        "overhead_seconds",
                        "error",
                        "node",
                    )
                }
                for r in self.runs
            ],
            "mean_overhead_s": self.mean_overhead_s,
            "scale": self.scale,
            "files": self.files,
        }


def _specs(config: BenchConfig) -> dict[str, TaskSpec]:
    return {name: TaskSpec.model_validate(spec) for name, spec in config.specs.items()}


def collect_outcomes(store: Store, bench_id: str, config: BenchConfig) -> list[RunOutcome]:
    """Every recorded run of the bench, in task, model, run order."""
    specs = _specs(config)
    out: list[RunOutcome] = []
    for row in bench_sessions(store, bench_id):
        facts = session_facts(store, row["session_id"]) if row["session_id"] else None
        if row["status"] == "crashed" or facts is None:
            error = row["error"] or "no session was recorded"
            crashed = crashed_outcome(
                row["task"], row["model"], row["run_index"], error, row["session_id"]
            )
            crashed.node, crashed.agent = row.get("node"), row["agent"]
            out.append(crashed)
            continue
        outcome = outcome_from_facts(
            facts, specs[row["task"]], model=row["model"], run_index=row["run_index"]
        )
        if row["run_wall_s"] is not None:
            overhead = row["run_wall_s"] - outcome.model_seconds - outcome.action_seconds
            outcome.overhead_seconds = round(max(0.0, overhead), 4)
        outcome.node, outcome.agent = row.get("node"), row["agent"]
        out.append(outcome)
    task_order = {t.name: i for i, t in enumerate(config.tasks)}
    order = {name: i for i, (_, _, name) in enumerate(methods(config))}
    out.sort(
        key=lambda r: (task_order.get(r.task, 0), order.get(method_of(config, r), 0), r.run_index)
    )
    return out


def score_tables(
    config: BenchConfig, results: list[TaskModelResult]
) -> dict[str, list[TaskScores]]:
    """Per score kind, a row per task: baseline and each method's best score (None = none)."""
    specs = _specs(config)
    by_key = {(r.task, method_of(config, r)): r for r in results}
    names = [name for _, _, name in methods(config)]
    tables: dict[str, list[TaskScores]] = {}
    for kind in SCORE_KINDS:
        rows = []
        for t in config.tasks:
            if not any((t.name, m) in by_key for m in names):
                continue
            spec = specs[t.name]
            rows.append(
                TaskScores(
                    task=t.name,
                    higher_is_better=spec.metric.higher_is_better,
                    baseline=spec.baseline.score,
                    scores={
                        m: getattr(by_key[(t.name, m)], kind) if (t.name, m) in by_key else None
                        for m in names
                    },
                )
            )
        tables[kind] = rows
    return tables


def build_report(store: Store, bench_id: str) -> BenchReport:
    config = load_bench(store, bench_id)
    row = get_bench(store, bench_id)
    assert row is not None
    runs = collect_outcomes(store, bench_id, config)
    specs = _specs(config)
    results = []
    for t in config.tasks:
        for m, a, _ in methods(config):
            mine = [r for r in runs if r.task == t.name and r.model == m and r.agent == a]
            if mine:
                results.append(aggregate(mine, specs[t.name].metric.higher_is_better))
    # both kinds on one shared tau axis (MLGym's definition), as `bench aup` does with both
    # score tables
    tables = {k: rows for k, rows in score_tables(config, results).items() if rows}
    profiles = compute_aups(tables) if tables else {}
    overheads = [r.overhead_seconds for r in runs if r.overhead_seconds is not None]
    aup = {k: {m: round(v, 6) for m, v in p.aup.items()} for k, p in profiles.items()}
    return BenchReport(
        bench_id=bench_id,
        status=row["status"],
        config=config,
        results=results,
        aup=aup,
        agents=agent_summaries(config, runs, aup),
        profiles=profiles,
        runs=runs,
        mean_overhead_s=round(sum(overheads) / len(overheads), 4) if overheads else None,
        scale=_scale_summary(row.get("scale")),
    )


def _scale_summary(scale: dict[str, Any] | None) -> dict[str, Any] | None:
    """The cluster's account as the report shows it (counts first, then the detail)."""
    if not scale:
        return None
    nodes = scale.get("nodes", [])
    return {
        "address": scale.get("address"),
        "nodes": len(nodes),
        "nodes_used": len(nodes) - len(scale.get("excluded", {})),
        "excluded": scale.get("excluded", {}),
        "lost_nodes": len(scale.get("lost", [])),
        "lost": scale.get("lost", []),
        "retries": scale.get("retries", 0),
    }


# -- outputs ---------------------------------------------------------------------------------
def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return "nan" if math.isnan(v) else f"{v:.4g}"
    return str(v)


def _cell(text: str, code: bool = False) -> str:
    """A task's or model's name (a synthesised task's is a model's text) in Markdown: one line,
    its controls visible, its `|` not a column; as a code span, no backtick to end it."""
    shown = one_line(text).replace("|", "\\|")
    return f"`{shown.replace('`', chr(39))}`" if code else shown


def render_markdown(report: BenchReport) -> str:
    c = report.config
    lines = [
        f"# Bench {report.bench_id} ({report.status})",
        "",
        f"Agent(s) {', '.join(f'`{a}`' for a in c.agents)} at one budget"
        f" (max steps {c.max_steps or 'default'}, max minutes {c.max_minutes or 'default'}), "
        f"{c.runs} run(s) per task, model and agent, tasks: "
        f"{', '.join(_cell(t.name) for t in c.tasks)}; "
        f"models: {', '.join(_cell(m) for m in c.models)}.",
        "",
        "| task | model | agent | runs | success | valid | improvement % (mean ± sem) |"
        " above median | bronze | silver | gold | any medal | best attempt | best submission |"
        " failures |",
        "|" + "---|" * 15,
    ]
    for r in report.results:
        failures = ", ".join(f"{k} {v}" for k, v in r.failures.items() if v) or "none"
        sem = f" ± {_fmt(r.sem_improvement_pct)}" if r.sem_improvement_pct is not None else ""
        cells = [
            _cell(r.task),
            _cell(r.model, code=True),
            r.agent,
            str(r.runs),
            f"{r.success_rate:.0%}",
            f"{r.valid_rate:.0%}",
            f"{_fmt(r.mean_improvement_pct)}{sem}",
            *(
                f"{v:.0%}"
                for v in (
                    r.above_median_rate,
                    r.bronze_rate,
                    r.silver_rate,
                    r.gold_rate,
                    r.any_medal_rate,
                )
            ),
            _fmt(r.best_attempt),
            _fmt(r.best_submission),
            failures,
        ]
        lines.append("| " + " | ".join(cells) + " |")
    for kind, values in report.aup.items():
        tau = report.profiles[kind].tau_max if kind in report.profiles else float("nan")
        lines += ["", f"**AUP ({kind.replace('_', ' ')}, tau_max {tau:.4g} on log10 ratio)**", ""]
        lines += ["| method | AUP |", "|---|---|"]
        ranked = sorted(values.items(), key=lambda x: -x[1])
        lines += [f"| {_cell(m, code=True)} | {v:.4f} |" for m, v in ranked]
    lines += agents_markdown(report.agents, _cell)
    lines += ["", "| method | mean tokens/run | mean cost/run (USD) | mean wall/run (s) |"]
    lines += ["|---|---|---|---|"]
    for _, _, m in methods(c):
        mine = [r for r in report.runs if method_of(c, r) == m]
        if mine:
            n = len(mine)
            lines.append(
                f"| {_cell(m, code=True)} | {sum(r.tokens for r in mine) / n:.0f} | "
                f"{sum(r.cost_usd for r in mine) / n:.4f} | "
                f"{sum(r.wall_seconds for r in mine) / n:.2f} |"
            )
    if report.mean_overhead_s is not None:
        lines += [
            "",
            "Time per run outside the model calls and the actions (preparing the workspace, "
            "loading the model, the final grading, the harness): "
            f"{report.mean_overhead_s * 1000:.0f} ms on average.",
        ]
    if report.scale:
        s = report.scale
        lines += [
            "",
            f"Ray cluster `{s['address']}`: {s['nodes_used']} of {s['nodes']} node(s) used, "
            f"{s['lost_nodes']} lost mid-bench, {s['retries']} run(s) retried.",
        ]
        lines += [f"- node `{n}` left out: {one_line(why)}" for n, why in s["excluded"].items()]
    for name in ("profiles", "aup_vs_cost", "score_over_steps"):
        if name in report.files:
            lines += ["", f"![{name}]({Path(report.files[name]).name})"]
    return "\n".join(lines) + "\n"


def score_curves(report: BenchReport) -> dict[str, dict[str, list[float]]]:
    """task -> method -> mean over runs of the best validate score so far, by step."""
    specs = _specs(report.config)
    curves: dict[str, dict[str, list[float]]] = {}
    for r in report.results:
        method = method_of(report.config, r)
        runs = [
            x for x in report.runs if x.task == r.task and method_of(report.config, x) == method
        ]
        steps = max([x.steps for x in runs] + [s for x in runs for s, _ in x.validate_curve] + [1])
        hib = specs[r.task].metric.higher_is_better
        per_run = [best_so_far(x.validate_curve, steps, hib) for x in runs]
        mean = []
        for i in range(steps):
            vals = [c[i] for c in per_run if not math.isnan(c[i])]
            mean.append(sum(vals) / len(vals) if vals else math.nan)
        curves.setdefault(r.task, {})[method] = mean
    return curves


def write_outputs(report: BenchReport, out_dir: Path) -> dict[str, str]:
    """Markdown, CSV tables and PNG figures into `out_dir`; returns name -> path."""
    from .plots import plot_aup_vs_cost, plot_profiles, plot_score_over_steps

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    files: dict[str, Path] = {}
    if report.profiles:
        titles = {k.replace("_", " "): v for k, v in report.profiles.items()}
        files["profiles"] = plot_profiles(titles, out_dir / "performance_profiles.png")
        c = report.config
        n_runs = {
            m: max(1, sum(1 for r in report.runs if method_of(c, r) == m)) for _, _, m in methods(c)
        }
        cost = {
            m: sum(r.cost_usd for r in report.runs if method_of(c, r) == m) / n_runs[m]
            for m in n_runs
        }
        tokens = {
            m: sum(r.tokens for r in report.runs if method_of(c, r) == m) / n_runs[m]
            for m in n_runs
        }
        files["aup_vs_cost"] = plot_aup_vs_cost(
            report.aup, cost, tokens, out_dir / "aup_vs_cost.png"
        )
    specs = _specs(report.config)
    task_info = {
        name: {
            "metric": s.metric.name,
            "higher_is_better": s.metric.higher_is_better,
            "baseline": s.baseline.score,
            "thresholds": s.thresholds.model_dump(),
        }
        for name, s in specs.items()
    }
    curves = score_curves(report)
    if curves:
        files["score_over_steps"] = plot_score_over_steps(
            curves, task_info, out_dir / "score_over_steps.png"
        )
    for kind, rows in score_tables(report.config, report.results).items():
        if rows:
            files[f"scores_{kind}"] = out_dir / f"scores_{kind}.csv"
            files[f"scores_{kind}"].write_text(score_table_csv(rows))
    files["results_csv"] = out_dir / "results.csv"
    files["results_csv"].write_text(results_csv(report.results))
    files["runs_csv"] = out_dir / "runs.csv"
    files["runs_csv"].write_text(runs_csv(report.runs))
    report.files = {k: str(v) for k, v in files.items()}
    report.files["markdown"] = str(out_dir / "report.md")
    (out_dir / "report.md").write_text(render_markdown(report))
    return report.files


__all__ = ["BenchError", "BenchReport", "build_report", "render_markdown", "write_outputs"]
