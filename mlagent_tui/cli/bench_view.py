"""`mlagent bench`'s terminal report (one row per task x model x agent, then AUP and, when
agents are compared, one row per agent) and the parsing of `--agent`/`--agents`."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

from ..core.safe_text import visible
from .exits import USAGE
from .options import console, fail

AGENTS = ("research", "solve", "search")


def agent_names(agent: str | None, agents: str | None) -> list[str]:
    """`--agent A` (one) or `--agents A,B` (several), never both; default research."""
    if agent is not None and agents is not None:
        fail("give --agent (one) or --agents (a comma list), not both", USAGE)
    names = [a.strip() for a in (agents if agents is not None else agent or "research").split(",")]
    names = [a for a in names if a]
    if not names:
        fail("--agents needs at least one of: " + ", ".join(AGENTS), USAGE)
    unknown = [a for a in names if a not in AGENTS]
    if unknown:
        fail(f"unknown agent {unknown[0]!r}: use {', '.join(AGENTS)}", USAGE)
    if len(set(names)) != len(names):
        fail("an agent appears twice in --agents", USAGE)
    return names


def print_report(report: Any) -> None:
    from ..core.bench import short_name

    table = Table(
        "task",
        "model",
        "agent",
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
            Text(visible(r.task)),  # a synthesised task's name is a model's text
            Text(visible(short_name(r.model))),
            r.agent,
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
        shown = ", ".join(f"{short_name(m)} {v:.3f}" for m, v in ranked)
        console.print(visible(f"AUP {kind}: {shown}"), markup=False, highlight=False)
    if len(report.agents) > 1:
        _print_agents(report.agents)
    for name, path in report.files.items():
        console.print(f"[dim]{name}: {path}[/]", highlight=False)


def _print_agents(summaries: list[Any]) -> None:
    """Each agent over all tasks and models, at the bench's one budget."""
    table = Table("agent", "runs", "success", "valid", "medal", "impr. %", "selection gap")
    for s in summaries:
        imp, gap = s.mean_improvement_pct, s.mean_selection_gap
        table.add_row(
            s.agent,
            str(s.runs),
            f"{s.success_rate:.0%}",
            f"{s.valid_rate:.0%}",
            f"{s.any_medal_rate:.0%}",
            "-" if imp is None else f"{imp:.3g}",
            "-" if gap is None else f"{gap:.4g}",
        )
    console.print(table)
