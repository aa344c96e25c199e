"""The trainer's tables (training runs, per-update metrics): queries.

Part of the store: only store modules write SQL (the tables come from m004 and m006 in
migrations.py).
The trainer calls these functions with a Store; it never writes SQL itself.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from .store import Store


class UpdateRecord(BaseModel):
    """One policy update's metrics, as the trainer reports and the store keeps them."""

    update: int
    reward_mean: float = 0.0
    reward_std: float = 0.0
    valid_rate: float = 0.0
    loss: float = 0.0
    kl: float = 0.0
    exec_seconds_mean: float = 0.0
    tokens_per_s: float = 0.0
    seconds: float = 0.0
    all_equal_groups: int = 0  # groups whose rewards were all equal: zero advantage (m006)
    extra: dict[str, Any] = Field(default_factory=dict)


class TrainingRunRecord(BaseModel):
    id: str
    recipe: str
    base_model: str
    config: dict[str, Any] = Field(default_factory=dict)
    out_dir: str = ""
    status: str = "running"
    started_at: float | None = None
    ended_at: float | None = None
    updates: int = 0


def start_training_run(
    store: Store,
    run_id: str,
    *,
    recipe: str,
    base_model: str,
    config: dict[str, Any],
    out_dir: str,
) -> None:
    """Record a run as running; a resumed run keeps its first start time."""
    with store._lock, store.db.conn:
        store.db.conn.execute(
            "INSERT INTO training_runs (id, recipe, base_model, config, out_dir, status,"
            " started_at) VALUES (?,?,?,?,?,'running',?) ON CONFLICT(id) DO UPDATE SET"
            " status='running', ended_at=NULL, config=excluded.config, out_dir=excluded.out_dir",
            (run_id, recipe, base_model, json.dumps(config, default=str), out_dir, time.time()),
        )


def finish_training_run(store: Store, run_id: str, status: str) -> None:
    with store._lock, store.db.conn:
        store.db.conn.execute(
            "UPDATE training_runs SET status=?, ended_at=? WHERE id=?",
            (status, time.time(), run_id),
        )


def record_update(store: Store, run_id: str, record: UpdateRecord) -> None:
    """Write (or, after a resume that redoes an update, overwrite) one update's metrics."""
    row = record.model_dump()
    row["extra"] = json.dumps(row["extra"], default=str)
    cols = ["run_id", *row]
    with store._lock, store.db.conn:
        store.db.conn.execute(
            f"INSERT OR REPLACE INTO training_updates ({', '.join(map(_quote, cols))})"
            f" VALUES ({','.join('?' * len(cols))})",
            (run_id, *row.values()),
        )


def _quote(name: str) -> str:
    return f'"{name}"'  # `update` is an SQL keyword


def training_updates(store: Store, run_id: str) -> list[UpdateRecord]:
    rows = store.fetch_dicts(
        'SELECT * FROM training_updates WHERE run_id = ? ORDER BY "update"', [run_id]
    )
    out = []
    for row in rows:
        row.pop("run_id")
        row["extra"] = json.loads(row["extra"] or "{}")
        out.append(UpdateRecord.model_validate({k: v for k, v in row.items() if v is not None}))
    return out


def training_runs(store: Store, limit: int = 100) -> list[TrainingRunRecord]:
    """The most recent runs first, each with its number of recorded updates."""
    rows = store.fetch_dicts(
        "SELECT r.*, (SELECT COUNT(*) FROM training_updates u WHERE u.run_id = r.id) AS updates"
        " FROM training_runs r ORDER BY r.started_at DESC LIMIT ?",
        [limit],
    )
    runs = []
    for row in rows:
        row["config"] = json.loads(row["config"] or "{}")
        runs.append(TrainingRunRecord.model_validate(row))
    return runs


def training_run(store: Store, run_id: str) -> TrainingRunRecord | None:
    return next((r for r in training_runs(store, limit=1_000_000) if r.id == run_id), None)


def trainable_session_rows(store: Store) -> list[dict[str, Any]]:
    """Every session with at least one LLM call of purpose `step` (something a model wrote),
    oldest first: what the trainer's data module turns into samples."""
    return store.fetch_dicts(
        "SELECT s.* FROM sessions s WHERE EXISTS (SELECT 1 FROM events e WHERE"
        " e.session_id = s.id AND e.kind = 'llm_call') ORDER BY s.started_at"
    )


def session_count(store: Store) -> int:
    return int(store.fetch("SELECT COUNT(*) FROM sessions")[0][0])
