"""Comparing agents in one bench: a method is a (model, agent) pair, and each agent's summary.

A bench of one agent names its methods by model alone, so its tables, AUP and score tables read
as before; with several agents a method reads `MODEL [AGENT]`, and every agent gets its rates,
AUPs and mean selection gap (the search agent's; None for the others) at the same budget.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from .metrics import MEDAL_LEVELS, mean_sem

if TYPE_CHECKING:
    from .metrics import RunOutcome
    from .runner import BenchConfig


class AgentSummary(BaseModel):
    """One agent over every task and model of the bench."""

    agent: str
    runs: int
    success_rate: float
    valid_rate: float
    any_medal_rate: float
    mean_improvement_pct: float | None
    mean_selection_gap: float | None = Field(description="search runs only; > 0 is better")
    aup: dict[str, dict[str, float]] = Field(
        default_factory=dict, description="best_attempt|best_submission -> model -> AUP"
    )


def method_name(config: BenchConfig, model: str, agent: str) -> str:
    """How tables and figures name a (model, agent) pair."""
    return model if len(config.agents) == 1 else f"{model} [{agent}]"


def methods(config: BenchConfig) -> list[tuple[str, str, str]]:
    """(model, agent, name) of every method, models first then agents, in the config's order."""
    return [(m, a, method_name(config, m, a)) for m in config.models for a in config.agents]


def method_of(config: BenchConfig, run: Any) -> str:
    """The method a run or a result row belongs to (anything with `.model` and `.agent`)."""
    return method_name(config, run.model, run.agent)


def agent_summaries(
    config: BenchConfig, runs: list[RunOutcome], aup: dict[str, dict[str, float]]
) -> list[AgentSummary]:
    """Per agent: rates over all its runs, and the AUP of each of its methods by model."""
    out = []
    for agent in config.agents:
        mine = [r for r in runs if r.agent == agent]
        if not mine:
            continue
        n = len(mine)
        improvement = mean_sem([r.improvement_pct for r in mine if r.improvement_pct is not None])
        gaps = [r.selection_gap for r in mine if r.selection_gap is not None]
        gap = mean_sem(gaps)[0] if gaps else None
        out.append(
            AgentSummary(
                agent=agent,
                runs=n,
                success_rate=sum(r.success for r in mine) / n,
                valid_rate=sum(r.valid for r in mine) / n,
                any_medal_rate=sum(r.medal in MEDAL_LEVELS for r in mine) / n,
                mean_improvement_pct=None if improvement[0] is None else round(improvement[0], 4),
                mean_selection_gap=None if gap is None else round(gap, 4),
                aup={
                    kind: {
                        m: values[method_name(config, m, agent)]
                        for m in config.models
                        if method_name(config, m, agent) in values
                    }
                    for kind, values in aup.items()
                },
            )
        )
    return out


def agents_markdown(summaries: list[AgentSummary], cell: Any) -> list[str]:
    """The report's per-agent table (only when the bench compares agents)."""
    if len(summaries) < 2:
        return []
    lines = [
        "",
        "| agent | runs | success | valid | any medal | improvement % (mean) | selection gap |"
        " AUP best attempt | AUP best submission |",
        "|" + "---|" * 9,
    ]
    for s in summaries:

        def aups(kind: str, s: AgentSummary = s) -> str:
            values = s.aup.get(kind, {})
            return ", ".join(f"{cell(m, code=True)} {v:.4f}" for m, v in values.items()) or "-"

        imp, gap = s.mean_improvement_pct, s.mean_selection_gap
        lines.append(
            f"| {s.agent} | {s.runs} | {s.success_rate:.0%} | {s.valid_rate:.0%} | "
            f"{s.any_medal_rate:.0%} | {'-' if imp is None else f'{imp:.4g}'} | "
            f"{'-' if gap is None else f'{gap:.4g}'} | {aups('best_attempt')} | "
            f"{aups('best_submission')} |"
        )
    return lines
