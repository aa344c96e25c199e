"""Bench harness figures: overhead per run, and the speed-up of --parallel 2 over --parallel 1.

1. Overhead per run (target <= 100 ms): a bench of short replay sessions on the tiny test task;
   for each run, its wall time as the bench measured it minus the model's time (LLMCall
   latency), the sandboxed executions (ExecFinished durations), preparing the workspace
   (the task's prepare.py) and grading (the task's grade.py). What is left is the harness:
   the session's steps, snapshots and events, and the bench's own bookkeeping.
2. Parallel speed-up (target >= 1.7x on 2 cores): runs whose execution is a CPU-bound script
   (a fixed amount of work, so a loaded machine shows as less speed-up, not more), with
   --parallel 1 and then --parallel 2; then the same with executions that sleep, which shows
   whether the harness itself serializes anything when other work loads the CPUs.

The machine may be shared: the figures printed say what they measured, read them as such.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path

from mlagent_tui.core import tasks as tasks_module
from mlagent_tui.core.bench import (
    BenchRunner,
    collect_outcomes,
    make_config,
    resolve_tasks,
    start_bench,
)
from mlagent_tui.core.home import Home
from mlagent_tui.core.store import Store

TINY = Path(__file__).resolve().parents[1] / "tests" / "data" / "tiny-task"


def research(action: str, args: dict) -> str:
    return (
        "Reflection: ok\nResearch Plan and Status: 1. go\nFact Check: none\nThought: next\n"
        f"Action: {action}\nAction Input: {json.dumps(args)}\n"
    )


def replay_file(folder: Path, name: str, responses: list[str]) -> str:
    path = folder / name
    path.write_text("".join(json.dumps({"content": r}) + "\n" for r in responses))
    return f"replay:{path}"


class TaskTimer:
    """Times the task's own scripts (prepare.py, grade.py) per thread, without changing them."""

    def __init__(self) -> None:
        self.local = threading.local()

    def install(self) -> None:
        for name in ("prepare", "grade"):
            setattr(tasks_module.Task, name, self._timed(name, getattr(tasks_module.Task, name)))

    def _timed(self, name: str, fn):  # noqa: ANN001, ANN202
        local = self.local

        def wrapper(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent = time.perf_counter() - started
                setattr(local, name, getattr(local, name, 0.0) + spent)

        return wrapper

    def take(self) -> tuple[float, float]:
        """(prepare, grade) seconds of this thread since the last take."""
        out = (getattr(self.local, "prepare", 0.0), getattr(self.local, "grade", 0.0))
        self.local.prepare = self.local.grade = 0.0
        return out


def overhead(tmp: Path, runs: int) -> None:
    model = replay_file(
        tmp,
        "short.jsonl",
        [
            research("List Files", {"dir_path": "."}),
            research("Execute Script", {"script_name": "train.py"}),
            research("Validate", {}),
            research("Final Answer", {"final_answer": "baseline"}),
        ],
    )
    home = Home.at(tmp / "home-overhead")
    store = Store(home.db_path)
    config = make_config(resolve_tasks(None, [TINY]), [model], runs=runs)
    bench_id = start_bench(home, store, config)
    timer = TaskTimer()
    timer.install()
    task_seconds: dict[int, tuple[float, float]] = {}

    def on_run(job, status, session_id) -> None:  # noqa: ANN001
        if status != "running":  # same thread as the run: its prepare and its grades
            task_seconds[job.run_index] = timer.take()

    BenchRunner(home, store, bench_id, config).run(on_run)
    outcomes = collect_outcomes(store, bench_id, config)
    rows = {r["run_index"]: r for r in store.db["bench_sessions"].rows}
    harness, walls = [], []
    for o in outcomes:
        wall = rows[o.run_index]["run_wall_s"]
        prepare, grade = task_seconds[o.run_index]
        walls.append(wall)
        harness.append(wall - o.model_seconds - o.exec_seconds - prepare - grade)
    med = statistics.median
    print(f"runs: {len(outcomes)} (4 steps each: list, execute, validate, final answer)")
    print(
        f"per run (median): wall {med(walls) * 1000:.0f} ms; model "
        f"{med(o.model_seconds for o in outcomes) * 1000:.1f} ms; executions "
        f"{med(o.exec_seconds for o in outcomes) * 1000:.0f} ms; prepare.py "
        f"{med(p for p, _ in task_seconds.values()) * 1000:.0f} ms; grade.py x2 "
        f"{med(g for _, g in task_seconds.values()) * 1000:.0f} ms"
    )
    print(
        f"harness overhead per run: median {med(harness) * 1000:.1f} ms, "
        f"max {max(harness) * 1000:.1f} ms (target <= 100 ms)"
    )
    store.close()


def speedup(tmp: Path, runs: int, busy: str, label: str) -> None:
    print(f"executions: {label}")
    model = replay_file(
        tmp,
        f"busy-{label.split()[0]}.jsonl",
        [
            research("Write File", {"file_name": "busy.py", "content": busy}),
            research("Execute Script", {"script_name": "busy.py"}),
            research("Execute Script", {"script_name": "train.py"}),
            research("Final Answer", {"final_answer": "done"}),
        ],
    )
    seconds = {}
    for parallel in (1, 2):
        home = Home.at(tmp / f"home-{label.split()[0]}-p{parallel}")
        store = Store(home.db_path)
        config = make_config(resolve_tasks(None, [TINY]), [model], runs=runs, parallel=parallel)
        bench_id = start_bench(home, store, config)
        started = time.perf_counter()
        BenchRunner(home, store, bench_id, config).run()
        seconds[parallel] = time.perf_counter() - started
        outcomes = collect_outcomes(store, bench_id, config)
        exec_share = sum(o.exec_seconds for o in outcomes) / sum(o.wall_seconds for o in outcomes)
        rows = list(store.db["bench_sessions"].rows)
        in_flight = sum(r["run_wall_s"] for r in rows) / seconds[parallel]
        print(
            f"--parallel {parallel}: {runs} runs in {seconds[parallel]:.2f} s "
            f"(executions {exec_share:.0%} of the sessions' time; mean run "
            f"{statistics.mean(r['run_wall_s'] for r in rows):.2f} s; "
            f"{in_flight:.2f} runs in flight on average)"
        )
        store.close()
    print(
        f"speed-up --parallel 2 over --parallel 1: {seconds[1] / seconds[2]:.2f}x "
        f"on {os.cpu_count()} cores (target >= 1.7x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="runs for the overhead figure")
    parser.add_argument("--parallel-runs", type=int, default=4)
    parser.add_argument("--iterations", type=int, default=30_000_000, help="CPU work per run")
    parser.add_argument("--sleep", type=float, default=3.0, help="0 skips the sleeping runs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        overhead(Path(tmp), args.runs)
        cpu = f"total = 0\nfor i in range({args.iterations}):\n    total += i * i\nprint(total)\n"
        speedup(Path(tmp), args.parallel_runs, cpu, "cpu-bound (a fixed loop)")
        if args.sleep:
            # waits instead of computing: the harness's own concurrency, apart from CPU contention
            wait = f"import time\ntime.sleep({args.sleep})\nprint('slept')\n"
            speedup(Path(tmp), args.parallel_runs, wait, f"sleeping ({args.sleep} s each)")


if __name__ == "__main__":
    main()
