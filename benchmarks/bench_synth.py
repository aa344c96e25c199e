"""SandMLE micro tasks: baseline execution time of kept synthetic tasks vs. their seed task.

python benchmarks/bench_synth.py [--out DIR] [--repeats N] [--seed-task NAME]

With no kept tasks in --out, one is generated first from the seed with the replay roles of the
test helper (tests/synth_helpers.py: a 160-sample tabular task with a hidden logistic rule).
Each baseline runs `--repeats` times the way `mlagent tasks baseline` runs it: prepare, execute
in the local sandbox, grade. Target: median execution of a kept task's baseline <= 5 s.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mlagent_tui.core.home import Home  # noqa: E402
from mlagent_tui.core.llm import make_model  # noqa: E402
from mlagent_tui.core.store import Store  # noqa: E402
from mlagent_tui.core.synth import SynthConfig, synthesize  # noqa: E402
from mlagent_tui.core.tasks import (  # noqa: E402
    Task,
    find_task,
    list_tasks,
    run_baseline,  # noqa: E402
)
from tests import synth_helpers as h  # noqa: E402
from tests.agent_helpers import write_replay  # noqa: E402


def generate(seed: Task, out: Path, tmp: Path) -> float:
    replay = write_replay(
        tmp / "roles.jsonl", [h.strategist(), h.developer(), h.grader(), h.writer(), h.judge()]
    )
    started = time.perf_counter()
    report = synthesize(seed, make_model(f"replay:{replay}"), SynthConfig(out=out, n=1))
    if not report.candidates[0].kept:
        raise SystemExit(f"the replay candidate was not kept: {report.candidates[0].reason}")
    return time.perf_counter() - started


def measure(task: Task, home: Home, store: Store, repeats: int) -> tuple[list[float], list[float]]:
    execs, totals = [], []
    for _ in range(repeats):
        started = time.perf_counter()
        res = run_baseline(task, home, store)
        if not res.valid:
            raise SystemExit(f"{task.name}: baseline invalid: {res.error}")
        totals.append(time.perf_counter() - started)
        execs.append(res.exec_seconds)
    return execs, totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="a folder of kept tasks (default: generate one)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed-task", default="breast-cancer")
    args = parser.parse_args()
    seed = find_task(args.seed_task)
    with tempfile.TemporaryDirectory(prefix="bench-synth-") as tmp_name:
        tmp = Path(tmp_name)
        out = args.out or tmp / "out"
        out.mkdir(parents=True, exist_ok=True)
        if not list_tasks(out):
            seconds = generate(seed, out, tmp)
            print(f"generated 1 kept task in {seconds:.1f} s (replay roles, leak judge, check)")
        home = Home.at(tmp / "home")
        store = Store(home.db_path)
        rows = [(t, "kept") for t in list_tasks(out)] + [(seed, "seed")]
        print(f"{'task':44} {'kind':5} {'exec median s':>14} {'total median s':>15}  samples")
        kept_execs: list[float] = []
        seed_exec = 0.0
        for task, kind in rows:
            execs, totals = measure(task, home, store, args.repeats)
            med = statistics.median(execs)
            if kind == "kept":
                kept_execs.append(med)
            else:
                seed_exec = med
            print(
                f"{task.name[:44]:44} {kind:5} {med:14.2f} {statistics.median(totals):15.2f}"
                f"  {args.repeats}"
            )
        store.close()
    kept = statistics.median(kept_execs)
    verdict = "meets" if kept <= 5 else "MISSES"
    print(
        f"median baseline execution: kept tasks {kept:.2f} s ({verdict} <= 5 s), seed "
        f"{args.seed_task} {seed_exec:.2f} s, ratio {kept / seed_exec:.2f} "
        f"(local sandbox, {args.repeats} runs each; 2 shared cores)"
    )


if __name__ == "__main__":
    main()
