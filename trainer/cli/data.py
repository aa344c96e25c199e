"""What a database holds for training, and the training runs recorded in it."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from .app import (
    DbOpt,
    HomeOpt,
    JsonOpt,
    app,
    console,
    emit_json,
    open_store,
)


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
