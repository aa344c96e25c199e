"""The SQLite store: events and their derived rows, migrations, the bench and training tables."""

from .bench import (
    bench_sessions,
    create_bench,
    get_bench,
    list_benches,
    record_run,
    session_facts,
    set_bench_scale,
    set_bench_status,
)
from .store import Store, StoreError
from .training import (
    TrainingRunRecord,
    UpdateRecord,
    finish_training_run,
    record_update,
    session_count,
    start_training_run,
    trainable_session_rows,
    training_run,
    training_runs,
    training_updates,
)

__all__ = [
    "Store",
    "StoreError",
    "TrainingRunRecord",
    "UpdateRecord",
    "bench_sessions",
    "create_bench",
    "finish_training_run",
    "get_bench",
    "list_benches",
    "record_run",
    "record_update",
    "session_count",
    "session_facts",
    "set_bench_scale",
    "set_bench_status",
    "start_training_run",
    "trainable_session_rows",
    "training_run",
    "training_runs",
    "training_updates",
]
