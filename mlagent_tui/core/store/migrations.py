"""The store's schema: every table's named migrations, in the order they are applied.

Only the store package writes SQL. What each event writes besides itself is in derive.py.
"""

from __future__ import annotations

from collections.abc import Callable

import sqlite_utils

Migration = Callable[[sqlite_utils.Database], None]


def m001_initial(db: sqlite_utils.Database) -> None:
    db["sessions"].create(
        {
            "id": str,
            "task": str,
            "model": str,
            "agent": str,
            "sandbox": str,
            "workspace": str,
            "status": str,
            "started_at": float,
            "ended_at": float,
            "end_reason": str,
            "final_score": float,
            "valid": int,
            "medal": str,
            "parent_session_id": str,
            "parent_step": int,
            "config": str,
        },
        pk="id",
    )
    db["events"].create(
        {"session_id": str, "seq": int, "ts": float, "step": int, "kind": str, "payload": str},
        pk=("session_id", "seq"),
    )
    db["events"].create_index(["session_id", "kind"])
    db["steps"].create(
        {
            "session_id": str,
            "step": int,
            "action": str,
            "action_input": str,
            "reflection": str,
            "plan": str,
            "fact_check": str,
            "thought": str,
        },
        pk=("session_id", "step"),
    )
    db["executions"].create(
        {
            "session_id": str,
            "seq": int,
            "step": int,
            "command": str,
            "exit_code": int,
            "duration_s": float,
            "peak_rss_mb": float,
            "timed_out": int,
            "killed_reason": str,
            "output_truncated": int,
        },
        pk=("session_id", "seq"),
    )
    db["scores"].create(
        {
            "session_id": str,
            "seq": int,
            "step": int,
            "split": str,
            "score": float,
            "valid": int,
            "error": str,
            "medal": str,
            "above_median": int,
        },
        pk=("session_id", "seq"),
    )
    db["file_versions"].create(
        {
            "session_id": str,
            "seq": int,
            "step": int,
            "path": str,
            "before_hash": str,
            "after_hash": str,
            "diff": str,
            "author": str,
        },
        pk=("session_id", "seq"),
    )
    db["plans"].create(
        {"session_id": str, "seq": int, "step": int, "author": str, "plan": str},
        pk=("session_id", "seq"),
    )


def m002_step_observations(db: sqlite_utils.Database) -> None:
    """Steps carry their observation and whether they completed (resume starts after those)."""
    db["steps"].add_column("observation", str)
    db["steps"].add_column("ok", int)
    db["steps"].add_column("duration_s", float)
    db["steps"].add_column("completed", int)


def m003_full_text_search(db: sqlite_utils.Database) -> None:
    """Sessions and their steps searchable by text (the home screen's filter)."""
    db["sessions"].enable_fts(
        ["id", "task", "model", "agent", "status", "end_reason"], create_triggers=True
    )
    db["steps"].enable_fts(["action", "plan", "thought", "observation"], create_triggers=True)


# The trainer's tables (store/training.py reads and writes them).
def m004_training(db: sqlite_utils.Database) -> None:
    """A row per training run and a row per policy update (the learning curve)."""
    db["training_runs"].create(
        {
            "id": str,
            "recipe": str,
            "base_model": str,
            "config": str,
            "out_dir": str,
            "status": str,
            "started_at": float,
            "ended_at": float,
        },
        pk="id",
    )
    db["training_updates"].create(
        {
            "run_id": str,
            "update": int,
            "reward_mean": float,
            "reward_std": float,
            "valid_rate": float,
            "loss": float,
            "kl": float,
            "exec_seconds_mean": float,
            "tokens_per_s": float,
            "seconds": float,
            "extra": str,
        },
        pk=("run_id", "update"),
    )


# The benchmark's tables (store/bench.py reads and writes them).
def m005_bench_tables(db: sqlite_utils.Database) -> None:
    """A bench run (its configuration) and one row per (task, model, run index) it runs."""
    db["bench_runs"].create(
        {
            "id": str,
            "created_at": float,
            "finished_at": float,
            "status": str,
            "config": str,
        },
        pk="id",
    )
    db["bench_sessions"].create(
        {
            "bench_id": str,
            "task": str,
            "model": str,
            "run_index": int,
            "session_id": str,
            "status": str,  # running | done | crashed
            "error": str,
            "started_at": float,
            "finished_at": float,
            "run_wall_s": float,
        },
        pk=("bench_id", "task", "model", "run_index"),
    )
    db["bench_sessions"].create_index(["session_id"])


def m006_update_all_equal_groups(db: sqlite_utils.Database) -> None:
    """Per update, how many groups had all-equal rewards (no advantage, no signal)."""
    db["training_updates"].add_column("all_equal_groups", int)


def m007_bench_scale(db: sqlite_utils.Database) -> None:
    """Scale-out (`bench --ray`): the node each run ran on and how many tries it took; per
    bench, the cluster's account (nodes probed, left out and lost, retries) as JSON."""
    db["bench_sessions"].add_column("node", str)
    db["bench_sessions"].add_column("attempts", int)
    db["bench_runs"].add_column("scale", str)


def m008_search_nodes(db: sqlite_utils.Database) -> None:
    """The search agent's tree, one row per node, derived from its node events."""
    db["nodes"].create(
        {
            "session_id": str,
            "node": int,
            "parents": str,  # JSON list of node ids
            "operator": str,
            "form": str,
            "status": str,  # running | valid | buggy | timed_out
            "score": float,  # the search score (the part of validation the search sees)
            "hidden_score": float,
            "seconds": float,
            "tokens": int,
            "snapshot": str,
            "pinned": int,
            "pruned": int,
            "chosen": int,
        },
        pk=("session_id", "node"),
    )


def m009_bench_agents(db: sqlite_utils.Database) -> None:
    """A bench compares agents too: a run is keyed by (task, model, agent, run index). A row
    written before takes the one agent its bench's configuration names. The table is rebuilt
    by hand (a primary key cannot change in place) so that it all stays in one transaction."""
    db.execute(
        "CREATE TABLE bench_sessions_new (bench_id TEXT, task TEXT, model TEXT,"
        " agent TEXT NOT NULL DEFAULT 'research', run_index INTEGER, session_id TEXT,"
        " status TEXT, error TEXT, started_at FLOAT, finished_at FLOAT, run_wall_s FLOAT,"
        " node TEXT, attempts INTEGER, PRIMARY KEY (bench_id, task, model, agent, run_index))"
    )
    db.execute(
        "INSERT INTO bench_sessions_new SELECT s.bench_id, s.task, s.model,"
        " COALESCE(json_extract(b.config, '$.agent'), 'research'), s.run_index, s.session_id,"
        " s.status, s.error, s.started_at, s.finished_at, s.run_wall_s, s.node, s.attempts"
        " FROM bench_sessions s LEFT JOIN bench_runs b ON b.id = s.bench_id"
    )
    db.execute("DROP TABLE bench_sessions")
    db.execute("ALTER TABLE bench_sessions_new RENAME TO bench_sessions")
    db["bench_sessions"].create_index(["session_id"])


# Order of application; a migration's name is recorded in `_migrations` and never changes.
MIGRATIONS: list[tuple[str, Migration]] = [
    (fn.__name__, fn)
    for fn in (
        m001_initial,
        m002_step_observations,
        m003_full_text_search,
        m004_training,
        m005_bench_tables,
        m006_update_all_equal_groups,
        m007_bench_scale,
        m008_search_nodes,
        m009_bench_agents,
    )
]
