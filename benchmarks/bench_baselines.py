"""Every bundled baseline: prepare + execute (local sandbox) + grade, wall-clock seconds."""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from mlagent_tui.core.home import Home
from mlagent_tui.core.store import Store
from mlagent_tui.core.tasks import list_tasks, run_baseline


def main() -> None:
    sandbox = sys.argv[1] if len(sys.argv) > 1 else "local"
    with tempfile.TemporaryDirectory() as tmp:
        home = Home.at(Path(tmp))
        store = Store(home.db_path)
        times = []
        print(f"{'task':22} {'total s':>8} {'exec s':>8}  score")
        for task in list_tasks():
            start = time.perf_counter()
            res = run_baseline(task, home, store, sandbox=sandbox)
            total = time.perf_counter() - start
            times.append(total)
            flag = "" if total <= 10 else "  (over 10 s)"
            print(f"{task.name:22} {total:8.2f} {res.exec_seconds:8.2f}  {res.score}{flag}")
        print(
            f"median {statistics.median(times):.2f} s, max {max(times):.2f} s over "
            f"{len(times)} tasks ({sandbox}; targets: each <= 10 s, median <= 5 s)"
        )


if __name__ == "__main__":
    main()
