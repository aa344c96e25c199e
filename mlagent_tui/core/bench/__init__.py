"""Benchmarks: many runs per task and model, their metrics, AUP, report, plots, the Gym env."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

# Loaded on first use, one module at a time: reading a score table (`bench aup`) needs no
# session, and the plots (matplotlib) and the Gym environment (gymnasium) are slow to import.
_PUBLIC = {
    "aup": ("AupError", "AupResult", "compute_aup", "compute_aups"),
    "score_table": ("ScoreTableError", "TaskScores", "load_score_table", "score_table_csv"),
    "gym_env": ("ENV_IDS", "MLAgentEnv", "register_envs"),
    "metrics": ("RunOutcome", "TaskModelResult", "aggregate"),
    "plots": ("plot_aup_vs_cost", "plot_profiles", "plot_score_over_steps", "short_name"),
    "ray": ("RayBenchRunner", "ScaleAccount", "check_ray_options"),
    "report": ("BenchReport", "build_report", "collect_outcomes", "score_curves", "write_outputs"),
    "runner": (
        "BenchConfig",
        "BenchError",
        "BenchRunner",
        "load_bench",
        "make_config",
        "resolve_tasks",
        "start_bench",
    ),
}
_MODULE_OF = {name: module for module, names in _PUBLIC.items() for name in names}

if TYPE_CHECKING:
    from .aup import AupError, AupResult, compute_aup, compute_aups
    from .gym_env import ENV_IDS, MLAgentEnv, register_envs
    from .metrics import RunOutcome, TaskModelResult, aggregate
    from .plots import plot_aup_vs_cost, plot_profiles, plot_score_over_steps, short_name
    from .ray import RayBenchRunner, ScaleAccount, check_ray_options
    from .report import BenchReport, build_report, collect_outcomes, score_curves, write_outputs
    from .runner import (
        BenchConfig,
        BenchError,
        BenchRunner,
        load_bench,
        make_config,
        resolve_tasks,
        start_bench,
    )
    from .score_table import ScoreTableError, TaskScores, load_score_table, score_table_csv

__all__ = [
    "ENV_IDS",
    "AupError",
    "AupResult",
    "BenchConfig",
    "BenchError",
    "BenchReport",
    "BenchRunner",
    "MLAgentEnv",
    "RayBenchRunner",
    "RunOutcome",
    "ScoreTableError",
    "TaskModelResult",
    "ScaleAccount",
    "TaskScores",
    "aggregate",
    "build_report",
    "check_ray_options",
    "collect_outcomes",
    "compute_aup",
    "compute_aups",
    "load_bench",
    "load_score_table",
    "make_config",
    "plot_aup_vs_cost",
    "plot_profiles",
    "plot_score_over_steps",
    "register_envs",
    "resolve_tasks",
    "score_curves",
    "score_table_csv",
    "short_name",
    "start_bench",
    "write_outputs",
]


__getattr__ = lazy_exports(__name__, _MODULE_OF)
