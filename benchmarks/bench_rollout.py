"""Rollout executions: 8 solutions run one after another vs in parallel on the machine's cores.

Target: on 2 cores, the parallel run is >= 1.7x faster. Each solution is a CPU-bound
script (about `--work` seconds of pure Python) that then writes a valid submission, so the figure
includes workspace preparation, execution in the bubblewrap sandbox and grading.

    .venv/bin/python benchmarks/bench_rollout.py [--solutions 8] [--workers 2] [--work 1.0]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from mlagent_tui.core.tasks import find_task
from trainer.rollout import execute_solutions

TINY = Path(__file__).resolve().parents[1] / "tests" / "data" / "tiny-task"

SCRIPT = """import csv, time
deadline = time.process_time() + {work}
x = 0
while time.process_time() < deadline:
    x += 1
test = list(csv.DictReader(open("test.csv")))
with open("submission.csv", "w") as fh:
    fh.write("id,y\\n")
    for row in test:
        fh.write(f"{{row['id']}},{{2 * int(row['x'])}}\\n")
print("done", x)
"""


def timed(task, scripts: list[str], workers: int) -> tuple[float, int]:
    started = time.perf_counter()
    outcomes = execute_solutions(task, scripts, workers=workers)
    return time.perf_counter() - started, sum(o.valid for o in outcomes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--solutions", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--work", type=float, default=1.0, help="CPU seconds per solution")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    task = find_task(task_dir=TINY)
    scripts = [SCRIPT.format(work=args.work)] * args.solutions
    timed(task, scripts[:1], 1)  # warm the sandbox and the file cache
    serial, valid_serial = timed(task, scripts, 1)
    parallel, valid_parallel = timed(task, scripts, args.workers)
    result = {
        "solutions": args.solutions,
        "workers": args.workers,
        "serial_s": round(serial, 3),
        "parallel_s": round(parallel, 3),
        "speedup": round(serial / parallel, 3),
        "valid": [valid_serial, valid_parallel],
        "target": ">= 1.7x on 2 cores",
        "cores": os.cpu_count(),
        "load_average_1min": round(os.getloadavg()[0], 2),
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(
            f"{args.solutions} solutions of ~{args.work:.1f} CPU-s: one after another "
            f"{serial:.2f} s, {args.workers} in parallel {parallel:.2f} s -> "
            f"speedup {serial / parallel:.2f}x (target >= 1.7x on 2 cores); "
            f"valid {valid_serial}/{valid_parallel}; {os.cpu_count()} cores, load average "
            f"{os.getloadavg()[0]:.2f} (other processes on the machine lower the figure)"
        )


if __name__ == "__main__":
    main()
